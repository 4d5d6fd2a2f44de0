// CSR kernels against dense products; Matrix Market reader against good and malformed files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/core/sparse.hpp"
#include "elliptica/core/error.hpp"

using elliptica::CsrMatrix;

namespace {

using Dense = std::vector<std::vector<double>>;

/// Random sparse matrix (about `density` filled) with duplicates in the triplets; returns the
/// dense equivalent in D.
CsrMatrix random_csr(std::size_t m, std::size_t n, double density, std::mt19937& g, Dense& D) {
  std::uniform_real_distribution<double> u(-1, 1), f(0, 1);
  std::vector<std::int64_t> r, c;
  std::vector<double> v;
  D.assign(m, std::vector<double>(n, 0.0));
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j)
      if (f(g) < density) {
        const int copies = f(g) < 0.3 ? 2 : 1;  // duplicates must be summed
        for (int k = 0; k < copies; ++k) {
          const double x = u(g);
          r.push_back(static_cast<std::int64_t>(i));
          c.push_back(static_cast<std::int64_t>(j));
          v.push_back(x);
          D[i][j] += x;
        }
      }
  // Shuffle the triplets: from_triplets must sort.
  std::vector<std::size_t> perm(r.size());
  for (std::size_t k = 0; k < perm.size(); ++k) perm[k] = k;
  std::shuffle(perm.begin(), perm.end(), g);
  std::vector<std::int64_t> r2(r.size()), c2(r.size());
  std::vector<double> v2(r.size());
  for (std::size_t k = 0; k < perm.size(); ++k) {
    r2[k] = r[perm[k]];
    c2[k] = c[perm[k]];
    v2[k] = v[perm[k]];
  }
  return CsrMatrix::from_triplets(m, n, r2, c2, v2);
}

Dense to_dense(const CsrMatrix& A) {
  Dense D(A.rows, std::vector<double>(A.cols, 0.0));
  for (std::size_t i = 0; i < A.rows; ++i)
    for (std::int64_t p = A.row_ptr[i]; p < A.row_ptr[i + 1]; ++p) D[i][static_cast<std::size_t>(A.col[p])] += A.val[p];
  return D;
}

Dense dense_mul(const Dense& A, const Dense& B) {
  const std::size_t m = A.size(), k = B.size(), n = B.empty() ? 0 : B[0].size();
  Dense C(m, std::vector<double>(n, 0.0));
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t l = 0; l < k; ++l)
      for (std::size_t j = 0; j < n; ++j) C[i][j] += A[i][l] * B[l][j];
  return C;
}

void expect_dense_near(const Dense& A, const Dense& B, double tol) {
  ASSERT_EQ(A.size(), B.size());
  for (std::size_t i = 0; i < A.size(); ++i) {
    ASSERT_EQ(A[i].size(), B[i].size());
    for (std::size_t j = 0; j < A[i].size(); ++j) EXPECT_NEAR(A[i][j], B[i][j], tol) << "(" << i << ", " << j << ")";
  }
}

}  // namespace

TEST(Sparse, FromTripletsSortsSumsAndValidates) {
  std::mt19937 g(1);
  Dense D;
  CsrMatrix A = random_csr(17, 11, 0.3, g, D);
  EXPECT_NO_THROW(A.validate());
  expect_dense_near(to_dense(A), D, 1e-14);
  for (std::size_t i = 0; i < A.rows; ++i)
    for (std::int64_t p = A.row_ptr[i] + 1; p < A.row_ptr[i + 1]; ++p) EXPECT_LT(A.col[p - 1], A.col[p]);
}

TEST(Sparse, FromTripletsRejectsBadInput) {
  EXPECT_THROW(CsrMatrix::from_triplets(2, 2, {0, 2}, {0, 0}, {1.0, 1.0}), elliptica::InvalidArgument);
  EXPECT_THROW(CsrMatrix::from_triplets(2, 2, {0}, {-1}, {1.0}), elliptica::InvalidArgument);
  EXPECT_THROW(CsrMatrix::from_triplets(2, 2, {0}, {0}, {std::nan("")}), elliptica::InvalidArgument);
  EXPECT_THROW(CsrMatrix::from_triplets(2, 2, {0, 1}, {0}, {1.0}), elliptica::InvalidArgument);
}

