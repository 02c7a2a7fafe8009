// A second opinion on heed's JSON reader: nlohmann/json (a test-only dependency) parses the same
// documents, and the two must agree: both accept with the same value, or both refuse. Four
// differences are by design (docs/formats.md, "JSON") and are checked to be exactly that:
//   - a key twice in one object: heed refuses it, nlohmann/json keeps the last;
//   - nesting deeper than 64: heed refuses it (stack safety), nlohmann/json has no limit;
//   - a number beyond double's range: heed reads ±infinity or ±0 (as Python does), nlohmann/json
//     refuses it (its error 406, "number overflow");
//   - a NUL byte after the value: nlohmann/json takes it for the end of the input, heed for a
//     byte that is not JSON.
// The documents: the fuzzer's seed corpus and regressions (tests/fuzz/corpus/json,
// tests/fuzz/regressions/json), the cases below, and any directories named in the environment
// variable HEED_JSON_CORPUS (':'-separated), for a run over a grown fuzzing corpus.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "heed/io/json.hpp"

namespace {

namespace fs = std::filesystem;
using heed::io::Json;

// Whether heed's value equals nlohmann/json's, with the path to the first difference in `where`.
bool same_value(const Json& mine, const nlohmann::json& theirs, std::string& where) {
  switch (theirs.type()) {
    case nlohmann::json::value_t::null:
      return mine.is_null();
    case nlohmann::json::value_t::boolean:
      return mine.is_bool() && mine.as_bool() == theirs.get<bool>();
    case nlohmann::json::value_t::number_unsigned:
      return mine.is_number() && mine.as_uint64() == theirs.get<std::uint64_t>();
    case nlohmann::json::value_t::number_integer:
      return mine.is_number() && mine.as_int64() == theirs.get<std::int64_t>();
    case nlohmann::json::value_t::number_float: {
      if (!mine.is_number()) return false;
      const double a = mine.as_double(), b = theirs.get<double>();
      return a == b && std::signbit(a) == std::signbit(b);
    }
    case nlohmann::json::value_t::string:
      return mine.is_string() && mine.as_string() == theirs.get<std::string>();
    case nlohmann::json::value_t::array: {
      if (!mine.is_array() || mine.as_array().size() != theirs.size()) return false;
      for (std::size_t i = 0; i < theirs.size(); ++i)
        if (!same_value(mine.as_array()[i], theirs[i], where))
          return where = "[" + std::to_string(i) + "]" + where, false;
      return true;
    }
    case nlohmann::json::value_t::object: {
      if (!mine.is_object() || mine.as_object().size() != theirs.size()) return false;
      for (const auto& [key, value] : mine.as_object()) {
        const auto it = theirs.find(key);
        if (it == theirs.end() || !same_value(value, *it, where)) return where = "." + key + where, false;
      }
      return true;
    }
    default:
      return false;  // binary and discarded values: nlohmann/json's parser makes neither
  }
}

struct Tally {
  int both_accept = 0, both_refuse = 0, duplicate_key = 0, deep = 0, overflow = 0, nul_end = 0;
};

// Parses `text` with both readers and records the outcome; a disagreement is a test failure.
void compare(const std::string& text, const std::string& name, Tally& tally) {
  SCOPED_TRACE(name);
  std::string heed_error;
  Json mine;
  try {
    mine = Json::parse(text, name);
  } catch (const heed::FormatError& e) {
    heed_error = e.what();
  }
  std::string their_error;
  int their_code = 0;
  nlohmann::json theirs;
  try {
    theirs = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    their_error = e.what();
    their_code = e.id;
  }
  if (heed_error.empty() && their_error.empty()) {
    std::string where;
    EXPECT_TRUE(same_value(mine, theirs, where)) << "the values differ at " << (where.empty() ? "the top" : where);
    ++tally.both_accept;
  } else if (!heed_error.empty() && !their_error.empty()) {
    ++tally.both_refuse;
  } else if (heed_error.find("duplicate key") != std::string::npos) {
    ++tally.duplicate_key;
  } else if (heed_error.find("nesting deeper than 64") != std::string::npos) {
    ++tally.deep;
  } else if (their_code == 406) {  // out_of_range.406: a number nlohmann/json cannot hold
    ++tally.overflow;
  } else if (their_error.empty() && text.find('\0') != std::string::npos) {
    // nlohmann/json read up to the NUL: heed must read that part to the same value
    std::string where;
    EXPECT_TRUE(same_value(Json::parse(text.substr(0, text.find('\0'))), theirs, where)) << where;
    ++tally.nul_end;  // and heed reads the text before the NUL as nlohmann/json does
  } else {
    ADD_FAILURE() << "heed " << (heed_error.empty() ? "accepts" : "refuses (" + heed_error + ")") << ", nlohmann/json "
                  << (their_error.empty() ? "accepts" : "refuses (" + their_error + ")");
  }
}

std::vector<fs::path> corpus_directories() {
  const fs::path fuzz = fs::path(HEED_TESTS_DIR) / "fuzz";
  std::vector<fs::path> dirs = {fuzz / "corpus" / "json", fuzz / "regressions" / "json"};
  if (const char* extra = std::getenv("HEED_JSON_CORPUS")) {
    std::stringstream list(extra);
    for (std::string dir; std::getline(list, dir, ':');)
      if (!dir.empty()) dirs.emplace_back(dir);
  }
  return dirs;
}

TEST(JsonDifferential, AgreesWithNlohmannJsonOnTheCorpus) {
  Tally tally;
  int files = 0;
  for (const fs::path& dir : corpus_directories()) {
    ASSERT_TRUE(fs::is_directory(dir)) << dir;
    for (const auto& entry : fs::directory_iterator(dir)) {
      std::ifstream in(entry.path(), std::ios::binary);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      compare(text, entry.path().filename().string(), tally);
      ++files;
    }
  }
  EXPECT_GE(files, 5);
  EXPECT_GE(tally.both_accept, 4);
  std::printf(
      "JSON differential: %d files: %d accepted by both, %d refused by both; heed alone refuses %d "
      "duplicate-key, %d too-deep and %d NUL-ended documents, nlohmann/json alone %d number overflows\n",
      files, tally.both_accept, tally.both_refuse, tally.duplicate_key, tally.deep, tally.nul_end, tally.overflow);
}

TEST(JsonDifferential, AgreesOnEdgeCases) {
  const std::vector<std::string> cases = {
      // values
      "0",
      "-0",
      "-0.0",
      "1E2",
      "1e-2",
      "0.1e+1",
      "123456789012345678901234567890",
      "18446744073709551615",
      "18446744073709551616",
      "-9223372036854775808",
      "-9223372036854775809",
      "4.9406564584124654e-324",
      "2.2250738585072011e-308",
      "1.7976931348623157e308",
      "0.30000000000000004",
      "true",
      "false",
      "null",
      R"("")",
      R"("\u0000")",
      R"("\ud83d\ude00")",
      R"("\u00e9\u20ac")",
      "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"",
      R"([])",
      R"({})",
      R"([[[]]])",
      R"({"a":{"b":[1,{"c":null}]}})",
      " \t\r\n[1 , 2]\n ",
      // refused by both
      "",
      " ",
      "01",
      "1.",
      ".5",
      "-",
      "+1",
      "1e",
      "0x10",
      "NaN",
      "Infinity",
      "-Infinity",
      "tru",
      "nul",
      "[1,]",
      "{\"a\":1,}",
      "{a:1}",
      "{'a':1}",
      "[1 2]",
      "{\"a\" 1}",
      "\"\\x\"",
      "\"\\u12\"",
      "\"\\ud800\"",
      "\"\\udc00\"",
      "\"\\ud800\\u0041\"",
      "\"a\tb\"",
      "\"unterminated",
      "[",
      "]",
      "{",
      "}",
      "[1]]",
      "{}{}",
      "/* */ 1",
      "1 // c",
      "\"\xff\"",
      "\"\xc0\xaf\"",
      "\"\xed\xa0\x80\"",
      "\"\xf4\x90\x80\x80\"",
      "\"\xe2\x82\"",
      "\"\x80\"",
      "\xef\xbb\xbf[1]" /* a byte-order mark: both skip it */,
      "\xef\xbb[1]",
      // the designed differences
      R"({"a":1,"a":2})",
      R"({"a":{"b":1,"b":1}})",
      std::string(100, '[') + std::string(100, ']'),
      "1e999",
      "-1e999",
      "[1e400]",
      std::string("[1]\0", 4),
      std::string("{\"a\":1} \0 junk", 14),
  };
  Tally tally;
  for (std::size_t i = 0; i < cases.size(); ++i) compare(cases[i], "case " + std::to_string(i), tally);
  EXPECT_EQ(tally.duplicate_key, 2);
  EXPECT_EQ(tally.deep, 1);
  EXPECT_EQ(tally.overflow, 3);
  EXPECT_EQ(tally.nul_end, 2);
  EXPECT_GE(tally.both_accept, 28);
  EXPECT_GE(tally.both_refuse, 40);
}

}  // namespace
