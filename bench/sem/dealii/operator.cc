// dealii_sem_peer operator: throughput of deal.II's matrix-free Laplacian (see main.cc).
#include <deal.II/base/function.h>
#include <deal.II/base/multithread_info.h>
#include <deal.II/base/quadrature_lib.h>
#include <deal.II/dofs/dof_handler.h>
#include <deal.II/fe/fe_q.h>
#include <deal.II/fe/mapping_q1.h>
#include <deal.II/grid/tria.h>
#include <deal.II/lac/affine_constraints.h>
#include <deal.II/lac/la_parallel_vector.h>
#include <deal.II/matrix_free/fe_evaluation.h>
#include <deal.II/matrix_free/matrix_free.h>
#include <deal.II/numerics/vector_tools.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "peer.h"

namespace peer {
namespace {

using namespace dealii;
using Vec = LinearAlgebra::distributed::Vector<double>;

class SinSinSin : public Function<3> {
 public:
  double value(const Point<3>& p, unsigned int = 0) const override {
    return std::sin(M_PI * p[0]) * std::sin(M_PI * p[1]) * std::sin(M_PI * p[2]);
  }
};

/// y = A x, A the weak Laplacian: per batch of cells gather x, gradients at the quadrature points
/// (sum factorisation), multiply by J^-T J^-1 det J w (FEEvaluation does that inside
/// submit_gradient / get_gradient), integrate, scatter-add.
template <int p>
struct Laplace {
  const MatrixFree<3, double>* mf = nullptr;
  void cell(const MatrixFree<3, double>& data, Vec& dst, const Vec& src,
            const std::pair<unsigned int, unsigned int>& range) const {
    FEEvaluation<3, p, p + 1, 1, double> phi(data);
    for (unsigned int c = range.first; c < range.second; ++c) {
      phi.reinit(c);
      phi.gather_evaluate(src, EvaluationFlags::gradients);
      for (unsigned int q = 0; q < phi.n_q_points; ++q) phi.submit_gradient(phi.get_gradient(q), q);
      phi.integrate_scatter(EvaluationFlags::gradients, dst);
    }
  }
  void vmult(Vec& dst, const Vec& src) const { mf->cell_loop(&Laplace::cell, this, dst, src, true); }
};

template <int p>
int run(const Args& a) {
  const std::string mesh = a.str("mesh", "box");
  const int n = a.integer("n", 10);
  const int threads = a.integer("threads", 1);
  const double eps = a.num("eps", 0.3), seconds = a.num("seconds", 0.3);
  const int repeats = a.integer("repeats", 3);
  const std::string quad = a.str("quadrature", "both");
  if (mesh != "box" && mesh != "kershaw") throw std::invalid_argument("--mesh must be box or kershaw");
  if (quad != "gauss" && quad != "gll" && quad != "both") throw std::invalid_argument("--quadrature must be gauss, gll or both");
  if (n < 1 || repeats < 1 || !(seconds > 0)) throw std::invalid_argument("--n, --repeats >= 1, --seconds > 0");
  if (mesh == "kershaw" && !(eps > 0 && eps <= 1)) throw std::invalid_argument("--eps must be in (0, 1]");

  Triangulation<3> tria;
  make_mesh(tria, n, mesh == "kershaw" ? eps : 0.0);
  const FE_Q<3> fe(QGaussLobatto<1>(p + 1));  // nodes on the GLL points (as FE_Q(p) by default)
  DoFHandler<3> dof(tria);
  dof.distribute_dofs(fe);
  AffineConstraints<double> cons;
  const MappingQ1<3> mapping;
  VectorTools::interpolate_boundary_values(mapping, dof, 0, Functions::ZeroFunction<3>(), cons);
  cons.close();
  const double free = double(dof.n_dofs() - cons.n_constraints());

  std::vector<std::string> quads;
  if (quad == "both" || quad == "gauss") quads.push_back("gauss");
  if (quad == "both" || quad == "gll") quads.push_back("gll");
  for (const std::string& qn : quads) {
    MatrixFree<3, double> mf;
    typename MatrixFree<3, double>::AdditionalData ad;
    ad.tasks_parallel_scheme = MatrixFree<3, double>::AdditionalData::partition_partition;
    ad.mapping_update_flags = update_gradients | update_JxW_values;
    if (qn == "gauss")
      mf.reinit(mapping, dof, cons, QGauss<1>(p + 1), ad);
    else
      mf.reinit(mapping, dof, cons, QGaussLobatto<1>(p + 1), ad);
    Laplace<p> A;
    A.mf = &mf;
    Vec x, y;
    mf.initialize_dof_vector(x);
    mf.initialize_dof_vector(y);
    VectorTools::interpolate(mapping, dof, SinSinSin(), x);
    cons.set_zero(x);
    A.vmult(y, x);  // warm-up
    const double energy = x * y;
    double best = 1e300;
    for (int r = 0; r < repeats; ++r) {
      int k = 0;
      const double t0 = now_s();
      double el = 0;
      do {
        A.vmult(y, x);
        ++k;
        el = now_s() - t0;
      } while (el < seconds);
      best = std::min(best, el / k);
    }
    std::printf(
        "{\"mode\": \"operator\", \"mesh\": \"%s\", \"p\": %d, \"n\": %d, \"dofs\": %.0f, \"dofs_total\": %u, "
        "\"threads\": %d, \"tbb_threads\": %u, \"quadrature\": \"%s\", \"vector_width\": %u, "
        "\"seconds_per_apply\": %.6e, \"dofs_per_s\": %.6e, \"energy\": %.10f}\n",
        mesh.c_str(), p, n, free, unsigned(dof.n_dofs()), threads, MultithreadInfo::n_threads(), qn.c_str(),
        unsigned(VectorizedArray<double>::size()), best, free / best, energy);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int run_operator(const Args& a) {
  switch (a.integer("p", 7)) {
    case 3: return run<3>(a);
    case 4: return run<4>(a);
    case 5: return run<5>(a);
    case 6: return run<6>(a);
    case 7: return run<7>(a);
    case 8: return run<8>(a);
    default: throw std::invalid_argument("--p must be in 3..8");
  }
}

}  // namespace peer
