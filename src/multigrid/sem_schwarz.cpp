/// @file sem_schwarz.cpp
/// SemSchwarz (sem_schwarz.hpp): the extended (overlap-1) grids of the elements built from
/// SemSpace's local-to-global map and the mesh's face adjacency, the FDM factors, and the
/// additive / restricted additive Schwarz application by a gather.
#include "elliptica/multigrid/sem_schwarz.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>

#include "elliptica/core/error.hpp"
#include "elliptica/core/parallel.hpp"
#include "elliptica/core/resources.hpp"
#include "elliptica/multigrid/sem_mesh.hpp"

namespace elliptica::multigrid {
namespace {

constexpr int kMaxExt = kMaxSemOrder + 3;  // N + 2 at the largest order
constexpr int kMaxExt3 = kMaxExt * kMaxExt * kMaxExt;

using FaceKey = std::array<std::int64_t, 4>;

FaceKey face_key(const HexMesh& m, std::size_t e, int f) {
  const auto c = hex_face_corners(f);
  FaceKey k{};
  for (int i = 0; i < 4; ++i) k[static_cast<std::size_t>(i)] = m.elements[8 * e + static_cast<std::size_t>(c[static_cast<std::size_t>(i)])];
  std::sort(k.begin(), k.end());
  return k;
}

/// Mean length of element e along reference axis d: the mean of its four edges along d.
double mean_extent(const HexMesh& m, std::size_t e, int d) {
  double s = 0.0;
  for (int c = 0; c < 8; ++c) {
    if ((c >> d) & 1) continue;
    const auto v0 = static_cast<std::size_t>(m.elements[8 * e + static_cast<std::size_t>(c)]);
    const auto v1 = static_cast<std::size_t>(m.elements[8 * e + static_cast<std::size_t>(c + (1 << d))]);
    double l2 = 0.0;
    for (int x = 0; x < 3; ++x) {
      const double dx = m.vertices[3 * v1 + static_cast<std::size_t>(x)] - m.vertices[3 * v0 + static_cast<std::size_t>(x)];
      l2 += dx * dx;
    }
    s += std::sqrt(l2);
  }
  return 0.25 * s;
}

}  // namespace

SemSchwarz::SemSchwarz(std::shared_ptr<const SemLaplacian> A, SchwarzKind kind, int threads)
    : A_(std::move(A)), kind_(kind), threads_(threads) {
  if (!A_) throw InvalidArgument("SemSchwarz: null SemLaplacian");
  if (threads < 0) throw InvalidArgument("SemSchwarz: threads must be >= 0, got " + std::to_string(threads));
  if (kind != SchwarzKind::ASM && kind != SchwarzKind::ASMWeighted && kind != SchwarzKind::RAS) throw InvalidArgument("SemSchwarz: unknown Schwarz kind");
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
          const double hl = lnb < 0 ? 0.0 : mean_extent(mesh, static_cast<std::size_t>(lnb), lf / 2);
          const double hr = rnb < 0 ? 0.0 : mean_extent(mesh, static_cast<std::size_t>(rnb), rf / 2);
          fdm_[3 * e + static_cast<std::size_t>(d)] = fdm_axis(p, hl, mean_extent(mesh, e, d), hr, lnb < 0, rnb < 0);
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

  // Gather map: node -> positions in the local-solution buffer.
  gather_ptr_.assign(n_ + 1, 0);
  if (kind_ != SchwarzKind::RAS) {
    for (std::size_t i = 0; i < ne_ * m3_; ++i)
      if (ext_[i] >= 0) ++gather_ptr_[static_cast<std::size_t>(ext_[i]) + 1];
    for (std::size_t g = 0; g < n_; ++g) gather_ptr_[g + 1] += gather_ptr_[g];
    gather_.resize(static_cast<std::size_t>(gather_ptr_[n_]));
    std::vector<std::int64_t> fill(gather_ptr_.begin(), gather_ptr_.end() - 1);
    for (std::size_t i = 0; i < ne_ * m3_; ++i)  // element order: each node's entries sorted
      if (ext_[i] >= 0) gather_[static_cast<std::size_t>(fill[static_cast<std::size_t>(ext_[i])]++)] = static_cast<std::int64_t>(i);
  } else {
    // RAS: the owner of a node is the first element having it among its own nodes.
    gather_.assign(n_, -1);
    for (std::size_t e = 0; e < ne_; ++e)
      for (int k = 0; k < N; ++k)
        for (int j = 0; j < N; ++j)
          for (int i = 0; i < N; ++i) {
            const std::int32_t g = l2g[e * N3 + static_cast<std::size_t>(i + N * (j + N * k))];
            if (static_cast<std::size_t>(g) >= n_ || gather_[static_cast<std::size_t>(g)] >= 0) continue;
            gather_[static_cast<std::size_t>(g)] =
                static_cast<std::int64_t>(e * m3_ + static_cast<std::size_t>((i + 1) + M * ((j + 1) + M * (k + 1))));
          }
    for (std::size_t g = 0; g < n_; ++g) gather_ptr_[g + 1] = static_cast<std::int64_t>(g + 1);
  }
  if (kind_ == SchwarzKind::ASMWeighted) {
    wsqrt_.resize(n_);
    for (std::size_t g = 0; g < n_; ++g)
      wsqrt_[g] = 1.0 / std::sqrt(static_cast<double>(gather_ptr_[g + 1] - gather_ptr_[g]));  // >= 1 entry: its own element
    rw_.resize(n_);
  }
  buf_.assign(ne_ * m3_, 0.0);
}

std::vector<std::int32_t> SemSchwarz::extended_nodes(std::size_t e) const {
  if (e >= ne_)
    throw InvalidArgument("SemSchwarz::extended_nodes: element " + std::to_string(e) + " out of range (" +
                          std::to_string(ne_) + " elements)");
  return {ext_.begin() + static_cast<std::ptrdiff_t>(e * m3_), ext_.begin() + static_cast<std::ptrdiff_t>((e + 1) * m3_)};
}

const FdmAxis& SemSchwarz::fdm(std::size_t e, int d) const {
  if (e >= ne_ || d < 0 || d > 2)
    throw InvalidArgument("SemSchwarz::fdm: element " + std::to_string(e) + ", axis " + std::to_string(d) +
                          " out of range (" + std::to_string(ne_) + " elements, axes 0..2)");
  return fdm_[3 * e + static_cast<std::size_t>(d)];
}

void SemSchwarz::apply(const double* r, double* z) const {
  const int nt = resolve_threads(threads_);
  const int M = A_->space().order() + 3;
  const auto nel = static_cast<std::int64_t>(ne_);
  const bool par = static_cast<std::ptrdiff_t>(n_) > kParallelMinRows;
  double* buf = buf_.data();
  const double* ws = wsqrt_.empty() ? nullptr : wsqrt_.data();
  if (ws != nullptr) {
    double* rw = rw_.data();
    const auto n = static_cast<std::int64_t>(n_);
#pragma omp parallel for schedule(static) num_threads(nt) if (par)
    for (std::int64_t g = 0; g < n; ++g) rw[g] = ws[g] * r[g];
    r = rw;
  }
  // Local solves (element e writes only its own slice of the buffer).
#pragma omp parallel num_threads(nt) if (par)
  {
    alignas(64) double u[kMaxExt3];
    alignas(64) double w[kMaxExt3];
#pragma omp for schedule(static)
    for (std::int64_t ie = 0; ie < nel; ++ie) {
      const auto e = static_cast<std::size_t>(ie);
      const FdmAxis* f = &fdm_[3 * e];
      const std::int32_t* ext = ext_.data() + e * m3_;
      double* out = buf + e * m3_;
      std::size_t c = 0;
      for (int k = f[2].lo; k < f[2].lo + f[2].n; ++k)
        for (int j = f[1].lo; j < f[1].lo + f[1].n; ++j)
          for (int i = f[0].lo; i < f[0].lo + f[0].n; ++i) {
            const std::int32_t g = ext[i + M * (j + M * k)];
            u[c++] = g >= 0 ? r[g] : 0.0;
          }
      fdm_solve(f[0], f[1], f[2], u, w);
      c = 0;
      for (int k = f[2].lo; k < f[2].lo + f[2].n; ++k)
        for (int j = f[1].lo; j < f[1].lo + f[1].n; ++j)
          for (int i = f[0].lo; i < f[0].lo + f[0].n; ++i) out[i + M * (j + M * k)] = u[c++];
    }
  }
  // Gather: every node sums its entries in a fixed order.
  const auto n = static_cast<std::int64_t>(n_);
  const std::int64_t* ptr = gather_ptr_.data();
  const std::int64_t* pos = gather_.data();
#pragma omp parallel for schedule(static) num_threads(nt) if (par)
  for (std::int64_t g = 0; g < n; ++g) {
    double s = 0.0;
    for (std::int64_t q = ptr[g]; q < ptr[g + 1]; ++q) s += buf[pos[q]];
    z[g] = ws != nullptr ? ws[g] * s : s;
  }
}

}  // namespace elliptica::multigrid
