// The distributed backend (backend_mpi.hpp): MPI-SORT, MPI-GHOST-SOURCE, P2P on owned targets
// and owned + ghost sources, P2G on the slab, MPI-GHOST-GRID (fold), distributed FFT, CNV on the
// rank's transposed spectrum rows, distributed IFFT, MPI-GHOST-GRID (refresh), G2P, self, and
// the results back to the caller's ranks and order (seed 000, section 6.5).
#include "ewald/mpi/backend_mpi.hpp"

#include <fftw3.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include "elliptica/core/error.hpp"
#include "elliptica/core/timer.hpp"
#include "ewald/cpu/cpu.hpp"
#include "ewald/kernel_traits.hpp"
#include "ewald/mpi/exchange.hpp"
#include "ewald/mpi/fft_mpi.hpp"
#include "ewald/slab.hpp"

namespace elliptica::ewald::detail::mpi {

namespace {

// Grid planes to other ranks and back from them: counts, plane indices, values (one contiguous
// MPI type per plane). peers: the rank's slab neighbours; neighbours: -1 undecided (decided here by use_neighbours and kept: the
// ranks a rank sends planes to depend on the layout only), 0 all-to-all, 1 neighbour-only.
// Returns the bytes sent to other ranks.
template <class T>
std::uint64_t exchange_planes(MPI_Comm comm, ExchangeMode mode, const std::vector<int>& peers, int& neighbours,
                              std::size_t plane_size, const std::vector<GhostPlanes<T>>& out,
                              std::vector<GhostPlanes<T>>& in) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const std::size_t R = static_cast<std::size_t>(size);
  std::vector<int> sc(R), rc(R), sd(R), rd(R);
  for (int r = 0; r < size; ++r) sc[std::size_t(r)] = static_cast<int>(out[std::size_t(r)].plane.size());
  if (neighbours < 0) {
    bool ok = true;
    for (int r = 0; r < size; ++r)
      ok = ok && (sc[std::size_t(r)] == 0 || r == rank || std::find(peers.begin(), peers.end(), r) != peers.end());
    neighbours = use_neighbours(comm, mode == ExchangeMode::AllToAll ? mode : ExchangeMode::Auto, ok, "") ? 1 : 0;
  }
  const std::vector<int>* nb = neighbours == 1 ? &peers : nullptr;
  alltoall_counts(comm, nb, sc.data(), rc.data());
  int ns = 0, nr = 0;
  for (int r = 0; r < size; ++r) {
    sd[std::size_t(r)] = ns;
    rd[std::size_t(r)] = nr;
    ns += sc[std::size_t(r)];
    nr += rc[std::size_t(r)];
  }
  std::vector<int> sidx, ridx(std::size_t(nr) + 1);
  std::vector<T> sval, rval((std::size_t(nr) + 1) * plane_size);
  for (int r = 0; r < size; ++r) {
    sidx.insert(sidx.end(), out[std::size_t(r)].plane.begin(), out[std::size_t(r)].plane.end());
    sval.insert(sval.end(), out[std::size_t(r)].values.begin(), out[std::size_t(r)].values.end());
  }
  sidx.push_back(0);
  sval.resize(sval.size() + plane_size);
  alltoallv(comm, nb, sidx.data(), sc.data(), sd.data(), ridx.data(), rc.data(), rd.data(), MPI_INT);
  MPI_Datatype t;
  MPI_Type_contiguous(static_cast<int>(plane_size * sizeof(T)), MPI_BYTE, &t);
  MPI_Type_commit(&t);
  alltoallv(comm, nb, sval.data(), sc.data(), sd.data(), rval.data(), rc.data(), rd.data(), t);
  MPI_Type_free(&t);
  in.assign(std::size_t(size), GhostPlanes<T>{});
  for (int r = 0; r < size; ++r) {
    GhostPlanes<T>& g = in[std::size_t(r)];
    const std::size_t k0 = std::size_t(rd[std::size_t(r)]), k1 = k0 + std::size_t(rc[std::size_t(r)]);
    g.plane.assign(ridx.begin() + std::ptrdiff_t(k0), ridx.begin() + std::ptrdiff_t(k1));
    g.values.assign(rval.begin() + std::ptrdiff_t(k0 * plane_size), rval.begin() + std::ptrdiff_t(k1 * plane_size));
  }
  std::uint64_t bytes = 0;
  for (int r = 0; r < size; ++r)
    if (r != rank) bytes += std::uint64_t(sc[std::size_t(r)]) * plane_size * sizeof(T);
  return bytes;
}

// Marks one phase for a PMPI profiler (PcontrolPhase).
struct Phase {
  explicit Phase(PcontrolPhase p) { MPI_Pcontrol(p); }
  ~Phase() { MPI_Pcontrol(kPhaseNone); }
  Phase(const Phase&) = delete;
  Phase& operator=(const Phase&) = delete;
};

template <class K, class T>
class Dist final : public DistributedBackend {
 public:
  Dist(MPI_Comm comm, const std::vector<double>& points, const BackendSetup& setup, ExchangeMode mode)
      : comm_(comm), setup_(setup), fft_(comm, setup.params.grid, setup.threads, FFTW_ESTIMATE) {
    Phase phase(kPhaseSetup);
    mode_ = mode;
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
    const Params& p = setup.params;
    M_ = p.grid;
    // the slabs: FFTW's (a rank without planes reports start 0)
    long long mine[2] = {fft_.local_0_start(), fft_.local_n0()};
    std::vector<long long> all(2 * std::size_t(size_));
    MPI_Allgather(mine, 2, MPI_LONG_LONG, all.data(), 2, MPI_LONG_LONG, comm);
    layout_.M = M_[0];
    layout_.L = setup.box[0];
    layout_.start.assign(std::size_t(size_) + 1, 0);
    for (int r = 0; r < size_; ++r)
      layout_.start[std::size_t(r) + 1] = layout_.start[std::size_t(r)] + static_cast<int>(all[2 * std::size_t(r) + 1]);
    layout_.validate();
    for (int r = 0; r < size_; ++r)
      if (all[2 * std::size_t(r) + 1] > 0 && all[2 * std::size_t(r)] != layout_.start[std::size_t(r)])
        throw InvalidArgument("distributed FFT: FFTW-MPI's slabs are not in rank order");
    // MPI-SORT of the coordinates
    const std::size_t n = points.size() / 3;
    std::vector<std::pair<std::size_t, int>> moves(n);
    for (std::size_t i = 0; i < n; ++i) moves[i] = {i, layout_.owner(points[3 * i])};
    peers_ = slab_neighbours(layout_, rank_);  // the neighbour-only exchanges' partners
    sort_ = std::make_unique<PointExchange>(comm, n, moves, mode, "MPI-SORT (exchange = neighbour)", peers_);
    n_owned_ = sort_->received();
    std::vector<double> src(3 * n_owned_);
    sort_->forward(points.data(), 3, src.data());
    // MPI-GHOST-SOURCE of the coordinates
    moves.clear();
    std::vector<int> dest;
    for (std::size_t k = 0; k < n_owned_; ++k) {
      dest.clear();
      ghost_ranks(layout_, src[3 * k], p.rc, dest);
      for (int r : dest) moves.emplace_back(k, r);
    }
    ghost_ = std::make_unique<PointExchange>(comm, n_owned_, moves,
                                             mode == ExchangeMode::AllToAll ? mode : ExchangeMode::Auto,
                                             "MPI-GHOST-SOURCE", peers_);
    n_ghost_ = ghost_->received();
    src.resize(3 * (n_owned_ + n_ghost_));
    ghost_->forward(src.data(), 3, src.data() + 3 * n_owned_);
    // the rank's geometry (a rank without planes has no points; its geometry serves CNV only),
    // the split P2P's and the FFT slabs: local work whose failure (memory) must reach every rank
    // before the next collective, as the same error
    nx_ = layout_.planes(rank_);
    cstride_ = std::size_t((fft_.alloc() + 7) / 8 * 8);  // 64-byte aligned components, as planned
    ncomp_ = std::max(K::n_grid, K::n_out);
    std::exception_ptr err;
    try {
      if (nx_ > 0) {
        PointSet pts;
        pts.src = src;
        pts.ns = n_owned_ + n_ghost_;
        SlabPart part{layout_.start[std::size_t(rank_)], nx_, n_owned_};
        g_ = make_geometry<K, T>(pts, setup, &part);
        owned_x_.assign(src.begin(), src.begin() + std::ptrdiff_t(3 * n_owned_));
        split_p2p(src);
      } else {
        g_ = std::make_unique<CpuGeometry<T>>();
        g_->setup = setup;
      }
      // the FFT arrays: max(n_grid, n_out) components, each 2 cstride_ values
      const std::size_t bytes = std::max<std::size_t>(1, std::size_t(ncomp_) * 2 * cstride_) * sizeof(T);
      fft_data_.reset(static_cast<T*>(fftw_malloc(bytes)));
      if (!fft_data_)
        throw ResourceError("distributed Ewald: out of memory allocating the FFT slabs (" + std::to_string(bytes >> 20) +
                            " MiB)");
    } catch (...) {
      err = std::current_exception();
    }
    agree(comm, err);
  }

