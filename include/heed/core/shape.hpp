#pragma once
// Shapes are fixed-rank arrays of signed extents: signed, so that differences of indices
// and strides never wrap (the same choice as Eigen::Index).

#include <array>
#include <cstddef>
#include <string>

namespace heed {

/// Extents, strides and indices: signed, like Eigen::Index.
using index_t = std::ptrdiff_t;

/// The extents of a Rank-dimensional tensor, outermost first.
template <std::size_t Rank>
using Shape = std::array<index_t, Rank>;

/// Number of elements of a shape (1 for rank 0).
template <std::size_t Rank>
[[nodiscard]] constexpr index_t numel(const Shape<Rank>& shape) noexcept {
  index_t n = 1;
  for (index_t extent : shape) n *= extent;
  return n;
}

/// Row-major strides, in elements, of a contiguous tensor of this shape.
template <std::size_t Rank>
[[nodiscard]] constexpr Shape<Rank> contiguous_strides(const Shape<Rank>& shape) noexcept {
  Shape<Rank> strides{};
  index_t stride = 1;
  for (std::size_t i = Rank; i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

/// "[2, 3, 4]": how every heed error message prints a shape.
template <std::size_t Rank>
[[nodiscard]] std::string to_string(const Shape<Rank>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < Rank; ++i) {
    if (i != 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

}  // namespace heed
