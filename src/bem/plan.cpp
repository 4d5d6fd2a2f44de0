/// @file plan.cpp
/// HelmholtzBem (include/elliptica/bem/plan.hpp): one plan over the dense or the FMM
/// Burton-Miller operator, with the block-diagonal preconditioner, solved by GMRES.
#include "elliptica/bem/plan.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>
#include <numbers>
#include <sstream>
#include <string>
#include <utility>

#include "elliptica/bem/block_diagonal.hpp"
#include "elliptica/bem/fmm_operator.hpp"
#include "elliptica/core/error.hpp"
#include "elliptica/fmm/octree.hpp"
#include "solve_common.hpp"
#include "validate.hpp"

namespace elliptica::bem {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Counts the applications of a LinearOperator or Preconditioner and their wall time (GMRES calls
/// apply from one thread).
template <class Base>
class Timed final : public Base {
 public:
  explicit Timed(const Base& inner) : inner_(inner) {}
  std::size_t size() const override { return inner_.size(); }
  bool is_fixed() const override { return inner_.is_fixed(); }
  void apply(const cplx* x, cplx* y) const override {
    const auto t0 = Clock::now();
    inner_.apply(x, y);
    seconds += since(t0);
    ++count;
  }
  mutable double seconds = 0;
  mutable long count = 0;

 private:
  const Base& inner_;
};

/// The impedance (Robin) system of plan.hpp with two operators: y = A_N x + alpha A_D (gamma o x),
/// gamma = -i k beta per element (the FMM path; the dense path adds the matrices).
class RobinSystem final : public LinearOperator<cplx> {
 public:
  RobinSystem(const LinearOperator<cplx>& an, const LinearOperator<cplx>& ad, cplx alpha, const std::vector<cplx>& gamma)
      : an_(an), ad_(ad), alpha_(alpha), gamma_(gamma) {}
  std::size_t size() const override { return an_.size(); }
  void apply(const cplx* x, cplx* y) const override {
    const std::size_t n = size();
    an_.apply(x, y);
    std::vector<cplx> gx(n), t(n);
    for (std::size_t i = 0; i < n; ++i) gx[i] = gamma_[i] * x[i];
    ad_.apply(gx.data(), t.data());
    for (std::size_t i = 0; i < n; ++i) y[i] += alpha_ * t[i];
  }

 private:
  const LinearOperator<cplx>& an_;
  const LinearOperator<cplx>& ad_;
  cplx alpha_;
  const std::vector<cplx>& gamma_;
};

std::vector<cplx> apply_operator(const LinearOperator<cplx>& A, const std::vector<cplx>& x) {
  std::vector<cplx> y(x.size());
  A.apply(x.data(), y.data());
  return y;
}

}  // namespace

namespace {
/// The point source's checks: k, mesh, a finite position and amplitude, and x0 outside `body`.
void check_point_source(const Mesh& body, cplx k, const std::array<double, 3>& x0, cplx amplitude) {
  validate_wavenumber(k);
  detail::validate_mesh(body);
  for (double c : x0)
    if (!std::isfinite(c)) throw InvalidArgument("bem: point source position must be finite");
  if (!std::isfinite(amplitude.real()) || !std::isfinite(amplitude.imag()))
    throw InvalidArgument("bem: point source amplitude must be finite");
  const PointLocation where = locate_point(body, x0);
  if (where != PointLocation::kOutside)
    throw InvalidArgument(std::string("bem: the point source lies ") +
                          (where == PointLocation::kInside ? "inside" : "on the surface of") + " the scatterer");
}

/// The point source's data on the elements of `mesh` (no location check).
IncidentField point_source_data(const Mesh& mesh, cplx k, const std::array<double, 3>& x0, cplx amplitude) {
  const std::size_t n = mesh.num_elements();
  IncidentField f;
  f.u.resize(n);
  f.dudn.resize(n);
  const cplx ik = cplx(0, 1) * k;
  for (std::size_t e = 0; e < n; ++e) {
    const auto x = mesh.centroid(e);
    const auto nn = mesh.normal(e);
    const double v[3] = {x[0] - x0[0], x[1] - x0[1], x[2] - x0[2]};
    const double r = std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    if (!(r > 0)) throw InvalidArgument("bem: the point source lies on the surface of the scatterer (centroid of element " + std::to_string(e) + ")");
    f.u[e] = amplitude * std::exp(ik * r) / (4 * std::numbers::pi * r);
    f.dudn[e] = f.u[e] * (ik - 1.0 / r) * (v[0] * nn[0] + v[1] * nn[1] + v[2] * nn[2]) / r;
  }
  return f;
}
}  // namespace

IncidentField point_source(const Mesh& mesh, cplx k, std::array<double, 3> x0, cplx amplitude) {
  check_point_source(mesh, k, x0, amplitude);
  return point_source_data(mesh, k, x0, amplitude);
}

OperatorKind operator_kind_from_string(const std::string& s) {
  if (s == "auto") return OperatorKind::Auto;
  if (s == "dense") return OperatorKind::Dense;
  if (s == "fmm") return OperatorKind::Fmm;
  throw InvalidArgument("bem: operator must be auto, dense or fmm, got '" + s + "'");
}
PreconditionerKind preconditioner_kind_from_string(const std::string& s) {
  if (s == "none") return PreconditionerKind::None;
  if (s == "bd") return PreconditionerKind::BlockDiagonal;
  if (s == "ifmm") return PreconditionerKind::Ifmm;
  throw InvalidArgument("bem: preconditioner must be none, bd or ifmm, got '" + s + "'");
}
std::string to_string(OperatorKind k) {
  switch (k) {
    case OperatorKind::Auto: return "auto";
    case OperatorKind::Dense: return "dense";
    case OperatorKind::Fmm: return "fmm";
  }
  return "?";
}
std::string to_string(PreconditionerKind k) {
  switch (k) {
    case PreconditionerKind::None: return "none";
    case PreconditionerKind::BlockDiagonal: return "bd";
    case PreconditionerKind::Ifmm: return "ifmm";
  }
  return "?";
}

struct HelmholtzBem::Impl {
  Mesh mesh;
  cplx k;
  cplx alpha;
  HelmholtzBemOptions opt;
  HelmholtzBemSetup setup;
  CMatrix dense;                 ///< dense operator: the system matrix (empty with the FMM)
  std::unique_ptr<DenseMatrixOperator> dense_op;
  std::unique_ptr<HelmholtzBemFmmOperator> fmm_op;
  std::unique_ptr<BlockDiagonalPreconditioner> bd;
  std::unique_ptr<IfmmPreconditioner> ifmm;
  const LinearOperator<cplx>* A = nullptr;
  std::vector<cplx> ones_image;  ///< sound-hard: A 1 (GMRES deflation); empty for sound-soft
  double kd = 0;                 ///< |k| body_size(mesh)
  FmmOperatorOptions fmm_options;  ///< those of fmm_op (FMM operator), for the companion
  std::vector<cplx> gamma;       ///< impedance: -i k beta per element; empty when rigid
  // the sound-soft companion A_D (plan.hpp, solve_radiation): dense matrix or FMM operator
  CMatrix dense_d;
  std::unique_ptr<DenseMatrixOperator> dense_d_op;
  std::unique_ptr<HelmholtzBemFmmOperator> fmm_d;
  const LinearOperator<cplx>* Ad = nullptr;
  std::once_flag companion_once;
  std::unique_ptr<RobinSystem> robin;  ///< impedance with the FMM operator: A_N + alpha A_D diag(gamma)
  std::vector<MirrorImage> images;     ///< of the ground and symmetry planes (empty: free space)
  Mesh whole;                          ///< with symmetry planes: the mesh and its symmetry images
  const Mesh& body() const { return opt.symmetry.empty() ? mesh : whole; }
  const std::vector<MirrorImage>* images_or_null() const { return images.empty() ? nullptr : &images; }

