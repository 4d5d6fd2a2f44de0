/// @file sem_study.cpp
/// The seed's section-6 SEM p-multigrid study (see sem_study.hpp): runs over shared pmg
/// hierarchies, CSV, report.
#include "elliptica/multigrid/sem_study.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/krylov/krylov.hpp"
#include "elliptica/multigrid/sem_mesh.hpp"
#include "elliptica/multigrid/sem_operator.hpp"
#include "elliptica/multigrid/smoother.hpp"
#include "elliptica/multigrid/vcycle.hpp"

namespace elliptica::multigrid {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string join(const std::vector<int>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  return s;
}

bool is_schwarz(const std::string& base) { return base != "jacobi"; }

std::vector<int> schedule_for(const SemStudyOptions& o, const std::string& base) {
  if (is_schwarz(base)) return o.schwarz_schedule.empty() ? sem_schwarz_schedule(o.order) : o.schwarz_schedule;
  return o.jacobi_schedule.empty() ? default_pmg_schedule(o.order) : o.jacobi_schedule;
}

std::string csv_quote(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += "\"\"";
    else if (c == '\n' || c == '\r') q += ' ';
    else q += c;
  }
  return q + "\"";
}

constexpr double kPi = 3.14159265358979323846;

}  // namespace

std::vector<int> sem_schwarz_schedule(int p) {
  if (p < 2 || p > kMaxSemOrder)
    throw InvalidArgument("sem_schwarz_schedule: order must be in [2, " + std::to_string(kMaxSemOrder) + "], got " +
                          std::to_string(p));
  std::vector<int> s{p};
  if (p / 2 > 1 && p / 2 < p) s.push_back(p / 2);
  s.push_back(1);
  return s;
}

void validate_sem_study_options(const SemStudyOptions& o) {
  if (o.n < 2 || o.n > 64)
    throw InvalidArgument("--n must be in [2,64] (elements per axis; 1 leaves no free order-1 node), got " +
                          std::to_string(o.n));
  if (o.eps.empty()) throw InvalidArgument("--eps: no values");
  for (double e : o.eps)
    if (!(e > 0.0 && e <= 1.0)) throw InvalidArgument("--eps: Kershaw parameters must be in (0, 1], got " + std::to_string(e));
  if (o.order < 2 || o.order > kMaxSemOrder)
    throw InvalidArgument("--order must be in [2," + std::to_string(kMaxSemOrder) + "], got " + std::to_string(o.order));
  if (o.kinds.empty()) throw InvalidArgument("--kinds: no values");
  for (const auto& k : o.kinds) {
    try {
      polynomial_from_string(k);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(std::string("--kinds: ") + e.what());
    }
  }
  if (o.bases.empty()) throw InvalidArgument("--bases: no values");
  for (const auto& b : o.bases) {
    try {
      sem_smoother_base_from_string(b);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(std::string("--bases: ") + e.what());
    }
  }
  if (o.cheb_orders.empty()) throw InvalidArgument("--cheb-orders: no values");
  for (int k : o.cheb_orders)
    if (k < 1 || k > 30) throw InvalidArgument("--cheb-orders: orders must be in [1,30], got " + std::to_string(k));
  if (o.cycles.empty()) throw InvalidArgument("--cycles: no values");
  for (const auto& c : o.cycles)
    if (c != "symmetric" && c != "one-sided")
      throw InvalidArgument("--cycles: values must be symmetric or one-sided, got '" + c + "'");
  for (const auto* s : {&o.jacobi_schedule, &o.schwarz_schedule}) {
    if (s->empty()) continue;
    check_pmg_schedule(*s);
    if (s->front() != o.order)
      throw InvalidArgument("sem study: schedule " + join(*s) + " does not start at --order " + std::to_string(o.order));
  }
  if (!(o.rtol > 0.0 && o.rtol < 1.0)) throw InvalidArgument("--rtol must be in (0, 1), got " + std::to_string(o.rtol));
  if (o.max_iterations < 1) throw InvalidArgument("--max-iter must be >= 1, got " + std::to_string(o.max_iterations));
  if (o.restart < 1) throw InvalidArgument("--restart must be >= 1, got " + std::to_string(o.restart));
  if (o.repeats < 1 || o.repeats > 100) throw InvalidArgument("--repeats must be in [1,100], got " + std::to_string(o.repeats));
  if (o.threads < 0 || o.threads > 1024)
    throw InvalidArgument("--threads must be in [0,1024] (0: all available), got " + std::to_string(o.threads));
}