TEST(Sparse, ValidateNamesInconsistencies) {
  CsrMatrix A = CsrMatrix::from_triplets(2, 3, {0, 0, 1}, {0, 2, 1}, {1.0, 2.0, 3.0});
  EXPECT_NO_THROW(A.validate());
  CsrMatrix B = A;
  std::swap(B.col[0], B.col[1]);  // unsorted
  EXPECT_THROW(B.validate(), elliptica::InvalidArgument);
  B = A;
  B.col[2] = 3;  // out of range
  EXPECT_THROW(B.validate(), elliptica::InvalidArgument);
  B = A;
  B.row_ptr.pop_back();
  EXPECT_THROW(B.validate(), elliptica::InvalidArgument);
  B = A;
  B.val.pop_back();
  EXPECT_THROW(B.validate(), elliptica::InvalidArgument);
}

TEST(Sparse, MultiplyDiagonalTransposeMatchDense) {
  std::mt19937 g(2);
  Dense D;
  CsrMatrix A = random_csr(23, 19, 0.25, g, D);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> x(19), y(23);
  for (auto& v : x) v = u(g);
  A.multiply(x.data(), y.data());
  for (std::size_t i = 0; i < 23; ++i) {
    double s = 0;
    for (std::size_t j = 0; j < 19; ++j) s += D[i][j] * x[j];
    EXPECT_NEAR(y[i], s, 1e-13);
  }
  const auto d = A.diagonal();
  ASSERT_EQ(d.size(), 19u);
  for (std::size_t i = 0; i < 19; ++i) EXPECT_EQ(d[i], D[i][i]);
  CsrMatrix T = A.transpose();
  EXPECT_NO_THROW(T.validate());
  EXPECT_EQ(T.rows, 19u);
  EXPECT_EQ(T.cols, 23u);
  const Dense DT = to_dense(T);
  for (std::size_t i = 0; i < 23; ++i)
    for (std::size_t j = 0; j < 19; ++j) EXPECT_EQ(DT[j][i], D[i][j]);
}

TEST(Sparse, ProductAndGalerkinMatchDense) {
  std::mt19937 g(3);
  Dense DA, DB, DS, DP;
  CsrMatrix A = random_csr(13, 21, 0.2, g, DA);
  CsrMatrix B = random_csr(21, 9, 0.2, g, DB);
  CsrMatrix C = elliptica::multiply(A, B);
  EXPECT_NO_THROW(C.validate());
  expect_dense_near(to_dense(C), dense_mul(DA, DB), 1e-13);
  EXPECT_THROW(elliptica::multiply(A, A), elliptica::InvalidArgument);

  CsrMatrix S = random_csr(15, 15, 0.3, g, DS);
  CsrMatrix P = random_csr(15, 6, 0.3, g, DP);
  CsrMatrix G = elliptica::galerkin(S, P);
  EXPECT_NO_THROW(G.validate());
  Dense PT(6, std::vector<double>(15));
  for (std::size_t i = 0; i < 15; ++i)
    for (std::size_t j = 0; j < 6; ++j) PT[j][i] = DP[i][j];
  expect_dense_near(to_dense(G), dense_mul(PT, dense_mul(DS, DP)), 1e-12);
  EXPECT_THROW(elliptica::galerkin(A, P), elliptica::InvalidArgument);
}

TEST(Sparse, CsrOperatorAppliesMatrix) {
  CsrMatrix A = CsrMatrix::from_triplets(2, 2, {0, 1, 1}, {0, 0, 1}, {2.0, -1.0, 3.0});
  elliptica::CsrOperator op(A);
  EXPECT_EQ(op.size(), 2u);
  const double x[2] = {1.0, 2.0};
  double y[2];
  op.apply(x, y);
  EXPECT_DOUBLE_EQ(y[0], 2.0);
  EXPECT_DOUBLE_EQ(y[1], 5.0);
}