  void build_companion() {
    const auto t0 = Clock::now();
    if (setup.op == OperatorKind::Dense) {
      detail::DenseSystem sys = detail::assemble_dense_system(mesh, k, BoundaryCondition::Dirichlet, alpha,
                                                              opt.quadrature, kd, opt.threads, images_or_null());
      dense_d = std::move(sys.A);
      dense_d_op = std::make_unique<DenseMatrixOperator>(dense_d, opt.threads);
      Ad = dense_d_op.get();
    } else {
      FmmOperatorOptions fo = fmm_options;
      fo.bc = BoundaryCondition::Dirichlet;
      fo.progress = {};
      fmm_d = std::make_unique<HelmholtzBemFmmOperator>(mesh, k, fo);
      Ad = fmm_d.get();
    }
    setup.companion_built = true;
    setup.companion_seconds = since(t0);
  }
};

void HelmholtzBem::validate(const Mesh& mesh, cplx k, const HelmholtzBemOptions& opt) {
  validate_wavenumber(k);
  detail::validate_mesh(mesh);
  detail::validate_quadrature(opt.quadrature);
  detail::validate_gmres_options(opt.gmres);
  // the whole body of a symmetric model sets the low-frequency rules and the coupling
  const Mesh whole = opt.symmetry.empty() ? Mesh{} : whole_body(mesh, opt.symmetry);
  const Mesh& body = opt.symmetry.empty() ? mesh : whole;
  detail::validate_low_frequency(opt.bc, body, k);
  if (opt.threads < 0)
    throw InvalidArgument("bem: threads must be >= 0 (0: all available), got " + std::to_string(opt.threads));
  const auto& f = opt.op.fmm;
  if (f.tree.max_leaf < 1)
    throw InvalidArgument("bem: max_leaf (op.fmm.tree.max_leaf) must be >= 1, got " + std::to_string(f.tree.max_leaf));
  if (opt.precond.bd_level < -1) throw InvalidArgument("bem: bd_level must be >= 0 or -1 (leaf level)");
  if (!opt.admittance.empty()) {
    if (opt.bc != BoundaryCondition::Neumann)
      throw InvalidArgument("bem: an impedance surface (admittance) needs bc neumann: the unknown is the surface "
                            "pressure, as for a rigid body");
    if (opt.admittance.size() != 1 && opt.admittance.size() != mesh.num_elements())
      throw InvalidArgument("bem: admittance has " + std::to_string(opt.admittance.size()) +
                            " values; give 1 (every element) or one per element (" +
                            std::to_string(mesh.num_elements()) + ")");
    for (std::size_t e = 0; e < opt.admittance.size(); ++e) {
      const cplx b = opt.admittance[e];
      if (!std::isfinite(b.real()) || !std::isfinite(b.imag()))
        throw InvalidArgument("bem: admittance of element " + std::to_string(e) + " is not finite");
      if (b.real() < 0)
        throw InvalidArgument("bem: admittance of element " + std::to_string(e) +
                              " has a negative real part (an active surface, Re Z < 0): only passive surfaces "
                              "(Re beta >= 0) are accepted, where the exterior problem is uniquely solvable");
    }
    if (opt.precond.kind == PreconditionerKind::Ifmm)
      throw InvalidArgument("bem: the IFMM preconditioner does not take an impedance surface (admittance): use bd or none");
  }
  if (opt.ground) bem::validate(*opt.ground, mesh);
  for (const auto& p : opt.symmetry) validate_symmetry_plane(p, mesh);
  if (opt.ground || !opt.symmetry.empty()) {
    std::vector<MirrorPlane> planes = opt.symmetry;
    if (opt.ground) planes.push_back(*opt.ground);
    (void)mirror_images(planes);  // at most 3, distinct axes
    if (opt.precond.kind == PreconditionerKind::Ifmm)
      throw InvalidArgument("bem: ground and symmetry planes (image Green's functions) do not work with the IFMM "
                            "preconditioner: use precond bd or none");
  }
  if (opt.precond.kind == PreconditionerKind::Ifmm) {
    if (opt.op.kind == OperatorKind::Dense)
      throw InvalidArgument("bem: the IFMM preconditioner is built on the FMM operator: use op.kind fmm or auto (--operator fmm)");
    bem::validate(opt.precond.ifmm);
  }
  if (f.tolerance != 0 && !(f.tolerance > 1e-14 && f.tolerance < 0.5))
    throw InvalidArgument("bem: fmm_tolerance (op.fmm.tolerance) must be in (1e-14, 0.5) or 0 (automatic)");
  if (f.order < 0) throw InvalidArgument("bem: fmm_order (op.fmm.order) must be >= 0 (0: automatic)");
  (void)detail::coupling(opt.alpha, body, k);
  const double epw = elements_per_wavelength(mesh, k);
  if (epw < 0.5)
    throw InvalidArgument("bem: the mesh has " + std::to_string(epw) + " elements per wavelength at k = " +
                          std::to_string(k.real()) +
                          ": at least 0.5 are needed for a meaningful solution (6 or more recommended)");
}

HelmholtzBem::HelmholtzBem(Mesh mesh, cplx k, HelmholtzBemOptions opt) : impl_(std::make_unique<Impl>()) {
  auto& I = *impl_;
  validate(mesh, k, opt);
  I.mesh = std::move(mesh);
  I.k = k;
  I.opt = std::move(opt);
  if (!I.opt.symmetry.empty()) I.whole = whole_body(I.mesh, I.opt.symmetry);
  {
    std::vector<MirrorPlane> planes = I.opt.symmetry;
    if (I.opt.ground) planes.push_back(*I.opt.ground);
    if (!planes.empty()) I.images = mirror_images(planes);
  }
  I.alpha = detail::coupling(I.opt.alpha, I.body(), k);
  // the static low-frequency correction (helmholtz.hpp, "Low frequency" (1)) maps 1 to its static
  // image 1; with an antisymmetric plane the folded operator's 1 is +1 on the part and -1 on its
  // mirror image, whose static image is not 1: no correction there (kd = infinity)
  bool antisymmetric = false;
  for (const auto& p : I.opt.symmetry) antisymmetric = antisymmetric || p.reflection < 0;
  const int threads = I.opt.threads;
  const std::size_t n = I.mesh.num_elements();
  auto& S = I.setup;
  S.elements = n;
  S.op = I.opt.op.kind;
  if (S.op == OperatorKind::Auto)
    S.op = n <= I.opt.op.dense_max_elements && I.opt.precond.kind != PreconditionerKind::Ifmm ? OperatorKind::Dense
                                                                                                : OperatorKind::Fmm;
  S.precond = I.opt.precond.kind;
  const auto& progress = I.opt.progress;

  const fmm::OctreeOptions tree_opt = I.opt.op.fmm.tree;
  I.kd = std::abs(k) * body_size(I.body());
  const double correction_kd = antisymmetric ? std::numeric_limits<double>::infinity() : I.kd;
  if (!I.opt.admittance.empty()) {
    S.impedance = true;
    I.gamma.resize(n);
    for (std::size_t e = 0; e < n; ++e)
      I.gamma[e] = cplx(0, -1) * k * I.opt.admittance[I.opt.admittance.size() == 1 ? 0 : e];
  }
  const auto t0 = Clock::now();
  if (S.op == OperatorKind::Dense) {
    if (progress) progress("assembly", 0.0);
    detail::DenseSystem sys =
        detail::assemble_dense_system(I.mesh, k, I.opt.bc, I.alpha, I.opt.quadrature, correction_kd, threads,
                                      I.images_or_null());
    I.dense = std::move(sys.A);
    I.ones_image = std::move(sys.ones_image);
    if (S.impedance) {
      // A = A_N + alpha A_D diag(gamma) (plan.hpp, admittance); A_D is kept for solve_radiation
      I.build_companion();
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j) I.dense(i, j) += I.alpha * I.dense_d(i, j) * I.gamma[j];
      I.ones_image = I.dense.apply(std::vector<cplx>(n, cplx(1, 0)), threads);
    }
    I.dense_op = std::make_unique<DenseMatrixOperator>(I.dense, threads);
    I.A = I.dense_op.get();
    S.operator_bytes = (I.dense.data.size() + I.dense_d.data.size()) * sizeof(cplx);
    if (progress) progress("assembly", 1.0);
  } else {
    FmmOperatorOptions fo;
    fo.bc = I.opt.bc;
    fo.alpha = I.alpha;
    fo.quadrature = I.opt.quadrature;
    fo.fmm = I.opt.op.fmm;
    fo.threads = threads;
    fo.correction_kd = correction_kd;  // the whole body's k D (symmetry planes), as the dense path
    fo.planes = I.opt.symmetry;  // the image Green's function: the planes in the order of I.images
    if (I.opt.ground) fo.planes.push_back(*I.opt.ground);
    const bool automatic_tolerance = !(fo.fmm.tolerance > 0);
    if (automatic_tolerance) fo.fmm.tolerance = std::min(I.opt.gmres.rtol, 1e-3);
    if (progress) {
      progress("fmm", 0.0);
      fo.progress = [&progress](double f) { progress("near field", f); };
    }
    try {
      I.fmm_op = std::make_unique<HelmholtzBemFmmOperator>(I.mesh, k, fo);
    } catch (const fmm::ToleranceUnavailable& e) {
      if (!automatic_tolerance) throw;
      // the FMM refuses its tolerance before the expensive set-up; name where it came from
      std::ostringstream os;
      os << "bem: the automatic FMM tolerance min(gmres_rtol, 1e-3) = " << fo.fmm.tolerance << " (gmres_rtol "
         << I.opt.gmres.rtol << ") is not available: " << e.what()
         << " (use a larger gmres_rtol, an explicit fmm_tolerance, or the dense operator)";
      throw InvalidArgument(os.str());
    }
    I.fmm_options = fo;
    I.A = I.fmm_op.get();
    I.ones_image = I.fmm_op->ones_image();
    if (S.impedance) {
      I.build_companion();
      I.robin = std::make_unique<RobinSystem>(*I.fmm_op, *I.Ad, I.alpha, I.gamma);
      I.A = I.robin.get();
      I.ones_image = apply_operator(*I.A, std::vector<cplx>(n, cplx(1, 0)));
    }
    S.fmm_seconds = I.fmm_op->fmm_setup_seconds();
    S.fmm_tolerance = fo.fmm.tolerance;
    S.fmm_order = I.fmm_op->fmm().order();
    S.fmm_max_rank = I.fmm_op->fmm().max_m2l_rank();
    S.near_entries = I.fmm_op->near_entries();
    S.operator_bytes = I.fmm_op->near_field_bytes() + (I.fmm_d ? I.fmm_d->near_field_bytes() : 0);
    S.leaf_level = I.fmm_op->fmm().tree().leaf_level();
  }
  S.operator_seconds = since(t0);