  void evaluate(const double* v, double* out, StageTimes& times) const override {
    constexpr int ns = K::n_src, no = K::n_out, ng = K::n_grid;
    CpuWorkspace<T> ws;
    std::vector<double> val((n_owned_ + n_ghost_) * ns + 1);
    {
      ScopedStage st(times, "SORT");
      Phase phase(kPhaseSort);
      sort_->forward(v, ns, val.data());
    }
    {
      ScopedStage st(times, "GHOST-SOURCE");
      Phase phase(kPhaseGhostSource);
      ghost_->forward(val.data(), ns, val.data() + n_owned_ * ns);
    }
    load(ws, val);
    if (nx_ > 0) {
      ScopedStage st(times, "P2P");
      if (p2p_own_) p2p_split(val, ws);
      else p2p<K, T>(*g_, ws);
    }
    T* real = fft_data_.get();  // evaluate is collective: one call at a time per plan
    const SlabGrid<T> grid{real, std::size_t(fft_.real_row()), 2 * cstride_};
    const std::size_t plane_g = std::size_t(ng) * std::size_t(M_[1]) * std::size_t(M_[2]);
    {
      ScopedStage st(times, "P2G");
      if (nx_ > 0) p2g_spread<K, T>(*g_, ws);
    }
    {
      ScopedStage st(times, "GHOST-GRID");
      Phase phase(kPhaseGhostGrid);
      std::vector<GhostPlanes<T>> to(static_cast<std::size_t>(size_)), in;
      if (nx_ > 0) slab_fold(layout_, rank_, setup_.params.P, M_, ng, ws.pad.data(), grid, to);
      bytes_grid_ += exchange_planes(comm_, mode_, peers_, fold_nb_, plane_g, to, in);
      for (const GhostPlanes<T>& r : in) slab_add(layout_, rank_, M_, ng, r, grid);
    }
    {
      ScopedStage st(times, "FFT");
      Phase phase(kPhaseFft);
      for (int c = 0; c < ng; ++c) fft_.forward(real + std::size_t(c) * 2 * cstride_);
    }
    {
      ScopedStage st(times, "CNV");
      ws.grid.cplx = reinterpret_cast<typename Fftw<T>::complex*>(real);
      cnv_on<K, T>(*g_, ws, SpectrumView{int(fft_.local_n1()), M_[0], true, int(fft_.local_1_start()), cstride_});
      ws.grid.cplx = nullptr;  // not ws's to free
    }
    {
      ScopedStage st(times, "IFFT");
      Phase phase(kPhaseIfft);
      for (int c = 0; c < no; ++c) fft_.backward(real + std::size_t(c) * 2 * cstride_);
    }
    {
      ScopedStage st(times, "GHOST-GRID");
      Phase phase(kPhaseGhostGrid);
      std::vector<GhostPlanes<T>> to(static_cast<std::size_t>(size_)), in;
      for (int r = 0; r < size_; ++r)
        if (r != rank_) slab_planes_for(layout_, rank_, r, setup_.params.P, M_, no, grid, to[std::size_t(r)]);
      bytes_grid_ += exchange_planes(comm_, mode_, peers_, unfold_nb_, std::size_t(no) * std::size_t(M_[1]) * std::size_t(M_[2]), to, in);
      std::vector<const GhostPlanes<T>*> ptrs;
      for (const GhostPlanes<T>& r : in) ptrs.push_back(&r);
      if (nx_ > 0) slab_unfold(layout_, rank_, setup_.params.P, M_, no, grid, ptrs, ws.pad);
    }
    std::vector<double> owned_out(n_owned_ * no + 1, 0.0);
    if (nx_ > 0) {
      {
        ScopedStage st(times, "G2P");
        g2p_gather<K, T>(*g_, ws);
      }
      {
        ScopedStage st(times, "self");
        self_term<K, T>(*g_, ws);
      }
      const CellList<T>& tc = g_->targets();
      for (std::size_t t = 0; t < n_owned_; ++t)
        for (int c = 0; c < no; ++c) owned_out[std::size_t(tc.perm[t]) * no + c] = ws.acc[t * no + c] * K::final_scale;
    }
    {
      ScopedStage st(times, "SORT");
      Phase phase(kPhaseSort);
      sort_->reverse(owned_out.data(), no, out);
    }
  }

