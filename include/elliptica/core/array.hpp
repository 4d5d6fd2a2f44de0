#pragma once
/// @file array.hpp
/// Non-owning views of contiguous row-major arrays, with explicit shapes, and a small owning
/// row-major array. Positions are (N,3), scalar strengths (N,), vector strengths (N,3).
#include <cstddef>
#include <string>
#include <vector>

#include "elliptica/core/error.hpp"

namespace elliptica {

/// Read-only view of a contiguous row-major (rows, cols) array of T. cols == 1 stands for (N,).
template <class T>
struct ConstMatrixView {
  const T* data = nullptr;
  std::size_t rows = 0;
  std::size_t cols = 0;

  ConstMatrixView() = default;
  ConstMatrixView(const T* d, std::size_t r, std::size_t c) : data(d), rows(r), cols(c) {}
  ConstMatrixView(const std::vector<T>& v, std::size_t c)
      : data(v.data()), rows(c ? v.size() / c : 0), cols(c) {
    if (c == 0 || v.size() % c != 0)
      throw InvalidArgument("array of " + std::to_string(v.size()) + " values is not a whole number of rows of " +
                            std::to_string(c));
  }
  std::size_t size() const { return rows * cols; }
  bool empty() const { return rows == 0; }
  const T& operator()(std::size_t i, std::size_t j) const { return data[i * cols + j]; }
};

/// Writable view of a contiguous row-major (rows, cols) array of T.
template <class T>
struct MatrixView {
  T* data = nullptr;
  std::size_t rows = 0;
  std::size_t cols = 0;

  MatrixView() = default;
  MatrixView(T* d, std::size_t r, std::size_t c) : data(d), rows(r), cols(c) {}
  std::size_t size() const { return rows * cols; }
  T& operator()(std::size_t i, std::size_t j) const { return data[i * cols + j]; }
  operator ConstMatrixView<T>() const { return {data, rows, cols}; }
};

/// Owning contiguous row-major array of doubles with a shape of rank 1 or 2.
/// rank 1 arrays report cols == 1 and ndim == 1.
struct Array2D {
  std::vector<double> values;
  std::size_t rows = 0;
  std::size_t cols = 0;
  int ndim = 2;

  Array2D() = default;
  Array2D(std::size_t r, std::size_t c, int nd = 2) : values(r * c, 0.0), rows(r), cols(c), ndim(nd) {}
  ConstMatrixView<double> view() const { return {values.data(), rows, cols}; }
  MatrixView<double> view() { return {values.data(), rows, cols}; }
};

/// Throws InvalidArgument naming `what` and the first offending index if any value is NaN or Inf.
void require_finite(ConstMatrixView<double> a, const std::string& what);

/// Whether all n values at a are finite (no NaN, no Inf): a branch-free scan of the exponent bits
/// that the compiler vectorises (one pass at memory speed; callers look for the offender only
/// when it returns false).
bool all_finite(const double* a, std::size_t n);

/// The largest |a[k]| of n finite values (0 for n = 0), by their bit patterns (the order of
/// non-negative doubles), vectorised; NaN or Inf values give an unspecified result.
double max_abs(const double* a, std::size_t n);

}  // namespace elliptica
