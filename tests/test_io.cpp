// Tests of elliptica::io (array files), elliptica::ewald::read_gro (.gro) and elliptica::require_finite,
// all_finite, max_abs.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "elliptica/core/array.hpp"
#include "elliptica/core/error.hpp"
#include "elliptica/core/io.hpp"
#include "elliptica/core/output.hpp"
#include "elliptica/core/resources.hpp"
#include "elliptica/ewald/gro.hpp"

namespace fs = std::filesystem;
using elliptica::Array2D;
using elliptica::IOError;

namespace {

class IoTest : public ::testing::Test {
 protected:
  fs::path dir;
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir = fs::temp_directory_path() /
          ("elliptica_io_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string p(const std::string& name) const { return (dir / name).string(); }

  void write_bytes(const std::string& path, const std::string& bytes) const {
    std::ofstream f(path, std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  std::string read_bytes(const std::string& path) const {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
};

/// Builds a .npy file the way NumPy does: magic, version, header length, dict padded to 64 bytes.
std::string npy_bytes(int major, const std::string& dict, const std::string& data) {
  std::string h = dict;
  const std::size_t pre = 6 + 2 + (major == 1 ? 2 : 4);
  while ((pre + h.size() + 1) % 64 != 0) h.push_back(' ');
  h.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  const std::uint32_t n = static_cast<std::uint32_t>(h.size());
  for (std::size_t b = 0; b < (major == 1 ? 2u : 4u); ++b) out.push_back(static_cast<char>((n >> (8 * b)) & 0xff));
  return out + h + data;
}

template <class T>
std::string le_bytes(const std::vector<T>& v) {
  std::string s;
  for (T x : v) {
    unsigned char b[sizeof(T)];
    std::memcpy(b, &x, sizeof(T));  // test machine is little-endian (checked below)
    s.append(reinterpret_cast<const char*>(b), sizeof(T));
  }
  return s;
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const IOError& e) {
    return e.what();
  }
  return "<no IOError thrown>";
}

Array2D sample(std::size_t r, std::size_t c, int ndim = 2, unsigned seed = 1) {
  Array2D a(r, c, ndim);
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(-1e3, 1e3);
  for (auto& v : a.values) v = u(g) * std::pow(10.0, static_cast<int>(g() % 20) - 10);
  return a;
}

}  // namespace

TEST(RequireFinite, NamesRowAndColumn) {
  std::vector<double> v{0, 1, 2, 3, 4, 5};
  EXPECT_NO_THROW(elliptica::require_finite(elliptica::ConstMatrixView<double>(v, 3), "pts"));
  v[4] = std::numeric_limits<double>::quiet_NaN();
  try {
    elliptica::require_finite(elliptica::ConstMatrixView<double>(v, 3), "pts");
    FAIL() << "no throw";
  } catch (const elliptica::InvalidArgument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("pts"), std::string::npos) << m;
    EXPECT_NE(m.find("NaN"), std::string::npos) << m;
    EXPECT_NE(m.find("row 1"), std::string::npos) << m;
    EXPECT_NE(m.find("column 1"), std::string::npos) << m;
  }
  v[4] = -std::numeric_limits<double>::infinity();
  EXPECT_THROW(elliptica::require_finite(elliptica::ConstMatrixView<double>(v, 3), "pts"), elliptica::InvalidArgument);
}

TEST(AllFinite, EveryPositionAndKind) {
  // every non-finite kind (NaN of either sign and payload, +-Inf) at every position of arrays
  // longer and shorter than a vector; the largest finite values and subnormals are finite
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const double bad[] = {nan, -nan, std::numeric_limits<double>::signaling_NaN(), inf, -inf};
  for (std::size_t n : {1u, 3u, 8u, 17u, 64u}) {
    std::vector<double> v(n);
    for (std::size_t k = 0; k < n; ++k)
      v[k] = k % 3 == 0 ? std::numeric_limits<double>::max() : k % 3 == 1 ? -std::numeric_limits<double>::denorm_min() : -0.0;
    EXPECT_TRUE(elliptica::all_finite(v.data(), n));
    for (std::size_t k = 0; k < n; ++k)
      for (double b : bad) {
        const double keep = v[k];
        v[k] = b;
        EXPECT_FALSE(elliptica::all_finite(v.data(), n)) << "n " << n << " at " << k << " value " << b;
        v[k] = keep;
      }
  }
  EXPECT_TRUE(elliptica::all_finite(nullptr, 0));
}

TEST(MaxAbs, AgainstAScalarLoop) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (std::size_t n : {0u, 1u, 5u, 8u, 33u, 1000u}) {
    std::vector<double> v(n);
    double ref = 0;
    for (double& x : v) {
      x = std::ldexp(u(rng), int(u(rng) * 40));
      ref = std::max(ref, std::abs(x));
    }
    EXPECT_EQ(elliptica::max_abs(v.data(), n), ref) << n;
  }
  const std::vector<double> w{-0.0, -std::numeric_limits<double>::denorm_min(), 0.0};
  EXPECT_EQ(elliptica::max_abs(w.data(), w.size()), std::numeric_limits<double>::denorm_min());
  const std::vector<double> big{1.0, -std::numeric_limits<double>::max(), 3.0};
  EXPECT_EQ(elliptica::max_abs(big.data(), big.size()), std::numeric_limits<double>::max());
}

TEST_F(IoTest, NpyRoundTrip2D) {
  const Array2D a = sample(37, 3);
  elliptica::io::write_npy(p("a.npy"), a);
  const std::string bytes = read_bytes(p("a.npy"));
  ASSERT_GE(bytes.size(), 10u);
  const std::size_t hlen = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  EXPECT_EQ((10 + hlen) % 64, 0u) << "header not padded to 64 bytes";
  EXPECT_EQ(bytes.size(), 10 + hlen + 37 * 3 * 8);
  EXPECT_NE(bytes.find("'descr': '<f8'"), std::string::npos);
  EXPECT_NE(bytes.find("'shape': (37, 3)"), std::string::npos);
  const Array2D b = elliptica::io::read_array(p("a.npy"));
  EXPECT_EQ(b.rows, 37u);
  EXPECT_EQ(b.cols, 3u);
  EXPECT_EQ(b.ndim, 2);
  EXPECT_EQ(b.values, a.values);  // bitwise
}

TEST_F(IoTest, NpyRoundTrip1D) {
  const Array2D a = sample(11, 1, 1);
  elliptica::io::write_array(p("q.npy"), a);
  EXPECT_NE(read_bytes(p("q.npy")).find("'shape': (11,)"), std::string::npos);
  const Array2D b = elliptica::io::read_array(p("q.npy"));
  EXPECT_EQ(b.ndim, 1);
  EXPECT_EQ(b.rows, 11u);
  EXPECT_EQ(b.cols, 1u);
  EXPECT_EQ(b.values, a.values);
}

TEST_F(IoTest, CsvRoundTripIsExact) {
  Array2D a = sample(25, 4);
  a.values[3] = 0.1;
  a.values[5] = -1e-300;
  a.values[7] = 1.0 / 3.0;
  elliptica::io::write_csv(p("a.csv"), a, "x,y,z,w");
  const std::string text = read_bytes(p("a.csv"));
  EXPECT_EQ(text.rfind("# x,y,z,w\n", 0), 0u) << text.substr(0, 40);
  const Array2D b = elliptica::io::read_array(p("a.csv"));
  EXPECT_EQ(b.rows, 25u);
  EXPECT_EQ(b.cols, 4u);
  EXPECT_EQ(b.ndim, 2);
  EXPECT_EQ(b.values, a.values);  // 17 significant digits round-trip doubles exactly
}

TEST_F(IoTest, CsvOneColumnIsRank1) {
  const Array2D a = sample(9, 1, 1);
  elliptica::io::write_array(p("q.txt"), a);
  const Array2D b = elliptica::io::read_array(p("q.txt"));
  EXPECT_EQ(b.ndim, 1);
  EXPECT_EQ(b.rows, 9u);
  EXPECT_EQ(b.values, a.values);
}

TEST_F(IoTest, TextFormats) {
  write_bytes(p("t.dat"),
              "# a comment line\n"
              "\n"
              "1 2 3   # trailing comment\n"
              "4,5,6\r\n"
              "  7 ,\t8 , 9\n"
              "+1e3 -2.5E-3 .5\n"
              "\n");
  const Array2D b = elliptica::io::read_array(p("t.dat"));
  ASSERT_EQ(b.rows, 4u);
  ASSERT_EQ(b.cols, 3u);
  EXPECT_EQ(b.ndim, 2);
  const std::vector<double> want{1, 2, 3, 4, 5, 6, 7, 8, 9, 1e3, -2.5e-3, 0.5};
  EXPECT_EQ(b.values, want);
}

TEST_F(IoTest, TextWithByteOrderMark) {
  write_bytes(p("bom.csv"), "\xEF\xBB\xBF" "1,2\n3,4\n");
  const Array2D b = elliptica::io::read_array(p("bom.csv"));
  EXPECT_EQ(b.values, (std::vector<double>{1, 2, 3, 4}));
}

TEST_F(IoTest, EmptyTextFileGivesNoRows) {
  write_bytes(p("empty.txt"), "# only a comment\n\n");
  const Array2D b = elliptica::io::read_array(p("empty.txt"));
  EXPECT_EQ(b.rows, 0u);
  EXPECT_TRUE(b.values.empty());
}

TEST_F(IoTest, NumpyWrittenHeaders) {
  ASSERT_EQ(std::endian::native, std::endian::little);
  // v1.0 float64 2-D, as numpy.save writes it.
  write_bytes(p("f8.npy"), npy_bytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }",
                                     le_bytes<double>({1, 2, 3, 4, 5, 6.5})));
  Array2D b = elliptica::io::read_array(p("f8.npy"));
  EXPECT_EQ(b.rows, 2u);
  EXPECT_EQ(b.cols, 3u);
  EXPECT_EQ(b.values, (std::vector<double>{1, 2, 3, 4, 5, 6.5}));
  // v2.0 float32, other key order, no trailing comma.
  write_bytes(p("f4.npy"), npy_bytes(2, "{'shape': (3,), 'fortran_order': False, 'descr': '<f4'}",
                                     le_bytes<float>({0.5f, -1.25f, 3.0f})));
  b = elliptica::io::read_array(p("f4.npy"));
  EXPECT_EQ(b.ndim, 1);
  EXPECT_EQ(b.values, (std::vector<double>{0.5, -1.25, 3.0}));
  // v3.0 int32 and v1.0 int64, '|' and '=' byte-order marks.
  write_bytes(p("i4.npy"), npy_bytes(3, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 1), }",
                                     le_bytes<std::int32_t>({-7, 2147483647})));
  b = elliptica::io::read_array(p("i4.npy"));
  EXPECT_EQ(b.ndim, 2);
  EXPECT_EQ(b.values, (std::vector<double>{-7, 2147483647.0}));
  write_bytes(p("i8.npy"), npy_bytes(1, "{'descr': '=i8', 'fortran_order': False, 'shape': (2,), }",
                                     le_bytes<std::int64_t>({-3, 1LL << 40})));
  b = elliptica::io::read_array(p("i8.npy"));
  EXPECT_EQ(b.values, (std::vector<double>{-3, std::ldexp(1.0, 40)}));
  write_bytes(p("bar.npy"), npy_bytes(1, "{'descr': '|f8', 'fortran_order': False, 'shape': (1, 1), }",
                                      le_bytes<double>({42})));
  EXPECT_EQ(elliptica::io::read_array(p("bar.npy")).values, std::vector<double>{42});
  // An empty (0,3) array is a valid file.
  write_bytes(p("empty.npy"), npy_bytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 3), }", ""));
  b = elliptica::io::read_array(p("empty.npy"));
  EXPECT_EQ(b.rows, 0u);
  EXPECT_EQ(b.cols, 3u);
  // Content, not the suffix, decides: a .npy file under another name is still read as .npy.
  fs::copy_file(p("f8.npy"), p("f8.bin"));
  EXPECT_EQ(elliptica::io::read_array(p("f8.bin")).values, (std::vector<double>{1, 2, 3, 4, 5, 6.5}));
}

