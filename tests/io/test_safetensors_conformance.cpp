// The safetensors format's rules, one test each, as docs/formats.md lists them (the rule numbers
// match): what the format's reference reader accepts and refuses, and what heed does with it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "heed/io/safetensors.hpp"
#include "support/safetensors_files.hpp"

namespace {

using heed::FormatError;
using heed::io::DType;
using heed::io::SafeTensors;
using heed::test::expect_rejected;
using heed::test::file_with_header;

std::string entry(const std::string& name, const std::string& dtype, const std::string& shape, std::size_t begin,
                  std::size_t end) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" +
         std::to_string(begin) + "," + std::to_string(end) + "]}";
}

// Rule 4: the header is UTF-8; a tensor name or metadata text may use any code point.
TEST(SafeTensorsRules, R4_HeaderIsValidUtf8) {
  const auto st = SafeTensors::from_bytes(
      file_with_header(std::string("{") + entry("caf\xc3\xa9.\xf0\x9f\x98\x80", "F32", "[1]", 0, 4) + "}", 4),
      "ok.safetensors");
  EXPECT_TRUE(st.contains("caf\xc3\xa9.\xf0\x9f\x98\x80"));
  for (const char* bad : {"\xff", "\xc0\xaf", "\xed\xa0\x80", "\xe2\x82", "\xf4\x90\x80\x80", "\x80"})
    expect_rejected(file_with_header(std::string("{") + entry(std::string("w") + bad, "F32", "[1]", 0, 4) + "}", 4),
                    "UTF-8");
}

// Rule 5: the header starts with '{' (no leading whitespace or byte-order mark).
TEST(SafeTensorsRules, R5_HeaderStartsWithABrace) {
  expect_rejected(file_with_header(" {}", 0), "start with '{'");
  expect_rejected(file_with_header("\xef\xbb\xbf{}", 0), "start with '{'");
  expect_rejected(file_with_header("", 0), "start with '{'");
}

// Rule 6: one JSON object, then only whitespace (writers pad the header to 8 bytes with spaces).
TEST(SafeTensorsRules, R6_OneObjectThenOnlyWhitespace) {
  EXPECT_TRUE(SafeTensors::from_bytes(file_with_header("{}      ", 0)).tensors().empty());
  EXPECT_TRUE(SafeTensors::from_bytes(file_with_header("{}\n\t\r ", 0)).tensors().empty());
  expect_rejected(file_with_header(std::string("{}\0\0\0\0\0\0", 8), 0), "after the value");
  expect_rejected(file_with_header("{}{}", 0), "after the value");
  expect_rejected(file_with_header("{} x", 0), "after the value");
}

// Rule 7: no key appears twice in any object: tensor names, metadata keys, an entry's fields.
TEST(SafeTensorsRules, R7_DuplicateKeysAreRefused) {
  expect_rejected(
      file_with_header("{" + entry("a", "F32", "[1]", 0, 4) + "," + entry("a", "F32", "[0]", 4, 4) + "}", 4),
      "duplicate key \"a\"");
  expect_rejected(file_with_header(R"({"__metadata__":{"k":"1","k":"2"}})", 0), "duplicate key \"k\"");
  expect_rejected(file_with_header(R"({"a":{"dtype":"F32","dtype":"F64","shape":[1],"data_offsets":[0,4]}})", 4),
                  "duplicate key \"dtype\"");
  expect_rejected(file_with_header(R"({"__metadata__":{},"__metadata__":{}})", 0), "duplicate key \"__metadata__\"");
}

