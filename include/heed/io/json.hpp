#pragma once
// The small JSON reader that safetensors headers and `__metadata__` configs need: RFC 8259
// values into a tree, with exact 64-bit integers (offsets can exceed 2^53), a nesting limit
// (a hostile header cannot overflow the stack), and FormatError with the byte offset on any
// malformed input. Not a general-purpose JSON library: no writer beyond what io needs.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "heed/core/error.hpp"

namespace heed::io {

class Json {
 public:
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;  // in document order

  /// A number keeps its text, so integers convert exactly.
  struct Number {
    std::string text;
  };

  Json() = default;
  explicit Json(std::nullptr_t) {}
  explicit Json(bool b) : value_(b) {}
  explicit Json(Number n) : value_(std::move(n)) {}
  explicit Json(std::string s) : value_(std::move(s)) {}
  explicit Json(Array a) : value_(std::make_shared<Array>(std::move(a))) {}
  explicit Json(Object o) : value_(std::make_shared<Object>(std::move(o))) {}

  /// Parses one JSON document; `what` names it in error messages.
  static Json parse(std::string_view text, std::string_view what = "JSON");

  [[nodiscard]] bool is_null() const noexcept { return std::holds_alternative<std::monostate>(value_); }
  [[nodiscard]] bool is_bool() const noexcept { return std::holds_alternative<bool>(value_); }
  [[nodiscard]] bool is_number() const noexcept { return std::holds_alternative<Number>(value_); }
  [[nodiscard]] bool is_string() const noexcept { return std::holds_alternative<std::string>(value_); }
  [[nodiscard]] bool is_array() const noexcept { return std::holds_alternative<std::shared_ptr<Array>>(value_); }
  [[nodiscard]] bool is_object() const noexcept { return std::holds_alternative<std::shared_ptr<Object>>(value_); }

  [[nodiscard]] bool as_bool() const { return get<bool>("a boolean"); }
  [[nodiscard]] const std::string& as_string() const { return get<std::string>("a string"); }
  [[nodiscard]] const Array& as_array() const { return *get<std::shared_ptr<Array>>("an array"); }
  [[nodiscard]] const Object& as_object() const { return *get<std::shared_ptr<Object>>("an object"); }
  [[nodiscard]] double as_double() const { return std::stod(get<Number>("a number").text); }

  /// The number as an exact unsigned 64-bit integer; FormatError if it is not one.
  [[nodiscard]] std::uint64_t as_uint64() const {
    const std::string& text = get<Number>("a number").text;
    std::uint64_t value = 0;
    if (text.empty()) throw FormatError("JSON: empty number");
    for (char c : text) {
      if (c < '0' || c > '9') throw FormatError("JSON: expected a non-negative integer, found " + text);
      const auto digit = static_cast<std::uint64_t>(c - '0');
      if (value > (UINT64_MAX - digit) / 10) throw FormatError("JSON: integer out of range: " + text);
      value = value * 10 + digit;
    }
    return value;
  }
  [[nodiscard]] std::int64_t as_int64() const {
    const std::string& text = get<Number>("a number").text;
    if (!text.empty() && text[0] == '-') {
      const std::uint64_t magnitude = Json(Number{text.substr(1)}).as_uint64();
      if (magnitude > static_cast<std::uint64_t>(INT64_MAX) + 1)
        throw FormatError("JSON: integer out of range: " + text);
      return static_cast<std::int64_t>(0 - magnitude);
    }
    const std::uint64_t value = as_uint64();
    if (value > static_cast<std::uint64_t>(INT64_MAX)) throw FormatError("JSON: integer out of range: " + text);
    return static_cast<std::int64_t>(value);
  }

  /// The member `key` of an object, or nullptr.
  [[nodiscard]] const Json* find(std::string_view key) const {
    for (const auto& [name, value] : as_object())
      if (name == key) return &value;
    return nullptr;
  }

  /// Serializes back to compact JSON (used by the writers).
  [[nodiscard]] std::string dump() const;

 private:
  template <class T>
  const T& get(const char* expected) const {
    if (const T* p = std::get_if<T>(&value_)) return *p;
    throw FormatError(std::string("JSON: expected ") + expected);
  }

