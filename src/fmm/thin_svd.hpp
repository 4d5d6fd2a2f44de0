// Thin singular value decomposition of a complex matrix, the one SVD of the FMM's M2L compression
// (src/fmm/helmholtz_fmm.cpp) and of the IFMM's bases and fill-in (src/ifmm/compression.cpp).
#pragma once

#include <Eigen/Dense>

#include <complex>

namespace elliptica::fmm::detail {

/// A = U diag(s) V^*: s (k), descending and >= 0; U (m x k) and V (n x k) with orthonormal
/// columns, k = min(m, n); V is empty unless asked for.
struct ThinSvd {
  Eigen::VectorXd s;
  Eigen::MatrixXcd U, V;
};

/// Thin SVD of A (m x n, complex<double>) by Eigen's one-sided Jacobi SVD, QR-preconditioned
/// (backward error a small multiple of machine epsilon times ||A||). Not Eigen 3.4's
/// divide-and-conquer BDCSVD: it reads out of bounds in its deflation step when singular values
/// cluster (equal, 1e-15 apart, or many exact zeros), returning NaNs or crashing depending on
/// rounding (tests/test_thin_svd.cpp has matrices of that kind). For the tall or wide blocks used
/// here (at most a few hundred columns after the QR step) Jacobi costs about the same.
/// Throws NumericalError "<module>: non-finite entry in the <what> before its SVD" when A has a
/// NaN or infinite entry, and "<module>: the SVD of the <what> (m x n) did not converge" when the
/// result is not finite.
ThinSvd thin_svd(const Eigen::MatrixXcd& A, bool want_v, const char* module, const char* what);

}  // namespace elliptica::fmm::detail
