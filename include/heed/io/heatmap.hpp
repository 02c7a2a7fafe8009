#pragma once
// Attention heatmaps without matplotlib: the seed's visualize_attention (examples/visualize_attention.cpp) as SVG
// and PNG. Weights [P, rows, cols] draw as P panels side by side (P heads of [Lq, Lk] weights,
// or P vision maps [H, W]); a rank-2 map is one panel. Colors follow matplotlib's "Blues" on one
// scale from 0 to the largest weight of all panels, so panels compare and one color bar
// serves them all (the seed scales each head to its own maximum). Non-finite values (the NaN
// of a fully masked row under MaskedRows::nan) draw grey.
//
//   write_heatmap_svg: panel titles, token labels on both axes (keys below, rotated; queries
//     on the left), axis names, a title, a color bar with ticks. Text is SVG text, so it stays
//     sharp at any zoom; cells are sized so 8 to 64 tokens stay readable.
//   write_heatmap_png: the same panels and color bar as pixels (PNG has no text; use the SVG
//     when labels matter).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/io/png.hpp"

namespace heed::io {

/// How a heatmap is labelled and laid out.
struct HeatmapOptions {
  std::string title{};                      ///< drawn above the panels (SVG)
  std::vector<std::string> x_labels{};      ///< one per column (keys), or none
  std::vector<std::string> y_labels{};      ///< one per row (queries), or none
  std::vector<std::string> panel_titles{};  ///< one per panel, or none for "Head 1", "Head 2", …
  std::string x_axis = "Key";               ///< the x axis' label (SVG)
  std::string y_axis = "Query";             ///< the y axis' label (SVG)
  int cell = 0;                             ///< pixels per cell; 0 chooses from the size (8 to 32)
};

}  // namespace heed::io

// The internals, which need the declarations above.
#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/io/detail/heatmap_layout.hpp"

namespace heed::io {

/// The SVG document of a heatmap (see write_heatmap_svg).
template <TensorLike W>
[[nodiscard]] std::string heatmap_svg(const W& weights, const HeatmapOptions& o = {}) {
  const detail::HeatmapData d = detail::heatmap_data(weights, o, "heed::io::heatmap_svg");
  const int cell = d.cell;
  const int font = std::clamp(cell - 2, 7, 12);
  const auto longest = [](const std::vector<std::string>& labels) {
    std::size_t n = 0;
    for (const auto& s : labels) n = std::max(n, s.size());
    return static_cast<int>(n);
  };
  const int y_label_w = static_cast<int>(longest(o.y_labels) * font * 0.62) + 6;
  const int x_label_h = static_cast<int>(longest(o.x_labels) * font * 0.62) + 6;
  const int panel_w = static_cast<int>(d.cols) * cell, panel_h = static_cast<int>(d.rows) * cell;
  const int left = 24 + y_label_w, gap = 24 + y_label_w;
  const int top = (o.title.empty() ? 8 : 34) + 22;
  const int bar_x = left + static_cast<int>(d.panels) * panel_w + static_cast<int>(d.panels - 1) * gap + 20;
  const int width = bar_x + 14 + 48;
  const int height = top + panel_h + x_label_h + 30;

  std::string s;
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) + "\" height=\"" +
       std::to_string(height) + "\" viewBox=\"0 0 " + std::to_string(width) + " " + std::to_string(height) +
       "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  if (!o.title.empty())
    s += "<text x=\"" + std::to_string(width / 2) + "\" y=\"22\" font-size=\"15\" font-weight=\"bold\" " +
         "text-anchor=\"middle\">" + detail::xml_escape(o.title) + "</text>\n";
  for (index_t p = 0; p < d.panels; ++p) {
    const int x0 = left + static_cast<int>(p) * (panel_w + gap), y0 = top;
    const std::string name =
        o.panel_titles.empty() ? "Head " + std::to_string(p + 1) : o.panel_titles[static_cast<std::size_t>(p)];
    s += "<g>\n<text x=\"" + std::to_string(x0 + panel_w / 2) + "\" y=\"" + std::to_string(y0 - 8) +
         "\" font-size=\"12\" font-weight=\"bold\" text-anchor=\"middle\">" + detail::xml_escape(name) + "</text>\n";
    for (index_t r = 0; r < d.rows; ++r)
      for (index_t c = 0; c < d.cols; ++c) {
        const double x = d.at(p, r, c);
        s += "<rect x=\"" + std::to_string(x0 + static_cast<int>(c) * cell) + "\" y=\"" +
             std::to_string(y0 + static_cast<int>(r) * cell) + "\" width=\"" + std::to_string(cell) + "\" height=\"" +
             std::to_string(cell) + "\" fill=\"" + detail::svg_color(detail::blues(x / d.vmax)) + "\"><title>" +
             detail::format_tick(x) + "</title></rect>\n";
      }
    s += "<rect x=\"" + std::to_string(x0) + "\" y=\"" + std::to_string(y0) + "\" width=\"" + std::to_string(panel_w) +
         "\" height=\"" + std::to_string(panel_h) + "\" fill=\"none\" stroke=\"#444\" stroke-width=\"0.8\"/>\n";
    for (std::size_t c = 0; c < o.x_labels.size(); ++c) {
      const int cx = x0 + static_cast<int>(c) * cell + cell / 2 + font / 3, cy = y0 + panel_h + 4;
      s += "<text x=\"" + std::to_string(cx) + "\" y=\"" + std::to_string(cy) + "\" font-size=\"" +
           std::to_string(font) + "\" text-anchor=\"end\" transform=\"rotate(-90 " + std::to_string(cx) + " " +
           std::to_string(cy) + ")\">" + detail::xml_escape(o.x_labels[c]) + "</text>\n";
    }
    for (std::size_t r = 0; r < o.y_labels.size(); ++r)
      s += "<text x=\"" + std::to_string(x0 - 4) + "\" y=\"" +
           std::to_string(y0 + static_cast<int>(r) * cell + cell / 2 + font / 3) + "\" font-size=\"" +
           std::to_string(font) + "\" text-anchor=\"end\">" + detail::xml_escape(o.y_labels[r]) + "</text>\n";
    s += "<text x=\"" + std::to_string(x0 + panel_w / 2) + "\" y=\"" + std::to_string(y0 + panel_h + x_label_h + 18) +
         "\" font-size=\"11\" text-anchor=\"middle\">" + detail::xml_escape(o.x_axis) + "</text>\n";
    const int ay = y0 + panel_h / 2, ax = x0 - y_label_w - 10;
    s += "<text x=\"" + std::to_string(ax) + "\" y=\"" + std::to_string(ay) +
         "\" font-size=\"11\" text-anchor=\"middle\" " + "transform=\"rotate(-90 " + std::to_string(ax) + " " +
         std::to_string(ay) + ")\">" + detail::xml_escape(o.y_axis) + "</text>\n</g>\n";
  }
  // The color bar: a vertical gradient from 0 (bottom) to vmax (top), ticks at 0, vmax/2, vmax.
  s += "<defs><linearGradient id=\"heed-blues\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">";
  for (int k = 0; k <= 8; ++k)
    s += "<stop offset=\"" + detail::format_tick(k / 8.0) + "\" stop-color=\"" +
         detail::svg_color(detail::blues(k / 8.0)) + "\"/>";
  s += "</linearGradient></defs>\n";
  s += "<rect x=\"" + std::to_string(bar_x) + "\" y=\"" + std::to_string(top) + "\" width=\"14\" height=\"" +
       std::to_string(panel_h) + "\" fill=\"url(#heed-blues)\" stroke=\"#444\" stroke-width=\"0.8\"/>\n";
  for (int k = 0; k <= 2; ++k) {
    const int ty = top + panel_h - k * panel_h / 2;
    s += "<line x1=\"" + std::to_string(bar_x + 14) + "\" y1=\"" + std::to_string(ty) + "\" x2=\"" +
         std::to_string(bar_x + 18) + "\" y2=\"" + std::to_string(ty) + "\" stroke=\"#444\"/>\n";
    s += "<text x=\"" + std::to_string(bar_x + 20) + "\" y=\"" + std::to_string(ty + 4) + "\" font-size=\"10\">" +
         detail::format_tick(d.vmax * k / 2) + "</text>\n";
  }
  s += "</svg>\n";
  return s;
}