  if (S.precond == PreconditionerKind::BlockDiagonal) {
    if (progress) progress("bd", 0.0);
    const auto t1 = Clock::now();
    std::unique_ptr<fmm::Octree> own_tree;
    const fmm::Octree* tree = nullptr;
    BlockFunction block;
    if (I.fmm_op) {
      // the FMM's octree is over the mesh's collocation points; with mirror planes it is over the
      // images' too, and the blocks need one over the unknowns only
      if (I.images.empty()) {
        tree = &I.fmm_op->fmm().tree();
      } else {
        own_tree = std::make_unique<fmm::Octree>(centroids(I.mesh), tree_opt);
        tree = own_tree.get();
      }
      const HelmholtzBemFmmOperator* op = I.fmm_op.get();
      const HelmholtzBemFmmOperator* opd = I.fmm_d.get();
      if (S.impedance) {
        const cplx alpha = I.alpha;
        const std::vector<cplx>* gamma = &I.gamma;
        block = [op, opd, alpha, gamma](const std::vector<std::int64_t>& r, const std::vector<std::int64_t>& c,
                                        cplx* out) {
          op->entries(r, c, out);
          std::vector<cplx> d(r.size() * c.size());
          opd->entries(r, c, d.data());
          for (std::size_t a = 0; a < r.size(); ++a)
            for (std::size_t b = 0; b < c.size(); ++b)
              out[a * c.size() + b] += alpha * d[a * c.size() + b] * (*gamma)[static_cast<std::size_t>(c[b])];
        };
      } else {
        block = [op](const std::vector<std::int64_t>& r, const std::vector<std::int64_t>& c, cplx* out) {
          op->entries(r, c, out);
        };
      }
    } else {
      own_tree = std::make_unique<fmm::Octree>(centroids(I.mesh), tree_opt);
      tree = own_tree.get();
      block = dense_block_function(I.dense);
    }
    I.bd = std::make_unique<BlockDiagonalPreconditioner>(*tree, block, I.opt.precond.bd_level, threads);
    S.precond_seconds = since(t1);
    S.leaf_level = tree->leaf_level();
    S.bd_level = I.bd->level();
    S.bd_blocks = I.bd->num_blocks();
    S.bd_largest_block = I.bd->largest_block();
    for (int id : tree->level_nodes(S.bd_level)) {
      const auto& nd = tree->nodes()[static_cast<std::size_t>(id)];
      const auto m = static_cast<std::size_t>(nd.end - nd.begin);
      S.precond_bytes += m * m * sizeof(cplx);
    }
    if (progress) progress("bd", 1.0);
  }
  if (S.precond == PreconditionerKind::Ifmm) {
    const auto t1 = Clock::now();
    IfmmPreconditionerOptions io = I.opt.precond.ifmm;
    io.ifmm.threads = threads;
    if (progress)
      io.ifmm.progress = [&progress](const std::string& stage, int level, double f) {
        progress("ifmm " + stage + " level " + std::to_string(level), f);
      };
    I.ifmm = std::make_unique<IfmmPreconditioner>(*I.fmm_op, io);
    S.precond_seconds = since(t1);
    S.ifmm = I.ifmm->report();
    S.ifmm_depth = I.ifmm->depth();
    S.ifmm_reuses_matvec_fmm = I.ifmm->reuses_matvec_fmm();
    S.precond_bytes = S.ifmm.bytes;
  }
}

