#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "heed/core/random.hpp"
#include "heed/core/tensor.hpp"
#include "heed/io/heatmap.hpp"
#include "heed/io/png.hpp"

namespace {

using heed::index_t;
using heed::io::RgbImage;

std::span<const std::uint8_t> bytes_of(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

TEST(Png, ChecksumsMatchTheirStandardCheckValues) {
  EXPECT_EQ(heed::io::crc32(bytes_of("123456789")), 0xCBF43926u);  // ISO 3309 / PNG check value
  EXPECT_EQ(heed::io::crc32(bytes_of("IEND")), 0xAE426082u);       // every PNG ends with it
  EXPECT_EQ(heed::io::adler32(bytes_of("Wikipedia")), 0x11E60398u);
  EXPECT_EQ(heed::io::adler32({}), 1u);
}

std::uint32_t be32(const std::vector<std::uint8_t>& b, std::size_t at) {
  return (std::uint32_t{b[at]} << 24) | (std::uint32_t{b[at + 1]} << 16) | (std::uint32_t{b[at + 2]} << 8) | b[at + 3];
}

// Reads back a PNG the way a decoder does: signature, chunk CRCs, IHDR, the zlib stream of
// stored blocks (with their length complements and the Adler-32), then unfiltered scanlines.
RgbImage decode(const std::vector<std::uint8_t>& png) {
  const std::vector<std::uint8_t> signature = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  EXPECT_TRUE(std::equal(signature.begin(), signature.end(), png.begin()));
  RgbImage image;
  std::vector<std::uint8_t> z;
  bool ended = false;
  for (std::size_t at = 8; at < png.size();) {
    const std::uint32_t length = be32(png, at);
    const std::string type(png.begin() + static_cast<std::ptrdiff_t>(at + 4),
                           png.begin() + static_cast<std::ptrdiff_t>(at + 8));
    EXPECT_EQ(heed::io::crc32(std::span(png).subspan(at + 4, length + 4)), be32(png, at + 8 + length)) << type;
    const auto data = png.begin() + static_cast<std::ptrdiff_t>(at + 8);
    if (type == "IHDR") {
      image.width = static_cast<int>(be32(png, at + 8));
      image.height = static_cast<int>(be32(png, at + 12));
      EXPECT_EQ(png[at + 16], 8);  // bit depth
      EXPECT_EQ(png[at + 17], 2);  // RGB
    } else if (type == "IDAT") {
      z.insert(z.end(), data, data + length);
    } else if (type == "IEND") {
      ended = true;
    }
    at += 12 + length;
  }
  EXPECT_TRUE(ended);
  EXPECT_EQ((z[0] * 256 + z[1]) % 31, 0) << "zlib header check bits";
  std::vector<std::uint8_t> raw;
  std::size_t at = 2;
  for (bool last = false; !last;) {
    last = z[at] & 1;
    EXPECT_EQ(z[at] >> 1, 0) << "stored block";
    const unsigned n = z[at + 1] | (z[at + 2] << 8);
    const unsigned complement = z[at + 3] | (z[at + 4] << 8);
    EXPECT_EQ(n ^ 0xFFFFu, complement);
    raw.insert(raw.end(), z.begin() + static_cast<std::ptrdiff_t>(at + 5),
               z.begin() + static_cast<std::ptrdiff_t>(at + 5 + n));
    at += 5 + n;
  }
  EXPECT_EQ(heed::io::adler32(raw), be32(z, at));
  const std::size_t row = static_cast<std::size_t>(image.width) * 3;
  EXPECT_EQ(raw.size(), (row + 1) * static_cast<std::size_t>(image.height));
  for (int y = 0; y < image.height; ++y) {
    EXPECT_EQ(raw[static_cast<std::size_t>(y) * (row + 1)], 0) << "filter type of row " << y;
    const auto begin = raw.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(y) * (row + 1) + 1);
    image.pixels.insert(image.pixels.end(), begin, begin + static_cast<std::ptrdiff_t>(row));
  }
  return image;
}

TEST(Png, DecodesToThePixelsWritten) {
  for (const auto& [w, h] : {std::pair{1, 1}, {3, 2}, {200, 150}}) {  // 200 × 150 needs two stored blocks
    RgbImage image(w, h);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        image.set(
            x, y,
            {static_cast<std::uint8_t>(x * 7), static_cast<std::uint8_t>(y * 5), static_cast<std::uint8_t>(x ^ y)});
    const RgbImage back = decode(heed::io::encode_png(image));
    EXPECT_EQ(back.width, w);
    EXPECT_EQ(back.height, h);
    EXPECT_EQ(back.pixels, image.pixels);
  }
  RgbImage broken(4, 4);
  broken.pixels.pop_back();
  EXPECT_THROW((void)heed::io::encode_png(broken), heed::ShapeError);
}

TEST(Heatmap, ColorsFollowBluesOnOneScale) {
  heed::Tensor<float, 3> w({2, 2, 2});
  w(0, 0, 0) = 0.0f, w(0, 0, 1) = 1.0f, w(0, 1, 0) = 0.5f, w(0, 1, 1) = NAN;
  w(1, 0, 0) = 0.25f, w(1, 0, 1) = 0.25f, w(1, 1, 0) = 1.0f, w(1, 1, 1) = 0.0f;
  const RgbImage image = heed::io::heatmap_image(w, {.cell = 10});
  const auto at = [&](int x, int y) {
    const std::size_t i =
        (static_cast<std::size_t>(y) * static_cast<std::size_t>(image.width) + static_cast<std::size_t>(x)) * 3;
    return std::array<std::uint8_t, 3>{image.pixels[i], image.pixels[i + 1], image.pixels[i + 2]};
  };
  // Panel 0 starts at (8, 8); panel 1 at (8 + 20 + 8, 8); cells are 10 pixels.
  EXPECT_EQ(at(13, 13), (std::array<std::uint8_t, 3>{247, 251, 255}));  // 0 → the lightest blue
  EXPECT_EQ(at(23, 13), (std::array<std::uint8_t, 3>{8, 48, 107}));     // the maximum → the darkest
  EXPECT_EQ(at(13, 23), (std::array<std::uint8_t, 3>{107, 174, 214}));  // half way → the middle stop
  EXPECT_EQ(at(23, 23), (std::array<std::uint8_t, 3>{190, 190, 190}));  // NaN → grey
  EXPECT_EQ(at(41, 23), (std::array<std::uint8_t, 3>{8, 48, 107}));     // panel 1 shares the scale
  EXPECT_EQ(at(0, 0), (std::array<std::uint8_t, 3>{255, 255, 255}));    // margin
  EXPECT_EQ(image.width, 8 + 2 * (20 + 8) + 4 + 12 + 8);
}

TEST(Heatmap, SvgHasPanelsLabelsAndColorBar) {
  heed::Tensor<float, 3> w({3, 4, 5});
  for (index_t i = 0; i < w.numel(); ++i) w.data()[i] = static_cast<float>(i % 7) / 7.0f;
  const std::string svg = heed::io::heatmap_svg(w, {.title = "Attention <weights>",
                                                    .x_labels = {"The", "cat", "sat", "&", "mat"},
                                                    .y_labels = {"q0", "q1", "q2", "q3"}});
  std::size_t cells = 0;
  for (std::size_t at = svg.find("<rect x="); at != std::string::npos; at = svg.find("<rect x=", at + 1)) ++cells;
  EXPECT_EQ(cells, 3u * 4 * 5 + 3 + 1);  // every cell, a frame per panel, the color bar
  EXPECT_NE(svg.find("Attention &lt;weights&gt;"), std::string::npos);
  EXPECT_NE(svg.find(">&amp;</text>"), std::string::npos);
  EXPECT_NE(svg.find(">Head 3</text>"), std::string::npos);
  EXPECT_NE(svg.find(">q3</text>"), std::string::npos);
  EXPECT_NE(svg.find(">0.857</text>"), std::string::npos) << "color bar top = the largest weight, 6/7";
  EXPECT_EQ(svg.rfind("</svg>\n"), svg.size() - 7);
}

TEST(Heatmap, LabelsMustMatchTheWeights) {
  const heed::Tensor<float, 3> w({2, 4, 5});
  EXPECT_THROW((void)heed::io::heatmap_svg(w, {.x_labels = {"a", "b"}}), heed::ShapeError);
  EXPECT_THROW((void)heed::io::heatmap_svg(w, {.y_labels = {"a"}}), heed::ShapeError);
  EXPECT_THROW((void)heed::io::heatmap_svg(w, {.panel_titles = {"only one"}}), heed::ShapeError);
  EXPECT_THROW((void)heed::io::heatmap_image(heed::Tensor<float, 3>({0, 4, 5})), heed::ShapeError);
  try {
    (void)heed::io::heatmap_svg(w, {.x_labels = {"a", "b"}});
  } catch (const heed::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("2 x labels for 5 columns (weights [2, 4, 5])"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(heed::io::write_heatmap_svg("/nonexistent-dir/x.svg", w), heed::IoError);
  const heed::Tensor<float, 2> vision_map({8, 8});  // a rank-2 map is one panel
  EXPECT_NE(heed::io::heatmap_svg(vision_map).find(">Head 1</text>"), std::string::npos);
}

}  // namespace

namespace {

TEST(DefinedInputs, AHeatmapTooLargeForItsLayoutIsAShapeError) {  // #46, defect 15
  const auto w = heed::randn<float>({2, 3, 4}, 1);
  EXPECT_THROW((void)heed::io::heatmap_svg(w, {.cell = std::numeric_limits<int>::max()}), heed::ShapeError);
  EXPECT_THROW((void)heed::io::heatmap_image(w, {.cell = 1 << 23}), heed::ShapeError);
  EXPECT_THROW((void)heed::io::heatmap_svg(w, {.title = std::string(5000, 'x')}), heed::ShapeError);
  const auto image = heed::io::heatmap_image(w, {.cell = 3});  // a sane one still draws
  EXPECT_GT(image.width, 2 * 4 * 3);
}

}  // namespace