// ---------------------------------------------------------------- Matrix Market

namespace {

class MtxFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("elliptica_mtx_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string write(const std::string& name, const std::string& text) {
    const auto p = (dir_ / name).string();
    std::ofstream(p) << text;
    return p;
  }
  /// Expects an IOError whose message names the file, the line and contains `what`.
  void expect_error(const std::string& text, int line, const std::string& what) {
    const auto p = write("bad.mtx", text);
    try {
      elliptica::io::read_matrix_market(p);
      ADD_FAILURE() << "no error for: " << what;
    } catch (const elliptica::IOError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(p + ":" + std::to_string(line) + ":"), std::string::npos) << msg;
      EXPECT_NE(msg.find(what), std::string::npos) << msg;
    }
  }
  std::filesystem::path dir_;
};

}  // namespace

TEST_F(MtxFiles, ReadsCoordinateGeneralSymmetricPatternAndArray) {
  auto A = elliptica::io::read_matrix_market(
      write("g.mtx", "%%MatrixMarket matrix coordinate real general\n% comment\n\n3 2 4\n1 1 1.5\n3 2 -2e0\n2 1 4\n1 1 0.5\n"));
  ASSERT_EQ(A.rows, 3u);
  ASSERT_EQ(A.cols, 2u);
  Dense D = to_dense(A);
  EXPECT_EQ(D[0][0], 2.0);  // duplicates summed
  EXPECT_EQ(D[1][0], 4.0);
  EXPECT_EQ(D[2][1], -2.0);
  EXPECT_EQ(A.nnz(), 3u);

  auto S = elliptica::io::read_matrix_market(
      write("s.mtx", "%%MatrixMarket matrix coordinate integer symmetric\n2 2 3\n1 1 4\n2 1 -1\n2 2 4\n"));
  Dense DS = to_dense(S);
  EXPECT_EQ(DS[0][1], -1.0);
  EXPECT_EQ(DS[1][0], -1.0);
  EXPECT_EQ(DS[1][1], 4.0);

  auto P = elliptica::io::read_matrix_market(
      write("p.mtx", "%%MatrixMarket matrix coordinate pattern general\n2 2 2\n1 2\n2 1\n"));
  EXPECT_EQ(to_dense(P)[0][1], 1.0);

  auto R = elliptica::io::read_matrix_market(
      write("a.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n0\n4\n"));
  Dense DR = to_dense(R);
  EXPECT_EQ(DR[0][0], 1.0);
  EXPECT_EQ(DR[1][0], 2.0);  // column-major
  EXPECT_EQ(DR[0][1], 0.0);
  EXPECT_EQ(DR[1][1], 4.0);
}

TEST_F(MtxFiles, MalformedFilesGiveClearErrors) {
  const std::string head = "%%MatrixMarket matrix coordinate real general\n";
  expect_error("%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 1\n", 1, "bad banner");
  expect_error("", 0, "empty file");
  expect_error("%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n", 1, "unsupported field");
  expect_error("%%MatrixMarket matrix coordinate real hermitian\n1 1 1\n1 1 1\n", 1, "unsupported symmetry");
  expect_error(head + "2 2 1\n1 1 1\n2 2 3\n", 4, "wrong entry count");
  expect_error(head + "2 2 2\n1 1 1\n3 1 2\n", 4, "out of range");
  expect_error(head + "2 2 2\n0 1 1\n", 3, "out of range");
  expect_error(head + "2 2 3\n1 1 1\n2 2 1\n", 4, "truncated");
  expect_error(head, 1, "truncated");
  expect_error(head + "2 2 1\n1 1 abc\n", 3, "non-numeric value");
  expect_error(head + "2 2 1\n1 x 1\n", 3, "non-numeric column index");
  expect_error(head + "2 two 1\n", 2, "non-numeric column count");
  expect_error(head + "2 2 1\n1 1\n", 3, "expected 3 fields");
  expect_error("%%MatrixMarket matrix coordinate real symmetric\n2 2 1\n1 2 1\n", 3, "above the diagonal");
  expect_error("%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n", 5, "truncated");
  EXPECT_THROW(elliptica::io::read_matrix_market((dir_ / "missing.mtx").string()), elliptica::IOError);
}