std::size_t sem_study_size(const SemStudyOptions& o) {
  return o.eps.size() * o.bases.size() * o.kinds.size() * o.cheb_orders.size() * o.cycles.size();
}

SemStudyResult run_sem_study(const SemStudyOptions& o, const std::function<void(const std::string&)>& log) {
  validate_sem_study_options(o);
  auto say = [&](const std::string& s) {
    if (log) log(s);
  };
  char buf[512];
  SemStudyResult R;
  R.options = o;
  const auto t_start = Clock::now();
  const std::size_t total = sem_study_size(o);
  std::size_t done = 0;
  for (double eps : o.eps) {
    const auto ts = Clock::now();
    // A mesh refused (e.g. eps so small that element faces coincide) fails this eps's
    // cases and runs; a ResourceError (the whole study is too large) is thrown.
    std::shared_ptr<const SemSpace> space;
    std::string space_failure;
    try {
      space = std::make_shared<const SemSpace>(kershaw_mesh(o.n, eps), o.order, o.threads);
    } catch (const ResourceError&) {
      throw;
    } catch (const Error& e) {
      space_failure = e.what();
    }
    const double space_seconds = since(ts);
    // b = B f at the nodes (SemPoissonPlan::load_vector), f = 3 pi^2 sin(pi x) sin(pi y) sin(pi z).
    const std::size_t nfree = space ? space->num_free() : 0;
    std::vector<double> b(nfree), x(nfree);
    if (space) {
      const std::vector<double> B = space->mass();
      const auto& c = space->coordinates();
      for (std::size_t g = 0; g < nfree; ++g)
        b[g] = B[g] * 3 * kPi * kPi * std::sin(kPi * c[3 * g]) * std::sin(kPi * c[3 * g + 1]) *
               std::sin(kPi * c[3 * g + 2]);
    }
    for (const auto& base : o.bases) {
      const SemSmootherBase sb = sem_smoother_base_from_string(base);
      const std::vector<int> sched = schedule_for(o, base);
      SemStudyCase C;
      C.eps = eps;
      C.base = base;
      C.schedule = join(sched);
      C.unknowns = nfree;
      std::shared_ptr<const Hierarchy> h;
      const auto th = Clock::now();
      if (!space) {
        C.failure = space_failure;
      } else {
        try {
          PMultigridOptions po;
          po.schedule = sched;
          po.coarse = o.coarse;
          po.threads = o.threads;
          po.schwarz_precision = SemPoissonOptions{}.schwarz_precision;  // as a default plan's (fp32)
          if (sb == SemSmootherBase::ASM) po.schwarz = SchwarzKind::ASM;
          if (sb == SemSmootherBase::ASMWeighted) po.schwarz = SchwarzKind::ASMWeighted;
          if (sb == SemSmootherBase::RAS) po.schwarz = SchwarzKind::RAS;
          h = std::make_shared<const Hierarchy>(pmg_hierarchy(space, po));
        } catch (const ResourceError&) {
          throw;
        } catch (const Error& e) {
          C.failure = e.what();
        }
      }
      C.setup_seconds = space_seconds + since(th);
      std::snprintf(buf, sizeof buf, "case eps = %g, base %s, schedule (%s): %zu unknowns, set-up %.2f s%s%s", eps,
                    base.c_str(), C.schedule.c_str(), nfree, C.setup_seconds, C.failure.empty() ? "" : ", FAILED: ",
                    C.failure.c_str());
      say(buf);
      R.cases.push_back(C);
      const bool coarse_symmetric = h && h->coarse_solver() && h->coarse_solver()->is_symmetric();
      for (const auto& kind : o.kinds)
        for (int k : o.cheb_orders)
          for (const auto& cyc : o.cycles) {
            SemStudyRun r;
            r.eps = eps;
            r.kind = kind;
            r.base = base;
            r.schedule = C.schedule;
            r.cycle = cyc;
            r.cheb_order = k;
            r.pre = cyc == "symmetric" ? k : 2 * k;
            r.post = cyc == "symmetric" ? k : 0;
            const bool pcg = cyc == "symmetric" && sb != SemSmootherBase::RAS && coarse_symmetric;
            r.krylov = pcg ? "pcg" : "fgmres";
            if (!h) {
              r.failure = "set-up: " + C.failure;
            } else {
              try {
                const auto tc = Clock::now();
                VCycleOptions vo;
                vo.pre = r.pre;
                vo.post = r.post;
                vo.threads = o.threads;
                vo.smoother.base = sb == SemSmootherBase::Jacobi ? BaseSmoother::Jacobi
                                   : sb == SemSmootherBase::RAS  ? BaseSmoother::RAS
                                                                 : BaseSmoother::ASM;
                vo.smoother.kind = polynomial_from_string(kind);
                const SemPoissonOptions plan_defaults{};  // the plan's smoother-estimate defaults
                vo.smoother.lambda_safety = plan_defaults.lambda_safety;
                vo.smoother.lambda_iterations = plan_defaults.lambda_iterations;
                vo.smoother.lmin_ratio = plan_defaults.lmin_ratio;
                VCycle cycle(h, vo);
                r.cycle_setup_seconds = since(tc);
                r.setup_seconds = C.setup_seconds + r.cycle_setup_seconds;
                krylov::Options ko;
                ko.rtol = o.rtol;
                ko.max_iterations = o.max_iterations;
                ko.restart = o.restart;
                ko.threads = o.threads;
                const auto& A = *h->level(0).A;
                double best = INFINITY;
                for (int rep = 0; rep < o.repeats; ++rep) {
                  std::fill(x.begin(), x.end(), 0.0);
                  const auto t0 = Clock::now();
                  const auto solver =
                      krylov::make_solver<double>(pcg ? krylov::Method::Cg : krylov::Method::Fgmres, A, &cycle, ko);
                  const krylov::Result res = solver->solve(b.data(), x.data());
                  best = std::min(best, since(t0));
                  r.iterations = res.iterations;
                  r.converged = res.converged;
                  r.final_rel = res.final_relative_residual;
                }
                r.solve_seconds = best;
                if (r.iterations > 0) r.seconds_per_iteration = r.solve_seconds / r.iterations;
              } catch (const Error& e) {
                r.failure = e.what();
                r.converged = false;
              }
            }
            ++done;
            if (r.failure.empty())
              std::snprintf(buf, sizeof buf,
                            "[%zu/%zu] eps %-4g %-6s %-8s k=%-2d %-9s %-6s: %3d it%s, rel %.2e, solve %.3f s (%.4f s/it), "
                            "set-up %.2f s (%.0f s elapsed)",
                            done, total, eps, base.c_str(), kind.c_str(), k, cyc.c_str(), r.krylov.c_str(), r.iterations,
                            r.converged ? "" : " NOT CONVERGED", r.final_rel, r.solve_seconds, r.seconds_per_iteration,
                            r.setup_seconds, since(t_start));
            else
              std::snprintf(buf, sizeof buf, "[%zu/%zu] eps %-4g %-6s %-8s k=%-2d %-9s: FAILED: %.300s", done, total, eps,
                            base.c_str(), kind.c_str(), k, cyc.c_str(), r.failure.c_str());
            say(buf);
            R.runs.push_back(std::move(r));
          }
    }
  }
  R.seconds = since(t_start);
  return R;
}

