#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <filesystem>
#include <string>
#include <string_view>

#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/io/detail/files.hpp"

// What the SVG and PNG heatmaps share: the color map, the checked weights, text helpers.
namespace heed::detail {

using Rgb = std::array<std::uint8_t, 3>;

// matplotlib's "Blues" (ColorBrewer's nine stops), t in [0, 1].
[[nodiscard]] inline Rgb blues(double t) noexcept {
  static constexpr Rgb stops[] = {{247, 251, 255}, {222, 235, 247}, {198, 219, 239}, {158, 202, 225}, {107, 174, 214},
                                  {66, 146, 198},  {33, 113, 181},  {8, 81, 156},    {8, 48, 107}};
  if (!std::isfinite(t)) return {190, 190, 190};
  t = std::clamp(t, 0.0, 1.0) * 8.0;
  const int i = std::min(7, static_cast<int>(t));
  const double f = t - i;
  Rgb c{};
  for (int k = 0; k < 3; ++k)
    c[static_cast<std::size_t>(k)] = static_cast<std::uint8_t>(
        std::lround(stops[i][static_cast<std::size_t>(k)] * (1 - f) + stops[i + 1][static_cast<std::size_t>(k)] * f));
  return c;
}

// The panels as doubles, checked against the options once.
struct HeatmapData {
  index_t panels = 0, rows = 0, cols = 0;
  std::vector<double> values;
  double vmax = 1;
  int cell = 0;

  [[nodiscard]] double at(index_t p, index_t r, index_t c) const noexcept {
    return values[static_cast<std::size_t>((p * rows + r) * cols + c)];
  }
};

template <TensorLike W>
[[nodiscard]] HeatmapData heatmap_data(const W& weights, const io::HeatmapOptions& o, const char* who) {
  static_assert(rank_of<W> == 2 || rank_of<W> == 3, "a heatmap takes [rows, cols] or [panels, rows, cols]");
  const auto v = as_view(weights);
  HeatmapData d;
  if constexpr (rank_of<W> == 2) {
    d.panels = 1, d.rows = v.size(0), d.cols = v.size(1);
  } else {
    d.panels = v.size(0), d.rows = v.size(1), d.cols = v.size(2);
  }
  const auto fail = [&](const std::string& why) {
    throw ShapeError(std::string(who) + ": " + why + " (weights " + to_string(v.shape()) + ")");
  };
  if (d.panels < 1 || d.rows < 1 || d.cols < 1) fail("nothing to draw");
  if (!o.x_labels.empty() && static_cast<index_t>(o.x_labels.size()) != d.cols)
    fail(std::to_string(o.x_labels.size()) + " x labels for " + std::to_string(d.cols) + " columns");
  if (!o.y_labels.empty() && static_cast<index_t>(o.y_labels.size()) != d.rows)
    fail(std::to_string(o.y_labels.size()) + " y labels for " + std::to_string(d.rows) + " rows");
  if (!o.panel_titles.empty() && static_cast<index_t>(o.panel_titles.size()) != d.panels)
    fail(std::to_string(o.panel_titles.size()) + " panel titles for " + std::to_string(d.panels) + " panels");
  if (o.cell < 0) fail("cell size " + std::to_string(o.cell) + " is negative");
  d.values.reserve(static_cast<std::size_t>(d.panels * d.rows * d.cols));
  double vmax = 0;
  for (index_t p = 0; p < d.panels; ++p)
    for (index_t r = 0; r < d.rows; ++r)
      for (index_t c = 0; c < d.cols; ++c) {
        double x;
        if constexpr (rank_of<W> == 2)
          x = static_cast<double>(v(r, c));
        else
          x = static_cast<double>(v(p, r, c));
        d.values.push_back(x);
        if (std::isfinite(x)) vmax = std::max(vmax, x);
      }
  d.vmax = vmax > 0 ? vmax : 1;
  d.cell = o.cell > 0 ? o.cell : static_cast<int>(std::clamp<index_t>(384 / std::max(d.rows, d.cols), 8, 32));
  // The layouts compute in int: the panels, their gaps and labels must stay far inside its range.
  constexpr index_t max_side = index_t{1} << 24;
  constexpr std::size_t max_label = 4096;  // characters
  std::size_t longest = 0;
  for (const auto* labels : {&o.x_labels, &o.y_labels, &o.panel_titles})
    for (const std::string& label : *labels) longest = std::max(longest, label.size());
  if (std::max(longest, o.title.size()) > max_label)
    fail("a label or title of " + std::to_string(std::max(longest, o.title.size())) + " characters (at most " +
         std::to_string(max_label) + ")");
  const index_t cell = d.cell, margins = 64 + 2 * 16 * static_cast<index_t>(longest);
  if (d.cols > max_side / cell || d.rows > max_side / cell || d.panels > max_side / (d.cols * cell + margins))
    fail("a heatmap of " + std::to_string(d.panels) + " panels of " + std::to_string(d.rows) + " x " +
         std::to_string(d.cols) + " cells of " + std::to_string(d.cell) + " pixels is wider or taller than " +
         std::to_string(max_side) + " pixels");
  return d;
}

[[nodiscard]] inline std::string xml_escape(std::string_view s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

[[nodiscard]] inline std::string svg_color(Rgb c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c[0], c[1], c[2]);
  return buf;
}

[[nodiscard]] inline std::string format_tick(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

inline void write_text_file(const std::filesystem::path& path, const std::string& text, const char* who) {
  write_file(path, text.data(), text.size(), who);
}

}  // namespace heed::detail
