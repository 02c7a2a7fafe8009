#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "heed/core/error.hpp"

// The recursive-descent parser behind heed::io::Json::parse.
namespace heed::detail {

// The length of the well-formed multi-byte UTF-8 sequence at s[pos] (RFC 3629: the right number
// of continuation bytes, no overlong form, no surrogate, nothing above U+10FFFF), or 0 with the
// reason in *why. The JSON reader and the safetensors writer share it.
inline std::size_t utf8_sequence_length(std::string_view s, std::size_t pos, const char** why) noexcept {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[pos + i]); };
  const unsigned char lead = byte(0);
  std::size_t length = 0;
  unsigned cp = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, cp = lead & 0x1Fu;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, cp = lead & 0x0Fu;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, cp = lead & 0x07u;
  } else {
    *why = "invalid UTF-8 byte";
    return 0;
  }
  if (pos + length > s.size()) {
    *why = "truncated UTF-8 sequence";
    return 0;
  }
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0u) != 0x80u) {
      *why = "invalid UTF-8 sequence";
      return 0;
    }
    cp = (cp << 6) | (byte(i) & 0x3Fu);
  }
  if ((length == 3 && cp < 0x800) || (length == 4 && cp < 0x10000)) {
    *why = "overlong UTF-8 sequence";
    return 0;
  }
  if ((cp >= 0xD800 && cp < 0xE000) || cp > 0x10FFFF) {
    *why = "UTF-8 encoded surrogate or code point beyond U+10FFFF";
    return 0;
  }
  return length;
}

// nullptr when s is well-formed UTF-8, else what is wrong with it.
[[nodiscard]] inline const char* utf8_error(std::string_view s) noexcept {
  const char* why = nullptr;
  for (std::size_t pos = 0; pos < s.size();) {
    if (static_cast<unsigned char>(s[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const std::size_t n = utf8_sequence_length(s, pos, &why);
    if (n == 0) return why;
    pos += n;
  }
  return nullptr;
}

class JsonParser {
 public:
  JsonParser(std::string_view text, std::string_view what) : text_(text), what_(what) {}

  io::Json document() {
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;  // a UTF-8 byte-order mark, which RFC 8259 lets readers ignore
    io::Json value = parse_value(0);
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

  io::Json parse_value(int depth) {
    if (depth > max_depth) fail("nesting deeper than 64");
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end");
    const char c = text_[pos_];
    if (c == '{') return parse_object(depth);
    if (c == '[') return parse_array(depth);
    if (c == '"') return io::Json(parse_string());
    if (c == 't') return literal("true"), io::Json(true);
    if (c == 'f') return literal("false"), io::Json(false);
    if (c == 'n') return literal("null"), io::Json(nullptr);
    if (c == '-' || (c >= '0' && c <= '9')) return io::Json(parse_number());
    fail(std::string("unexpected character '") + c + "'");
  }

  io::Json parse_object(int depth) {
    ++pos_;
    io::Json::Object members;
    if (consume('}')) return io::Json(std::move(members));
    do {
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != '"') fail("expected a string key");
      std::string key = parse_string();
      expect(':');
      members.emplace_back(std::move(key), parse_value(depth + 1));
    } while (consume(','));
    expect('}');
    reject_duplicate_keys(members);
    return io::Json(std::move(members));
  }

  // RFC 8259 leaves duplicate names to the reader; parsers disagree (the first wins in one, the
  // last in another), so a file could mean two things. heed refuses them (docs/formats.md).
  void reject_duplicate_keys(const io::Json::Object& members) const {
    if (members.size() < 2) return;
    std::vector<const std::string*> keys;
    keys.reserve(members.size());
    for (const auto& member : members) keys.push_back(&member.first);
    std::sort(keys.begin(), keys.end(), [](const std::string* a, const std::string* b) { return *a < *b; });
    for (std::size_t i = 1; i < keys.size(); ++i)
      if (*keys[i] == *keys[i - 1]) fail("duplicate key \"" + *keys[i] + "\" in an object");
  }

  io::Json parse_array(int depth) {
    ++pos_;
    io::Json::Array items;
    if (consume(']')) return io::Json(std::move(items));
    do {
      items.push_back(parse_value(depth + 1));
    } while (consume(','));
    expect(']');
    return io::Json(std::move(items));
  }

  io::Json::Number parse_number() {
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
    return io::Json::Number{std::string(text_.substr(start, pos_ - start))};
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

  // One multi-byte UTF-8 sequence at pos_ (utf8_sequence_length): appends it and moves past it.
  void utf8_sequence(std::string& out) {
    const char* why = nullptr;
    const std::size_t length = utf8_sequence_length(text_, pos_, &why);
    if (length == 0) fail(std::string(why) + " in string");
    out.append(text_.substr(pos_, length));
    pos_ += length;
  }

  std::string parse_string() {
    ++pos_;  // opening quote
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) fail("unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (static_cast<unsigned char>(c) >= 0x80) {
        --pos_;
        utf8_sequence(out);
        continue;
      }
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

}  // namespace heed::detail