HelmholtzBem::~HelmholtzBem() = default;
HelmholtzBem::HelmholtzBem(HelmholtzBem&&) noexcept = default;
HelmholtzBem& HelmholtzBem::operator=(HelmholtzBem&&) noexcept = default;

const Mesh& HelmholtzBem::mesh() const { return impl_->mesh; }
cplx HelmholtzBem::k() const { return impl_->k; }
cplx HelmholtzBem::alpha() const { return impl_->alpha; }
const HelmholtzBemOptions& HelmholtzBem::options() const { return impl_->opt; }
const HelmholtzBemSetup& HelmholtzBem::setup() const { return impl_->setup; }
const LinearOperator<cplx>& HelmholtzBem::system_operator() const { return *impl_->A; }
const LinearOperator<cplx>* HelmholtzBem::preconditioner() const {
  if (impl_->ifmm) return impl_->ifmm.get();
  return impl_->bd.get();
}
const CMatrix* HelmholtzBem::dense_matrix() const { return impl_->dense_op ? &impl_->dense : nullptr; }
std::shared_ptr<const fmm::Octree> HelmholtzBem::fmm_tree() const {
  return impl_->fmm_op ? impl_->fmm_op->fmm().tree_ptr() : nullptr;
}
const std::vector<cplx>& HelmholtzBem::ones_image() const { return impl_->ones_image; }
krylov::Options HelmholtzBem::gmres_options() const {
  krylov::Options g = impl_->opt.gmres;
  g.threads = impl_->opt.threads;
  return g;
}

