// Thin SVD shared by the FMM and the IFMM (src/fmm/thin_svd.hpp).
#include "fmm/thin_svd.hpp"

#include <string>

#include "elliptica/core/error.hpp"

namespace elliptica::fmm::detail {

ThinSvd thin_svd(const Eigen::MatrixXcd& A, bool want_v, const char* module, const char* what) {
  if (!A.allFinite())
    throw NumericalError(std::string(module) + ": non-finite entry in the " + what + " before its SVD");
  const unsigned flags = want_v ? unsigned(Eigen::ComputeThinU | Eigen::ComputeThinV) : unsigned(Eigen::ComputeThinU);
  Eigen::JacobiSVD<Eigen::MatrixXcd> svd(A, flags);
  ThinSvd r;
  r.s = svd.singularValues();
  r.U = svd.matrixU();
  if (want_v) r.V = svd.matrixV();
  if (svd.info() != Eigen::Success || !r.s.allFinite() || !r.U.allFinite() || !r.V.allFinite())
    throw NumericalError(std::string(module) + ": the SVD of the " + what + " (" + std::to_string(A.rows()) + " x " +
                         std::to_string(A.cols()) + ") did not converge");
  return r;
}

}  // namespace elliptica::fmm::detail
