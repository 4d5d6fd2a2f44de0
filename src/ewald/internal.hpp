#pragma once
// Internal building blocks of the spectral Ewald plan (not installed).
#include <array>
#include <cstddef>
#include <functional>
#include <vector>

#include "elliptica/ewald/ewald.hpp"

namespace elliptica::ewald::detail {

constexpr double kPi = 3.14159265358979323846;
constexpr double kSqrtPi = 1.77245385090551602730;

// ---------------------------------------------------------------------------------------------
// Kaiser-Bessel window (window.cpp)
//   w(z) = I0(beta sqrt(1 - (z/a)^2)) / I0(beta) for |z| <= a = P h / 2, zero outside,
//   w_hat(k) = 2a sinh(sqrt(beta^2 - k^2 a^2)) / (sqrt(beta^2 - k^2 a^2) I0(beta))   (k a < beta)
//            = 2a sin(sqrt(k^2 a^2 - beta^2)) / (sqrt(k^2 a^2 - beta^2) I0(beta))   (k a > beta).
// A source at t = x/h (grid units) touches the P grid points j0 + m, m = 0..P-1, with
// j0 = floor(t - P/2) + 1; with s = t - P/2 - floor(t - P/2) in [0,1) the weight of point m is
// w((m + 1 - P/2 - s) h). For each m that is one smooth function of s on [0,1] ("bin" m), which we
// replace by a polynomial of degree nu in x = 2s - 1 (Chebyshev interpolation converted to the
// monomial basis) and evaluate with Horner's rule for all m at once (seed 000, section 4).
struct Window {
  int P = 0;
  double beta = 0;
  int degree = 0;
  std::vector<double> coef;  // [degree + 1][P]: coef[d * P + m] multiplies x^d for bin m
  double max_poly_error = 0;  // max |poly - exact| over a fine sampling, relative to w(0) = 1

  // Exact window value at normalised offset u = z/a in [-1, 1].
  double exact(double u) const;
  // Weights of the P points for fractional position s in [0,1): out[m], m = 0..P-1.
  inline void weights(double s, double* out) const {
    const double x = 2.0 * s - 1.0;
    const double* c = coef.data() + static_cast<std::size_t>(degree) * P;
    for (int m = 0; m < P; ++m) out[m] = c[m];
    for (int d = degree - 1; d >= 0; --d) {
      c -= P;
      for (int m = 0; m < P; ++m) out[m] = out[m] * x + c[m];
    }
  }
};

// Chebyshev interpolant of degree n of f on [a, b], as monomial coefficients in the local variable
// t = (2x - a - b)/(b - a) in [-1, 1] (coefficient d multiplies t^d).
std::vector<double> chebyshev_monomial(const std::function<double(double)>& f, double a, double b, int n);

// Builds the piecewise polynomial of the given degree; degree <= 0 chooses the smallest degree
// whose maximal error is below `target` (capped at 24).
Window make_window(int P, double beta, int degree, double target);
// Fourier transform of the (exact, truncated) window with half-width a, at wavenumber k.
double window_hat(double k, double a, double beta);
// The same without the constant factor 2a / I0(beta) (for ratios of transforms).
double window_hat_shape(double k, double a, double beta);

// ---------------------------------------------------------------------------------------------
// Parameter selection (params.cpp)
struct TuneInput {
  Kernel kernel = Kernel::Laplace;
  std::array<double, 3> box{1, 1, 1};
  std::size_t n_sources = 0, n_targets = 0;
  double q2_density = 0;       // effective strength density rho_Q = sum |q|^2 / volume seen by targets
  double self_q2 = 0;          // mean |q|^2 of sources that are also targets (0 for separate targets)
  bool field = false;          // Laplace field requested (error targets for phi and E)
  double eps_phi = 0;          // absolute RMS target for the potential / velocity
  double eps_field = 0;        // absolute RMS target for the field (if field)
  int threads = 1;
  const Options* overrides = nullptr;
};

// Error estimates (RMS, random-source model; see params.cpp for the derivation).
double est_real(Kernel k, bool field, double rho, double xi, double rc, double V);
double est_fourier(Kernel k, bool field, double rho, double xi, double kmax);
double est_window(Kernel k, bool field, double rho, double xi, const std::array<double, 3>& box,
                  const std::array<int, 3>& M, int P, double beta, double self_q2);
// Rough RMS size of the result (for the pilot of a relative tolerance).
double typical_magnitude(Kernel k, bool field, double rho, const std::array<double, 3>& box, std::size_t n);

Params choose_params(const TuneInput& in);
// Smallest M >= m that is even and has no prime factor above 7.
int fft_friendly(int m);

// ---------------------------------------------------------------------------------------------
// Near field (kernels.cpp)
struct CellList {
  std::array<int, 3> n{1, 1, 1};      // cells per axis
  std::array<double, 3> inv_width{1, 1, 1};
  std::vector<int> start;             // size ncells + 1, points of cell c are [start[c], start[c+1])
  std::vector<int> perm;              // sorted position -> original index
  std::vector<double> x, y, z;        // wrapped coordinates, sorted by cell
  int ncells() const { return n[0] * n[1] * n[2]; }
};
// Builds a cell list of n cells per axis over the box; coordinates are wrapped into [0, L).
CellList build_cells(ConstMatrixView<double> pts, const std::array<double, 3>& box, const std::array<int, 3>& n);

// Real-space sums over pairs with r < rc (r = 0 pairs give the self limit instead).
// Sources' strengths are given sorted like `src` (ncomp per point). Output per sorted target:
// Laplace: out[t*ncomp_out + 0] = phi (+ field in 1..3 if field), stokeslet: 3 components.
void p2p(Kernel k, bool field, const CellList& src, const std::vector<double>& strengths_sorted,
         const CellList& trg, double xi, double rc, const std::array<double, 3>& box, int threads,
         std::vector<double>& out_sorted);

// Real-space interaction of a source with its own periodic images p != 0 that lie beyond r_c
// (|pL| >= r_c): a constant per kernel (Laplace: out[0]; stokeslet: the 3x3 matrix out[3i+j]).
// P2P holds the images within r_c; this completes the real-space sum of a source that is also a
// target, whose own images are not at random positions (decisive in thin boxes, where they sit
// just beyond a cutoff bounded by the short side). The field's sum vanishes by symmetry.
void self_images(Kernel k, double xi, double rc, const std::array<double, 3>& box, double out[9]);

}  // namespace elliptica::ewald::detail