std::vector<cplx> HelmholtzBem::rhs(const IncidentField& inc) const {
  return detail::burton_miller_rhs(impl_->opt.bc, impl_->alpha, inc, impl_->mesh.num_elements());
}

namespace {

/// GMRES of a plan on A x = b (solve, solve_radiation): the timed operator and preconditioner,
/// the deflation of sound-hard plans, the counts into info.
SurfaceSolution solve_system(const HelmholtzBem& plan, const LinearOperator<cplx>& Aop,
                             const LinearOperator<cplx>* precond, const std::vector<cplx>& ones_image,
                             const HelmholtzBemSetup& setup, const std::vector<cplx>& b,
                             const std::function<void(int, double)>& progress, HelmholtzBemSolveInfo* info) {
  Timed<LinearOperator<cplx>> A(Aop);
  std::unique_ptr<Timed<LinearOperator<cplx>>> M;
  if (precond) M = std::make_unique<Timed<LinearOperator<cplx>>>(*precond);
  krylov::Options g = plan.gmres_options();
  if (progress) g.progress = progress;
  const std::string what = " (" + to_string(setup.op) + " operator, preconditioner " + to_string(setup.precond) + ")";
  auto fill = [&](double seconds) {
    if (!info) return;
    info->gmres_seconds = seconds;
    info->matvecs = A.count;
    info->matvec_seconds = A.seconds;
    info->precond_applications = M ? M->count : 0;
    info->precond_apply_seconds = M ? M->seconds : 0;
  };
  const auto t0 = Clock::now();
  try {
    SurfaceSolution s = detail::gmres_surface_solve(A, b, M.get(), plan.options().bc, plan.k(), g,
                                                    plan.options().throw_if_not_converged, what,
                                                    ones_image.empty() ? nullptr : &ones_image);
    fill(s.solve_seconds);
    return s;
  } catch (const NotConverged&) {
    fill(since(t0));
    throw;
  }
}

}  // namespace

SurfaceSolution HelmholtzBem::solve(const IncidentField& inc, const std::function<void(int, double)>& progress,
                                    HelmholtzBemSolveInfo* info) const {
  const auto& I = *impl_;
  SurfaceSolution s = solve_system(*this, *I.A, preconditioner(), I.ones_image, I.setup, rhs(inc), progress, info);
  for (std::size_t e = 0; e < I.gamma.size(); ++e) s.dudn[e] = I.gamma[e] * s.u[e];
  return s;
}

