// MPI-SORT and MPI-GHOST-SOURCE as PointExchange, and agree (exchange.hpp).
#include "ewald/mpi/exchange.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <new>
#include <stdexcept>

#include "elliptica/core/error.hpp"

namespace elliptica::ewald::detail::mpi {

void agree(MPI_Comm comm, bool ok, const std::string& message) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // the lowest failing rank, or size when none failed
  int mine = ok ? size : rank, first = size;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == size) return;
  int len = rank == first ? static_cast<int>(message.size()) : 0;
  MPI_Bcast(&len, 1, MPI_INT, first, comm);
  std::string text(std::size_t(len), '\0');
  if (rank == first) text = message;
  if (len > 0) MPI_Bcast(text.data(), len, MPI_CHAR, first, comm);
  throw InvalidArgument("rank " + std::to_string(first) + ": " + text);
}

void agree(MPI_Comm comm, const std::exception_ptr& error) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  constexpr int kOther = 99;  // an exception that is not an elliptica::Error
  int category = -1;
  std::string msg;
  if (error) {
    try {
      std::rethrow_exception(error);
    } catch (const Error& e) {
      category = static_cast<int>(e.category());
      msg = e.what();
    } catch (const std::bad_alloc&) {
      category = static_cast<int>(ErrorCategory::Resource);
      msg = "out of memory";
    } catch (const std::exception& e) {
      category = kOther;
      msg = e.what();
    } catch (...) {
      category = kOther;
      msg = "unknown exception";
    }
  }
  int mine = category >= 0 ? rank : size, first = size;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == size) return;
  int head[2] = {category, static_cast<int>(msg.size())};
  MPI_Bcast(head, 2, MPI_INT, first, comm);
  msg.resize(std::size_t(head[1]));
  if (head[1] > 0) MPI_Bcast(msg.data(), head[1], MPI_CHAR, first, comm);
  if (first > 0) msg = "rank " + std::to_string(first) + ": " + msg;
  if (head[0] == kOther) throw std::runtime_error(msg);
  switch (static_cast<ErrorCategory>(head[0])) {  // the same exception class on every rank
    case ErrorCategory::IO: throw IOError(msg);
    case ErrorCategory::Numerical: throw NumericalError(msg);
    case ErrorCategory::NotConverged: throw NotConverged(msg);
    case ErrorCategory::Resource: throw ResourceError(msg);
    default: throw InvalidArgument(msg);
  }
}

std::vector<int> neighbour_ranks(int rank, int size) {
  std::vector<int> r;
  for (int p : {(rank + size - 1) % size, (rank + 1) % size})
    if (p != rank && std::find(r.begin(), r.end(), p) == r.end()) r.push_back(p);
  return r;
}

bool use_neighbours(MPI_Comm comm, ExchangeMode mode, bool local_ok, const std::string& message) {
  if (mode == ExchangeMode::AllToAll) return false;
  if (mode == ExchangeMode::Neighbour) {
    agree(comm, local_ok, message);
    return true;
  }
  int mine = local_ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm);
  return all == 1;
}

void alltoall_counts(MPI_Comm comm, const std::vector<int>* peers, const int* send, int* recv) {
  if (!peers) {
    MPI_Alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, comm);
    return;
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::fill(recv, recv + size, 0);
  recv[rank] = send[rank];
  std::vector<MPI_Request> req;
  for (int p : *peers) {
    req.emplace_back();
    MPI_Irecv(recv + p, 1, MPI_INT, p, 0, comm, &req.back());
  }
  for (int p : *peers) {
    req.emplace_back();
    MPI_Isend(send + p, 1, MPI_INT, p, 0, comm, &req.back());
  }
  MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE);
}

void alltoallv(MPI_Comm comm, const std::vector<int>* peers, const void* send, const int* scount, const int* sdispl,
               void* recv, const int* rcount, const int* rdispl, MPI_Datatype t) {
  if (!peers) {
    MPI_Alltoallv(send, scount, sdispl, t, recv, rcount, rdispl, t, comm);
    return;
  }
  int rank = 0, size = 1, tsize = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MPI_Type_size(t, &tsize);
  const std::size_t item = static_cast<std::size_t>(tsize);
  if (scount[rank] > 0)
    std::memcpy(static_cast<char*>(recv) + std::size_t(rdispl[rank]) * item,
                static_cast<const char*>(send) + std::size_t(sdispl[rank]) * item, std::size_t(scount[rank]) * item);
  std::vector<MPI_Request> req;
  for (int p : *peers)
    if (rcount[p] > 0) {
      req.emplace_back();
      MPI_Irecv(static_cast<char*>(recv) + std::size_t(rdispl[p]) * item, rcount[p], t, p, 1, comm, &req.back());
    }
  for (int p : *peers)
    if (scount[p] > 0) {
      req.emplace_back();
      MPI_Isend(static_cast<const char*>(send) + std::size_t(sdispl[p]) * item, scount[p], t, p, 1, comm, &req.back());
    }
  MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE);
}