TEST_F(IoTest, TruncatedNpy) {
  write_bytes(p("t.npy"), npy_bytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }",
                                    le_bytes<double>({1, 2, 3, 4, 5})));
  const std::string m = error_of([&] { elliptica::io::read_array(p("t.npy")); });
  EXPECT_NE(m.find("truncated: expected 48 bytes of data, found 40"), std::string::npos) << m;
  EXPECT_NE(m.find(p("t.npy")), std::string::npos) << m;
  // Cut inside the header.
  write_bytes(p("h.npy"), npy_bytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", "").substr(0, 30));
  EXPECT_NE(error_of([&] { elliptica::io::read_array(p("h.npy")); }).find("truncated"), std::string::npos);
  write_bytes(p("m.npy"), "\x93NUMPY");
  EXPECT_NE(error_of([&] { elliptica::io::read_array(p("m.npy")); }).find("truncated"), std::string::npos);
}

TEST_F(IoTest, BadMagic) {
  // No magic string: read as text whatever the suffix; a failure says why it was read as text.
  write_bytes(p("g.npy"), "1 2 3\nthis is not numpy\n");
  std::string m = error_of([&] { elliptica::io::read_array(p("g.npy")); });
  EXPECT_NE(m.find(p("g.npy") + ":2:"), std::string::npos) << m;
  EXPECT_NE(m.find("does not start with the .npy magic string"), std::string::npos) << m;
  // Binary junk is not taken for a header line.
  write_bytes(p("j.npy"), std::string("\x93NUMPZ\x01\x00junk", 12));
  m = error_of([&] { elliptica::io::read_array(p("j.npy")); });
  EXPECT_NE(m.find("non-numeric"), std::string::npos) << m;
  EXPECT_NE(m.find("magic string"), std::string::npos) << m;
  // The hint is only for .npy names.
  write_bytes(p("g.txt"), "1 2 3\nthis is not numpy\n");
  m = error_of([&] { elliptica::io::read_array(p("g.txt")); });
  EXPECT_EQ(m.find("magic"), std::string::npos) << m;
  // An empty file is an empty text table, whatever its name.
  write_bytes(p("z.npy"), "");
  const Array2D z = elliptica::io::read_array(p("z.npy"));
  EXPECT_EQ(z.rows, 0u);
  EXPECT_EQ(z.cols, 0u);
}

