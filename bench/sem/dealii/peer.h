// Shared pieces of dealii_sem_peer (bench/sem/dealii): the Kershaw map, the command line, JSON.
#pragma once

#include <deal.II/base/point.h>
#include <deal.II/grid/tria.h>

#include <chrono>
#include <map>
#include <stdexcept>
#include <string>

namespace peer {

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// The Kershaw map of the unit cube, re-implemented from the formula documented at
/// elliptica::multigrid::kershaw_map (include/elliptica/multigrid/sem_mesh.hpp):
///   right(e, t) = (2 - e) t for t <= 1/2, 1 + e (t - 1) otherwise;  left(e, t) = 1 - right(e, 1 - t)
///   step(a, b, s) = a + (b - a) clamp(s, 0, 1);  layer = floor(6 x), lambda = 6 x - layer
///   X = x; Y = F(y), Z = F(z): layer 0 left; 1, 4 step(left, right, lambda); 2 step(right, left,
///   lambda / 2); 3 step(right, left, (1 + lambda) / 2); >= 5 right.
/// 6 x within 1e-12 of an integer is rounded to it (vertices k/6 start their layer).
dealii::Point<3> kershaw_map(double eps, const dealii::Point<3>& p);

/// Unit cube of n^3 hexahedra (MappingQ1 geometry); with eps in (0, 1] the Kershaw map applied to
/// the vertices (eps <= 0: the plain box).
void make_mesh(dealii::Triangulation<3>& tria, int n, double eps);

/// --key value pairs after the mode word.
class Args {
 public:
  Args(int argc, char** argv, int first);
  std::string str(const std::string& k, const std::string& def) const;
  double num(const std::string& k, double def) const;
  int integer(const std::string& k, int def) const;

 private:
  std::map<std::string, std::string> kv_;
};

int run_operator(const Args& a);
int run_solve(const Args& a);
int run_solve_pmg(const Args& a);

}  // namespace peer