TEST(Sparse, TripleProductResidualAndMultiplyAddMatchDense) {
  std::mt19937 g(11);
  Dense DR, DA, DP;
  // Sizes above the OpenMP threshold of triple_product (2000 rows) and below it.
  for (std::size_t m : {7u, 2100u}) {
    CsrMatrix R = random_csr(m, 31, 0.2, g, DR);
    CsrMatrix A = random_csr(31, 17, 0.3, g, DA);
    CsrMatrix P = random_csr(17, 5, 0.4, g, DP);
    CsrMatrix C = elliptica::triple_product(R, A, P);
    EXPECT_NO_THROW(C.validate());
    expect_dense_near(to_dense(C), dense_mul(DR, dense_mul(DA, DP)), 1e-12);
    EXPECT_THROW(elliptica::triple_product(A, R, P), elliptica::InvalidArgument);
  }
  CsrMatrix A = random_csr(40, 40, 0.2, g, DA);
  std::vector<double> x(40), b(40), r(40), y(40), y0(40);
  std::uniform_real_distribution<double> u(-1, 1);
  for (auto* v : {&x, &b, &y}) for (auto& e : *v) e = u(g);
  y0 = y;
  A.residual(b.data(), x.data(), r.data());
  A.multiply_add(x.data(), y.data(), -2.5);
  for (std::size_t i = 0; i < 40; ++i) {
    double s = 0;
    for (std::size_t j = 0; j < 40; ++j) s += DA[i][j] * x[j];
    EXPECT_NEAR(r[i], b[i] - s, 1e-13);
    EXPECT_NEAR(y[i], y0[i] - 2.5 * s, 1e-13);
  }
}

TEST_F(MtxFiles, DeclaredSizesAreCheckedBeforeAllocating) {
  // Finding 3: a 60-byte file declaring 2^31 - 1 rows. The header alone is read first (the CLI
  // compares it with the right-hand side before the body); the body read allocates only what the
  // file can hold, and the memory limit is checked before the CSR row pointers are allocated.
  const std::string big = write("big.mtx", "%%MatrixMarket matrix coordinate real general\n2147483647 2147483647 1\n1 1 1\n");
  const auto info = elliptica::io::read_matrix_market_info(big);
  EXPECT_EQ(info.rows, 2147483647u);
  EXPECT_EQ(info.entries, 1u);
  EXPECT_LE(info.stored_max, 1u);
  ::setenv("ELLIPTICA_MEMORY_LIMIT", "1000000000", 1);  // 1 GB: the 16 GiB of row pointers do not fit
  EXPECT_THROW(elliptica::io::read_matrix_market(big), elliptica::ResourceError);
  EXPECT_THROW(elliptica::io::read_matrix_market_info(big), elliptica::ResourceError);
  ::unsetenv("ELLIPTICA_MEMORY_LIMIT");
  // An entry count the rest of the file cannot hold: the header check says so; the full read
  // reserves only what is there and stops at the end as "truncated".
  const std::string many = write("many.mtx", "%%MatrixMarket matrix coordinate real general\n10000 10000 67108864\n1 1 1\n");
  try {
    elliptica::io::read_matrix_market_info(many);
    ADD_FAILURE() << "no error";
  } catch (const elliptica::IOError& e) {
    EXPECT_NE(std::string(e.what()).find("can hold at most"), std::string::npos) << e.what();
  }
  try {
    elliptica::io::read_matrix_market(many);
    ADD_FAILURE() << "no error";
  } catch (const elliptica::IOError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
}
