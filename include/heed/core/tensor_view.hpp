#pragma once
// TensorView: a non-owning, strided window on Rank-dimensional data. `TensorView<const T, R>`
// is the read-only view; a mutable view converts to it implicitly. Element access (operator(),
// operator[]) is what kernels use behind a boundary that has already validated shapes: like
// Eigen's Block it checks its rank at compile time and its bounds with HEED_ASSERT (debug builds
// only). Making views (slice, narrow, transpose, reshape) is a public entry point: it checks
// its arguments in every build and throws ShapeError naming the shape and the range.

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

#include "heed/core/assert.hpp"
#include "heed/core/error.hpp"
#include "heed/core/scalar.hpp"
#include "heed/core/shape.hpp"

namespace heed {

/// A non-owning, strided view of Rank-dimensional data (see the top of this file).
template <class Scalar, std::size_t Rank>
class TensorView {
  static_assert(Rank >= 1, "a TensorView has at least one dimension");
  static_assert(is_scalar_v<std::remove_const_t<Scalar>>, "TensorView holds arithmetic scalars, bfloat16 or half");

 public:
  using value_type = std::remove_const_t<Scalar>;  ///< the element type without const
  using element_type = Scalar;                     ///< the element type as viewed (const for read-only views)
  static constexpr std::size_t rank = Rank;        ///< the number of dimensions

  TensorView() = default;

  /// A contiguous row-major view of `shape` at `data`.
  TensorView(Scalar* data, const Shape<Rank>& shape) noexcept
      : data_(data), shape_(shape), strides_(contiguous_strides(shape)) {}

  /// A view with explicit strides, in elements.
  TensorView(Scalar* data, const Shape<Rank>& shape, const Shape<Rank>& strides) noexcept
      : data_(data), shape_(shape), strides_(strides) {}

  /// A mutable view converts to a read-only one.
  template <class Other>
  requires(std::is_same_v<const Other, Scalar> && !std::is_same_v<Other, Scalar>)
      TensorView(const TensorView<Other, Rank>& other)
  noexcept  // NOLINT(google-explicit-constructor)
      : data_(other.data()), shape_(other.shape()), strides_(other.strides()) {}

  /// The element at index (0, ..., 0).
  [[nodiscard]] Scalar* data() const noexcept { return data_; }
  /// The extents, outermost first.
  [[nodiscard]] const Shape<Rank>& shape() const noexcept { return shape_; }
  /// The distance between neighbours along each dimension, in elements.
  [[nodiscard]] const Shape<Rank>& strides() const noexcept { return strides_; }
  /// The extent of dimension `dim` (< Rank).
  [[nodiscard]] index_t size(std::size_t dim) const noexcept {
    HEED_ASSERT(dim < Rank);
    return shape_[dim];
  }
  /// The stride of dimension `dim` (< Rank), in elements.
  [[nodiscard]] index_t stride(std::size_t dim) const noexcept {
    HEED_ASSERT(dim < Rank);
    return strides_[dim];
  }
  /// The number of elements.
  [[nodiscard]] index_t numel() const noexcept { return heed::numel(shape_); }
  /// True when the view has no element.
  [[nodiscard]] bool empty() const noexcept { return numel() == 0; }
  /// True for a default-constructed view: how optional tensor arguments say "not given"
  /// (a given view may still be empty, e.g. [B, 0]).
  [[nodiscard]] bool is_null() const noexcept { return data_ == nullptr && shape_ == Shape<Rank>{}; }

  /// True when the elements are row-major and dense.
  [[nodiscard]] bool is_contiguous() const noexcept {
    index_t expected = 1;
    for (std::size_t i = Rank; i-- > 0;) {
      if (shape_[i] != 1 && strides_[i] != expected) return false;
      expected *= shape_[i];
    }
    return true;
  }

  /// The element at one index per dimension (unchecked in release builds).
  template <class... Indices>
  [[nodiscard]] Scalar& operator()(Indices... indices) const noexcept {
    static_assert(sizeof...(Indices) == Rank, "operator() takes one index per dimension");
    static_assert((std::is_integral_v<Indices> && ...), "indices must be integers");
    const index_t idx[Rank] = {static_cast<index_t>(indices)...};
    index_t offset = 0;
    for (std::size_t d = 0; d < Rank; ++d) {
      HEED_ASSERT(idx[d] >= 0 && idx[d] < shape_[d]);
      offset += idx[d] * strides_[d];
    }
    return data_[offset];
  }