PointExchange::PointExchange(MPI_Comm comm, std::size_t n_items, const std::vector<std::pair<std::size_t, int>>& moves,
                             ExchangeMode mode, const std::string& what, std::optional<std::vector<int>> peers)
    : comm_(comm) {
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &size_);
  std::string err;
  std::vector<std::size_t> count(std::size_t(size_), 0);
  std::vector<int> per_item(n_items, 0);
  for (const auto& [item, r] : moves) {
    if (item >= n_items || r < 0 || r >= size_) {
      err = "point exchange: move (" + std::to_string(item) + " -> rank " + std::to_string(r) + ") out of range (" +
            std::to_string(n_items) + " items, " + std::to_string(size_) + " ranks)";
      break;
    }
    ++count[std::size_t(r)];
    ++per_item[item];
  }
  for (std::size_t c : count)
    if (err.empty() && c > std::size_t(INT_MAX)) err = "point exchange: more than INT_MAX items to one rank";
  agree(comm, err.empty(), err);
  {
    peers_ = peers ? std::move(*peers) : neighbour_ranks(rank_, size_);
    int far = -1;
    for (int r = 0; r < size_ && far < 0; ++r)
      if (count[std::size_t(r)] > 0 && r != rank_ && std::find(peers_.begin(), peers_.end(), r) == peers_.end()) far = r;
    std::string msg;
    if (far >= 0) {
      std::size_t item = 0;
      for (const auto& [i, r] : moves)
        if (r == far) {
          item = i;
          break;
        }
      msg = what + ": point " + std::to_string(item) + " of this rank goes to rank " + std::to_string(far) +
            ", not a neighbour (the neighbour-only exchange needs every point in the slab of its rank or of a "
            "neighbouring slab)";
    }
    neighbours_ = use_neighbours(comm, mode, far < 0, msg);
  }
  int oto = std::all_of(per_item.begin(), per_item.end(), [](int k) { return k == 1; }) ? 1 : 0, all = 0;
  MPI_Allreduce(&oto, &all, 1, MPI_INT, MPI_MIN, comm);
  one_to_one_ = all == 1;
  // send order: by destination, stable in the moves' order (a counting sort)
  scount_.assign(std::size_t(size_), 0);
  sdispl_.assign(std::size_t(size_), 0);
  for (int r = 0; r < size_; ++r) scount_[std::size_t(r)] = static_cast<int>(count[std::size_t(r)]);
  std::size_t off = 0;
  std::vector<std::size_t> next(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    next[std::size_t(r)] = off;
    off += count[std::size_t(r)];
  }
  order_.resize(moves.size());
  for (const auto& [item, r] : moves) order_[next[std::size_t(r)]++] = item;
  rcount_.assign(std::size_t(size_), 0);
  alltoall_counts(comm, neighbours_ ? &peers_ : nullptr, scount_.data(), rcount_.data());
  // displacements in items: their sums must fit MPI's int as well
  long long s = 0, rr = 0;
  rdispl_.assign(std::size_t(size_), 0);
  bool fits = true;
  for (int r = 0; r < size_; ++r) {
    sdispl_[std::size_t(r)] = static_cast<int>(s);
    rdispl_[std::size_t(r)] = static_cast<int>(rr);
    s += scount_[std::size_t(r)];
    rr += rcount_[std::size_t(r)];
    fits = fits && s <= INT_MAX && rr <= INT_MAX;
  }
  agree(comm, fits, "point exchange: more than INT_MAX items sent or received by one rank");
  nrecv_ = std::size_t(rr);
}

void PointExchange::exchange(const void* send, void* recv, std::size_t item_bytes, bool backwards) const {
  // one contiguous type per item, so that the counts are items (not bytes) and stay within int
  MPI_Datatype t;
  MPI_Type_contiguous(static_cast<int>(item_bytes), MPI_BYTE, &t);
  MPI_Type_commit(&t);
  const std::vector<int>& sc = backwards ? rcount_ : scount_;
  const std::vector<int>& sd = backwards ? rdispl_ : sdispl_;
  const std::vector<int>& rc = backwards ? scount_ : rcount_;
  const std::vector<int>& rd = backwards ? sdispl_ : rdispl_;
  alltoallv(comm_, neighbours_ ? &peers_ : nullptr, send, sc.data(), sd.data(), recv, rc.data(), rd.data(), t);
  MPI_Type_free(&t);
  for (int r = 0; r < size_; ++r)
    if (r != rank_) bytes_sent_ += std::uint64_t(sc[std::size_t(r)]) * item_bytes;
}

template <class T>
void PointExchange::forward(const T* in, int width, T* out) const {
  const std::size_t w = std::size_t(width);
  std::vector<T> buf(order_.size() * w);
  for (std::size_t k = 0; k < order_.size(); ++k) std::memcpy(&buf[k * w], in + order_[k] * w, w * sizeof(T));
  // MPI needs valid buffer addresses even for zero counts
  T dummy{};
  exchange(buf.empty() ? &dummy : buf.data(), nrecv_ ? out : &dummy, w * sizeof(T), false);
}

template <class T>
void PointExchange::reverse(const T* in, int width, T* out) const {
  if (!one_to_one_) throw std::logic_error("PointExchange::reverse: the exchange has items with several moves or none");
  const std::size_t w = std::size_t(width);
  std::vector<T> buf(order_.size() * w);
  T dummy{};
  exchange(nrecv_ ? in : &dummy, buf.empty() ? &dummy : buf.data(), w * sizeof(T), true);
  for (std::size_t k = 0; k < order_.size(); ++k) std::memcpy(out + order_[k] * w, &buf[k * w], w * sizeof(T));
}

template void PointExchange::forward<double>(const double*, int, double*) const;
template void PointExchange::forward<float>(const float*, int, float*) const;
template void PointExchange::forward<int>(const int*, int, int*) const;
template void PointExchange::forward<std::int64_t>(const std::int64_t*, int, std::int64_t*) const;
template void PointExchange::reverse<double>(const double*, int, double*) const;
template void PointExchange::reverse<float>(const float*, int, float*) const;

}  // namespace elliptica::ewald::detail::mpi
