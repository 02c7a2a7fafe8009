#pragma once
// The small JSON reader that safetensors headers and `__metadata__` configs need: RFC 8259
// values into a tree, with exact 64-bit integers (offsets can exceed 2^53), a nesting limit
// (a hostile header cannot overflow the stack), and FormatError with the byte offset on any
// malformed input. Not a general-purpose JSON library: no writer beyond what io needs.

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <variant>
#include <vector>

#include "heed/core/error.hpp"

namespace heed::io {

/// A parsed JSON value (null, bool, number, string, array, object), as heed's file formats need it:
/// numbers keep their text, so 64-bit integers are exact; objects keep their keys in document order.
class Json {
 public:
  using Array = std::vector<Json>;                           ///< a JSON array
  using Object = std::vector<std::pair<std::string, Json>>;  ///< a JSON object, in document order

  /// A number keeps its text, so integers convert exactly.
  struct Number {
    std::string text;  ///< the number as the document wrote it
  };

  Json() = default;
  /// A value of each kind.
  explicit Json(std::nullptr_t) {}
  /// A boolean.
  explicit Json(bool b) : value_(b) {}
  /// A number.
  explicit Json(Number n) : value_(std::move(n)) {}
  /// A string.
  explicit Json(std::string s) : value_(std::move(s)) {}
  /// An array.
  explicit Json(Array a) : value_(std::make_shared<Array>(std::move(a))) {}
  /// An object.
  explicit Json(Object o) : value_(std::make_shared<Object>(std::move(o))) {}

  /// Parses one JSON document; `what` names it in error messages.
  static Json parse(std::string_view text, std::string_view what = "JSON");

  /// What kind of value this is.
  [[nodiscard]] bool is_null() const noexcept { return std::holds_alternative<std::monostate>(value_); }
  /// True for a boolean.
  [[nodiscard]] bool is_bool() const noexcept { return std::holds_alternative<bool>(value_); }
  /// True for a number.
  [[nodiscard]] bool is_number() const noexcept { return std::holds_alternative<Number>(value_); }
  /// True for a string.
  [[nodiscard]] bool is_string() const noexcept { return std::holds_alternative<std::string>(value_); }
  /// True for an array.
  [[nodiscard]] bool is_array() const noexcept { return std::holds_alternative<std::shared_ptr<Array>>(value_); }
  /// True for an object.
  [[nodiscard]] bool is_object() const noexcept { return std::holds_alternative<std::shared_ptr<Object>>(value_); }

  /// The value as one kind; FormatError when it is another.
  [[nodiscard]] bool as_bool() const { return get<bool>("a boolean"); }
  /// The string; FormatError when the value is not one.
  [[nodiscard]] const std::string& as_string() const { return get<std::string>("a string"); }
  /// The array; FormatError when the value is not one.
  [[nodiscard]] const Array& as_array() const { return *get<std::shared_ptr<Array>>("an array"); }
  /// The object's members in document order; FormatError when the value is not one.
  [[nodiscard]] const Object& as_object() const { return *get<std::shared_ptr<Object>>("an object"); }
  /// The number as the nearest double, whatever the C locale says a decimal point is; a
  /// magnitude beyond double's range is ±infinity, one below it ±0 (as Python's json reads them).
  /// FormatError when the value is not a number.
  [[nodiscard]] double as_double() const {
    const std::string& text = get<Number>("a number").text;
    double value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error == std::errc::result_out_of_range) {
      const double magnitude = below_one(text) ? 0.0 : std::numeric_limits<double>::infinity();
      return !text.empty() && text[0] == '-' ? -magnitude : magnitude;
    }
    if (error != std::errc() || end != text.data() + text.size()) throw FormatError("JSON: not a number: " + text);
    return value;
  }

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
  /// The number as an exact signed 64-bit integer; FormatError if it is not one.
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
  // For a number out of double's range: whether it is tiny (|x| < 1) rather than huge. The
  // decimal exponent of its first nonzero digit plus its explicit exponent decides.
  static bool below_one(std::string_view text) {
    if (!text.empty() && text[0] == '-') text.remove_prefix(1);
    const std::size_t e = text.find_first_of("eE");
    const std::string_view mantissa = text.substr(0, e);
    const std::size_t point = std::min(mantissa.find('.'), mantissa.size());
    const std::size_t first = mantissa.find_first_not_of("0.");
    if (first == std::string_view::npos) return true;
    long long exponent =
        first < point ? static_cast<long long>(point - first) - 1 : -static_cast<long long>(first - point);
    if (e != std::string_view::npos) {
      std::string_view digits = text.substr(e + 1);
      const bool negative = !digits.empty() && digits[0] == '-';
      if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) digits.remove_prefix(1);
      long long written = 0;
      const auto result = std::from_chars(digits.data(), digits.data() + digits.size(), written);
      if (result.ec == std::errc::result_out_of_range) return negative;  // an exponent beyond 10^18
      exponent += negative ? -written : written;
    }
    return exponent < 0;
  }
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

}  // namespace heed::io

// The internals, which need the declarations above.
#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/io/detail/json_parser.hpp"

namespace heed::io {

inline Json Json::parse(std::string_view text, std::string_view what) {
  return detail::JsonParser(text, what).document();
}

}  // namespace heed::io