TEST_F(IoTest, TextFileNamedNpyIsReadByContent) {
  write_bytes(p("t.npy"), "# written by hand\n0.5 1 2\n3,4,5\n");
  const Array2D b = elliptica::io::read_array(p("t.npy"));
  EXPECT_EQ(b.rows, 2u);
  EXPECT_EQ(b.cols, 3u);
  EXPECT_EQ(b.values, (std::vector<double>{0.5, 1, 2, 3, 4, 5}));
}

TEST_F(IoTest, NpyFortranOrderIsTransposed) {
  ASSERT_EQ(std::endian::native, std::endian::little);
  // The (2,3) array [[1,2,3],[4,5,6]] in column-major order, as numpy.save(p, a.T) of a (3,2)
  // C array or numpy.save(p, numpy.asfortranarray(a)) writes it.
  write_bytes(p("f.npy"), npy_bytes(1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }",
                                    le_bytes<double>({1, 4, 2, 5, 3, 6})));
  Array2D b = elliptica::io::read_array(p("f.npy"));
  EXPECT_EQ(b.rows, 2u);
  EXPECT_EQ(b.cols, 3u);
  EXPECT_EQ(b.ndim, 2);
  EXPECT_EQ(b.values, (std::vector<double>{1, 2, 3, 4, 5, 6}));
  // Not square the other way, another dtype.
  write_bytes(p("f4.npy"), npy_bytes(1, "{'descr': '<i4', 'fortran_order': True, 'shape': (3, 2), }",
                                     le_bytes<std::int32_t>({1, 3, 5, 2, 4, 6})));
  b = elliptica::io::read_array(p("f4.npy"));
  EXPECT_EQ(b.rows, 3u);
  EXPECT_EQ(b.cols, 2u);
  EXPECT_EQ(b.values, (std::vector<double>{1, 2, 3, 4, 5, 6}));
  // Rank 1 and empty arrays: both orders are the same.
  write_bytes(p("f1.npy"), npy_bytes(1, "{'descr': '<f8', 'fortran_order': True, 'shape': (3,), }",
                                     le_bytes<double>({7, 8, 9})));
  b = elliptica::io::read_array(p("f1.npy"));
  EXPECT_EQ(b.ndim, 1);
  EXPECT_EQ(b.values, (std::vector<double>{7, 8, 9}));
  write_bytes(p("f0.npy"), npy_bytes(1, "{'descr': '<f8', 'fortran_order': True, 'shape': (0, 3), }", ""));
  b = elliptica::io::read_array(p("f0.npy"));
  EXPECT_EQ(b.rows, 0u);
  EXPECT_EQ(b.cols, 3u);
  // The other checks still apply to Fortran-ordered files.
  write_bytes(p("ft.npy"), npy_bytes(1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }",
                                     le_bytes<double>({1, 4, 2, 5, 3})));
  EXPECT_NE(error_of([&] { elliptica::io::read_array(p("ft.npy")); }).find("truncated"), std::string::npos);
  write_bytes(p("f3.npy"), npy_bytes(1, "{'descr': '<f8', 'fortran_order': True, 'shape': (1, 2, 3), }",
                                     le_bytes<double>({1, 2, 3, 4, 5, 6})));
  EXPECT_NE(error_of([&] { elliptica::io::read_array(p("f3.npy")); }).find("rank 3"), std::string::npos);
  write_bytes(p("fbe.npy"), npy_bytes(1, "{'descr': '>f8', 'fortran_order': True, 'shape': (2, 3), }",
                                      le_bytes<double>({1, 2, 3, 4, 5, 6})));
  EXPECT_NE(error_of([&] { elliptica::io::read_array(p("fbe.npy")); }).find("unsupported dtype"), std::string::npos);
}

