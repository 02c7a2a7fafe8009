#pragma once
// A dependency-free PNG writer (https://www.w3.org/TR/png/): 8-bit RGB, no filtering, the
// image data in zlib "stored" deflate blocks (no compression), chunks checked by CRC-32 and
// the zlib stream by Adler-32. Files are larger than a compressing encoder's, every viewer
// reads them, and the writer is a page of code.

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "heed/core/error.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/io/detail/files.hpp"

namespace heed::io {

/// CRC-32 (ISO 3309, polynomial 0xEDB88320) as PNG chunks use it; `crc` continues a running value.
[[nodiscard]] inline std::uint32_t crc32(std::span<const std::uint8_t> bytes, std::uint32_t crc = 0) noexcept {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t n = 0; n < 256; ++n) {
      std::uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[n] = c;
    }
    return t;
  }();
  crc = ~crc;
  for (const std::uint8_t b : bytes) crc = table[(crc ^ b) & 0xFFu] ^ (crc >> 8);
  return ~crc;
}

/// Adler-32 (RFC 1950) of `bytes`.
[[nodiscard]] inline std::uint32_t adler32(std::span<const std::uint8_t> bytes) noexcept {
  std::uint32_t a = 1, b = 0;
  for (const std::uint8_t byte : bytes) {
    a = (a + byte) % 65521u;
    b = (b + a) % 65521u;
  }
  return (b << 16) | a;
}

/// An RGB image, 8 bits a channel, rows top to bottom.
struct RgbImage {
  int width = 0;                     ///< pixels per row
  int height = 0;                    ///< rows
  std::vector<std::uint8_t> pixels;  ///< width · height · 3 bytes

  RgbImage() = default;
  /// A w × h image filled with one colour (white by default).
  RgbImage(int w, int h, std::array<std::uint8_t, 3> fill = {255, 255, 255})
      : width(w), height(h), pixels(static_cast<std::size_t>(w) * static_cast<std::size_t>(h) * 3) {
    for (std::size_t i = 0; i < pixels.size(); i += 3)
      std::copy(fill.begin(), fill.end(), pixels.begin() + static_cast<std::ptrdiff_t>(i));
  }

  /// Colors pixel (x, y); x < width, y < height.
  void set(int x, int y, std::array<std::uint8_t, 3> rgb) {
    const std::size_t at =
        (static_cast<std::size_t>(y) * static_cast<std::size_t>(width) + static_cast<std::size_t>(x)) * 3;
    std::copy(rgb.begin(), rgb.end(), pixels.begin() + static_cast<std::ptrdiff_t>(at));
  }
  /// Colors the w × h rectangle from (x0, y0), clipped to the image.
  void fill_rect(int x0, int y0, int w, int h, std::array<std::uint8_t, 3> rgb) {
    for (int y = std::max(0, y0); y < std::min(height, y0 + h); ++y)
      for (int x = std::max(0, x0); x < std::min(width, x0 + w); ++x) set(x, y, rgb);
  }
};

/// The bytes of a PNG file holding `image`.
[[nodiscard]] inline std::vector<std::uint8_t> encode_png(const RgbImage& image) {
  if (image.width <= 0 || image.height <= 0 ||
      image.pixels.size() != static_cast<std::size_t>(image.width) * static_cast<std::size_t>(image.height) * 3)
    throw ShapeError(
        "heed::io::encode_png: an image of " + std::to_string(image.width) + " x " + std::to_string(image.height) +
        " pixels needs width · height · 3 = " + std::to_string(static_cast<long long>(image.width) * image.height * 3) +
        " bytes, it has " + std::to_string(image.pixels.size()));
  std::vector<std::uint8_t> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  const auto put32 = [](std::vector<std::uint8_t>& v, std::uint32_t x) {
    for (int shift = 24; shift >= 0; shift -= 8) v.push_back(static_cast<std::uint8_t>(x >> shift));
  };
  const auto chunk = [&](std::string_view type, const std::vector<std::uint8_t>& data) {
    put32(out, static_cast<std::uint32_t>(data.size()));
    const std::size_t start = out.size();
    out.insert(out.end(), type.begin(), type.end());
    out.insert(out.end(), data.begin(), data.end());
    put32(out, crc32(std::span(out).subspan(start)));
  };

  std::vector<std::uint8_t> ihdr;
  put32(ihdr, static_cast<std::uint32_t>(image.width));
  put32(ihdr, static_cast<std::uint32_t>(image.height));
  ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});  // 8 bits, RGB, deflate, adaptive filters, no interlace
  chunk("IHDR", ihdr);

  // The scanlines, each led by filter type 0 (none).
  const std::size_t row = static_cast<std::size_t>(image.width) * 3;
  std::vector<std::uint8_t> raw;
  raw.reserve((row + 1) * static_cast<std::size_t>(image.height));
  for (int y = 0; y < image.height; ++y) {
    raw.push_back(0);
    const auto begin = image.pixels.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(y) * row);
    raw.insert(raw.end(), begin, begin + static_cast<std::ptrdiff_t>(row));
  }
  // zlib: CMF 0x78 (deflate, 32 KiB window), FLG 0x01 (check bits), stored blocks of ≤ 65535 bytes.
  std::vector<std::uint8_t> z = {0x78, 0x01};
  for (std::size_t at = 0; at < raw.size() || at == 0; at += 65535) {
    const std::size_t n = std::min<std::size_t>(65535, raw.size() - at);
    const bool last = at + n >= raw.size();
    z.push_back(last ? 1 : 0);
    z.push_back(static_cast<std::uint8_t>(n & 0xFF));
    z.push_back(static_cast<std::uint8_t>(n >> 8));
    z.push_back(static_cast<std::uint8_t>(~n & 0xFF));
    z.push_back(static_cast<std::uint8_t>((~n >> 8) & 0xFF));
    z.insert(z.end(), raw.begin() + static_cast<std::ptrdiff_t>(at), raw.begin() + static_cast<std::ptrdiff_t>(at + n));
    if (last) break;
  }
  put32(z, adler32(raw));
  chunk("IDAT", z);
  chunk("IEND", {});
  return out;
}

/// Writes `image` as a PNG file. IoError if the file cannot be written.
inline void write_png(const std::filesystem::path& path, const RgbImage& image) {
  const std::vector<std::uint8_t> bytes = encode_png(image);
  detail::write_file(path, bytes.data(), bytes.size(), "heed::io::write_png");
}

}  // namespace heed::io