/// Writes the heatmap of weights [rows, cols] or [panels, rows, cols] as an SVG file.
/// ShapeError if labels do not match the weights; IoError if the file cannot be written.
template <TensorLike W>
void write_heatmap_svg(const std::filesystem::path& path, const W& weights, const HeatmapOptions& options = {}) {
  detail::write_text_file(path, heatmap_svg(weights, options), "heed::io::write_heatmap_svg");
}

/// The heatmap as pixels: the panels side by side, 8 pixels apart, and a color bar on the right.
template <TensorLike W>
[[nodiscard]] RgbImage heatmap_image(const W& weights, const HeatmapOptions& o = {}) {
  const detail::HeatmapData d = detail::heatmap_data(weights, o, "heed::io::heatmap_image");
  const int cell = d.cell, margin = 8;
  const int panel_w = static_cast<int>(d.cols) * cell, panel_h = static_cast<int>(d.rows) * cell;
  const int bar_x = margin + static_cast<int>(d.panels) * (panel_w + margin) + 4;
  RgbImage image(bar_x + 12 + margin, panel_h + 2 * margin);
  for (index_t p = 0; p < d.panels; ++p) {
    const int x0 = margin + static_cast<int>(p) * (panel_w + margin);
    for (index_t r = 0; r < d.rows; ++r)
      for (index_t c = 0; c < d.cols; ++c)
        image.fill_rect(x0 + static_cast<int>(c) * cell, margin + static_cast<int>(r) * cell, cell, cell,
                        detail::blues(d.at(p, r, c) / d.vmax));
  }
  for (int y = 0; y < panel_h; ++y) image.fill_rect(bar_x, margin + y, 12, 1, detail::blues(1.0 - (y + 0.5) / panel_h));
  return image;
}

/// Writes the heatmap of weights [rows, cols] or [panels, rows, cols] as a PNG file.
template <TensorLike W>
void write_heatmap_png(const std::filesystem::path& path, const W& weights, const HeatmapOptions& options = {}) {
  write_png(path, heatmap_image(weights, options));
}

}  // namespace heed::io