TEST_F(IoTest, UnsupportedNpyVariants) {
  const std::string d6 = le_bytes<double>({1, 2, 3, 4, 5, 6});
  write_bytes(p("r0.npy"), npy_bytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", d6.substr(0, 8)));
  EXPECT_NE(error_of([&] { elliptica::io::read_array(p("r0.npy")); }).find("rank-0"), std::string::npos);
  write_bytes(p("r3.npy"), npy_bytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2, 3), }", d6));
  EXPECT_NE(error_of([&] { elliptica::io::read_array(p("r3.npy")); }).find("rank 3"), std::string::npos);
  write_bytes(p("be.npy"), npy_bytes(1, "{'descr': '>f8', 'fortran_order': False, 'shape': (6,), }", d6));
  EXPECT_NE(error_of([&] { elliptica::io::read_array(p("be.npy")); }).find("unsupported dtype"), std::string::npos);
  write_bytes(p("c16.npy"), npy_bytes(1, "{'descr': '<c16', 'fortran_order': False, 'shape': (3,), }", d6));
  EXPECT_NE(error_of([&] { elliptica::io::read_array(p("c16.npy")); }).find("unsupported dtype"), std::string::npos);
  write_bytes(p("v9.npy"), npy_bytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }", d6));
  {
    std::string b = read_bytes(p("v9.npy"));
    b[6] = 9;
    write_bytes(p("v9.npy"), b);
  }
  EXPECT_NE(error_of([&] { elliptica::io::read_array(p("v9.npy")); }).find("version 9.0"), std::string::npos);
  write_bytes(p("junk.npy"), npy_bytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }", d6 + "xx"));
  EXPECT_NE(error_of([&] { elliptica::io::read_array(p("junk.npy")); }).find("after the data"), std::string::npos);
  write_bytes(p("bad.npy"), npy_bytes(1, "garbage", d6));
  EXPECT_NE(error_of([&] { elliptica::io::read_array(p("bad.npy")); }).find("bad .npy header"), std::string::npos);
}

TEST_F(IoTest, RaggedText) {
  write_bytes(p("r.txt"), "1 2 3\n# c\n4 5\n");
  const std::string m = error_of([&] { elliptica::io::read_array(p("r.txt")); });
  EXPECT_NE(m.find(p("r.txt") + ":3:"), std::string::npos) << m;
  EXPECT_NE(m.find("ragged"), std::string::npos) << m;
}

TEST_F(IoTest, NonNumericToken) {
  write_bytes(p("n.csv"), "1,2,3\n4,abc,6\n");
  std::string m = error_of([&] { elliptica::io::read_array(p("n.csv")); });
  EXPECT_NE(m.find(p("n.csv") + ":2:"), std::string::npos) << m;
  EXPECT_NE(m.find("'abc'"), std::string::npos) << m;
  // A first line that mixes names and numbers is not a header.
  write_bytes(p("h.csv"), "x,2,z\n1,2,3\n");
  m = error_of([&] { elliptica::io::read_array(p("h.csv")); });
  EXPECT_NE(m.find(":1:"), std::string::npos) << m;
  EXPECT_NE(m.find("'x'"), std::string::npos) << m;
  write_bytes(p("e.csv"), "1,,3\n");
  m = error_of([&] { elliptica::io::read_array(p("e.csv")); });
  EXPECT_NE(m.find("empty field"), std::string::npos) << m;
  write_bytes(p("bin.dat"), std::string("\x01\x02\xff\x00zz", 6));
  m = error_of([&] { elliptica::io::read_array(p("bin.dat")); });
  EXPECT_NE(m.find("non-numeric"), std::string::npos) << m;
}

