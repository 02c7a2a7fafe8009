#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "heed/io/json.hpp"

namespace {

using heed::io::Json;

TEST(Json, ParsesNestedValues) {
  const Json j = Json::parse(R"( {"a": [1, -2.5e3, true, null], "b": {"c": "x\"y\u00e9\ud83d\ude00"}} )");
  ASSERT_TRUE(j.is_object());
  const auto& a = j.find("a")->as_array();
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[0].as_uint64(), 1u);
  EXPECT_DOUBLE_EQ(a[1].as_double(), -2500);
  EXPECT_TRUE(a[2].as_bool());
  EXPECT_TRUE(a[3].is_null());
  EXPECT_EQ(j.find("b")->find("c")->as_string(), "x\"y\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(j.find("missing"), nullptr);
}

TEST(Json, IntegersAreExactTo64Bits) {
  EXPECT_EQ(Json::parse("18446744073709551615").as_uint64(), 18446744073709551615ULL);
  EXPECT_EQ(Json::parse("-9223372036854775808").as_int64(), INT64_MIN);
  EXPECT_THROW((void)Json::parse("18446744073709551616").as_uint64(), heed::FormatError);
  EXPECT_THROW((void)Json::parse("1.5").as_uint64(), heed::FormatError);
  EXPECT_THROW((void)Json::parse("-1").as_uint64(), heed::FormatError);
}

// Found by fuzzing (tests/fuzz/regressions/json): std::stod threw std::out_of_range, which is not
// a heed::Error. Out-of-range magnitudes now read as Python's json reads them.
TEST(Json, NumbersBeyondDoubleAreInfinityOrZero) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(Json::parse("1e999").as_double(), inf);
  EXPECT_EQ(Json::parse("-1E+999").as_double(), -inf);
  EXPECT_EQ(Json::parse("0.00001e400").as_double(), inf);  // 1e395
  EXPECT_EQ(Json::parse("12345678901234567890e99999999999999999999").as_double(), inf);
  for (const char* tiny : {"1e-7314159", "123456789e-9999", "0.0000001e-400", "1e-99999999999999999999"}) {
    const double v = Json::parse(tiny).as_double();
    EXPECT_EQ(v, 0.0) << tiny;
    EXPECT_FALSE(std::signbit(v)) << tiny;
  }
  EXPECT_TRUE(std::signbit(Json::parse("-1e-400").as_double()));
  EXPECT_EQ(Json::parse("-1e-400").as_double(), 0.0);
  // in range: the nearest double, subnormals included
  EXPECT_EQ(Json::parse("2.5").as_double(), 2.5);
  EXPECT_EQ(Json::parse("4.9406564584124654e-324").as_double(), std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(Json::parse("1.7976931348623157e308").as_double(), std::numeric_limits<double>::max());
}

TEST(Json, RejectsMalformedInputWithTheOffset) {
  for (const char* bad : {"", "{", "[1,]", "{\"a\" 1}", "{\"a\":1,}", "01", "1.", "\"\\x\"", "\"abc", "tru", "[1] 2",
                          "\"\\ud800\"", "{1:2}", "-", "\"a\x01\""}) {
    EXPECT_THROW((void)Json::parse(bad), heed::FormatError) << bad;
  }
  try {
    (void)Json::parse("[1, 2, ?]", "test");
    FAIL();
  } catch (const heed::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("byte 7"), std::string::npos) << e.what();
  }
}

// Strings are UTF-8 (RFC 3629): multi-byte sequences pass through; invalid bytes, overlong forms,
// encoded surrogates and code points beyond U+10FFFF are refused with the offset.
TEST(Json, StringsMustBeValidUtf8) {
  EXPECT_EQ(Json::parse("\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\"").as_string(),
            "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf");
  for (const char* bad :
       {"\"\xff\"", "\"\x80\"", "\"\xc0\xaf\"", "\"\xc1\xbf\"", "\"\xe0\x80\xaf\"", "\"\xed\xa0\x80\"",
        "\"\xf0\x80\x80\xaf\"", "\"\xf4\x90\x80\x80\"", "\"\xf5\x80\x80\x80\"", "\"\xe2\x82\"", "\"\xe2\x82"}) {
    try {
      (void)Json::parse(bad, "utf8");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const heed::FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("UTF-8"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("byte 1"), std::string::npos) << e.what();
    }
  }
}

// A key twice in one object means different things to different readers: refused, at any depth.
// A leading byte-order mark is skipped, as RFC 8259 allows.
TEST(Json, DuplicateKeysAreRefusedAndAByteOrderMarkIsSkipped) {
  for (const char* bad : {R"({"a":1,"a":1})", R"({"a":1,"b":2,"a":3})", R"([{"x":{"k":1,"k":2}}])"})
    EXPECT_THROW((void)Json::parse(bad), heed::FormatError) << bad;
  try {
    (void)Json::parse(R"({"a":1,"b":2,"a":3})", "config");
    FAIL();
  } catch (const heed::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("duplicate key \"a\""), std::string::npos) << e.what();
  }
  EXPECT_EQ(Json::parse(R"({"a":{"k":1},"b":{"k":2}})").find("b")->find("k")->as_uint64(), 2u);
  EXPECT_EQ(Json::parse("\xef\xbb\xbf[7]").as_array()[0].as_uint64(), 7u);
  EXPECT_THROW((void)Json::parse("\xef\xbb[7]"), heed::FormatError);
}

TEST(Json, LimitsNesting) {
  EXPECT_NO_THROW((void)Json::parse(std::string(60, '[') + std::string(60, ']')));
  EXPECT_THROW((void)Json::parse(std::string(100000, '[')), heed::FormatError);
}

TEST(Json, DumpRoundTrips) {
  const std::string text = R"({"k":[1,2.5,"s\n",false,null],"o":{}})";
  EXPECT_EQ(Json::parse(text).dump(), text);
}

}  // namespace
