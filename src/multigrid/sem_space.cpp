/// @file sem_space.cpp
/// SemSpace (sem_operator.hpp): global numbering of the GLL nodes through the mesh's vertex
/// indices, Dirichlet nodes, coordinates, geometric factors, element colours.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "elliptica/core/error.hpp"
#include "elliptica/core/parallel.hpp"
#include "elliptica/core/resources.hpp"
#include "elliptica/core/text.hpp"
#include "elliptica/multigrid/sem_operator.hpp"

namespace elliptica::multigrid {
namespace {

/// Trilinear map of element e at reference point (r, s, t): position x and Jacobian J[a][d] =
/// dx_a / dr_d (sem_mesh.hpp: phi_c = (1 + sr r)(1 + ss s)(1 + st t) / 8, s = -1 for bit 0).
void trilinear(const HexMesh& m, std::size_t e, double r, double s, double t, double x[3], double J[3][3]) {
  const std::int64_t* v = &m.elements[8 * e];
  for (int a = 0; a < 3; ++a) {
    x[a] = 0;
    J[a][0] = J[a][1] = J[a][2] = 0;
  }
  for (int c = 0; c < 8; ++c) {
    const double sr = (c & 1) ? 1.0 : -1.0, ss = (c & 2) ? 1.0 : -1.0, st = (c & 4) ? 1.0 : -1.0;
    const double fr = 1.0 + sr * r, fs = 1.0 + ss * s, ft = 1.0 + st * t;
    const double phi = fr * fs * ft / 8.0;
    const double dr = sr * fs * ft / 8.0, ds = fr * ss * ft / 8.0, dt = fr * fs * st / 8.0;
    for (int a = 0; a < 3; ++a) {
      const double xc = m.vertices[3 * v[c] + a];
      x[a] += phi * xc;
      J[a][0] += dr * xc;
      J[a][1] += ds * xc;
      J[a][2] += dt * xc;
    }
  }
}

double det3(const double J[3][3]) {
  return J[0][0] * (J[1][1] * J[2][2] - J[1][2] * J[2][1]) - J[0][1] * (J[1][0] * J[2][2] - J[1][2] * J[2][0]) +
         J[0][2] * (J[1][0] * J[2][1] - J[1][1] * J[2][0]);
}

}  // namespace

SemSpace::SemSpace(HexMesh mesh, int order, int threads) : mesh_(std::move(mesh)), p_(order) {
  if (order < kMinSemOrder || order > kMaxSemOrder)
    throw InvalidArgument("SemSpace: order p must be in [" + std::to_string(kMinSemOrder) + ", " +
                          std::to_string(kMaxSemOrder) + "], got " + std::to_string(order));
  if (threads < 0) throw InvalidArgument("SemSpace: threads must be >= 0, got " + std::to_string(threads));
  check_hex_mesh(mesh_);
  const int p = p_, N = p + 1;
  n3_ = std::size_t(N) * N * N;
  const std::size_t ne = mesh_.num_elements();
  // Upper bound of the node count: every element's nodes distinct.
  const double bytes = double(ne) * double(n3_) * (4.0 + 48.0 + 24.0 + 8.0);
  require_memory(bytes, "SemSpace (order " + std::to_string(p) + ", " + std::to_string(ne) + " elements)");
  gll_ = gll_rule(p);
  D_ = differentiation_matrix(gll_.nodes);

  // --- global numbering by entity (vertex, edge, face, interior), in order of first appearance.
  const std::size_t nv = mesh_.num_vertices();
  std::vector<std::int64_t> vertex_id(nv, -1);
  std::map<std::array<std::int64_t, 2>, std::int64_t> edge_base;
  std::map<std::array<std::int64_t, 4>, std::int64_t> face_base;
  std::int64_t next = 0;
  std::vector<std::int64_t> l2g(ne * n3_);
  const int pm1 = p - 1;
  for (std::size_t e = 0; e < ne; ++e) {
    const std::int64_t* v = &mesh_.elements[8 * e];
    std::int64_t interior_base = -1;
    for (int k = 0; k < N; ++k)
      for (int j = 0; j < N; ++j)
        for (int i = 0; i < N; ++i) {
          const int idx[3] = {i, j, k};
          bool on[3];
          int nb = 0;
          for (int d = 0; d < 3; ++d) {
            on[d] = idx[d] == 0 || idx[d] == p;
            nb += on[d];
          }
          std::int64_t id = -1;
          if (nb == 3) {
            const int c = (i == p) + 2 * (j == p) + 4 * (k == p);
            std::int64_t& vid = vertex_id[v[c]];
            if (vid < 0) vid = next++;
            id = vid;
          } else if (nb == 2) {
            const int d = !on[0] ? 0 : (!on[1] ? 1 : 2);  // the edge's axis
            int base_c = 0;
            for (int a = 0; a < 3; ++a)
              if (a != d && idx[a] == p) base_c |= 1 << a;
            const std::int64_t va = v[base_c], vb = v[base_c | (1 << d)];
            const std::array<std::int64_t, 2> key{std::min(va, vb), std::max(va, vb)};
            auto [it, inserted] = edge_base.try_emplace(key, next);
            if (inserted) next += pm1;
            const int t = idx[d];  // 1..p-1 from corner va
            id = it->second + (va < vb ? t - 1 : p - 1 - t);
          } else if (nb == 1) {
            const int d = on[0] ? 0 : (on[1] ? 1 : 2);  // the face's normal axis
            const int au = d == 0 ? 1 : 0, av = d == 2 ? 1 : 2;  // the two in-face axes, u before v
            const int side = idx[d] == p ? (1 << d) : 0;
            auto corner = [&](int su, int sv) { return v[side | (su << au) | (sv << av)]; };
            std::array<std::int64_t, 4> key{corner(0, 0), corner(1, 0), corner(0, 1), corner(1, 1)};
            int u0 = 0, v0 = 0;
            for (int su = 0; su < 2; ++su)
              for (int sv = 0; sv < 2; ++sv)
                if (corner(su, sv) < corner(u0, v0)) {
                  u0 = su;
                  v0 = sv;
                }
            const std::int64_t vid_u = corner(1 - u0, v0), vid_v = corner(u0, 1 - v0);
            const int a_u = u0 == 0 ? idx[au] : p - idx[au], a_v = v0 == 0 ? idx[av] : p - idx[av];
            const int A = vid_u < vid_v ? a_u : a_v, B = vid_u < vid_v ? a_v : a_u;
            std::sort(key.begin(), key.end());
            auto [it, inserted] = face_base.try_emplace(key, next);
            if (inserted) next += std::int64_t(pm1) * pm1;
            id = it->second + std::int64_t(A - 1) * pm1 + (B - 1);
          } else {
            if (interior_base < 0) {
              interior_base = next;
              next += std::int64_t(pm1) * pm1 * pm1;
            }
            id = interior_base + (std::int64_t(i - 1) + std::int64_t(pm1) * ((j - 1) + std::int64_t(pm1) * (k - 1)));
          }
          l2g[e * n3_ + i + N * (j + N * k)] = id;
        }
  }
  if (next > std::int64_t(std::numeric_limits<std::int32_t>::max()))
    throw ResourceError("SemSpace: " + std::to_string(next) + " nodes exceed the 32-bit index range (2^31 - 1)");
  num_nodes_ = std::size_t(next);

  // --- Dirichlet nodes: every node on a face not shared by two elements.
  std::vector<std::uint8_t> dir(num_nodes_, 0);
  for (const ElementFace& bf : boundary_faces(mesh_)) {
    const int d = bf.face / 2, val = (bf.face % 2) ? p : 0;
    for (int k = 0; k < N; ++k)
      for (int j = 0; j < N; ++j)
        for (int i = 0; i < N; ++i) {
          const int idx[3] = {i, j, k};
          if (idx[d] == val) dir[l2g[std::size_t(bf.element) * n3_ + i + N * (j + N * k)]] = 1;
        }
  }
  // --- renumber: free nodes first (order kept), then the Dirichlet nodes.
  std::vector<std::int32_t> perm(num_nodes_);
  std::int64_t nf = 0;
  for (std::size_t g = 0; g < num_nodes_; ++g)
    if (!dir[g]) perm[g] = std::int32_t(nf++);
  num_free_ = std::size_t(nf);
  std::int64_t nd = nf;
  for (std::size_t g = 0; g < num_nodes_; ++g)
    if (dir[g]) perm[g] = std::int32_t(nd++);
  l2g_.resize(l2g.size());
  for (std::size_t i = 0; i < l2g.size(); ++i) l2g_[i] = perm[l2g[i]];
  l2g.clear();
  l2g.shrink_to_fit();

  // --- coordinates and geometric factors (elements in parallel; the checks record the first
  // inverted element, reported after the region).
  coords_.assign(num_nodes_ * 3, 0.0);
  G_.assign(ne * 6 * n3_, 0.0);
  const int nt = resolve_threads(threads);
  ParallelErrors errors;
  const auto& x1 = gll_.nodes;
  const auto& w1 = gll_.weights;
#pragma omp parallel for num_threads(nt) schedule(static) if (ne * n3_ > 20000)
  for (std::int64_t e = 0; e < std::int64_t(ne); ++e)
    errors.run([&] {
      double* G = &G_[std::size_t(e) * 6 * n3_];
      for (int k = 0; k < N; ++k)
        for (int j = 0; j < N; ++j)
          for (int i = 0; i < N; ++i) {
            const std::size_t q = std::size_t(i + N * (j + N * k));
            double x[3], J[3][3];
            trilinear(mesh_, std::size_t(e), x1[i], x1[j], x1[k], x, J);
            const double det = det3(J);
            if (!(det > 0.0))
              throw InvalidArgument("SemSpace: element " + std::to_string(e) + " (0-based) is inverted: Jacobian determinant " +
                                    text::shortest(det) + " at GLL point (" + std::to_string(i) + ", " +
                                    std::to_string(j) + ", " + std::to_string(k) + ") of order " + std::to_string(p));
            // Inverse by the adjugate: Jinv = adj(J) / det.
            double Ji[3][3];
            Ji[0][0] = (J[1][1] * J[2][2] - J[1][2] * J[2][1]) / det;
            Ji[0][1] = (J[0][2] * J[2][1] - J[0][1] * J[2][2]) / det;
            Ji[0][2] = (J[0][1] * J[1][2] - J[0][2] * J[1][1]) / det;
            Ji[1][0] = (J[1][2] * J[2][0] - J[1][0] * J[2][2]) / det;
            Ji[1][1] = (J[0][0] * J[2][2] - J[0][2] * J[2][0]) / det;
            Ji[1][2] = (J[0][2] * J[1][0] - J[0][0] * J[1][2]) / det;
            Ji[2][0] = (J[1][0] * J[2][1] - J[1][1] * J[2][0]) / det;
            Ji[2][1] = (J[0][1] * J[2][0] - J[0][0] * J[2][1]) / det;
            Ji[2][2] = (J[0][0] * J[1][1] - J[0][1] * J[1][0]) / det;
            // G = w |J| Jinv Jinv^T  (Jinv[d][a] = dr_d / dx_a)
            const double wdet = w1[i] * w1[j] * w1[k] * det;
            const int pairs[6][2] = {{0, 0}, {0, 1}, {0, 2}, {1, 1}, {1, 2}, {2, 2}};
            for (int c = 0; c < 6; ++c) {
              const int a = pairs[c][0], b = pairs[c][1];
              G[c * n3_ + q] = wdet * (Ji[a][0] * Ji[b][0] + Ji[a][1] * Ji[b][1] + Ji[a][2] * Ji[b][2]);
            }
          }
    });
  errors.rethrow();
  // Coordinates: written sequentially (a shared node is written by every element holding it, all
  // with the same bilinear face / linear edge map of the shared vertices: equal up to rounding).
  for (std::size_t e = 0; e < ne; ++e)
    for (int k = 0; k < N; ++k)
      for (int j = 0; j < N; ++j)
        for (int i = 0; i < N; ++i) {
          double x[3], J[3][3];
          trilinear(mesh_, e, x1[i], x1[j], x1[k], x, J);
          const std::size_t g = std::size_t(l2g_[e * n3_ + i + N * (j + N * k)]);
          for (int a = 0; a < 3; ++a) coords_[3 * g + a] = x[a];
        }

  // --- colours: greedy over vertex adjacency, elements in order.
  std::vector<std::int64_t> vstart(nv + 1, 0), velems(8 * ne);
  for (std::size_t i = 0; i < 8 * ne; ++i) ++vstart[mesh_.elements[i] + 1];
  for (std::size_t v = 0; v < nv; ++v) vstart[v + 1] += vstart[v];
  {
    std::vector<std::int64_t> fill(vstart.begin(), vstart.end() - 1);
    for (std::size_t e = 0; e < ne; ++e)
      for (int c = 0; c < 8; ++c) velems[fill[mesh_.elements[8 * e + c]]++] = std::int64_t(e);
  }
  std::vector<int> colour(ne, -1);
  std::vector<std::int64_t> used_by;  // used_by[c] == e: colour c taken by a neighbour of e
  for (std::size_t e = 0; e < ne; ++e) {
    for (int c = 0; c < 8; ++c) {
      const std::int64_t v = mesh_.elements[8 * e + c];
      for (std::int64_t k = vstart[v]; k < vstart[v + 1]; ++k) {
        const int cn = colour[velems[k]];
        if (cn >= 0) {
          if (std::size_t(cn) >= used_by.size()) used_by.resize(cn + 1, -1);
          used_by[cn] = std::int64_t(e);
        }
      }
    }
    int c = 0;
    while (std::size_t(c) < used_by.size() && used_by[c] == std::int64_t(e)) ++c;
    colour[e] = c;
    if (std::size_t(c) >= colours_.size()) colours_.resize(c + 1);
    colours_[c].push_back(std::int32_t(e));
  }
}

std::vector<std::uint8_t> SemSpace::dirichlet_mask() const {
  std::vector<std::uint8_t> m(num_nodes_, 0);
  for (std::size_t g = num_free_; g < num_nodes_; ++g) m[g] = 1;
  return m;
}

double SemSpace::jacobian_determinant(std::size_t e, std::size_t q) const {
  if (e >= num_elements() || q >= n3_)
    throw InvalidArgument("SemSpace::jacobian_determinant: element " + std::to_string(e) + " or node " +
                          std::to_string(q) + " out of range");
  const int N = p_ + 1;
  const int i = int(q % N), j = int((q / N) % N), k = int(q / (std::size_t(N) * N));
  double x[3], J[3][3];
  trilinear(mesh_, e, gll_.nodes[i], gll_.nodes[j], gll_.nodes[k], x, J);
  return det3(J);
}

std::vector<double> SemSpace::mass() const {
  std::vector<double> B(num_nodes_, 0.0);
  const int N = p_ + 1;
  const auto& w = gll_.weights;
  for (std::size_t e = 0; e < num_elements(); ++e)
    for (int k = 0; k < N; ++k)
      for (int j = 0; j < N; ++j)
        for (int i = 0; i < N; ++i) {
          const std::size_t q = std::size_t(i + N * (j + N * k));
          B[l2g_[e * n3_ + q]] += w[i] * w[j] * w[k] * jacobian_determinant(e, q);
        }
  return B;
}

}  // namespace elliptica::multigrid