TEST_F(IoTest, TextHeaderLine) {
  // One line of column names before the data is skipped (comments and blank lines may precede it).
  write_bytes(p("h.csv"), "# positions\n\nx,y,z\n1,2,3\n4,5,6\n");
  Array2D b = elliptica::io::read_array(p("h.csv"));
  EXPECT_EQ(b.rows, 2u);
  EXPECT_EQ(b.cols, 3u);
  EXPECT_EQ(b.values, (std::vector<double>{1, 2, 3, 4, 5, 6}));
  write_bytes(p("h1.txt"), "charge\n-0.82\n0.41\n");
  b = elliptica::io::read_array(p("h1.txt"));
  EXPECT_EQ(b.ndim, 1);
  EXPECT_EQ(b.values, (std::vector<double>{-0.82, 0.41}));
  // Only ONE header line: a second line of names is an error naming file:line.
  write_bytes(p("h2.csv"), "x,y,z\nu,v,w\n1,2,3\n");
  std::string m = error_of([&] { elliptica::io::read_array(p("h2.csv")); });
  EXPECT_NE(m.find(p("h2.csv") + ":2:"), std::string::npos) << m;
  EXPECT_NE(m.find("non-numeric token 'u'"), std::string::npos) << m;
  // A non-numeric token after the header is still an error.
  write_bytes(p("h3.csv"), "x,y,z\n1,2,3\n4,five,6\n");
  m = error_of([&] { elliptica::io::read_array(p("h3.csv")); });
  EXPECT_NE(m.find(p("h3.csv") + ":3:"), std::string::npos) << m;
  EXPECT_NE(m.find("'five'"), std::string::npos) << m;
  // The header fixes the column count.
  write_bytes(p("h4.csv"), "x,y,z\n1,2\n");
  m = error_of([&] { elliptica::io::read_array(p("h4.csv")); });
  EXPECT_NE(m.find(":2:"), std::string::npos) << m;
  EXPECT_NE(m.find("ragged"), std::string::npos) << m;
  EXPECT_NE(m.find("header"), std::string::npos) << m;
  // A header alone is an empty table with that many columns.
  write_bytes(p("h5.csv"), "x,y,z\n");
  b = elliptica::io::read_array(p("h5.csv"));
  EXPECT_EQ(b.rows, 0u);
  EXPECT_EQ(b.cols, 3u);
}

TEST_F(IoTest, TextNumberOutOfRange) {
  write_bytes(p("o.csv"), "1,2,3\n4,1e400,6\n");
  std::string m = error_of([&] { elliptica::io::read_array(p("o.csv")); });
  EXPECT_NE(m.find(p("o.csv") + ":2:"), std::string::npos) << m;
  EXPECT_NE(m.find("'1e400'"), std::string::npos) << m;
  EXPECT_NE(m.find("out of the double range"), std::string::npos) << m;
  EXPECT_EQ(m.find("non-numeric"), std::string::npos) << m;
  write_bytes(p("o2.csv"), "-1e999\n");
  m = error_of([&] { elliptica::io::read_array(p("o2.csv")); });
  EXPECT_NE(m.find("out of the double range"), std::string::npos) << m;
  // A number above the range is not a header name either.
  write_bytes(p("o3.csv"), "1e400,x\n1,2\n");
  m = error_of([&] { elliptica::io::read_array(p("o3.csv")); });
  EXPECT_NE(m.find(":1:"), std::string::npos) << m;
  // Underflow rounds to (signed) zero, as in strtod and NumPy; subnormals are kept.
  write_bytes(p("u.csv"), "1e-400,-1e-400,1e-310\n");
  const Array2D b = elliptica::io::read_array(p("u.csv"));
  ASSERT_EQ(b.values.size(), 3u);
  EXPECT_EQ(b.values[0], 0.0);
  EXPECT_TRUE(std::signbit(b.values[1]));
  EXPECT_EQ(b.values[2], 1e-310);
}

TEST_F(IoTest, CsvEmptyArrayRoundTrips) {
  elliptica::io::write_array(p("e.csv"), Array2D(0, 3, 2));
  Array2D b = elliptica::io::read_array(p("e.csv"));
  EXPECT_EQ(b.rows, 0u);
  EXPECT_EQ(b.cols, 3u);
  EXPECT_EQ(b.ndim, 2);
  elliptica::io::write_csv(p("e2.csv"), Array2D(0, 4, 2), "phi,Ex,Ey,Ez");
  b = elliptica::io::read_array(p("e2.csv"));
  EXPECT_EQ(b.rows, 0u);
  EXPECT_EQ(b.cols, 4u);
  elliptica::io::write_array(p("e1.csv"), Array2D(0, 1, 1));
  b = elliptica::io::read_array(p("e1.csv"));
  EXPECT_EQ(b.rows, 0u);
  EXPECT_EQ(b.cols, 1u);
  EXPECT_EQ(b.ndim, 1);
  elliptica::io::write_array(p("e0.npy"), Array2D(0, 3, 2));
  b = elliptica::io::read_array(p("e0.npy"));
  EXPECT_EQ(b.rows, 0u);
  EXPECT_EQ(b.cols, 3u);
}

TEST_F(IoTest, MissingFile) {
  std::string m = error_of([&] { elliptica::io::read_array(p("nope.npy")); });
  EXPECT_NE(m.find("no such file"), std::string::npos) << m;
  EXPECT_NE(m.find("nope.npy"), std::string::npos) << m;
  m = error_of([&] { elliptica::io::read_array(dir.string()); });
  EXPECT_NE(m.find("directory"), std::string::npos) << m;
  m = error_of([&] { elliptica::ewald::read_gro(p("nope.gro")); });
  EXPECT_NE(m.find("no such file"), std::string::npos) << m;
}

TEST_F(IoTest, AtomicWriteLeavesNoTemporaryFile) {
  const Array2D a = sample(5, 3);
  elliptica::io::write_npy(p("o.npy"), a);
  elliptica::io::write_csv(p("o.csv"), a);
  elliptica::io::write_text_atomic(p("o.txt"), "hello\n");
  EXPECT_EQ(listing(), (std::vector<std::string>{"o.csv", "o.npy", "o.txt"}));
  EXPECT_EQ(read_bytes(p("o.txt")), "hello\n");
  // Overwriting replaces the content.
  elliptica::io::write_text_atomic(p("o.txt"), "bye\n");
  EXPECT_EQ(read_bytes(p("o.txt")), "bye\n");
  EXPECT_EQ(listing().size(), 3u);
}