SurfaceSolution HelmholtzBem::solve_radiation(const std::vector<cplx>& g, const IncidentField* inc,
                                              const std::function<void(int, double)>& progress,
                                              HelmholtzBemSolveInfo* info) const {
  auto& I = *impl_;
  const std::size_t n = I.mesh.num_elements();
  if (I.opt.bc != BoundaryCondition::Neumann)
    throw InvalidArgument("bem: solve_radiation prescribes the normal derivative (normal velocity) and needs a plan "
                          "with bc neumann (rigid or impedance surface), not dirichlet");
  if (g.size() != n)
    throw InvalidArgument("bem: radiation data has " + std::to_string(g.size()) + " values, the mesh has " +
                          std::to_string(n) + " elements");
  for (std::size_t e = 0; e < n; ++e)
    if (!std::isfinite(g[e].real()) || !std::isfinite(g[e].imag()))
      throw InvalidArgument("bem: radiation data of element " + std::to_string(e) + " is not finite");
  std::vector<cplx> b = inc ? rhs(*inc) : std::vector<cplx>(n, cplx{});
  std::call_once(I.companion_once, [&I] {
    if (!I.Ad) I.build_companion();
  });
  const std::vector<cplx> t = apply_operator(*I.Ad, g);
  for (std::size_t i = 0; i < n; ++i) b[i] -= I.alpha * t[i];
  SurfaceSolution s = solve_system(*this, *I.A, preconditioner(), I.ones_image, I.setup, b, progress, info);
  for (std::size_t e = 0; e < n; ++e) s.dudn[e] = g[e] + (I.gamma.empty() ? cplx{} : I.gamma[e] * s.u[e]);
  return s;
}

SurfaceSolution HelmholtzBem::solve_plane_wave(std::array<double, 3> direction) const {
  return solve(plane_wave(direction));
}

namespace {
/// e^{ik d.t} of the image of the plane wave e^{ik d.x} (d normalised here) in the plane g.
cplx ground_phase(const MirrorPlane& g, cplx k, const std::array<double, 3>& d) {
  const double nd = std::hypot(d[0], d[1], d[2]);
  return std::exp(cplx(0, 1) * k * (2 * g.height * d[static_cast<std::size_t>(g.axis)] / nd));
}

IncidentField add_image(IncidentField a, const IncidentField& b, cplx s) {
  for (std::size_t i = 0; i < a.u.size(); ++i) {
    a.u[i] += s * b.u[i];
    a.dudn[i] += s * b.dudn[i];
  }
  return a;
}
}  // namespace

void check_symmetric_incidence(const std::vector<MirrorPlane>& symmetry, const std::array<double, 3>& v, bool point) {
  for (const auto& p : symmetry) {
    const auto a = static_cast<std::size_t>(p.axis);
    if (p.reflection < 0)
      throw InvalidArgument("bem: an antisymmetric plane (reflection -1) takes no incident field (a plane wave or "
                            "point source is not odd across it): use radiation data, or solve the whole body");
    if (point ? v[a] != p.height : v[a] != 0)
      throw InvalidArgument(std::string("bem: the incident ") + (point ? "point source" : "plane wave") +
                            " is not symmetric about the symmetry plane " + std::string(1, "xyz"[p.axis]) + " = " +
                            std::to_string(p.height) + (point ? ": it must lie on the plane" :
                                                                ": its direction needs a zero " + std::string(1, "xyz"[p.axis]) + " component") +
                            " (split it into symmetric and antisymmetric parts, or solve the whole body)");
  }
}

IncidentField HelmholtzBem::plane_wave(std::array<double, 3> d) const {
  const auto& I = *impl_;
  check_symmetric_incidence(I.opt.symmetry, d, false);
  IncidentField f = bem::plane_wave(I.mesh, I.k, d);
  if (!I.opt.ground) return f;
  // the image of e^{ik d.x} is e^{ik d.(R x)}, R x = R0 x + t (t = 2 height on the axis):
  // e^{ik d.t} e^{ik (R0 d).x} (the phase vanishes for a plane through the origin only)
  return add_image(std::move(f), bem::plane_wave(I.mesh, I.k, I.opt.ground->mirror_direction(d)),
                   I.opt.ground->reflection * ground_phase(*I.opt.ground, I.k, d));
}

IncidentField HelmholtzBem::point_source(std::array<double, 3> x0, cplx amplitude) const {
  const auto& I = *impl_;
  if (I.opt.ground && !(x0[static_cast<std::size_t>(I.opt.ground->axis)] >= I.opt.ground->height))
    throw InvalidArgument("bem: the point source lies below the ground plane");
  check_symmetric_incidence(I.opt.symmetry, x0, true);
  // the location check against the whole body; the data on this mesh's elements only
  check_point_source(I.body(), I.k, x0, amplitude);
  IncidentField f = point_source_data(I.mesh, I.k, x0, amplitude);
  if (!I.opt.ground) return f;
  return add_image(std::move(f), point_source_data(I.mesh, I.k, I.opt.ground->mirror(x0), amplitude),
                   I.opt.ground->reflection);
}