  DistributedCounts counts() const override {
    DistributedCounts c;
    c.owned = n_owned_;
    c.ghosts = n_ghost_;
    c.plane_start = layout_.start[std::size_t(rank_)];
    c.planes = nx_;
    c.slab_lo = layout_.lo(rank_);
    c.slab_hi = layout_.hi(rank_);
    c.bytes_sort = sort_->bytes_sent();
    c.bytes_ghost_source = ghost_->bytes_sent();
    c.bytes_ghost_grid = bytes_grid_;
    c.neighbour_sort = sort_->neighbours();
    c.neighbour_ghost_source = ghost_->neighbours();
    c.neighbour_ghost_grid = fold_nb_ == 1 && unfold_nb_ == 1;
    c.pair_symmetry = p2p_own_ != nullptr;
    return c;
  }

 private:
  // ws.values (cell-sorted, a zero row appended) and the global sums of the self stage: the
  // Laplace total charge, the stresslet's sum q.nu and its moment (over the owned sources)
  void load(CpuWorkspace<T>& ws, const std::vector<double>& val) const {
    constexpr int ns = K::n_src;
    double sums[5] = {0, 0, 0, 0, 0};
    if (nx_ > 0) {
      const CellList<T>& s = g_->src;
      const std::size_t n = s.x.size();
      ws.values.resize((n + 1) * ns);
      for (int c = 0; c < ns; ++c) ws.values[n * ns + c] = T(0);
      for (std::size_t i = 0; i < n; ++i)
        for (int c = 0; c < ns; ++c) ws.values[i * ns + c] = static_cast<T>(val[std::size_t(s.perm[i]) * ns + c]);
      if constexpr (K::kernel == Kernel::Laplace) {
        for (std::size_t k = 0; k < n_owned_; ++k) sums[0] += val[k];
      } else if constexpr (K::kernel == Kernel::Stresslet || K::kernel == Kernel::StokesCombined) {
        constexpr int o = K::kernel == Kernel::Stresslet ? 0 : 3;
        for (std::size_t k = 0; k < n_owned_; ++k) {
          const double* qi = &val[k * ns + o];
          const double qn = qi[0] * qi[3] + qi[1] * qi[4] + qi[2] * qi[5];
          sums[1] += qn;
          for (int d = 0; d < 3; ++d) sums[2 + d] += qn * owned_x_[3 * k + std::size_t(d)];
        }
      }
    }
    double tot[5];
    Phase phase(kPhaseReduce);
    MPI_Allreduce(sums, tot, 5, MPI_DOUBLE, MPI_SUM, comm_);
    ws.total[0] = tot[0];
    ws.total[1] = tot[1];
    for (int d = 0; d < 3; ++d) ws.moment[d] = tot[2 + d];
  }

