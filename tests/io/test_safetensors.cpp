#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "heed/core/random.hpp"
#include "heed/io/safetensors.hpp"
#include "support/compare.hpp"
#include "support/golden.hpp"
#include "support/safetensors_files.hpp"

namespace {

using heed::FormatError;
using heed::io::SafeTensors;

using heed::test::expect_rejected;
using heed::test::file_with_header;

TEST(SafeTensors, WriterAndReaderRoundTrip) {
  const auto a = heed::randn<float>({3, 5}, 1);
  const auto b = heed::randn<double>({2, 2, 2}, 2);
  heed::Tensor<std::int64_t, 1> ids({4});
  for (int i = 0; i < 4; ++i) ids(i) = -i * 1000000007LL;
  heed::Tensor<bool, 2> mask({2, 3});
  mask(1, 2) = true;
  heed::io::SafeTensorsWriter w;
  w.add("layer.weight", a).add("b", b).add("ids", ids).add("mask", mask).metadata("config", R"({"d":5})");
  const auto st = SafeTensors::from_bytes(w.to_bytes());
  EXPECT_EQ(st.names(), (std::vector<std::string>{"b", "ids", "layer.weight", "mask"}));
  EXPECT_EQ(st.metadata().at("config"), R"({"d":5})");
  EXPECT_TRUE(heed::test::all_close(st.get<float, 2>("layer.weight"), a, {0, 0}));
  EXPECT_TRUE(heed::test::all_close(st.get<double, 3>("b"), b, {0, 0}));
  EXPECT_EQ((st.get<std::int64_t, 1>("ids")(3)), -3000000021LL);
  EXPECT_TRUE((st.get<bool, 2>("mask")(1, 2)));
  EXPECT_FALSE((st.get<bool, 2>("mask")(0, 2)));
  EXPECT_EQ((st.get<float, 2>("mask")(1, 2)), 1.0f);        // bool → float
  EXPECT_EQ((st.get<double, 1>("ids")(1)), -1000000007.0);  // int → double
  EXPECT_EQ(st.info("b").dtype, heed::io::DType::F64);
}

TEST(SafeTensors, WrongRankDtypeOrNameAreClearErrors) {
  heed::io::SafeTensorsWriter w;
  w.add("w", heed::randn<float>({2, 3}, 0));
  const auto st = SafeTensors::from_bytes(w.to_bytes(), "model.safetensors");
  try {
    (void)st.get<float, 3>("w");
    FAIL();
  } catch (const heed::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 3]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(((void)st.get<std::int32_t, 2>("w")), FormatError);  // float → int would truncate
  EXPECT_THROW(((void)st.get<bool, 2>("w")), FormatError);
  try {
    (void)st.get<float, 2>("v");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("\"v\""), std::string::npos) << e.what();
  }
}

TEST(SafeTensorsGolden, ReadsEveryDtypePyTorchWrites) {
  const auto st = heed::test::golden("safetensors_dtypes");
  EXPECT_EQ(st.metadata().at("format"), "pt");
  const auto exact = st.get<double, 2>("f64");
  EXPECT_TRUE(heed::test::all_close(st.get<double, 2>("f32"), exact, {1e-7, 0}));
  EXPECT_TRUE(heed::test::all_close(st.get<double, 2>("f16"), st.get<double, 2>("f16_as_f64"), {0, 0}));
  EXPECT_TRUE(heed::test::all_close(st.get<float, 2>("bf16"), st.get<double, 2>("bf16_as_f64"), {0, 0}));
  const auto i32 = st.get<std::int64_t, 2>("i32");
  const auto i64 = st.get<std::int64_t, 2>("i64");
  EXPECT_EQ(i32(1, 0), 2147483647);
  EXPECT_EQ(i32(1, 1), -2147483648LL);
  EXPECT_EQ(i64(1, 1), -3 * 2147483648LL);
  const auto flags = st.get<bool, 2>("bool");
  EXPECT_TRUE(flags(0, 0));
  EXPECT_FALSE(flags(0, 1));
  EXPECT_TRUE(flags(1, 2));
  EXPECT_EQ((st.get<int, 1>("u8")(2)), 255);
  EXPECT_EQ((st.get<float, 1>("i8")(0)), -128.0f);
}