  /// Drops the leading dimension: `q[b]` of a [B, H, L, d] view is the [H, L, d] view of batch b.
  /// On a rank-1 view it returns the element.
  [[nodiscard]] decltype(auto) operator[](index_t i) const noexcept {
    HEED_ASSERT(i >= 0 && i < shape_[0]);
    if constexpr (Rank == 1) {
      return static_cast<Scalar&>(data_[i * strides_[0]]);
    } else {
      return TensorView<Scalar, Rank - 1>(data_ + i * strides_[0], tail(shape_), tail(strides_));
    }
  }

  /// The sub-range [begin, end) of dimension `dim`, the rank kept (Python's `x[:, begin:end]`).
  /// ShapeError, naming the shape and the range, unless 0 <= begin <= end <= size(dim).
  [[nodiscard]] TensorView slice(std::size_t dim, index_t begin, index_t end) const {
    if (dim >= Rank || begin < 0 || begin > end || end > shape_[dim])
      throw ShapeError("heed::TensorView::slice: range [" + std::to_string(begin) + ", " + std::to_string(end) +
                       ") of dimension " + std::to_string(dim) + " is outside the shape " + to_string(shape_));
    return sub_range(dim, begin, end - begin);
  }

  /// `length` elements of dimension `dim` from `start`, the rank kept: PyTorch's
  /// `narrow(dim, start, length)`. ShapeError unless the range lies inside the shape.
  [[nodiscard]] TensorView narrow(std::size_t dim, index_t start, index_t length) const {
    if (dim >= Rank || start < 0 || length < 0 || start > shape_[dim] || length > shape_[dim] - start)
      throw ShapeError("heed::TensorView::narrow: start " + std::to_string(start) + ", length " +
                       std::to_string(length) + " of dimension " + std::to_string(dim) + " is outside the shape " +
                       to_string(shape_));
    return sub_range(dim, start, length);
  }

  /// Swaps two dimensions without moving data: [B, L, H, d] → [B, H, L, d]. ShapeError for a
  /// dimension past the rank.
  [[nodiscard]] TensorView transpose(std::size_t a, std::size_t b) const {
    if (a >= Rank || b >= Rank)
      throw ShapeError("heed::TensorView::transpose: dimensions " + std::to_string(a) + " and " + std::to_string(b) +
                       " of a rank-" + std::to_string(Rank) + " view " + to_string(shape_));
    Shape<Rank> shape = shape_;
    Shape<Rank> strides = strides_;
    std::swap(shape[a], shape[b]);
    std::swap(strides[a], strides[b]);
    return TensorView(data_, shape, strides);
  }

  /// The same contiguous data under another shape with as many elements. ShapeError when the
  /// view is strided or the element counts differ.
  template <std::size_t NewRank>
  [[nodiscard]] TensorView<Scalar, NewRank> reshape(const Shape<NewRank>& shape) const {
    if (!is_contiguous() || heed::numel(shape) != numel())
      throw ShapeError("heed::TensorView::reshape: cannot view " + std::string(is_contiguous() ? "" : "strided ") +
                       to_string(shape_) + " as " + to_string(shape));
    return TensorView<Scalar, NewRank>(data_, shape);
  }

 private:
  TensorView sub_range(std::size_t dim, index_t start, index_t length) const noexcept {
    Shape<Rank> shape = shape_;
    shape[dim] = length;
    return TensorView(data_ + start * strides_[dim], shape, strides_);
  }

  template <std::size_t N>
  static Shape<N - 1> tail(const Shape<N>& s) noexcept {
    Shape<N - 1> t{};
    for (std::size_t i = 1; i < N; ++i) t[i - 1] = s[i];
    return t;
  }

  Scalar* data_ = nullptr;
  Shape<Rank> shape_{};
  Shape<Rank> strides_{};
};

}  // namespace heed