std::string sem_study_csv(const SemStudyResult& R) {
  std::ostringstream cs;
  cs << "eps,kind,base,schedule,cheb_order,cycle,pre,post,krylov,iterations,converged,final_rel_residual,setup_s,"
        "cycle_setup_s,solve_s,time_per_iteration_s,unknowns,elements_per_axis,order,failure\n";
  for (const auto& r : R.runs) {
    std::size_t unknowns = 0;
    for (const auto& c : R.cases)
      if (c.eps == r.eps && c.base == r.base) unknowns = c.unknowns;
    char buf[512];
    std::snprintf(buf, sizeof buf, "%g,%s,%s,\"%s\",%d,%s,%d,%d,%s,%d,%d,%.6e,%.6g,%.6g,%.6g,%.6g,%zu,%d,%d,", r.eps,
                  r.kind.c_str(), r.base.c_str(), r.schedule.c_str(), r.cheb_order, r.cycle.c_str(), r.pre, r.post,
                  r.krylov.c_str(), r.iterations, r.converged ? 1 : 0, r.final_rel, r.setup_seconds, r.cycle_setup_seconds,
                  r.solve_seconds, r.seconds_per_iteration, unknowns, R.options.n, R.options.order);
    cs << buf << csv_quote(r.failure) << "\n";
  }
  return cs.str();
}

namespace {

std::string label(const SemStudyRun& r) {
  // As the seed's tables: kind base(order) cycle; the one-sided order is 2k (its pre-smoothing).
  const int shown = r.cycle == "symmetric" ? r.cheb_order : 2 * r.cheb_order;
  return r.kind + " " + r.base + "(" + std::to_string(shown) + ") " + (r.cycle == "symmetric" ? "V" : "one-sided");
}

bool ok(const SemStudyRun& r) { return r.failure.empty() && r.converged; }

}  // namespace