TEST_F(IoTest, FailedWriteLeavesNothingAndKeepsExistingFile) {
  const Array2D a = sample(5, 3);
  // Missing folder.
  std::string m = error_of([&] { elliptica::io::write_npy(p("nofolder/o.npy"), a); });
  EXPECT_NE(m.find("does not exist"), std::string::npos) << m;
  // Target is a directory.
  fs::create_directory(dir / "d.npy");
  m = error_of([&] { elliptica::io::write_npy(p("d.npy"), a); });
  EXPECT_NE(m.find("directory"), std::string::npos) << m;
  EXPECT_EQ(listing(), std::vector<std::string>{"d.npy"});
  // An inconsistent array is rejected before anything is written; an existing file stays as it was.
  write_bytes(p("keep.csv"), "old content\n");
  Array2D bad = a;
  bad.values.pop_back();
  EXPECT_THROW(elliptica::io::write_csv(p("keep.csv"), bad), elliptica::Error);
  EXPECT_EQ(read_bytes(p("keep.csv")), "old content\n");
  EXPECT_EQ(listing(), (std::vector<std::string>{"d.npy", "keep.csv"}));
  // Unwritable folder (not testable as root, who may write anywhere).
  if (::geteuid() != 0) {
    fs::create_directory(dir / "ro");
    write_bytes(p("ro/keep.npy"), "old");
    fs::permissions(dir / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    EXPECT_THROW(elliptica::io::write_npy(p("ro/keep.npy"), a), IOError);
    fs::permissions(dir / "ro", fs::perms::owner_all);
    EXPECT_EQ(read_bytes(p("ro/keep.npy")), "old");
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir / "ro")) ++n;
    EXPECT_EQ(n, 1u);
  }
}

TEST_F(IoTest, GroSpc216) {
  const std::string path = std::string(ELLIPTICA_EXAMPLES_DIR) + "/water/spc216.gro";
  ASSERT_TRUE(fs::exists(path)) << path << " is missing from the repository";
  const auto g = elliptica::ewald::read_gro(path);
  ASSERT_EQ(g.positions.rows, 648u);
  ASSERT_EQ(g.positions.cols, 3u);
  ASSERT_EQ(g.atom_names.size(), 648u);
  for (int d = 0; d < 3; ++d) EXPECT_DOUBLE_EQ(g.box[d], 1.86206);
  EXPECT_EQ(g.atom_names[0], "OW");
  EXPECT_EQ(g.atom_names[1], "HW1");
  EXPECT_EQ(g.atom_names[2], "HW2");
  EXPECT_EQ(g.residue_names[0], "SOL");
  EXPECT_DOUBLE_EQ(g.positions.view()(0, 0), 0.230);
  EXPECT_DOUBLE_EQ(g.positions.view()(0, 1), 0.628);
  EXPECT_DOUBLE_EQ(g.positions.view()(0, 2), 0.113);
  EXPECT_DOUBLE_EQ(g.positions.view()(647, 1), -0.145);
  int ow = 0;
  for (const auto& n : g.atom_names) ow += n == "OW";
  EXPECT_EQ(ow, 216);
}

TEST_F(IoTest, GroHandWritten) {
  // Velocities, and a 9-number box with zero off-diagonals.
  write_bytes(p("v.gro"),
              "two atoms, t= 0.0\n"
              "    2\n"
              "    1SOL     OW    1   0.126   1.624   1.679  0.1227 -0.0580  0.0434\n"
              "    1SOL    HW1    2   0.190   1.661   1.747  0.8085  0.3191 -0.7791\n"
              "   3.00000   4.00000   5.00000   0.00000   0.00000   0.00000   0.00000   0.00000   0.00000\n");
  auto g = elliptica::ewald::read_gro(p("v.gro"));
  ASSERT_EQ(g.positions.rows, 2u);
  EXPECT_DOUBLE_EQ(g.positions.view()(1, 2), 1.747);
  EXPECT_DOUBLE_EQ(g.box[0], 3.0);
  EXPECT_DOUBLE_EQ(g.box[2], 5.0);
  // Higher precision (%10.5f columns).
  write_bytes(p("hp.gro"),
              "hp\n"
              "1\n"
              "    1NA      NA    1   1.12345  -0.50000  10.25000\n"
              "   2.0 2.0 2.0\n");
  g = elliptica::ewald::read_gro(p("hp.gro"));
  EXPECT_DOUBLE_EQ(g.positions.view()(0, 0), 1.12345);
  EXPECT_DOUBLE_EQ(g.positions.view()(0, 1), -0.5);
  EXPECT_DOUBLE_EQ(g.positions.view()(0, 2), 10.25);
  EXPECT_EQ(g.atom_names[0], "NA");

  write_bytes(p("tri.gro"),
              "tri\n    1\n    1SOL     OW    1   0.126   1.624   1.679\n"
              "   3.0 3.0 3.0 0.0 0.0 1.5 0.0 1.5 1.5\n");
  std::string m = error_of([&] { elliptica::ewald::read_gro(p("tri.gro")); });
  EXPECT_NE(m.find("triclinic"), std::string::npos) << m;
  write_bytes(p("short.gro"), "short\n    3\n    1SOL     OW    1   0.126   1.624   1.679\n");
  m = error_of([&] { elliptica::ewald::read_gro(p("short.gro")); });
  EXPECT_NE(m.find("truncated"), std::string::npos) << m;
  write_bytes(p("cnt.gro"), "bad count\n  abc\n");
  m = error_of([&] { elliptica::ewald::read_gro(p("cnt.gro")); });
  EXPECT_NE(m.find("number of atoms"), std::string::npos) << m;
  write_bytes(p("coord.gro"), "bad coord\n    1\n    1SOL     OW    1   0.126   x.624   1.679\n 1 1 1\n");
  m = error_of([&] { elliptica::ewald::read_gro(p("coord.gro")); });
  EXPECT_NE(m.find(":3:"), std::string::npos) << m;
}

// ---------------------------------------------------------------- issue 9 hardening

