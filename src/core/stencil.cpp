/// @file stencil.cpp
/// Detection of the constant-coefficient stencil form of a CSR matrix (core/stencil.hpp).
#include "elliptica/core/stencil.hpp"

#include <cstdlib>
#include <string>

#include "elliptica/core/error.hpp"
#include "elliptica/core/sparse.hpp"

namespace elliptica {

namespace {

/// Whether row i of A has exactly the stencil's offsets and values.
bool row_is_stencil(const CsrMatrix& A, const StencilForm& S, std::int64_t i) {
  const std::int64_t b = A.row_ptr[static_cast<std::size_t>(i)], e = A.row_ptr[static_cast<std::size_t>(i) + 1];
  const auto K = static_cast<std::int64_t>(S.offset.size());
  if (e - b != K) return false;
  for (std::int64_t k = 0; k < K; ++k) {
    const auto p = static_cast<std::size_t>(b + k);
    if (A.col[p] - i != S.offset[static_cast<std::size_t>(k)] || A.val[p] != S.coef[static_cast<std::size_t>(k)])
      return false;
  }
  return true;
}

/// Calls f(i) for every interior row i of S until f returns false; returns whether all passed.
template <class F>
bool for_interior_rows(const StencilForm& S, F&& f) {
  const std::int64_t nx = S.n[0], ny = S.n[1], nz = S.n[2];
  for (std::int64_t z = S.reach[2]; z < nz - S.reach[2]; ++z)
    for (std::int64_t y = S.reach[1]; y < ny - S.reach[1]; ++y)
      for (std::int64_t x = S.reach[0]; x < nx - S.reach[0]; ++x)
        if (!f((z * ny + y) * nx + x)) return false;
  return true;
}

}  // namespace

std::shared_ptr<const StencilForm> detect_stencil(const CsrMatrix& A, int dim, const std::array<int, 3>& n) {
  if (dim < 1 || dim > 3) throw InvalidArgument("detect_stencil: dim must be 1, 2 or 3, got " + std::to_string(dim));
  auto S = std::make_shared<StencilForm>();
  S->dim = dim;
  std::int64_t rows = 1;
  for (int d = 0; d < dim; ++d) {
    if (n[static_cast<std::size_t>(d)] < 1)
      throw InvalidArgument("detect_stencil: grid axis " + std::to_string(d) + " has " +
                            std::to_string(n[static_cast<std::size_t>(d)]) + " points (must be >= 1)");
    S->n[static_cast<std::size_t>(d)] = n[static_cast<std::size_t>(d)];
    rows *= n[static_cast<std::size_t>(d)];
  }
  if (A.rows != A.cols || static_cast<std::int64_t>(A.rows) != rows || A.row_ptr.size() != A.rows + 1) return nullptr;
  const std::int64_t nx = S->n[0], ny = S->n[1], nz = S->n[2];
  // The central row gives the candidate stencil; its offsets decompose into shifts (dx, dy, dz)
  // with |dx| < nx / 2 and |dy| < ny / 2 (a shift that large cannot have interior rows anyway).
  const std::int64_t c = ((nz / 2) * ny + ny / 2) * nx + nx / 2;
  const std::int64_t b = A.row_ptr[static_cast<std::size_t>(c)], e = A.row_ptr[static_cast<std::size_t>(c) + 1];
  if (e <= b || e - b > 125) return nullptr;
  for (std::int64_t p = b; p < e; ++p) {
    const std::int64_t off = A.col[static_cast<std::size_t>(p)] - c;
    const std::int64_t plane = nx * ny;
    std::int64_t dz = off >= 0 ? (off + plane / 2) / plane : -((-off + plane / 2) / plane);
    std::int64_t r = off - dz * plane;
    std::int64_t dy = r >= 0 ? (r + nx / 2) / nx : -((-r + nx / 2) / nx);
    std::int64_t dx = r - dy * nx;
    if (dim < 3 && dz != 0) return nullptr;
    if (dim < 2 && dy != 0) return nullptr;
    const std::int64_t s[3] = {dx, dy, dz};
    for (int d = 0; d < 3; ++d) {
      const std::int64_t a = std::llabs(s[d]);
      if (a > 3 || 2 * a >= S->n[static_cast<std::size_t>(d)]) return nullptr;
      if (a > S->reach[static_cast<std::size_t>(d)]) S->reach[static_cast<std::size_t>(d)] = static_cast<int>(a);
    }
    S->offset.push_back(off);
    S->coef.push_back(A.val[static_cast<std::size_t>(p)]);
  }
  // The central row must itself be interior (true once 2 reach < n on every axis, checked above).
  const std::int64_t ix = nx - 2 * S->reach[0], iy = ny - 2 * S->reach[1], iz = nz - 2 * S->reach[2];
  if (ix < 1 || iy < 1 || iz < 1) return nullptr;
  S->interior_rows = static_cast<std::size_t>(ix * iy * iz);
  if (!for_interior_rows(*S, [&](std::int64_t i) { return row_is_stencil(A, *S, i); })) return nullptr;
  return S;
}

bool attach_stencil(CsrMatrix& A, int dim, const std::array<int, 3>& n) {
  A.stencil.reset();
  auto S = detect_stencil(A, dim, n);
  if (S == nullptr || 2 * S->interior_rows < A.rows) return false;
  A.stencil = std::move(S);
  return true;
}

bool stencil_matches(const CsrMatrix& A) {
  if (A.stencil == nullptr) return true;
  const StencilForm& S = *A.stencil;
  if (A.rows != A.cols || static_cast<std::int64_t>(A.rows) != S.n[0] * S.n[1] * S.n[2] ||
      A.row_ptr.size() != A.rows + 1)
    return false;
  return for_interior_rows(S, [&](std::int64_t i) { return row_is_stencil(A, S, i); });
}

}  // namespace elliptica