void write_sem_study_report(std::ostream& os, const SemStudyResult& R, const std::string& csv_path) {
  const SemStudyOptions& o = R.options;
  char buf[768];
  std::snprintf(buf, sizeof buf,
                "elliptica mg sem-study: Kershaw mesh %d^3 elements, p = %d, f = 3 pi^2 sin(pi x) sin(pi y) sin(pi z), x0 = 0, "
                "rel. residual %.0e, coarse solve %s\n",
                o.n, o.order, o.rtol, to_string(o.coarse).c_str());
  os << buf;
  long failed = 0, unconv = 0;
  for (const auto& r : R.runs) {
    if (!r.failure.empty()) ++failed;
    else if (!r.converged) ++unconv;
  }
  std::snprintf(buf, sizeof buf,
                "runs: %zu, %.1f s; not converged within %d iterations: %ld; failed (error): %ld; times: fastest of %d "
                "solve(s)\n",
                R.runs.size(), R.seconds, o.max_iterations, unconv, failed, o.repeats);
  os << buf;
  os << "hierarchies (set-up: space, operators, diagonals, transfers, Schwarz, coarse):\n";
  for (const auto& c : R.cases) {
    std::snprintf(buf, sizeof buf, "  eps = %-5g %-12s schedule (%s): %zu unknowns, %.2f s%s%s\n", c.eps, c.base.c_str(),
                  c.schedule.c_str(), c.unknowns, c.setup_seconds, c.failure.empty() ? "" : ", FAILED: ", c.failure.c_str());
    os << buf;
  }
  auto find = [&](double eps, const std::string& kind, const std::string& base, int k, const std::string& cyc) {
    for (const auto& r : R.runs)
      if (r.eps == eps && r.kind == kind && r.base == base && r.cheb_order == k && r.cycle == cyc) return &r;
    return static_cast<const SemStudyRun*>(nullptr);
  };
  auto best_of = [&](double eps, const std::function<bool(const SemStudyRun&)>& sel, bool by_time) {
    const SemStudyRun* best = nullptr;
    for (const auto& r : R.runs) {
      if (r.eps != eps || !ok(r) || !sel(r)) continue;
      if (!best) {
        best = &r;
        continue;
      }
      const bool better = by_time ? r.solve_seconds < best->solve_seconds
                                  : (r.iterations < best->iterations ||
                                     (r.iterations == best->iterations && r.solve_seconds < best->solve_seconds));
      if (better) best = &r;
    }
    return best;
  };
  auto row = [&](const char* what, const SemStudyRun* r, const SemStudyRun* ref) {
    if (!r) {
      std::snprintf(buf, sizeof buf, "    %-22s (none converged / not in the study)\n", what);
    } else {
      std::snprintf(buf, sizeof buf, "    %-22s %-30s %-6s %4d it  solve %7.3f s  %.4f s/it  set-up %6.2f s", what,
                    label(*r).c_str(), r->krylov.c_str(), r->iterations, r->solve_seconds, r->seconds_per_iteration,
                    r->setup_seconds);
      std::string s = buf;
      if (ref && ref->solve_seconds > 0) {
        std::snprintf(buf, sizeof buf, "  %5.2fx best", r->solve_seconds / ref->solve_seconds);
        s += buf;
      }
      std::snprintf(buf, sizeof buf, "%s\n", s.c_str());
    }
    os << buf;
  };
  // The seed's (and the nekRS authors') fastest Kershaw solvers.
  struct SeedBest {
    double eps;
    const char *kind, *base;
    int k;
    const char* cycle;
  };
  const SeedBest seed_best[] = {{1.0, "cheb1opt", "ras", 2, "symmetric"},
                                {0.3, "cheb1opt", "ras", 5, "symmetric"},
                                {0.05, "opt4", "ras", 6, "one-sided"}};
  const auto all = [](const SemStudyRun&) { return true; };

  os << "\nbest solver per eps (fastest converged solve; 'x best': solve time / the fastest):\n";
  struct Summary {
    double eps;
    const SemStudyRun *best, *def, *seed;
  };
  std::vector<Summary> sums;
  for (double eps : o.eps) {
    std::snprintf(buf, sizeof buf, "  eps = %g\n", eps);
    os << buf;
    const SemStudyRun* bt = best_of(eps, all, true);
    row("fastest", bt, bt);
    row("fewest iterations", best_of(eps, all, false), bt);
    for (const auto& base : o.bases) {
      const std::string w = "fastest " + base;
      row(w.c_str(), best_of(eps, [&](const SemStudyRun& r) { return r.base == base; }, true), bt);
    }
    for (const auto& cyc : o.cycles) {
      const std::string w = "fastest " + cyc;
      row(w.c_str(), best_of(eps, [&](const SemStudyRun& r) { return r.cycle == cyc; }, true), bt);
    }
    for (const auto& kind : o.kinds) {
      const std::string w = "fastest " + kind;
      row(w.c_str(), best_of(eps, [&](const SemStudyRun& r) { return r.kind == kind; }, true), bt);
    }
    const SemStudyRun* def = find(eps, "cheb1", "asm", 2, "symmetric");
    if (def && !ok(*def)) def = nullptr;
    row("default (nekRS)", def, bt);
    const SemStudyRun* sd = nullptr;
    for (const auto& s : seed_best)
      if (s.eps == eps) sd = find(eps, s.kind, s.base, s.k, s.cycle);
    if (sd && !ok(*sd)) sd = nullptr;
    row("seed's best", sd, bt);
    sums.push_back({eps, bt, def, sd});
  }

  os << "\nthe seed's findings (section 6; their best: cheb1opt ras(2) V at eps = 1, cheb1opt ras(5) V at 0.3, opt4 "
        "ras(12) one-sided at 0.05, 15-30% faster than the default cheb1 asm(2) V):\n";
  for (const auto& s : sums) {
    if (!s.best) {
      std::snprintf(buf, sizeof buf, "  eps = %g: no configuration converged\n", s.eps);
      os << buf;
      continue;
    }
    const bool ras = s.best->base == "ras";
    const bool optkind = s.best->kind == "cheb1opt" || s.best->kind == "opt4";
    const std::string want_cycle = s.eps <= 0.05 ? "one-sided" : "symmetric";
    std::snprintf(buf, sizeof buf, "  eps = %g: fastest %s (%.3f s, %d it)\n", s.eps, label(*s.best).c_str(),
                  s.best->solve_seconds, s.best->iterations);
    os << buf;
    std::snprintf(buf, sizeof buf, "    [1] RAS is the fastest base: %s (fastest base here: %s)\n", ras ? "HOLDS" : "DIFFERS",
                  s.best->base.c_str());
    os << buf;
    std::snprintf(buf, sizeof buf, "    [2] an optimised kind (cheb1opt / opt4) is the fastest: %s (here: %s)\n",
                  optkind ? "HOLDS" : "DIFFERS", s.best->kind.c_str());
    os << buf;
    std::snprintf(buf, sizeof buf, "    [3] the fastest cycle is %s: %s (here: %s)\n", want_cycle.c_str(),
                  s.best->cycle == want_cycle ? "HOLDS" : "DIFFERS", s.best->cycle.c_str());
    os << buf;
    if (s.def) {
      const double gain = 1.0 - s.best->solve_seconds / s.def->solve_seconds;
      std::snprintf(buf, sizeof buf,
                    "    [4] the fastest is at least 15%% faster than the default cheb1 asm(2) V (seed: 15-30%%): %s (here %.0f%% faster: %.3f s "
                    "vs %.3f s, %d vs %d it)\n",
                    gain >= 0.15 ? "HOLDS" : "DIFFERS", 100 * gain, s.best->solve_seconds, s.def->solve_seconds,
                    s.best->iterations, s.def->iterations);
    } else {
      std::snprintf(buf, sizeof buf, "    [4] default cheb1 asm(2) V: not in this study (or not converged)\n");
    }
    os << buf;
    if (s.seed) {
      std::size_t rank = 1;
      for (const auto& r : R.runs)
        if (r.eps == s.eps && ok(r) && r.solve_seconds < s.seed->solve_seconds) ++rank;
      std::snprintf(buf, sizeof buf, "    [5] the seed's best, %s: %.3f s, %d it, %.2fx the fastest, rank %zu of the "
                    "converged runs\n",
                    label(*s.seed).c_str(), s.seed->solve_seconds, s.seed->iterations,
                    s.seed->solve_seconds / s.best->solve_seconds, rank);
    } else {
      std::snprintf(buf, sizeof buf, "    [5] the seed's best configuration: not in this study (or not converged)\n");
    }
    os << buf;
  }
  os << "  (every run is in " << csv_path << ")\n";
  os.flush();
}

}  // namespace elliptica::multigrid