TEST(SafeTensorsGolden, SixteenBitTensorsLoadAsTheirOwnBitsAndRoundLikePyTorch) {
  const auto st = heed::test::golden("safetensors_dtypes");
  const auto bits = [](auto x) { return std::bit_cast<std::uint16_t>(x); };
  const auto bf = st.get<heed::bfloat16, 2>("bf16");  // BF16 into bfloat16: no conversion
  const auto hf = st.get<heed::half, 2>("f16");
  const auto bf_values = st.get<double, 2>("bf16_as_f64"), hf_values = st.get<double, 2>("f16_as_f64");
  const auto rounded_bf = st.get<heed::bfloat16, 2>("f64");
  const auto rounded_hf = st.get<heed::half, 2>("f64");
  for (heed::index_t i = 0; i < 2; ++i)
    for (heed::index_t j = 0; j < 3; ++j) {
      EXPECT_EQ(double(float(bf(i, j))), bf_values(i, j));
      EXPECT_EQ(double(float(hf(i, j))), hf_values(i, j));
      // F64 read as bfloat16 / half rounds as torch's .bfloat16() / .half() did
      EXPECT_EQ(bits(rounded_bf(i, j)), bits(bf(i, j))) << i << "," << j;
      EXPECT_EQ(bits(rounded_hf(i, j)), bits(hf(i, j))) << i << "," << j;
    }
  // and back out: the writer names the dtypes and keeps the bits
  const auto bytes = heed::io::SafeTensorsWriter().add("b", bf).add("h", hf).to_bytes();
  const auto again = heed::io::SafeTensors::from_bytes(bytes);
  EXPECT_EQ(again.info("b").dtype, heed::io::DType::BF16);
  EXPECT_EQ(again.info("h").dtype, heed::io::DType::F16);
  EXPECT_EQ(bits(again.get<heed::bfloat16, 2>("b")(1, 1)), bits(bf(1, 1)));
  EXPECT_EQ(bits(again.get<heed::half, 2>("h")(1, 0)), bits(hf(1, 0)));
}

TEST(SafeTensors, HalfPrecisionDecodesExactly) {
  EXPECT_EQ(heed::io::half_to_float(0x3C00), 1.0f);
  EXPECT_EQ(heed::io::half_to_float(0xC000), -2.0f);
  EXPECT_EQ(heed::io::half_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(heed::io::half_to_float(0x0001), 5.9604644775390625e-08f);  // smallest subnormal
  EXPECT_EQ(heed::io::half_to_float(0x7C00), INFINITY);
  EXPECT_TRUE(std::isnan(heed::io::half_to_float(0x7E00)));
  EXPECT_EQ(heed::io::bfloat16_to_float(0x3F80), 1.0f);
  // every bit pattern, against the format's definition: (-1)^s · 2^(e-15) · 1.m, subnormals
  // 2^-14 · 0.m, exponent 31 infinity or NaN; a bfloat16 is the upper half of a float
  int wrong = 0;
  for (std::uint32_t h = 0; h <= 0xFFFF; ++h) {
    const auto bits16 = static_cast<std::uint16_t>(h);
    const int e = static_cast<int>((h >> 10) & 0x1F), m = static_cast<int>(h & 0x3FF);
    const double sign = (h & 0x8000) != 0 ? -1.0 : 1.0;
    const double value = e == 31  ? (m == 0 ? sign * INFINITY : NAN)
                         : e == 0 ? sign * std::ldexp(m, -24)
                                  : sign * std::ldexp(1024 + m, e - 25);
    const float got = heed::io::half_to_float(bits16);
    if (std::isnan(value)
            ? !std::isnan(got)
            : std::bit_cast<std::uint32_t>(got) != std::bit_cast<std::uint32_t>(static_cast<float>(value)))
      ++wrong;
    if (std::bit_cast<std::uint32_t>(heed::io::bfloat16_to_float(bits16)) != h << 16 &&
        !std::isnan(heed::io::bfloat16_to_float(bits16)))
      ++wrong;
  }
  EXPECT_EQ(wrong, 0);
}

TEST(SafeTensors, RejectsMalformedHeaders) {
  expect_rejected({std::byte{1}, std::byte{2}}, "too small");
  {
    auto f = file_with_header("{}", 0);
    const std::uint64_t huge = 200'000'000;
    std::memcpy(f.data(), &huge, 8);
    expect_rejected(f, "exceeds the limit");
    const std::uint64_t past = 3;
    std::memcpy(f.data(), &past, 8);
    expect_rejected(f, "past the end");
  }
  expect_rejected(file_with_header("[]", 0), "start with '{'");
  expect_rejected(file_with_header("{\"a\":", 0), "invalid JSON");
  expect_rejected(
      file_with_header(
          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[0],"data_offsets":[8,8]}})",
          8),
      "duplicate key \"a\"");
  expect_rejected(file_with_header(R"({"a":{"dtype":"Q8","shape":[2],"data_offsets":[0,8]}})", 8), "unknown dtype");
  expect_rejected(file_with_header(R"({"a":{"dtype":"F32","shape":[2]}})", 8), "data_offsets");
  expect_rejected(file_with_header(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8), "non-negative");
  expect_rejected(file_with_header(R"({"__metadata__":{"k":1}})", 0), "not a string");
}

