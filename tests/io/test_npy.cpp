#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "heed/core/random.hpp"
#include "heed/io/npy.hpp"
#include "support/compare.hpp"
#include "support/files.hpp"

namespace {

namespace fs = std::filesystem;
using heed::index_t;
using heed::io::load_npy;

// Written by NumPy (tests/golden/generate.py npy): x[i, j, k] = 6i + 2j + k/2 - 3 on [2, 3, 4].
fs::path npy(const std::string& name) {
  return fs::path(HEED_GOLDEN_DIR) / "npy" / (name + ".npy");
}
double formula(index_t i, index_t j, index_t k) {
  return 6.0 * static_cast<double>(i) + 2.0 * static_cast<double>(j) + 0.5 * static_cast<double>(k) - 3.0;
}

template <class Scalar>
void expect_formula(const heed::Tensor<Scalar, 3>& t, double factor = 1.0) {
  ASSERT_EQ(t.shape(), (heed::Shape<3>{2, 3, 4}));
  for (index_t i = 0; i < 2; ++i)
    for (index_t j = 0; j < 3; ++j)
      for (index_t k = 0; k < 4; ++k)
        EXPECT_EQ(static_cast<double>(t(i, j, k)), static_cast<Scalar>(formula(i, j, k) * factor)) << i << j << k;
}

TEST(Npy, ReadsNumPyVersions1To3) {
  for (const char* name : {"f4_v1", "f4_v2", "f4_v3"}) {
    SCOPED_TRACE(name);
    expect_formula(load_npy<float, 3>(npy(name)));
  }
  EXPECT_EQ(heed::io::read_npy_header(npy("f4_v2")).shape, (std::vector<index_t>{2, 3, 4}));
}

TEST(Npy, ReadsEachDtypeAndConverts) {
  expect_formula(load_npy<double, 3>(npy("f8")));
  expect_formula(load_npy<float, 3>(npy("f8")));
  expect_formula(load_npy<std::int32_t, 3>(npy("i4")), 2.0);
  expect_formula(load_npy<std::int64_t, 3>(npy("i8")), 2.0);
  expect_formula(load_npy<double, 3>(npy("i8")), 2.0);
  const auto b = load_npy<bool, 3>(npy("b1"));
  for (index_t i = 0; i < 2; ++i)
    for (index_t j = 0; j < 3; ++j)
      for (index_t k = 0; k < 4; ++k) EXPECT_EQ(b(i, j, k), formula(i, j, k) > 0);
}

TEST(Npy, FortranOrderAndBigEndianAreConverted) {
  EXPECT_TRUE(heed::io::read_npy_header(npy("f8_fortran")).fortran_order);
  expect_formula(load_npy<double, 3>(npy("f8_fortran")));
  EXPECT_TRUE(heed::io::read_npy_header(npy("f4_big_endian")).big_endian);
  expect_formula(load_npy<float, 3>(npy("f4_big_endian")));
}

TEST(Npy, WritesWhatNumPyWrites) {
  // save_npy of the same values gives NumPy's bytes exactly (header text, padding, data).
  heed::Tensor<double, 3> x({2, 3, 4});
  heed::Tensor<bool, 3> positive({2, 3, 4});
  for (index_t i = 0; i < 2; ++i)
    for (index_t j = 0; j < 3; ++j)
      for (index_t k = 0; k < 4; ++k) x(i, j, k) = formula(i, j, k), positive(i, j, k) = formula(i, j, k) > 0;
  EXPECT_EQ((heed::io::npy_to_bytes<double, 3>(x.view())), heed::test::read_bytes(npy("f8")));
  EXPECT_EQ((heed::io::npy_to_bytes<bool, 3>(positive.view())), heed::test::read_bytes(npy("b1")));
  heed::Tensor<float, 3> xf({2, 3, 4});
  for (index_t i = 0; i < x.numel(); ++i) xf.data()[i] = static_cast<float>(x.data()[i]);
  EXPECT_EQ((heed::io::npy_to_bytes<float, 3>(xf.view())), heed::test::read_bytes(npy("f4_v1")));
}

TEST(Npy, RoundTripsEveryRankAndStridedViews) {
  const fs::path dir = fs::temp_directory_path() / "heed_test_npy";
  fs::create_directories(dir);
  const auto v = heed::randn<float>({7}, 1);
  heed::io::save_npy(dir / "v.npy", v);
  EXPECT_TRUE(heed::test::all_close(load_npy<float, 1>(dir / "v.npy"), v, {0, 0}));
  const auto m = heed::randn<double>({5, 3}, 2);
  heed::io::save_npy(dir / "mt.npy", m.view().transpose(0, 1));  // strided: written in C order
  const auto back = load_npy<double, 2>(dir / "mt.npy");
  ASSERT_EQ(back.shape(), (heed::Shape<2>{3, 5}));
  for (index_t i = 0; i < 3; ++i)
    for (index_t j = 0; j < 5; ++j) EXPECT_EQ(back(i, j), m(j, i));
  heed::Tensor<std::int64_t, 4> ids({2, 1, 3, 2});
  for (index_t i = 0; i < ids.numel(); ++i) ids.data()[i] = -i * 3000000000LL;
  heed::io::save_npy(dir / "ids.npy", ids);
  EXPECT_TRUE(heed::test::all_close(load_npy<std::int64_t, 4>(dir / "ids.npy"), ids, {0, 0}));
  fs::remove_all(dir);
}

template <class Error>
void expect_error(const fs::path& path, const std::string& needle, auto load) {
  try {
    load(path);
    ADD_FAILURE() << path << " loaded; expected an error mentioning " << needle;
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(needle), std::string::npos) << what;
    EXPECT_NE(what.find(path.filename().string()), std::string::npos) << "the error names the file: " << what;
  }
}