// Rule 8: an entry is an object with a string dtype, an array shape of non-negative integers and
// a pair of non-negative integer data_offsets; fields it does not know are ignored.
TEST(SafeTensorsRules, R8_EntryFields) {
  const auto st = SafeTensors::from_bytes(
      file_with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"comment":"ignored"}})", 4));
  EXPECT_EQ(st.info("a").shape, std::vector<heed::index_t>{1});
  expect_rejected(file_with_header(R"({"a":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}})", 4), "non-negative");
  expect_rejected(file_with_header(R"({"a":{"dtype":"F32","shape":[1e0],"data_offsets":[0,4]}})", 4), "non-negative");
  expect_rejected(file_with_header(R"({"a":{"dtype":"F32","shape":["1"],"data_offsets":[0,4]}})", 4), "non-negative");
  expect_rejected(file_with_header(R"({"a":{"dtype":"F32","shape":1,"data_offsets":[0,4]}})", 4), "array \"shape\"");
  expect_rejected(file_with_header(R"({"a":{"dtype":32,"shape":[1],"data_offsets":[0,4]}})", 4), "string \"dtype\"");
  expect_rejected(file_with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4,4]}})", 4),
                  "data_offsets\" pair");
  expect_rejected(file_with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,-4]}})", 4), "non-negative");
  expect_rejected(file_with_header(R"({"a":[]})", 0), "not an object");
  expect_rejected(file_with_header(R"({"a":{"dtype":"f32","shape":[1],"data_offsets":[0,4]}})", 4),
                  "unknown dtype \"f32\"");
}

// Rule 9: every dtype the format names opens; heed converts the numeric ones and refuses the
// others by name when asked to convert them, while their bytes stay readable.
TEST(SafeTensorsRules, R9_EveryDtypeIsRecognized) {
  const std::vector<std::pair<std::string, std::size_t>> bits = {
      {"BOOL", 8},  {"U8", 8},      {"I8", 8},      {"I16", 16},    {"U16", 16},        {"F16", 16},
      {"BF16", 16}, {"I32", 32},    {"U32", 32},    {"F32", 32},    {"I64", 64},        {"U64", 64},
      {"F64", 64},  {"F8_E5M2", 8}, {"F8_E4M3", 8}, {"F8_E8M0", 8}, {"F8_E4M3FNUZ", 8}, {"F8_E5M2FNUZ", 8},
      {"F4", 4},    {"F6_E2M3", 6}, {"F6_E3M2", 6}, {"C64", 64}};
  const std::vector<std::string> convertible = {"BOOL", "U8",  "I8",  "I16", "U16", "F16", "BF16",
                                                "I32",  "U32", "F32", "I64", "U64", "F64"};
  for (const auto& [name, width] : bits) {
    SCOPED_TRACE(name);
    const std::size_t bytes = 8 * width / 8;  // 8 elements
    const auto st = SafeTensors::from_bytes(file_with_header("{" + entry("t", name, "[2,4]", 0, bytes) + "}", bytes));
    const DType dtype = st.info("t").dtype;
    EXPECT_EQ(heed::io::dtype_name(dtype), name);
    EXPECT_EQ(heed::io::dtype_bits(dtype), width);
    EXPECT_EQ(st.raw("t").size(), bytes);
    if (std::find(convertible.begin(), convertible.end(), name) != convertible.end()) {
      const auto t = st.get<float, 2>("t");
      for (heed::index_t i = 0; i < t.numel(); ++i) EXPECT_EQ(t.data()[i], 0.0f);
    } else {
      try {
        (void)st.get<float, 2>("t");
        ADD_FAILURE() << "converted " << name;
      } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("dtype " + name + " is recognized but heed does not convert it"),
                  std::string::npos)
            << e.what();
      }
    }
  }
  // Sub-byte dtypes fill whole bytes: three F4 values are 12 bits.
  expect_rejected(file_with_header("{" + entry("t", "F4", "[3]", 0, 2) + "}", 2), "does not fill whole bytes");
  expect_rejected(file_with_header("{" + entry("t", "F6_E2M3", "[3]", 0, 3) + "}", 3), "does not fill whole bytes");
  EXPECT_EQ(
      SafeTensors::from_bytes(file_with_header("{" + entry("t", "F6_E3M2", "[4]", 0, 3) + "}", 3)).raw("t").size(), 3u);
}