TEST_F(IoTest, FirstRowOfNumbersInAnotherNotationIsNotAHeader) {
  // Finding 8: these first rows used to be taken as a header and dropped silently (N-1 rows).
  struct Case {
    std::string text, token, hint;
  };
  const std::vector<Case> cases = {
      {"\xE2\x88\x92" "1.5 2 3\n4 5 6\n", "\\xe2\\x88\\x921.5", "U+2212"},  // U+2212 minus sign
      {"1.0D+00 2.0D+00 3.0D+00\n4 5 6\n", "1.0D+00", "Fortran"},
      {"1;2;3\n4;5;6\n", "1;2;3", "';'"},
      {"\xE2\x80\x93" "2 1 1\n4 5 6\n", "\\xe2\\x80\\x932", "dash"},        // U+2013 en dash
      {".5e x 3\n4 5 6\n", ".5e", ""},
  };
  for (const auto& c : cases) {
    write_bytes(p("t.txt"), c.text);
    const std::string m = error_of([&] { elliptica::io::read_array(p("t.txt")); });
    EXPECT_NE(m.find(p("t.txt") + ":1:"), std::string::npos) << m;
    EXPECT_NE(m.find(c.token), std::string::npos) << m;
    EXPECT_NE(m.find(c.hint), std::string::npos) << m;
  }
  // A real header is still skipped, and reported.
  write_bytes(p("h.csv"), "# comment\nx,y,_z\n1,2,3\n");
  elliptica::io::ReadInfo info;
  const Array2D a = elliptica::io::read_array(p("h.csv"), &info);
  EXPECT_EQ(a.rows, 1u);
  EXPECT_EQ(info.header_line, 2u);
  EXPECT_EQ(info.column_names, (std::vector<std::string>{"x", "y", "_z"}));
  write_bytes(p("n.csv"), "1,2,3\n");
  elliptica::io::read_array(p("n.csv"), &info);
  EXPECT_EQ(info.header_line, 0u);
  EXPECT_TRUE(info.column_names.empty());
  // Quoted and non-ASCII names (letters) are names.
  write_bytes(p("q.csv"), "\"x\" \xC3\xA9nergie\n1 2\n");
  EXPECT_EQ(elliptica::io::read_array(p("q.csv")).rows, 1u);
}

TEST_F(IoTest, OutputFileIsPreparedBeforeTheWork) {
  // Finding 7: the temporary exists from construction (an unwritable destination fails at once).
  {
    elliptica::io::OutputFile f(p("o.csv"));
    const auto names = listing();
    ASSERT_EQ(names.size(), 1u);
    EXPECT_EQ(names[0].rfind(".o.csv.tmp.", 0), 0u) << names[0];
    f.write("1,2\n");
    f.commit();
  }
  EXPECT_EQ(listing(), std::vector<std::string>{"o.csv"});
  EXPECT_EQ(read_bytes(p("o.csv")), "1,2\n");
  // Not committed (an exception during the work): the temporary goes, the old file stays.
  {
    elliptica::io::OutputFile f(p("o.csv"));
    f.write("new\n");
  }
  EXPECT_EQ(listing(), std::vector<std::string>{"o.csv"});
  EXPECT_EQ(read_bytes(p("o.csv")), "1,2\n");
  // Where the destination cannot be written, the constructor throws (as root, /proc is the
  // folder that cannot take new files).
  EXPECT_THROW(elliptica::io::OutputFile("/proc/elliptica-test-output.csv"), IOError);
  EXPECT_THROW(elliptica::io::OutputFile(p("missing/o.csv")), IOError);
}

TEST_F(IoTest, OutputNamesUpToNameMaxWork) {
  // Finding 7: names of 227-255 characters used to fail because of the temporary's suffix.
  for (std::size_t len : {200u, 227u, 240u, 255u}) {
    const std::string name = std::string(len - 4, 'a') + ".csv";
    elliptica::io::write_text_atomic(p(name), "x\n");
    EXPECT_EQ(read_bytes(p(name)), "x\n") << len;
    fs::remove(p(name));
  }
  EXPECT_TRUE(listing().empty());
}