  // P2P with pair symmetry (where uses_pair_symmetry allows it, as in the single-process plan):
  // the owned points among themselves, each pair once for both points, plus the owned targets
  // against the ghost sources, one-sided. Only the pairs across a slab face are evaluated twice
  // (once on each side): P2P's pair work per point is about 1 + r_c / w times the single
  // process's (w the slab width) instead of 2 (every pair from both of its points, as the
  // owned + ghost sources of g_ give it).
  void split_p2p(const std::vector<double>& src) {
    std::unique_ptr<CpuGeometry<T>> own = make_p2p_geometry<T>(src.data(), n_owned_, nullptr, 0, setup_);
    if (!uses_pair_symmetry<K, T>(*own)) return;
    p2p_own_ = std::move(own);
    // the rows of each geometry's targets in g_'s target order (the owned point k is row
    // main[k] of ws.acc)
    std::vector<int> main(n_owned_);
    const CellList<T>& tc = g_->targets();
    for (std::size_t t = 0; t < n_owned_; ++t) main[std::size_t(tc.perm[t])] = static_cast<int>(t);
    own_rows_.resize(n_owned_);
    for (std::size_t i = 0; i < n_owned_; ++i) own_rows_[i] = main[std::size_t(p2p_own_->src.perm[i])];
    if (n_ghost_ == 0) return;
    // the ghost pass's targets: the owned points within reach of a slab face (every ghost lies
    // outside the slab along axis 0, so a point farther from both faces has none within r_c);
    // the reach as ghost_ranks takes it
    const double lo = layout_.lo(rank_), hi = layout_.hi(rank_);
    const double reach = setup_.params.rc * (1 + 1e-12) + 1e-12 * layout_.L;
    std::vector<double> near_x;
    for (std::size_t k = 0; k < n_owned_; ++k) {
      const double x = src[3 * k];
      if (x - lo < reach || hi - x < reach) {
        near_.push_back(k);
        near_x.insert(near_x.end(), src.begin() + std::ptrdiff_t(3 * k), src.begin() + std::ptrdiff_t(3 * k + 3));
      }
    }
    if (near_.empty()) return;  // no owned point near a face: no ghost pass (a null target list means targets = sources)
    p2p_ghost_ = make_p2p_geometry<T>(src.data() + 3 * n_owned_, n_ghost_, near_x.data(), near_.size(), setup_);
    ghost_rows_.resize(near_.size());
    for (std::size_t i = 0; i < near_.size(); ++i)
      ghost_rows_[i] = main[near_[std::size_t(p2p_ghost_->trg.perm[i])]];
  }

