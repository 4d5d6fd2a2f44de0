/// @file sem_schwarz.cpp
/// SemSchwarz (sem_schwarz.hpp): the extended (overlap-1) grids of the elements built from
/// SemSpace's local-to-global map and the mesh's face adjacency, the FDM factors, and the
/// additive / restricted additive Schwarz application by a gather.
#include "elliptica/multigrid/sem_schwarz.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <type_traits>
#include <string>
#include <utility>

#include "elliptica/core/error.hpp"
#include "elliptica/core/parallel.hpp"
#include "elliptica/core/resources.hpp"
#include "elliptica/multigrid/gll.hpp"
#include "elliptica/multigrid/sem_mesh.hpp"
#include "fdm_batch.hpp"
#include "sem_schwarz_apply.hpp"

namespace elliptica::multigrid {
namespace {


using FaceKey = std::array<std::int64_t, 4>;

FaceKey face_key(const HexMesh& m, std::size_t e, int f) {
  const auto c = hex_face_corners(f);
  FaceKey k{};
  for (int i = 0; i < 4; ++i) k[static_cast<std::size_t>(i)] = m.elements[8 * e + static_cast<std::size_t>(c[static_cast<std::size_t>(i)])];
  std::sort(k.begin(), k.end());
  return k;
}

/// The length of element e along reference axis d used by its fast diagonalisation: over the
/// element's GLL lines along d (the other two GLL indices j, k fixed; the trilinear map makes every
/// such line straight, so its length is the distance L_jk of its end nodes), the weighted harmonic
/// mean of the squared lengths, l = (sum_jk w_j w_k / sum_jk w_j w_k L_jk^-2)^(1/2), w the GLL
/// weights of the space's order. 1 / l^2 is then the mean of 1 / L^2 (the stiffness of the lines
/// along d scales as 1 / L^2): a box with this length has the element's mean stiffness along d,
/// where the arithmetic mean of the four edges gives a wedge-shaped element (thin at one end, as on
/// Kershaw meshes) far too little. This is Nek5000's / nekRS's element spacing for the FDM
/// (plane_space: "spacing is based on harmonic mean", on the GLL points of the level's own order).
/// On a parallelepiped every L_jk is the edge length, as before.
double line_extent(const SemSpace& V, const std::vector<double>& w, std::size_t e, int d) {
  const int N = V.order() + 1;
  const auto N3 = static_cast<std::size_t>(N) * N * N;
  const auto& l2g = V.local_to_global();
  const auto& X = V.coordinates();
  const int stride[3] = {1, N, N * N};
  const int d1 = (d + 1) % 3, d2 = (d + 2) % 3;
  double num = 0.0, den = 0.0;
  for (int k = 0; k < N; ++k)
    for (int j = 0; j < N; ++j) {
      const int q0 = j * stride[d1] + k * stride[d2];
      const int q1 = q0 + (N - 1) * stride[d];
      const auto g0 = static_cast<std::size_t>(l2g[e * N3 + static_cast<std::size_t>(q0)]);
      const auto g1 = static_cast<std::size_t>(l2g[e * N3 + static_cast<std::size_t>(q1)]);
      double l2 = 0.0;
      for (int x = 0; x < 3; ++x) {
        const double dx = X[3 * g1 + static_cast<std::size_t>(x)] - X[3 * g0 + static_cast<std::size_t>(x)];
        l2 += dx * dx;
      }
      const double wt = w[static_cast<std::size_t>(j)] * w[static_cast<std::size_t>(k)];
      num += wt;
      den += wt / l2;
    }
  return std::sqrt(num / den);
}

}  // namespace

SchwarzPrecision schwarz_precision_from_string(const std::string& s) {
  if (s == "fp64") return SchwarzPrecision::Double;
  if (s == "fp32") return SchwarzPrecision::Single;
  throw InvalidArgument("unknown Schwarz precision '" + s + "' (expected fp64 or fp32)");
}

std::string to_string(SchwarzPrecision p) { return p == SchwarzPrecision::Single ? "fp32" : "fp64"; }

SemSchwarz::SemSchwarz(std::shared_ptr<const SemLaplacian> A, SchwarzKind kind, int threads,
                       SchwarzPrecision precision, SchwarzLocalSolver local)
    : A_(std::move(A)), kind_(kind), threads_(threads), precision_(precision), local_(local) {
  if (!A_) throw InvalidArgument("SemSchwarz: null SemLaplacian");
  if (threads < 0) throw InvalidArgument("SemSchwarz: threads must be >= 0, got " + std::to_string(threads));
  if (kind != SchwarzKind::ASM && kind != SchwarzKind::ASMWeighted && kind != SchwarzKind::RAS) throw InvalidArgument("SemSchwarz: unknown Schwarz kind");
  if (precision != SchwarzPrecision::Double && precision != SchwarzPrecision::Single)
    throw InvalidArgument("SemSchwarz: unknown precision");
  if (local != SchwarzLocalSolver::FDM && local != SchwarzLocalSolver::Element)
    throw InvalidArgument("SemSchwarz: unknown local solver");
  const SemSpace& V = A_->space();
  const int p = V.order();
  if (p < 2)
    throw InvalidArgument("SemSchwarz: order " + std::to_string(p) +
                          ": the overlap-1 Schwarz smoother needs p >= 2 (at p = 1 the overlap point is a vertex "
                          "of the next element; the p = 1 level of a p-multigrid is its coarse level)");
  const HexMesh& mesh = V.mesh();
  const int N = p + 1, M = N + 2;
  ne_ = V.num_elements();
  n_ = V.num_free();
  m3_ = static_cast<std::size_t>(M) * M * M;
  if (local_ == SchwarzLocalSolver::Element) {
    build_element_solves();  // sem_schwarz_element.cpp
    return;
  }
  const std::size_t N3 = V.nodes_per_element(), N2 = static_cast<std::size_t>(N) * N;
  const double ne = static_cast<double>(ne_);
  require_memory(ne * static_cast<double>(m3_) * (4.0 + 8.0 + 8.0) + 8.0 * static_cast<double>(n_ + 1) +
                     ne * 3.0 * (2.0 * M * M + 2.0 * M) * 8.0 + ne * 6.0 * static_cast<double>(N2) * 16.0 +
                     (kind == SchwarzKind::ASMWeighted ? 16.0 * static_cast<double>(n_) : 0.0),
                 "SemSchwarz (" + std::to_string(ne_) + " elements, order " + std::to_string(p) + ")");
  const auto& l2g = V.local_to_global();
  const int nt = resolve_threads(threads_);

  // Face neighbours: nbr[6 e + f] = (element, face) across face f, or (-1, -1) on the boundary.
  std::vector<std::pair<std::int64_t, int>> nbr(6 * ne_, {-1, -1});
  {
    std::vector<std::pair<FaceKey, std::int64_t>> faces;
    faces.reserve(6 * ne_);
    for (std::size_t e = 0; e < ne_; ++e)
      for (int f = 0; f < 6; ++f) faces.emplace_back(face_key(mesh, e, f), static_cast<std::int64_t>(6 * e + static_cast<std::size_t>(f)));
    std::sort(faces.begin(), faces.end());
    for (std::size_t i = 0; i + 1 < faces.size(); ++i)
      if (faces[i].first == faces[i + 1].first) {
        const auto a = faces[i].second, b = faces[i + 1].second;
        nbr[static_cast<std::size_t>(a)] = {b / 6, static_cast<int>(b % 6)};
        nbr[static_cast<std::size_t>(b)] = {a / 6, static_cast<int>(a % 6)};
      }
  }
  // Nodes of every element face as sorted (global id, local index) pairs: where a node sits in a
  // neighbour, found by binary search (orientation-free).
  std::vector<std::pair<std::int32_t, std::int32_t>> face_nodes(6 * ne_ * N2);
  for (std::size_t e = 0; e < ne_; ++e)
    for (int f = 0; f < 6; ++f) {
      const int axis = f / 2, at = (f % 2) ? p : 0;
      auto* out = face_nodes.data() + (6 * e + static_cast<std::size_t>(f)) * N2;
      std::size_t c = 0;
      for (int k = 0; k < N; ++k)
        for (int j = 0; j < N; ++j)
          for (int i = 0; i < N; ++i) {
            const int ijk[3] = {i, j, k};
            if (ijk[axis] != at) continue;
            const auto q = static_cast<std::size_t>(i + N * (j + N * k));
            out[c++] = {l2g[e * N3 + q], static_cast<std::int32_t>(q)};
          }
      std::sort(out, out + N2);
    }
  auto local_in = [&](std::size_t e, int f, std::int32_t g) {
    const auto* b = face_nodes.data() + (6 * e + static_cast<std::size_t>(f)) * N2;
    const auto* it = std::lower_bound(b, b + N2, std::make_pair(g, std::int32_t{-1}));
    return (it != b + N2 && it->first == g) ? it->second : -1;
  };
  auto corner_vertices = [&](std::size_t e, int f) {
    const auto c = hex_face_corners(f);
    std::array<std::int64_t, 4> v{};
    for (int i = 0; i < 4; ++i) v[static_cast<std::size_t>(i)] = mesh.elements[8 * e + static_cast<std::size_t>(c[static_cast<std::size_t>(i)])];
    return v;
  };

  // Extended grids.
  ext_.assign(ne_ * m3_, -1);
  ParallelErrors ext_errors;
#pragma omp parallel for schedule(static) num_threads(nt)
  for (std::int64_t ie = 0; ie < static_cast<std::int64_t>(ne_); ++ie)
   ext_errors.run([&] {
    const auto e = static_cast<std::size_t>(ie);
    std::int32_t* ext = ext_.data() + e * m3_;
    for (int c = 0; c < M; ++c)
      for (int b = 0; b < M; ++b)
        for (int a = 0; a < M; ++a) {
          const int x[3] = {a, b, c};
          int L[3];
          int face[3] = {-1, -1, -1};
          for (int d = 0; d < 3; ++d) {
            if (x[d] == 0) {
              L[d] = 0;
              face[d] = 2 * d;
            } else if (x[d] == M - 1) {
              L[d] = p;
              face[d] = 2 * d + 1;
            } else {
              L[d] = x[d] - 1;
            }
          }
          std::size_t cur = e;
          std::int32_t g = l2g[e * N3 + static_cast<std::size_t>(L[0] + N * (L[1] + N * L[2]))];
          bool inside = true;
          for (int d = 0; d < 3 && inside; ++d) {
            if (face[d] < 0) continue;
            const auto [nb, nbf] = nbr[6 * cur + static_cast<std::size_t>(face[d])];
            if (nb < 0) {
              inside = false;
              break;
            }
            const auto unb = static_cast<std::size_t>(nb);
            const std::int32_t q = local_in(unb, nbf, g);
            if (q < 0) {
              inside = false;  // not a conforming neighbour (cannot happen on a checked mesh)
              break;
            }
            int ijk[3] = {q % N, (q / N) % N, q / (N * N)};
            ijk[nbf / 2] += (nbf % 2 == 0) ? 1 : -1;  // one GLL step into the neighbour
            // The faces of the remaining axes continued into the neighbour: the face of nb other
            // than nbf through the edge common to cur's faces face[d] and face[d2].
            const auto vf = corner_vertices(cur, face[d]);
            for (int d2 = d + 1; d2 < 3; ++d2) {
              if (face[d2] < 0) continue;
              const auto v2 = corner_vertices(cur, face[d2]);
              std::array<std::int64_t, 2> edge{};
              int ne2 = 0;
              for (auto u : v2)
                if (std::find(vf.begin(), vf.end(), u) != vf.end() && ne2 < 2) edge[static_cast<std::size_t>(ne2++)] = u;
              int found = -1;
              for (int G = 0; G < 6 && ne2 == 2; ++G) {
                if (G == nbf) continue;
                const auto vg = corner_vertices(unb, G);
                if (std::find(vg.begin(), vg.end(), edge[0]) != vg.end() &&
                    std::find(vg.begin(), vg.end(), edge[1]) != vg.end()) {
                  found = G;
                  break;
                }
              }
              if (found < 0) {
                inside = false;
                break;
              }
              face[d2] = found;
            }
            cur = unb;
            g = l2g[cur * N3 + static_cast<std::size_t>(ijk[0] + N * (ijk[1] + N * ijk[2]))];
          }
          const auto ei = static_cast<std::size_t>(a + M * (b + M * c));
          ext[ei] = (inside && static_cast<std::size_t>(g) < n_) ? g : -1;
        }
   });
  ext_errors.rethrow();

  // FDM factors per element and axis.
  fdm_.resize(3 * ne_);
  const std::vector<double> gw = gll_rule(p).weights;
  {
    ParallelErrors errors;
    const auto nel = static_cast<std::int64_t>(ne_);
#pragma omp parallel for schedule(dynamic, 16) num_threads(nt)
    for (std::int64_t ie = 0; ie < nel; ++ie)
      errors.run([&] {
        const auto e = static_cast<std::size_t>(ie);
        for (int d = 0; d < 3; ++d) {
          const auto [lnb, lf] = nbr[6 * e + static_cast<std::size_t>(2 * d)];
          const auto [rnb, rf] = nbr[6 * e + static_cast<std::size_t>(2 * d + 1)];
          const double hl = lnb < 0 ? 0.0 : line_extent(V, gw, static_cast<std::size_t>(lnb), lf / 2);
          const double hr = rnb < 0 ? 0.0 : line_extent(V, gw, static_cast<std::size_t>(rnb), rf / 2);
          fdm_[3 * e + static_cast<std::size_t>(d)] = fdm_axis(p, hl, line_extent(V, gw, e, d), hr, lnb < 0, rnb < 0);
        }
      });
    errors.rethrow();
  }
  // Points outside the kept ranges (removed at Dirichlet faces) are not unknowns.
  for (std::size_t e = 0; e < ne_; ++e) {
    const FdmAxis* f = &fdm_[3 * e];
    for (int c = 0; c < M; ++c)
      for (int b = 0; b < M; ++b)
        for (int a = 0; a < M; ++a) {
          const bool kept = a >= f[0].lo && a < f[0].lo + f[0].n && b >= f[1].lo && b < f[1].lo + f[1].n &&
                            c >= f[2].lo && c < f[2].lo + f[2].n;
          if (!kept) ext_[e * m3_ + static_cast<std::size_t>(a + M * (b + M * c))] = -1;
        }
  }

  // Multiplicity of every free node: the number of extended grids holding it.
  std::vector<std::int32_t> mult(n_, 0);
  for (std::size_t i = 0; i < ne_ * m3_; ++i)
    if (ext_[i] >= 0) ++mult[static_cast<std::size_t>(ext_[i])];

  // Colours: elements of one colour have disjoint extended grids (no free node in common), so
  // their local solutions are added into z in parallel without races; greedy, in element order,
  // over the node -> elements incidence (8 colours on a structured mesh at p >= 3).
  std::vector<std::int32_t> colour(ne_, -1);
  {
    std::vector<std::int64_t> ptr(n_ + 1, 0);
    for (std::size_t g = 0; g < n_; ++g) ptr[g + 1] = ptr[g] + mult[g];
    std::vector<std::int32_t> inc(static_cast<std::size_t>(ptr[n_]));
    std::vector<std::int64_t> fill(ptr.begin(), ptr.end() - 1);
    for (std::size_t e = 0; e < ne_; ++e)
      for (std::size_t q = 0; q < m3_; ++q) {
        const std::int32_t g = ext_[e * m3_ + q];
        if (g >= 0) inc[static_cast<std::size_t>(fill[static_cast<std::size_t>(g)]++)] = static_cast<std::int32_t>(e);
      }
    std::vector<std::int64_t> stamp;  // stamp[c] == e: colour c is taken by a neighbour of e
    for (std::size_t e = 0; e < ne_; ++e) {
      for (std::size_t q = 0; q < m3_; ++q) {
        const std::int32_t g = ext_[e * m3_ + q];
        if (g < 0) continue;
        for (std::int64_t t = ptr[static_cast<std::size_t>(g)]; t < ptr[static_cast<std::size_t>(g) + 1]; ++t) {
          const std::int32_t c = colour[static_cast<std::size_t>(inc[static_cast<std::size_t>(t)])];
          if (c >= 0) stamp[static_cast<std::size_t>(c)] = static_cast<std::int64_t>(e);
        }
      }
      std::int32_t c = 0;
      while (static_cast<std::size_t>(c) < stamp.size() && stamp[static_cast<std::size_t>(c)] == static_cast<std::int64_t>(e)) ++c;
      if (static_cast<std::size_t>(c) == stamp.size()) stamp.push_back(-1);
      colour[e] = c;
    }
  }

  // Batches of the local solves: the elements of one colour in element order, detail::kFdmLanes
  // per batch; the factors interleaved lane by lane (fdm_batch.hpp); colour_batch_ delimits the
  // colours. Every batch runs on the full (N+2)^3 grid: an element next to the Dirichlet boundary
  // keeps fewer points along an axis ([lo, lo + n)), and its 1-D factors are embedded in the
  // full size with an identity block (S = 1, lambda = 1) on the points it does not keep. Those
  // points gather 0 (the sentinel), so their modes' coefficients are exactly 0 and the kept
  // points' values are exactly the kept-size solve's; the removed points are never written.
  // (Until stop 50 the batches were split by kept extents as well: with 8 extent classes per
  // colour, a 6^3 mesh filled 21% of the lanes.)
  {
    const auto L = static_cast<std::size_t>(precision_ == SchwarzPrecision::Single ? detail::fdm_lanes<float>
                                                                                  : detail::fdm_lanes<double>);
    lanes_ = static_cast<int>(L);
    // Elements in colour order (stable: element order within a colour), L per batch; a colour's
    // last batch is padded (-1). Every batch has the same layout: factors fac_stride_ values,
    // gather/scatter entries buf_stride_ (the (N+2)^3 points x L lanes).
    std::vector<std::pair<std::int32_t, std::int32_t>> order(ne_);  // (colour, element)
    for (std::size_t e = 0; e < ne_; ++e) order[e] = {colour[e], static_cast<std::int32_t>(e)};
    std::stable_sort(order.begin(), order.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    const auto Mz = static_cast<std::size_t>(M);
    fac_stride_ = 3 * (2 * Mz * Mz + Mz) * L;
    buf_stride_ = m3_ * L;
    colour_batch_.assign(1, 0);
    for (std::size_t i = 0; i < ne_;) {
      std::size_t j = i;
      while (j < ne_ && j - i < L && order[j].first == order[i].first) ++j;
      if (i > 0 && order[i].first != order[i - 1].first) colour_batch_.push_back(batch_elems_.size() / L);
      for (std::size_t l = 0; l < L; ++l) batch_elems_.push_back(i + l < j ? order[i + l].second : -1);
      i = j;
    }
    colour_batch_.push_back(batch_elems_.size() / L);
    const std::size_t nb = batch_elems_.size() / L;
    const double fac_bytes = precision_ == SchwarzPrecision::Single ? 4.0 : 8.0;
    require_memory(fac_bytes * static_cast<double>(nb * fac_stride_) +
                       4.0 * static_cast<double>(nb * buf_stride_) * (kind_ == SchwarzKind::RAS ? 2.0 : 1.0),
                   "SemSchwarz batched factors");
    bfac_.assign(nb * fac_stride_, 0.0);
    for (std::size_t bt = 0; bt < nb; ++bt) {
      double* out = bfac_.data() + bt * fac_stride_;
      const std::size_t n = Mz;
      for (int d = 0; d < 3; ++d) {
        for (std::size_t l = 0; l < L; ++l) {
          std::int32_t e = batch_elems_[bt * L + l];
          if (e < 0) e = batch_elems_[bt * L];  // padded lane: the first element's factors
          const FdmAxis& f = fdm_[3 * static_cast<std::size_t>(e) + static_cast<std::size_t>(d)];
          const auto lo = static_cast<std::size_t>(f.lo), nk = static_cast<std::size_t>(f.n);
          auto kept = [&](std::size_t i) { return i >= lo && i < lo + nk; };
          // S extended to the full n = N + 2 points: the kept block, identity elsewhere.
          auto S = [&](std::size_t i, std::size_t a2) {
            if (kept(i) && kept(a2)) return f.S[(i - lo) * nk + (a2 - lo)];
            return (i == a2 && !kept(i)) ? 1.0 : 0.0;
          };
          for (std::size_t i = 0; i < n; ++i) {
            for (std::size_t a2 = 0; a2 < n; ++a2) {
              out[(i * n + a2) * L + l] = S(i, a2);          // S(i, a)
              out[(n * n + i * n + a2) * L + l] = S(a2, i);  // S^T(i, a)
            }
            out[(2 * n * n + i) * L + l] = kept(i) ? f.lambda[i - lo] : 1.0;
          }
        }
        out += (2 * n * n + n) * L;
      }
    }
    if (precision_ == SchwarzPrecision::Single) {
      bfacf_.assign(bfac_.begin(), bfac_.end());
      std::vector<double>().swap(bfac_);
    }
    // Every extended point (a, b, c) of every element of every batch, with the element and the
    // point's position in the batches' interleaved layout (batch bt at bt buf_stride_, lane l's
    // point q = a + (N+2) (b + (N+2) c) at q lanes + l). Points an element does not keep have
    // ext_ = -1 (set above): they gather the sentinel and write nothing.
    auto for_each_kept = [&](auto&& fn) {
      for (std::size_t bt = 0; bt < nb; ++bt)
        for (std::size_t l = 0; l < L; ++l) {
          const std::int32_t e = batch_elems_[bt * L + l];
          if (e < 0) continue;
          std::size_t q = 0;
          for (int c = 0; c < M; ++c)
            for (int bb = 0; bb < M; ++bb)
              for (int aa = 0; aa < M; ++aa, ++q) fn(e, aa, bb, c, bt * buf_stride_ + q * L + l);
        }
    };
    // bidx_: the free node each entry gathers r from and adds its local solution to (-1: none).
    bidx_.assign(nb * buf_stride_, -1);
    for_each_kept([&](std::int32_t e, int aa, int bb, int c, std::size_t at) {
      bidx_[at] = ext_[static_cast<std::size_t>(e) * m3_ + static_cast<std::size_t>(aa + M * (bb + M * c))];
    });
    if (kind_ == SchwarzKind::RAS) {
      // The owner of a node is the first element having it among its own nodes; an entry adds
      // its value only where its element is the owner (sidx_), so every node is written once.
      std::vector<std::int32_t> owner(n_, -1);
      for (std::size_t e = 0; e < ne_; ++e)
        for (std::size_t q = 0; q < N3; ++q) {
          const std::int32_t g = l2g[e * N3 + q];
          if (static_cast<std::size_t>(g) < n_ && owner[static_cast<std::size_t>(g)] < 0)
            owner[static_cast<std::size_t>(g)] = static_cast<std::int32_t>(e);
        }
      sidx_.assign(nb * buf_stride_, -1);
      for_each_kept([&](std::int32_t e, int aa, int bb, int c, std::size_t at) {
        const bool own_node = aa >= 1 && aa <= N && bb >= 1 && bb <= N && c >= 1 && c <= N;
        if (own_node && bidx_[at] >= 0 && owner[static_cast<std::size_t>(bidx_[at])] == e) sidx_[at] = bidx_[at];
      });
    }
  }
  // Entries without a node read and write the sentinel index n_ (apply()).
  for (auto& g : bidx_)
    if (g < 0) g = static_cast<std::int32_t>(n_);
  for (auto& g : sidx_)
    if (g < 0) g = static_cast<std::int32_t>(n_);
  if (precision_ == SchwarzPrecision::Single) {
    rxf_.assign(n_ + 1, 0.0F);
    zxf_.assign(n_, 0.0F);
  } else {
    rx_.assign(n_ + 1, 0.0);
    zx_.assign(n_, 0.0);
  }
  if (kind_ == SchwarzKind::ASMWeighted) {
    wsqrt_.resize(n_);
    for (std::size_t g = 0; g < n_; ++g)
      wsqrt_[g] = 1.0 / std::sqrt(static_cast<double>(mult[g]));  // >= 1: its own element's grid
  }
  scratch_.assign(static_cast<std::size_t>(nt) * (2 * m3_ * static_cast<std::size_t>(lanes_) + 16), 0.0);  // >= floats
}

std::vector<std::int32_t> SemSchwarz::extended_nodes(std::size_t e) const {
  if (local_ != SchwarzLocalSolver::FDM)
    throw InvalidArgument("SemSchwarz::extended_nodes: the local solver is element (no extended grids: element_nodes)");
  if (e >= ne_)
    throw InvalidArgument("SemSchwarz::extended_nodes: element " + std::to_string(e) + " out of range (" +
                          std::to_string(ne_) + " elements)");
  return {ext_.begin() + static_cast<std::ptrdiff_t>(e * m3_), ext_.begin() + static_cast<std::ptrdiff_t>((e + 1) * m3_)};
}

const FdmAxis& SemSchwarz::fdm(std::size_t e, int d) const {
  if (local_ != SchwarzLocalSolver::FDM)
    throw InvalidArgument("SemSchwarz::fdm: the local solver is element (no FDM factors)");
  if (e >= ne_ || d < 0 || d > 2)
    throw InvalidArgument("SemSchwarz::fdm: element " + std::to_string(e) + ", axis " + std::to_string(d) +
                          " out of range (" + std::to_string(ne_) + " elements, axes 0..2)");
  return fdm_[3 * e + static_cast<std::size_t>(d)];
}

void SemSchwarz::apply(const double* r, double* z) const {
  if (local_ == SchwarzLocalSolver::Element) {
    if (precision_ == SchwarzPrecision::Single)
      apply_element<float>(r, z);
    else
      apply_element<double>(r, z);
    return;
  }
  if (precision_ == SchwarzPrecision::Single)
    apply_in<float>(r, z);
  else
    apply_in<double>(r, z);
}

template <typename T>
void SemSchwarz::apply_in(const double* r, double* z) const {
  const std::int32_t* add_to = kind_ == SchwarzKind::RAS ? sidx_.data() : bidx_.data();
  constexpr auto L = static_cast<std::size_t>(detail::fdm_lanes<T>);
  const T* factors = nullptr;
  if constexpr (std::is_same_v<T, float>)
    factors = bfacf_.data();
  else
    factors = bfac_.data();
  const auto n32 = static_cast<std::int32_t>(n_);
  const int M = A_->space().order() + 3;  // points per axis of every batch's grid
  // Scratch: the local arrays u, w of a batch, (N+2)^3 x L values each (sem_schwarz_apply.hpp).
  apply_coloured<T>(r, z, 2 * m3_ * L, [&](std::size_t bt, T* u, const T* rx, T* zx) {
    T* w = u + m3_ * L;
    const std::int32_t* __restrict idx = bidx_.data() + bt * buf_stride_;
    const std::int32_t* __restrict dst = add_to + bt * buf_stride_;
    const auto cnt = static_cast<std::int64_t>(buf_stride_);
    for (std::int64_t q = 0; q < cnt; ++q) u[q] = rx[idx[q]];
    detail::FdmBatchFactors<T> fb{};
    const T* fac = factors + bt * fac_stride_;
    for (int d = 0; d < 3; ++d) {
      fb.n[d] = M;
      const auto m = static_cast<std::size_t>(M);
      fb.S[d] = fac;
      fb.ST[d] = fac + m * m * L;
      fb.lambda[d] = fac + 2 * m * m * L;
      fac += (2 * m * m + m) * L;
    }
    detail::fdm_solve_batch<T>(fb, u, w);
    // Distinct nodes within a batch (its elements' grids are disjoint); the sentinel is skipped
    // (batches on other threads would race on it).
    for (std::int64_t q = 0; q < cnt; ++q)
      if (dst[q] != n32) zx[dst[q]] += u[q];
  });
}

template void SemSchwarz::apply_in<double>(const double*, double*) const;
template void SemSchwarz::apply_in<float>(const double*, double*) const;

}  // namespace elliptica::multigrid