TEST(SafeTensors, RejectsBadOffsets) {
  // size mismatch: 3 floats need 12 bytes
  expect_rejected(file_with_header(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), "needs 12");
  // reversed
  expect_rejected(file_with_header(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", 8), "reversed");
  // past the end of the file
  expect_rejected(file_with_header(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8), "past the end");
  // a gap before the first tensor
  expect_rejected(file_with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8), "contiguous");
  // overlapping tensors
  expect_rejected(
      file_with_header(
          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
          8),
      "contiguous");
  // trailing bytes after the last tensor
  expect_rejected(file_with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 8), "covers 4 bytes");
  // a shape whose byte count overflows 64 bits
  expect_rejected(file_with_header(R"({"a":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8),
                  "overflows");
}

TEST(SafeTensors, EveryTruncationOfAValidFileIsAFormatError) {
  heed::io::SafeTensorsWriter w;
  w.add("x", heed::randn<float>({4, 4}, 3)).add("y", heed::randn<double>({3}, 4)).metadata("k", "v");
  const auto bytes = w.to_bytes();
  ASSERT_NO_THROW((void)SafeTensors::from_bytes(bytes));
  for (std::size_t len = 0; len < bytes.size(); ++len) {
    std::vector<std::byte> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(len));
    EXPECT_THROW((void)SafeTensors::from_bytes(cut), FormatError) << "length " << len;
  }
}

TEST(SafeTensors, OpenMapsTheFileAndCopyModeReadsTheSame) {
  namespace fs = std::filesystem;
  const fs::path path = fs::temp_directory_path() / "heed_test_mapped.safetensors";
  const auto x = heed::randn<float>({64, 33}, 5);
  heed::io::SafeTensorsWriter().add("x", x).metadata("heed.config", R"({"d":33})").write(path);
  const SafeTensors mapped = SafeTensors::open(path);
  const SafeTensors copied = SafeTensors::open(path, heed::io::ReadMode::copy);
#if defined(HEED_HAVE_MMAP)
  EXPECT_TRUE(mapped.is_mapped());
#endif
  EXPECT_FALSE(copied.is_mapped());
  EXPECT_TRUE(heed::test::all_close(mapped.get<float, 2>("x"), x, {0, 0}));
  EXPECT_TRUE(heed::test::all_close(copied.get<float, 2>("x"), x, {0, 0}));
  EXPECT_EQ(mapped.metadata("heed.config", ""), R"({"d":33})");
  EXPECT_EQ(mapped.metadata("absent", "fallback"), "fallback");
  const SafeTensors kept = mapped;  // copies share the mapping, which outlives the original
  fs::remove(path);                 // an unlinked file stays readable through its mapping
  EXPECT_TRUE(heed::test::all_close(kept.get<float, 2>("x"), x, {0, 0}));
}

