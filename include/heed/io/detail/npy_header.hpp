#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <cstddef>
#include <span>
#include <string>

#include "heed/core/error.hpp"

// The .npy header parser behind heed::io::load_npy and read_npy_header.
namespace heed::detail {

// The header dict, as NumPy writes it: string keys, and values that are a string, True/False,
// or a tuple of non-negative integers. Every malformation is a FormatError naming `where`.
class NpyDictParser {
 public:
  NpyDictParser(std::string_view text, std::string where) : s_(text), where_(std::move(where)) {}

  io::NpyHeader parse() {
    io::NpyHeader h;
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = string();
      expect(':');
      skip_space();
      if (key == "descr") {
        descr(string(), h);
        have_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = boolean();
        have_order = true;
      } else if (key == "shape") {
        h.shape = tuple();
        have_shape = true;
      } else {
        fail("unknown header key '" + key + "'");
      }
      skip_space();
      if (peek() == ',') {
        ++at_;
        continue;
      }
      skip_space();
      if (peek() != '}') fail("expected ',' or '}' in the header");
    }
    if (!have_descr || !have_order || !have_shape) fail("the header lacks one of 'descr', 'fortran_order', 'shape'");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw FormatError(where_ + ": " + why + " (header: " + std::string(s_) + ")");
  }
  char peek() const { return at_ < s_.size() ? s_[at_] : '\0'; }
  void skip_space() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\n' || s_[at_] == '\t')) ++at_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++at_;
  }
  std::string string() {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a quoted string");
    const std::size_t end = s_.find(quote, at_ + 1);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string out(s_.substr(at_ + 1, end - at_ - 1));
    at_ = end + 1;
    return out;
  }
  bool boolean() {
    if (s_.substr(at_, 4) == "True") return at_ += 4, true;
    if (s_.substr(at_, 5) == "False") return at_ += 5, false;
    fail("fortran_order is neither True nor False");
  }
  std::vector<index_t> tuple() {
    expect('(');
    std::vector<index_t> out;
    while (true) {
      skip_space();
      if (peek() == ')') break;
      if (peek() < '0' || peek() > '9') fail("the shape holds something other than non-negative integers");
      std::uint64_t value = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (value > (static_cast<std::uint64_t>(INT64_MAX) - 9) / 10) fail("a shape extent overflows");
        value = value * 10 + static_cast<std::uint64_t>(peek() - '0');
        ++at_;
      }
      out.push_back(static_cast<index_t>(value));
      skip_space();
      if (peek() == ',')
        ++at_;
      else if (peek() != ')')
        fail("the shape's extents must be separated by commas");
    }
    ++at_;
    return out;
  }
  void descr(const std::string& d, io::NpyHeader& h) {
    if (d.size() >= 2 && (d[0] == '<' || d[0] == '>' || d[0] == '|' || d[0] == '=')) {
      h.big_endian = d[0] == '>';
      const std::string_view code = std::string_view(d).substr(1);
      if (code == "f4") return void(h.dtype = io::DType::F32);
      if (code == "f8") return void(h.dtype = io::DType::F64);
      if (code == "f2") return void(h.dtype = io::DType::F16);
      if (code == "i4") return void(h.dtype = io::DType::I32);
      if (code == "i8") return void(h.dtype = io::DType::I64);
      if (code == "b1") return void(h.dtype = io::DType::BOOL);
      if (code == "u1") return void(h.dtype = io::DType::U8);
      if (code == "i1") return void(h.dtype = io::DType::I8);
    }
    fail("unsupported dtype '" + d + "' (heed reads f2, f4, f8, i1, i4, i8, u1 and b1)");
  }

  std::string_view s_;
  std::string where_;
  std::size_t at_ = 0;
};

[[nodiscard]] inline io::NpyHeader parse_npy_header(std::span<const std::byte> bytes, const std::string& where) {
  static constexpr char magic[] = "\x93NUMPY";
  if (bytes.size() < 10 || std::memcmp(bytes.data(), magic, 6) != 0)
    throw FormatError(where + ": not an .npy file (no \\x93NUMPY magic)");
  const auto major = static_cast<unsigned>(bytes[6]);
  const auto minor = static_cast<unsigned>(bytes[7]);
  std::size_t length = 0, start = 0;
  if (major == 1) {
    length = load_le<std::uint16_t>(bytes.data() + 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw FormatError(where + ": truncated .npy header");
    length = load_le<std::uint32_t>(bytes.data() + 8);
    start = 12;
  } else {
    throw FormatError(where + ": .npy version " + std::to_string(major) + "." + std::to_string(minor) +
                      " is not supported (1.0, 2.0 and 3.0 are)");
  }
  if (length > bytes.size() - start)
    throw FormatError(where + ": the .npy header of " + std::to_string(length) +
                      " bytes runs past the end of the file (" + std::to_string(bytes.size()) + " bytes)");
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + start), length);
  io::NpyHeader h = NpyDictParser(text, where).parse();
  h.data_offset = start + length;
  return h;
}

// Reverses the bytes of each `size`-byte element in place.
inline void swap_bytes(std::byte* data, std::size_t count, std::size_t size) noexcept {
  for (std::size_t i = 0; i < count; ++i) std::reverse(data + i * size, data + (i + 1) * size);
}

}  // namespace heed::detail