  // P2P by split_p2p's two geometries into ws.acc (g_'s target order). val: the owned points'
  // values, then the ghosts', in exchange order.
  void p2p_split(const std::vector<double>& val, CpuWorkspace<T>& ws) const {
    constexpr int ns = K::n_src, no = K::n_out;
    auto sorted_values = [&](const CellList<T>& c, std::size_t first, CpuWorkspace<T>& w) {
      const std::size_t n = c.x.size();
      w.values.assign((n + 1) * ns, T(0));  // the last row zero (P2P's padding)
      for (std::size_t i = 0; i < n; ++i)
        for (int d = 0; d < ns; ++d) w.values[i * ns + d] = static_cast<T>(val[(first + std::size_t(c.perm[i])) * ns + d]);
    };
    ws.acc.assign(n_owned_ * no, 0.0);
    CpuWorkspace<T> w;
    sorted_values(p2p_own_->src, 0, w);
    p2p<K, T>(*p2p_own_, w);
    for (std::size_t i = 0; i < n_owned_; ++i)
      for (int d = 0; d < no; ++d) ws.acc[std::size_t(own_rows_[i]) * no + d] += w.acc[i * no + d];
    if (p2p_ghost_) {
      sorted_values(p2p_ghost_->src, n_owned_, w);
      p2p<K, T>(*p2p_ghost_, w);
      for (std::size_t i = 0; i < ghost_rows_.size(); ++i)
        for (int d = 0; d < no; ++d) ws.acc[std::size_t(ghost_rows_[i]) * no + d] += w.acc[i * no + d];
    }
  }

  MPI_Comm comm_;
  BackendSetup setup_;
  SlabFft<T> fft_;
  int rank_ = 0, size_ = 1, nx_ = 0, ncomp_ = 1;
  std::array<int, 3> M_{};
  SlabLayout layout_;
  std::unique_ptr<PointExchange> sort_, ghost_;
  std::size_t n_owned_ = 0, n_ghost_ = 0, cstride_ = 0;
  std::unique_ptr<CpuGeometry<T>> g_;
  std::unique_ptr<CpuGeometry<T>> p2p_own_, p2p_ghost_;  // split_p2p (null: P2P one-sided on g_)
  std::vector<int> own_rows_, ghost_rows_;
  std::vector<std::size_t> near_;  // the owned points the ghost pass takes as targets (split_p2p)
  std::vector<double> owned_x_;  // wrapped coordinates of the owned points (the stresslet's k = 0 term)
  mutable std::uint64_t bytes_grid_ = 0;
  ExchangeMode mode_ = ExchangeMode::Auto;
  std::vector<int> peers_;  // slab_neighbours of this rank
  mutable int fold_nb_ = -1, unfold_nb_ = -1;  // the GHOST-GRID exchanges' choice (exchange_planes)
  struct FftwFree {
    void operator()(T* p) const { fftw_free(p); }
  };
  std::unique_ptr<T, FftwFree> fft_data_;  // the FFT slabs, ncomp_ components of 2 cstride_ values
};

}  // namespace

std::unique_ptr<DistributedBackend> make_distributed_backend(MPI_Comm comm, const std::vector<double>& points,
                                                             const BackendSetup& setup, ExchangeMode mode) {
  agree(comm, !setup.energy_parseval && setup.p2g_variant != P2GVariant::Baseline,
        "the distributed plan supports neither the Parseval energy nor the baseline P2G");
  return with_traits(setup.kernel, setup.field, [&](auto tr) -> std::unique_ptr<DistributedBackend> {
    if (setup.precision == Precision::Single) return std::make_unique<Dist<decltype(tr), float>>(comm, points, setup, mode);
    return std::make_unique<Dist<decltype(tr), double>>(comm, points, setup, mode);
  });
}

}  // namespace elliptica::ewald::detail::mpi