TEST(SafeTensors, TruncatedFileOnDiskNamesTheFile) {
  namespace fs = std::filesystem;
  const fs::path path = fs::temp_directory_path() / "heed_test_truncated.safetensors";
  auto bytes = heed::io::SafeTensorsWriter().add("w", heed::randn<float>({8, 8}, 6)).to_bytes();
  bytes.resize(bytes.size() - 3);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  for (const auto mode : {heed::io::ReadMode::map, heed::io::ReadMode::copy}) {
    try {
      (void)SafeTensors::open(path, mode);
      ADD_FAILURE() << "a truncated file opened";
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("heed_test_truncated.safetensors"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("tensor \"w\""), std::string::npos) << e.what();
    }
  }
  const fs::path empty = fs::temp_directory_path() / "heed_test_empty.safetensors";
  std::ofstream(empty, std::ios::binary).flush();
  EXPECT_THROW((void)SafeTensors::open(empty), FormatError);
  fs::remove(path);
  fs::remove(empty);
}

// The IoError names the file and the system's reason.
std::string io_error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const heed::IoError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no IoError";
  return {};
}

TEST(SafeTensors, MissingFileIsAnIoErrorWithTheSystemsReason) {
  const std::string path = "/nonexistent/heed/model.safetensors";
  EXPECT_EQ(io_error_of([&] { (void)SafeTensors::open(path); }),
            "heed::io::SafeTensors::open: cannot open " + path + ": No such file or directory");
  EXPECT_EQ(io_error_of([&] { (void)SafeTensors::open(path, heed::io::ReadMode::copy); }),
            "heed::io::SafeTensors::open: cannot open " + path + ": No such file or directory");
  EXPECT_EQ(io_error_of([&] { heed::io::SafeTensorsWriter().add("w", heed::Tensor<float, 1>({2})).write(path); }),
            "heed::io::SafeTensorsWriter: cannot create " + path + ": No such file or directory");
  // A directory opens but cannot be read as a file.
  const std::string dir_error =
      io_error_of([] { (void)SafeTensors::open(std::filesystem::temp_directory_path(), heed::io::ReadMode::copy); });
  EXPECT_NE(dir_error.find("cannot read"), std::string::npos) << dir_error;
  EXPECT_NE(dir_error.find("Is a directory"), std::string::npos) << dir_error;
}

}  // namespace

namespace {

TEST(DefinedInputs, TheWriterRefusesWhatItsReaderWouldRefuse) {  // #46, defect 6
  const heed::Tensor<float, 1> t({2});
  EXPECT_THROW(heed::io::SafeTensorsWriter().add("__metadata__", t), heed::FormatError);
  EXPECT_THROW(heed::io::SafeTensorsWriter().add(std::string("w\xff"), t), heed::FormatError);
  EXPECT_THROW(heed::io::SafeTensorsWriter().add(std::string("w\xc0\xaf"), t), heed::FormatError);  // overlong '/'
  EXPECT_THROW(heed::io::SafeTensorsWriter().metadata("k", std::string("\xed\xa0\x80")),
               heed::FormatError);  // surrogate
  // names in any script are UTF-8: written and read back
  const auto bytes = heed::io::SafeTensorsWriter().add("gewicht.\xc3\xa4", t).metadata("\xe2\x9c\x93", "ok").to_bytes();
  const auto st = heed::io::SafeTensors::from_bytes(bytes);
  EXPECT_EQ(st.metadata("\xe2\x9c\x93", ""), "ok");
  EXPECT_EQ((st.get<float, 1>("gewicht.\xc3\xa4").shape()), (heed::Shape<1>{2}));
}

}  // namespace
