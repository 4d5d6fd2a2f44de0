// The distributed FFT and IFFT of the slab-decomposed spectral Ewald sum (seed 000, section 6.5;
// issue 30), on FFTW's MPI transforms (Debian libfftw3-mpi-dev). Compiled only with MPI.
#pragma once

#include <mpi.h>

#include <array>
#include <cstddef>

namespace elliptica::ewald::detail::mpi {

/// One component's 3-D real-to-complex transform of an M[0] x M[1] x M[2] grid distributed in
/// slabs along axis 0, and its inverse, in place, with FFTW-MPI's transposed output (the
/// spectrum distributed along axis 1, which saves the transpose back; the CNV works on it there).
///
/// Layout of one component's array (T values, at least 2 alloc() of them, aligned as fftw_malloc):
///  - real (forward input, backward output): local_n0() planes of M[1] rows of 2 (M[2]/2 + 1)
///    values (the last M[2] % 2 ? 1 : 2 of each row padding), plane i being global plane
///    local_0_start() + i;
///  - complex (forward output, backward input): local_n1() x M[0] x (M[2]/2 + 1) complex values,
///    (j, i, l) at ((j * M[0] + i) * (M[2]/2 + 1) + l), j being global index local_1_start() + j
///    along axis 1.
/// Unnormalised, as FFTW: backward(forward(x)) = M[0] M[1] M[2] x. A rank may own no planes
/// (FFTW's blocks of ceil(M / ranks)); it still takes part in every call (they are collective).
template <class T>
class SlabFft {
 public:
  /// Collective over comm. threads: FFTW's threads per rank; flags: FFTW planner flags
  /// (FFTW_ESTIMATE, FFTW_MEASURE; measuring overwrites nothing of the caller's: scratch arrays).
  /// Throws ResourceError if FFTW cannot plan or allocate.
  SlabFft(MPI_Comm comm, const std::array<int, 3>& M, int threads, unsigned flags);
  ~SlabFft();
  SlabFft(const SlabFft&) = delete;
  SlabFft& operator=(const SlabFft&) = delete;

  std::ptrdiff_t local_n0() const { return n0_; }
  std::ptrdiff_t local_0_start() const { return s0_; }
  std::ptrdiff_t local_n1() const { return n1_; }
  std::ptrdiff_t local_1_start() const { return s1_; }
  /// Complex values to allocate per component (FFTW's count: includes its transpose scratch).
  std::ptrdiff_t alloc() const { return alloc_; }
  int real_row() const { return 2 * (M_[2] / 2 + 1); }  ///< T values per real row (padded)
  int complex_row() const { return M_[2] / 2 + 1; }     ///< complex values per spectrum row

  /// In place on one component's array (layout above). Collective.
  void forward(T* data) const;
  void backward(T* data) const;

 private:
  std::array<int, 3> M_;
  std::ptrdiff_t n0_ = 0, s0_ = 0, n1_ = 0, s1_ = 0, alloc_ = 0;
  void* fwd_ = nullptr;
  void* bwd_ = nullptr;
};

}  // namespace elliptica::ewald::detail::mpi