namespace {
void check_field_points(const std::vector<std::array<double, 3>>& points) {
  for (std::size_t j = 0; j < points.size(); ++j)
    for (double c : points[j])
      if (!std::isfinite(c)) throw InvalidArgument("bem: field point " + std::to_string(j) + " is not finite");
}
}  // namespace

std::vector<cplx> HelmholtzBem::plane_wave_at(std::array<double, 3> d,
                                              const std::vector<std::array<double, 3>>& points) const {
  const auto& I = *impl_;
  const double nd = std::hypot(d[0], d[1], d[2]);
  if (!(nd > 0) || !std::isfinite(nd)) throw InvalidArgument("bem: plane wave direction must be finite and nonzero");
  for (double& c : d) c /= nd;
  check_field_points(points);
  const cplx ik = cplx(0, 1) * I.k;
  std::vector<cplx> u(points.size());
  const std::array<double, 3> dr = I.opt.ground ? I.opt.ground->mirror_direction(d) : d;
  const cplx image = I.opt.ground ? I.opt.ground->reflection * ground_phase(*I.opt.ground, I.k, d) : cplx(0, 0);
  for (std::size_t j = 0; j < points.size(); ++j) {
    const auto& x = points[j];
    u[j] = std::exp(ik * (d[0] * x[0] + d[1] * x[1] + d[2] * x[2]));
    if (I.opt.ground) u[j] += image * std::exp(ik * (dr[0] * x[0] + dr[1] * x[1] + dr[2] * x[2]));
  }
  return u;
}

std::vector<cplx> HelmholtzBem::point_source_at(std::array<double, 3> x0, const std::vector<std::array<double, 3>>& points,
                                                cplx amplitude) const {
  const auto& I = *impl_;
  for (double c : x0)
    if (!std::isfinite(c)) throw InvalidArgument("bem: point source position must be finite");
  if (!std::isfinite(amplitude.real()) || !std::isfinite(amplitude.imag()))
    throw InvalidArgument("bem: point source amplitude must be finite");
  check_field_points(points);
  const cplx ik = cplx(0, 1) * I.k;
  auto G = [&](const std::array<double, 3>& src, const std::array<double, 3>& x, std::size_t j) {
    const double r = std::hypot(x[0] - src[0], x[1] - src[1], x[2] - src[2]);
    if (!(r > 0)) throw InvalidArgument("bem: field point " + std::to_string(j) + " lies at the point source");
    return amplitude * std::exp(ik * r) / (4 * std::numbers::pi * r);
  };
  std::vector<cplx> u(points.size());
  for (std::size_t j = 0; j < points.size(); ++j) {
    u[j] = G(x0, points[j], j);
    if (I.opt.ground) u[j] += I.opt.ground->reflection * G(I.opt.ground->mirror(x0), points[j], j);
  }
  return u;
}

std::vector<cplx> HelmholtzBem::far_field(const SurfaceSolution& s,
                                          const std::vector<std::array<double, 3>>& directions) const {
  const auto& I = *impl_;
  std::vector<cplx> f = bem::far_field(I.mesh, s, directions, I.opt.quadrature);
  // the image of a plane off the origin is affine, R y = R0 y + t (t_a = 2 height_a on the
  // reflected axes): its far field is e^{-ik xhat.t} u_inf(R0 xhat) (MirrorPlane)
  for (const MirrorImage& im : I.images) {
    std::vector<std::array<double, 3>> m(directions.size());
    for (std::size_t j = 0; j < m.size(); ++j) m[j] = im.direction(directions[j]);
    const std::vector<cplx> g = bem::far_field(I.mesh, s, m, I.opt.quadrature);
    for (std::size_t j = 0; j < f.size(); ++j) {
      const auto& d = directions[j];
      const double nd = std::hypot(d[0], d[1], d[2]);
      double xt = 0;
      for (std::size_t a = 0; a < 3; ++a)
        if (im.flip[a]) xt += 2 * im.height[a] * d[a] / nd;
      f[j] += im.factor * std::exp(cplx(0, -1) * I.k * xt) * g[j];
    }
  }
  return f;
}

std::vector<cplx> HelmholtzBem::scattered_field(const SurfaceSolution& s,
                                                const std::vector<std::array<double, 3>>& points) const {
  const auto& I = *impl_;
  if (I.images.empty()) return bem::scattered_field(I.mesh, s, points, I.opt.quadrature);
  // checked against the whole body (and the ground), then u(x) + sum_images r u(R x)
  std::vector<std::array<double, 3>> all(points);
  for (std::size_t j = 0; j < points.size(); ++j) {
    for (double c : points[j])
      if (!std::isfinite(c)) throw InvalidArgument("bem: field point " + std::to_string(j) + " is not finite");
    if (I.opt.ground && !(points[j][static_cast<std::size_t>(I.opt.ground->axis)] >= I.opt.ground->height))
      throw InvalidArgument("bem: field point " + std::to_string(j) + " lies below the ground plane");
    const PointLocation where = locate_point(I.body(), points[j]);
    if (where != PointLocation::kOutside)
      throw InvalidArgument("bem: field point " + std::to_string(j) + " lies " +
                            (where == PointLocation::kInside ? "inside" : "on the surface of") +
                            " the body (the representation formula holds in the exterior only)");
  }
  for (const MirrorImage& im : I.images)
    for (const auto& x : points) all.push_back(im.point(x));
  const std::vector<cplx> f = detail::representation(I.mesh, s, all, I.opt.quadrature);
  std::vector<cplx> out(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(points.size()));
  for (std::size_t m = 0; m < I.images.size(); ++m)
    for (std::size_t j = 0; j < points.size(); ++j) out[j] += I.images[m].factor * f[(m + 1) * points.size() + j];
  return out;
}

