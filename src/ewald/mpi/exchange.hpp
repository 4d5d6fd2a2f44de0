// MPI exchanges of the distributed spectral Ewald sum (seed 000, section 6.5; issue 30):
// MPI-SORT (every point to the rank that owns its slab, results back in the caller's order) and
// MPI-GHOST-SOURCE (sources near a slab face to the neighbours that need them for P2P), both as a
// PointExchange; `agree`, which turns an error on some ranks into the same exception on all of
// them (a collective call never waits for a rank that threw). Compiled only with MPI.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "elliptica/ewald/ewald_mpi.hpp"

namespace elliptica::ewald::detail::mpi {

/// Collective: if `ok` is false on any rank, every rank throws InvalidArgument with the message
/// of the lowest failing rank (prefixed "rank K: "). Returns normally on every rank otherwise.
void agree(MPI_Comm comm, bool ok, const std::string& message);
/// Collective: if `error` is set on any rank, every rank throws the error of the lowest failing
/// rank with its category (InvalidArgument, NumericalError, ResourceError, ...; std::bad_alloc
/// becomes ResourceError, another exception std::runtime_error), the message prefixed "rank K: "
/// when K > 0. (Public as elliptica::ewald::mpi_agree.)
void agree(MPI_Comm comm, const std::exception_ptr& error);

/// The distinct ranks rank - 1 and rank + 1 (periodically), without rank itself: none for one
/// rank, one for two. (The distributed plan passes slab_neighbours instead: slab.hpp.)
std::vector<int> neighbour_ranks(int rank, int size);

/// Collective: whether an exchange goes neighbour-only. local_ok: this rank sends only to
/// itself and its peers. AllToAll: false; Auto: whether local_ok holds on every rank (one
/// MPI_Allreduce); Neighbour: true, after agree(local_ok, message).
bool use_neighbours(MPI_Comm comm, ExchangeMode mode, bool local_ok, const std::string& message);

/// MPI_Alltoall of one int per rank (peers null), or by messages with the given peers only
/// (the counts from other ranks are then set to 0: every rank must send only to its peers, and
/// the peer relation must be symmetric).
void alltoall_counts(MPI_Comm comm, const std::vector<int>* peers, const int* send, int* recv);
/// MPI_Alltoallv of items of the contiguous type t (peers null), or MPI_Isend / MPI_Irecv with
/// the peers and a copy of the block to itself. Counts and displacements in items.
void alltoallv(MPI_Comm comm, const std::vector<int>* peers, const void* send, const int* scount, const int* sdispl,
               void* recv, const int* rcount, const int* rdispl, MPI_Datatype t);

/// Moves per-item values from the ranks that hold items to the ranks the items go to, by one
/// MPI_Alltoallv (counts exchanged once, at construction).
///
/// An exchange is a list of moves (item, destination rank): MPI-SORT has one per item (its
/// slab's owner, possibly this rank), MPI-GHOST-SOURCE one per (source, rank that needs it). The
/// received items are grouped by origin rank (ascending) and, within one origin, in the order of
/// its moves list. forward() carries values along the moves; reverse() carries values of the
/// received items back to the items (only for exchanges with exactly one move per item: the
/// results of MPI-SORT's targets returned in the caller's order).
class PointExchange {
 public:
  /// Collective over comm. n_items: the local items; moves: (item < n_items, 0 <= rank < size),
  /// in any order (a move to this rank stays local, through the same call). mode: how the
  /// messages go (use_neighbours), peers: this rank's neighbours (a symmetric relation; default
  /// neighbour_ranks), `what` names the exchange in the Neighbour mode's error. Throws
  /// InvalidArgument (on every rank) for an item or rank out of range, for counts beyond MPI's
  /// int, or (Neighbour) for a move beyond the peers.
  PointExchange(MPI_Comm comm, std::size_t n_items, const std::vector<std::pair<std::size_t, int>>& moves,
                ExchangeMode mode = ExchangeMode::AllToAll, const std::string& what = "point exchange",
                std::optional<std::vector<int>> peers = std::nullopt);

  std::size_t sent() const { return order_.size(); }  ///< moves of this rank (to itself included)
  std::size_t received() const { return nrecv_; }     ///< items this rank receives (from itself included)
  /// Items received from each origin rank (size: ranks).
  const std::vector<int>& recv_counts() const { return rcount_; }
  /// Whether every item has exactly one move (reverse() allowed).
  bool one_to_one() const { return one_to_one_; }
  /// Whether the messages go to the neighbour ranks only (use_neighbours).
  bool neighbours() const { return neighbours_; }

  /// in: (n_items, width) values, row-major; out: (received(), width). Collective.
  template <class T>
  void forward(const T* in, int width, T* out) const;
  /// in: (received(), width) values of the received items; out: (n_items, width), each item's
  /// row from the one rank it went to. Collective; throws std::logic_error unless one_to_one().
  template <class T>
  void reverse(const T* in, int width, T* out) const;

  /// Bytes this rank sent to other ranks (not to itself) by forward / reverse calls so far.
  std::uint64_t bytes_sent() const { return bytes_sent_; }

 private:
  void exchange(const void* send, void* recv, std::size_t item_bytes, bool backwards) const;

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  std::size_t nrecv_ = 0;
  bool one_to_one_ = false, neighbours_ = false;
  std::vector<int> peers_;  // the neighbours (used when neighbours_)
  std::vector<std::size_t> order_;  // the moved items in send order (destination, then moves order)
  std::vector<int> scount_, sdispl_, rcount_, rdispl_;  // in items, per rank
  mutable std::uint64_t bytes_sent_ = 0;
};

}  // namespace elliptica::ewald::detail::mpi