// Rule 10: a tensor's bytes are its element count × its dtype's size, computed without overflow.
TEST(SafeTensorsRules, R10_ByteCountMatchesShapeAndDtype) {
  expect_rejected(file_with_header("{" + entry("a", "F32", "[3]", 0, 8) + "}", 8), "needs 12");
  expect_rejected(file_with_header("{" + entry("a", "I16", "[2,2]", 0, 4) + "}", 4), "needs 8");
  expect_rejected(file_with_header("{" + entry("a", "U8", "[18446744073709551615,2]", 0, 8) + "}", 8), "overflows");
  expect_rejected(file_with_header("{" + entry("a", "F4", "[18446744073709551615]", 0, 8) + "}", 8), "overflows");
}

// Rule 11: the byte ranges, in the order of their offsets (not of the header), run from 0 without
// gaps or overlaps and end exactly at the end of the file.
TEST(SafeTensorsRules, R11_OffsetsAreContiguousInDataOrder) {
  const auto st = SafeTensors::from_bytes(file_with_header("{" + entry("z", "F32", "[1]", 0, 4) + "," +
                                                               entry("a", "F64", "[1]", 4, 12) + "," +
                                                               entry("m", "U8", "[0]", 12, 12) + "}",
                                                           12));
  ASSERT_EQ(st.tensors().size(), 3u);
  EXPECT_EQ(st.tensors()[0].name, "z");  // data order
  EXPECT_EQ(st.names(), (std::vector<std::string>{"a", "m", "z"}));
  expect_rejected(file_with_header("{" + entry("a", "F32", "[1]", 4, 8) + "}", 8), "contiguous");
  expect_rejected(
      file_with_header("{" + entry("a", "F32", "[2]", 0, 8) + "," + entry("b", "F32", "[1]", 4, 8) + "}", 8),
      "contiguous");
  expect_rejected(file_with_header("{" + entry("a", "F32", "[1]", 0, 4) + "}", 5), "covers 4 bytes");
  expect_rejected(file_with_header("{" + entry("a", "F32", "[1]", 8, 4) + "}", 8), "reversed");
}

// Rule 12: __metadata__ is an object of string values, or null (no metadata); it is not a tensor.
TEST(SafeTensorsRules, R12_MetadataIsStringToString) {
  const auto st = SafeTensors::from_bytes(file_with_header(R"({"__metadata__":{"format":"pt","":""}})", 0));
  EXPECT_EQ(st.metadata("format", ""), "pt");
  EXPECT_EQ(st.metadata().size(), 2u);
  EXPECT_TRUE(st.tensors().empty());
  EXPECT_TRUE(SafeTensors::from_bytes(file_with_header(R"({"__metadata__":null})", 0)).metadata().empty());
  expect_rejected(file_with_header(R"({"__metadata__":{"k":1}})", 0), "not a string");
  expect_rejected(file_with_header(R"({"__metadata__":{"k":{"a":"b"}}})", 0), "not a string");
  expect_rejected(file_with_header(R"({"__metadata__":{"k":null}})", 0), "not a string");
  expect_rejected(file_with_header(R"({"__metadata__":["k"]})", 0), "not an object");
}

// Rule 13: scalars (shape []) hold one element; a zero extent makes an empty tensor of no bytes.
TEST(SafeTensorsRules, R13_ScalarsAndEmptyTensors) {
  const auto st = SafeTensors::from_bytes(
      file_with_header("{" + entry("s", "F32", "[]", 0, 4) + "," + entry("e", "F64", "[0,1000000]", 4, 4) + "}", 4));
  EXPECT_TRUE(st.info("s").shape.empty());
  EXPECT_EQ(st.raw("s").size(), 4u);
  EXPECT_EQ((st.get<double, 2>("e").shape()), (heed::Shape<2>{0, 1000000}));
}

}  // namespace