  std::variant<std::monostate, bool, Number, std::string, std::shared_ptr<Array>, std::shared_ptr<Object>> value_;
};

/// Quotes and escapes a string for JSON.
[[nodiscard]] inline std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static constexpr char hex[] = "0123456789abcdef";
          out += "\\u00";
          out += hex[(c >> 4) & 0xF];
          out += hex[c & 0xF];
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

inline std::string Json::dump() const {
  if (is_null()) return "null";
  if (is_bool()) return as_bool() ? "true" : "false";
  if (is_number()) return std::get<Number>(value_).text;
  if (is_string()) return json_quote(as_string());
  std::string out;
  if (is_array()) {
    out = "[";
    for (const auto& item : as_array()) out += (out.size() > 1 ? "," : "") + item.dump();
    return out + "]";
  }
  out = "{";
  for (const auto& [key, item] : as_object()) out += (out.size() > 1 ? "," : "") + json_quote(key) + ":" + item.dump();
  return out + "}";
}

namespace detail {

class JsonParser {
 public:
  JsonParser(std::string_view text, std::string_view what) : text_(text), what_(what) {}

  Json document() {
    Json value = parse_value(0);
    skip_space();
    if (pos_ != text_.size()) fail("unexpected characters after the value");
    return value;
  }

 private:
  static constexpr int max_depth = 64;

  [[noreturn]] void fail(const std::string& why) const {
    throw FormatError(std::string(what_) + ": invalid JSON at byte " + std::to_string(pos_) + ": " + why);
  }

  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  bool consume(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void expect(char c) {
    if (!consume(c)) fail(std::string("expected '") + c + "'");
  }

  void literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) fail("unknown literal");
    pos_ += word.size();
  }

  Json parse_value(int depth) {
    if (depth > max_depth) fail("nesting deeper than 64");
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end");
    const char c = text_[pos_];
    if (c == '{') return parse_object(depth);
    if (c == '[') return parse_array(depth);
    if (c == '"') return Json(parse_string());
    if (c == 't') return literal("true"), Json(true);
    if (c == 'f') return literal("false"), Json(false);
    if (c == 'n') return literal("null"), Json(nullptr);
    if (c == '-' || (c >= '0' && c <= '9')) return Json(parse_number());
    fail(std::string("unexpected character '") + c + "'");
  }

  Json parse_object(int depth) {
    ++pos_;
    Json::Object members;
    if (consume('}')) return Json(std::move(members));
    do {
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != '"') fail("expected a string key");
      std::string key = parse_string();
      expect(':');
      members.emplace_back(std::move(key), parse_value(depth + 1));
    } while (consume(','));
    expect('}');
    return Json(std::move(members));
  }

  Json parse_array(int depth) {
    ++pos_;
    Json::Array items;
    if (consume(']')) return Json(std::move(items));
    do {
      items.push_back(parse_value(depth + 1));
    } while (consume(','));
    expect(']');
    return Json(std::move(items));
  }

  Json::Number parse_number() {
    const std::size_t start = pos_;
    auto digits = [&] {
      const std::size_t from = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      if (pos_ == from) fail("expected a digit");
    };
    if (text_[pos_] == '-') ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '0') {
      ++pos_;
    } else {
      digits();
    }
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      digits();
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      digits();
    }
    return Json::Number{std::string(text_.substr(start, pos_ - start))};
  }

  unsigned hex4() {
    if (pos_ + 4 > text_.size()) fail("truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f')
        v |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        v |= static_cast<unsigned>(c - 'A' + 10);
      else
        fail("bad hex digit in \\u escape");
    }
    return v;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::string parse_string() {
    ++pos_;  // opening quote
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) fail("unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) fail("unterminated escape");
      switch (text_[pos_++]) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {  // a surrogate pair
            if (text_.substr(pos_, 2) != "\\u") fail("lone high surrogate");
            pos_ += 2;
            const unsigned low = hex4();
            if (low < 0xDC00 || low >= 0xE000) fail("bad low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            fail("lone low surrogate");
          }
          append_utf8(out, cp);
          break;
        }
        default:
          fail("unknown escape");
      }
    }
  }

  std::string_view text_;
  std::string_view what_;
  std::size_t pos_ = 0;
};

}  // namespace detail

inline Json Json::parse(std::string_view text, std::string_view what) {
  return detail::JsonParser(text, what).document();
}

}  // namespace heed::io