// An .npy file of version 1.0 with this header dict (padded as NumPy pads it) and data.
std::vector<std::byte> npy_bytes(std::string header, const std::vector<std::byte>& data = {}) {
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::vector<std::byte> bytes;
  for (char c : std::string("\x93NUMPY")) bytes.push_back(static_cast<std::byte>(c));
  bytes.push_back(std::byte{1});  // version 1.0
  bytes.push_back(std::byte{0});
  bytes.push_back(static_cast<std::byte>(header.size() & 0xff));
  bytes.push_back(static_cast<std::byte>(header.size() >> 8));
  for (char c : header) bytes.push_back(static_cast<std::byte>(c));
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

// Found by fuzzing (tests/fuzz/regressions/npy): an empty Fortran-order array was copied through
// views of a null pointer (undefined behaviour), and "(1, 2 0)" was read as (1, 2, 0).
TEST(Npy, EmptyArraysAndStrictShapes) {
  using heed::io::npy_from_bytes;
  const auto empty = npy_bytes("{'descr': '<f8', 'fortran_order': True, 'shape': (1, 2, 0), }");
  const auto t = npy_from_bytes<double, 3>(empty, "empty.npy");
  EXPECT_EQ(t.shape(), (heed::Shape<3>{1, 2, 0}));
  EXPECT_TRUE(t.empty());
  const auto c_order = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }");
  EXPECT_EQ((npy_from_bytes<float, 2>(c_order, "empty.npy").shape()), (heed::Shape<2>{0, 3}));
  for (const char* shape : {"(1, 2 0)", "(1 2)", "(1,, 2)"}) {
    const auto bad = npy_bytes(std::string("{'descr': '<f8', 'fortran_order': True, 'shape': ") + shape + ", }");
    EXPECT_THROW((void)(npy_from_bytes<double, 2>(bad, "bad.npy")), heed::FormatError) << shape;
  }
}

TEST(Npy, BadInputNamesTheFileAndTheProblem) {
  const auto load3 = [](const fs::path& p) { (void)load_npy<float, 3>(p); };
  expect_error<heed::FormatError>(npy("c8_unsupported"), "unsupported dtype '<c8'", load3);
  expect_error<heed::FormatError>(npy("u3_unsupported"), "unsupported dtype '<U3'",
                                  [](const fs::path& p) { (void)load_npy<float, 1>(p); });
  expect_error<heed::ShapeError>(npy("f4_v1"), "rank 3", [](const fs::path& p) { (void)load_npy<float, 2>(p); });
  expect_error<heed::IoError>(npy("no_such_file"), "cannot open", load3);

  const fs::path dir = fs::temp_directory_path() / "heed_test_npy_bad";
  fs::create_directories(dir);
  const std::vector<std::byte> good = heed::test::read_bytes(npy("f4_v1"));
  const auto write = [&](const std::string& name, std::vector<std::byte> bytes) {
    std::ofstream(dir / name, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return dir / name;
  };
  expect_error<heed::FormatError>(write("truncated.npy", {good.begin(), good.end() - 5}), "needs 96 bytes", load3);
  expect_error<heed::FormatError>(write("header_cut.npy", {good.begin(), good.begin() + 40}), "runs past the end",
                                  load3);
  auto bad_magic = good;
  bad_magic[1] = std::byte{'X'};
  expect_error<heed::FormatError>(write("magic.npy", bad_magic), "not an .npy file", load3);
  auto version9 = good;
  version9[6] = std::byte{9};
  expect_error<heed::FormatError>(write("v9.npy", version9), "version 9.0", load3);
  fs::remove_all(dir);
}

}  // namespace