TEST_F(IoTest, OutputKeepsTheModeAndFollowsSymbolicLinks) {
  // Finding 4: an overwritten regular file keeps its mode; a link stays a link.
  write_bytes(p("t.csv"), "old\n");
  fs::permissions(p("t.csv"), fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  fs::create_symlink("t.csv", dir / "l.csv");
  elliptica::io::write_text_atomic(p("l.csv"), "new\n");
  EXPECT_TRUE(fs::is_symlink(dir / "l.csv"));
  EXPECT_EQ(read_bytes(p("t.csv")), "new\n");
  EXPECT_EQ(fs::status(p("t.csv")).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  // A dangling link is refused, and left as it is.
  fs::create_symlink("nowhere/x.csv", dir / "d.csv");
  std::string m = error_of([&] { elliptica::io::write_text_atomic(p("d.csv"), "x\n"); });
  EXPECT_NE(m.find("symbolic link"), std::string::npos) << m;
  EXPECT_TRUE(fs::is_symlink(dir / "d.csv"));
  // A FIFO is written through, and stays a FIFO.
  ASSERT_EQ(::mkfifo(p("f").c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = read_bytes(p("f")); });
  elliptica::io::write_text_atomic(p("f"), "through a fifo\n");
  reader.join();
  EXPECT_EQ(got, "through a fifo\n");
  EXPECT_TRUE(fs::is_fifo(p("f")));
  // A character device stays one: /dev/null (nothing is renamed over it).
  elliptica::io::write_text_atomic("/dev/null", "discarded\n");
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  // A socket is refused.
  const int sfd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sp = p("s");
  if (sp.size() < sizeof addr.sun_path) {
    std::memcpy(addr.sun_path, sp.c_str(), sp.size() + 1);
    ASSERT_EQ(::bind(sfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    m = error_of([&] { elliptica::io::write_text_atomic(sp, "x\n"); });
    EXPECT_NE(m.find("socket"), std::string::npos) << m;
    EXPECT_TRUE(fs::is_socket(sp));
  }
  ::close(sfd);
}

TEST_F(IoTest, OutputSetReplacesAllOrNothing) {
  // Finding 5: a failure while writing the set (here an exception after two of three files,
  // as a full disk would raise) leaves every previous file as it was and no temporary behind.
  for (const char* n : {"a.npy", "b.csv", "c.json"}) write_bytes(p(n), std::string("old ") + n);
  try {
    elliptica::io::OutputSet set;
    auto& a = set.add(p("a.npy"));
    auto& b = set.add(p("b.csv"));
    set.add(p("c.json"));
    a.write("new a");
    b.write("new b");
    throw IOError("simulated: disk full while writing c.json");
  } catch (const IOError&) {
  }
  EXPECT_EQ(listing(), (std::vector<std::string>{"a.npy", "b.csv", "c.json"}));
  for (const char* n : {"a.npy", "b.csv", "c.json"}) EXPECT_EQ(read_bytes(p(n)), std::string("old ") + n);
  {
    elliptica::io::OutputSet set;
    for (const char* n : {"a.npy", "b.csv", "c.json"}) set.add(p(n)).write(std::string("new ") + n);
    set.commit();
  }
  EXPECT_EQ(listing(), (std::vector<std::string>{"a.npy", "b.csv", "c.json"}));
  for (const char* n : {"a.npy", "b.csv", "c.json"}) EXPECT_EQ(read_bytes(p(n)), std::string("new ") + n);
}

TEST_F(IoTest, OutputSetWithAFullDiskKeepsThePreviousSet) {
  // The same with a real write failure: a file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored) makes
  // the third file's write fail with EFBIG, as ENOSPC would on a full disk. Run in a child so the
  // limit does not reach the test process.
  for (const char* n : {"a.npy", "b.csv", "c.vtu"}) write_bytes(p(n), std::string("old ") + n);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit lim{};
    lim.rlim_cur = lim.rlim_max = 4096;
    ::setrlimit(RLIMIT_FSIZE, &lim);
    int rc = 0;
    try {
      elliptica::io::OutputSet set;
      set.add(p("a.npy")).write("small a");
      set.add(p("b.csv")).write("small b");
      set.add(p("c.vtu")).write(std::string(10000, 'x'));  // over the limit
      set.commit();
      rc = 1;  // must not get here
    } catch (const IOError& e) {
      rc = std::string(e.what()).find("c.vtu") != std::string::npos ? 0 : 2;
    } catch (...) {
      rc = 3;
    }
    ::_exit(rc);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(listing(), (std::vector<std::string>{"a.npy", "b.csv", "c.vtu"}));
  for (const char* n : {"a.npy", "b.csv", "c.vtu"}) EXPECT_EQ(read_bytes(p(n)), std::string("old ") + n);
}

TEST_F(IoTest, GroMisalignedFieldIsAnError) {
  // Finding 10: a field shifted by one column ("-1e308" written into %8.3f columns) used to be
  // read by fixed columns as another number.
  const std::string head = "t\n    2\n    1SOL     OW    1   0.126   1.624   1.679\n";
  write_bytes(p("a.gro"), head + "    1SOL    HW1    2   0.190  -1e308   1.747\n   3.0 3.0 3.0\n");
  std::string m = error_of([&] { elliptica::ewald::read_gro(p("a.gro")); });
  EXPECT_NE(m.find(p("a.gro") + ":4:"), std::string::npos) << m;
  write_bytes(p("b.gro"), head + "    1SOL    HW1    2   0.190  -1.6241   1.747\n   3.0 3.0 3.0\n");
  m = error_of([&] { elliptica::ewald::read_gro(p("b.gro")); });
  EXPECT_NE(m.find(":4:"), std::string::npos) << m;
  EXPECT_NE(m.find("misaligned"), std::string::npos) << m;
  write_bytes(p("c.gro"), head + "    1SOL    HW1    2   0.190 -11.6241.747\n   3.0 3.0 3.0\n");
  m = error_of([&] { elliptica::ewald::read_gro(p("c.gro")); });
  EXPECT_NE(m.find(":4:"), std::string::npos) << m;
  // Aligned fields of any sign and width still read.
  write_bytes(p("d.gro"), head + "    1SOL    HW1    2  -0.190-100.624    .747\n   3.0 3.0 3.0\n");
  const auto g = elliptica::ewald::read_gro(p("d.gro"));
  EXPECT_DOUBLE_EQ(g.positions.view()(1, 1), -100.624);
  EXPECT_DOUBLE_EQ(g.positions.view()(1, 2), 0.747);
}

TEST(Resources, MemoryLimitAndTheResourceCategory) {
  EXPECT_EQ(elliptica::exit_code(elliptica::ErrorCategory::Resource), 6);
  EXPECT_GT(elliptica::memory_limit_bytes(), 0u);
  ::setenv("ELLIPTICA_MEMORY_LIMIT", "1000000", 1);
  EXPECT_EQ(elliptica::memory_limit_bytes(), 1000000u);
  try {
    elliptica::require_memory(2e6, "the test's array");
    ADD_FAILURE() << "no error";
  } catch (const elliptica::ResourceError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("the test's array"), std::string::npos) << m;
    EXPECT_EQ(e.category(), elliptica::ErrorCategory::Resource);
  }
  EXPECT_NO_THROW(elliptica::require_memory(5e5, "small"));
  EXPECT_THROW(elliptica::require_memory(std::numeric_limits<double>::infinity(), "inf"), elliptica::ResourceError);
  ::unsetenv("ELLIPTICA_MEMORY_LIMIT");
}