Record ifmm_record(const HelmholtzBemSetup& su) {
  if (su.precond != PreconditionerKind::Ifmm) return {};
  return ifmm::to_record(su.ifmm).set("depth", su.ifmm_depth).set("reuses_matvec_fmm", su.ifmm_reuses_matvec_fmm);
}

double monostatic_cross_section(cplx u_inf_back) { return 4 * std::numbers::pi * std::norm(u_inf_back); }

double target_strength_db(cplx u_inf_back) {
  // 10 log10(sigma / (4 pi)) = 20 log10 |a|; |a| by std::abs (hypot: no underflow of |a|^2 for a
  // tiny a), -inf for a = 0
  const double a = std::abs(u_inf_back);
  return a > 0 ? 20 * std::log10(a) : -std::numeric_limits<double>::infinity();
}

SweepAngle sweep_angle_from_string(const std::string& s) {
  if (s == "theta") return SweepAngle::Theta;
  if (s == "phi") return SweepAngle::Phi;
  throw InvalidArgument("bem: sweep angle must be theta or phi, got '" + s + "'");
}
std::string to_string(SweepAngle a) { return a == SweepAngle::Theta ? "theta" : "phi"; }

std::vector<std::array<double, 3>> sweep_directions(SweepAngle angle, double from_deg, double to_deg, long n,
                                                    std::vector<double>* angles_deg) {
  if (n < 1 || static_cast<unsigned long>(n) > kMaxSweepDirections)
    throw InvalidArgument("bem: a sweep needs between 1 and " + std::to_string(kMaxSweepDirections) +
                          " directions, got " + std::to_string(n));
  if (!std::isfinite(from_deg) || !std::isfinite(to_deg))
    throw InvalidArgument("bem: the sweep angles must be finite");
  std::vector<std::array<double, 3>> d(static_cast<std::size_t>(n));
  if (angles_deg) angles_deg->resize(d.size());
  for (long j = 0; j < n; ++j) {
    const double deg = n == 1 ? from_deg : from_deg + (to_deg - from_deg) * double(j) / double(n - 1);
    const double t = deg * std::numbers::pi / 180;
    const double c = std::cos(t), s = std::sin(t);
    d[static_cast<std::size_t>(j)] = angle == SweepAngle::Theta ? std::array<double, 3>{s, 0, c} : std::array<double, 3>{c, s, 0};
    if (angles_deg) (*angles_deg)[static_cast<std::size_t>(j)] = deg;
  }
  return d;
}

std::vector<MonostaticResult> HelmholtzBem::solve_monostatic(const std::vector<std::array<double, 3>>& directions,
                                                             const MonostaticOptions& opt) const {
  if (directions.empty()) throw InvalidArgument("bem: monostatic sweep: no directions given");
  // every direction checked before the first solve
  std::vector<std::array<double, 3>> unit(directions.size());
  for (std::size_t j = 0; j < directions.size(); ++j) {
    const auto& d = directions[j];
    if (!std::isfinite(d[0]) || !std::isfinite(d[1]) || !std::isfinite(d[2]))
      throw InvalidArgument("bem: monostatic sweep: direction " + std::to_string(j) + " is not finite");
    const double nn = std::hypot(d[0], d[1], d[2]);
    if (!(nn > 0) || !std::isfinite(nn))
      throw InvalidArgument("bem: monostatic sweep: direction " + std::to_string(j) + " is the zero vector");
    unit[j] = {d[0] / nn, d[1] / nn, d[2] / nn};
  }
  std::vector<MonostaticResult> out(unit.size());
  for (std::size_t j = 0; j < unit.size(); ++j) {
    MonostaticResult& r = out[j];
    r.direction = unit[j];
    try {
      r.solution = solve(plane_wave(unit[j]), opt.gmres_progress, &r.info);
    } catch (const NotConverged& e) {
      throw NotConverged("bem: monostatic sweep, direction " + std::to_string(j) + " of " +
                         std::to_string(unit.size()) + ": " + e.what());
    }
    const std::array<double, 3> back{-unit[j][0], -unit[j][1], -unit[j][2]};
    r.u_inf = far_field(r.solution, {back})[0];
    r.sigma = monostatic_cross_section(r.u_inf);
    r.ts_db = target_strength_db(r.u_inf);
    r.iterations = r.solution.iterations;
    r.converged = r.solution.converged;
    r.final_relative_residual = r.solution.final_relative_residual;
    r.solve_seconds = r.solution.solve_seconds;
    if (!opt.keep_solutions) {
      std::vector<cplx>().swap(r.solution.u);
      std::vector<cplx>().swap(r.solution.dudn);
    }
    if (opt.progress) opt.progress(j, unit.size(), r);
  }
  return out;
}

}  // namespace elliptica::bem
