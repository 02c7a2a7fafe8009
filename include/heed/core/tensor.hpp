#pragma once
// Tensor: owning, row-major, 64-byte aligned (one cache line, one AVX-512 register), and
// zero-filled on construction. Copies are deep; moves are cheap. Everything that reads a
// tensor takes a TensorView, which a Tensor converts to implicitly.

#include <algorithm>
#include <cstddef>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "heed/core/error.hpp"
#include "heed/core/scalar.hpp"
#include "heed/core/shape.hpp"
#include "heed/core/tensor_view.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/core/detail/buffer_cache.hpp"
#include "heed/core/detail/tensor_traits.hpp"

namespace heed {

/// Tag for a Tensor whose elements are left uninitialized, for outputs a kernel overwrites
/// entirely (zero-filling them first would cost one more pass over memory).
struct Uninitialized {};
/// The tag value: `Tensor<float, 2> t({m, n}, heed::uninitialized);`.
inline constexpr Uninitialized uninitialized{};

/// An owning, row-major, 64-byte-aligned tensor of Rank dimensions (see the top of this file).
template <class Scalar, std::size_t Rank>
class Tensor {
  static_assert(is_scalar_v<Scalar> && !std::is_const_v<Scalar>,
                "Tensor holds non-const arithmetic scalars, bfloat16 or half");
  static_assert(Rank >= 1, "a Tensor has at least one dimension");

 public:
  using value_type = Scalar;                 ///< the element type
  static constexpr std::size_t rank = Rank;  ///< the number of dimensions

  /// An empty tensor: every extent 0, no storage.
  Tensor() = default;

  /// A zero-filled tensor of `shape`. Negative extents are a ShapeError.
  explicit Tensor(const Shape<Rank>& shape)
      : shape_(checked(shape)), data_(detail::aligned_storage<Scalar>(numel(), true)) {}

  /// A tensor of `shape` whose elements are indeterminate until written.
  Tensor(const Shape<Rank>& shape, Uninitialized)
      : shape_(checked(shape)), data_(detail::aligned_storage<Scalar>(numel(), false)) {}

  /// A tensor of `shape` with every element `value`.
  Tensor(const Shape<Rank>& shape, Scalar value) : Tensor(shape, uninitialized) { std::fill_n(data(), numel(), value); }

  /// A deep copy of any view of the same rank (contiguous or strided).
  template <class Other>
  requires std::is_same_v<std::remove_const_t<Other>, Scalar>
  explicit Tensor(const TensorView<Other, Rank>& view) : Tensor(view.shape(), uninitialized) { copy_from(view); }

  /// A deep copy.
  Tensor(const Tensor& other) : Tensor(other.shape_, uninitialized) { std::copy_n(other.data(), numel(), data()); }
  /// A deep copy.
  Tensor& operator=(const Tensor& other) {
    if (this != &other) *this = Tensor(other);
    return *this;
  }
  /// Takes other's storage; other is left empty.
  Tensor(Tensor&& other) noexcept : shape_(std::exchange(other.shape_, Shape<Rank>{})), data_(std::move(other.data_)) {}
  /// Takes other's storage; other is left empty.
  Tensor& operator=(Tensor&& other) noexcept {
    shape_ = std::exchange(other.shape_, Shape<Rank>{});
    data_ = std::move(other.data_);
    return *this;
  }
  ~Tensor() = default;

  /// The extents, outermost first.
  [[nodiscard]] const Shape<Rank>& shape() const noexcept { return shape_; }
  /// The extent of dimension `dim` (< Rank).
  [[nodiscard]] index_t size(std::size_t dim) const noexcept {
    HEED_ASSERT(dim < Rank);
    return shape_[dim];
  }
  /// The number of elements.
  [[nodiscard]] index_t numel() const noexcept { return heed::numel(shape_); }
  /// True when the tensor holds no element.
  [[nodiscard]] bool empty() const noexcept { return numel() == 0; }
  /// The first element (nullptr when empty); the rest follow in row-major order.
  [[nodiscard]] Scalar* data() noexcept { return data_.get(); }
  /// The first element (nullptr when empty), read-only.
  [[nodiscard]] const Scalar* data() const noexcept { return data_.get(); }

  /// A view of the whole tensor (what every function taking a TensorView receives).
  [[nodiscard]] TensorView<Scalar, Rank> view() noexcept { return {data(), shape_}; }
  /// A read-only view of the whole tensor.
  [[nodiscard]] TensorView<const Scalar, Rank> view() const noexcept { return {data(), shape_}; }
  /// Converts to a mutable view, so a Tensor passes where a TensorView is taken.
  operator TensorView<Scalar, Rank>() noexcept { return view(); }  // NOLINT
  /// Converts to a read-only view, so a Tensor passes where a TensorView is taken.
  operator TensorView<const Scalar, Rank>() const noexcept { return view(); }  // NOLINT

  /// The element at one index per dimension (unchecked in release builds).
  template <class... Indices>
  [[nodiscard]] Scalar& operator()(Indices... indices) noexcept {
    return view()(indices...);
  }
  /// The element at one index per dimension, read-only (unchecked in release builds).
  template <class... Indices>
  [[nodiscard]] const Scalar& operator()(Indices... indices) const noexcept {
    return view()(indices...);
  }
  /// Index i of the first dimension: an element for rank 1, otherwise a view of rank - 1.
  [[nodiscard]] decltype(auto) operator[](index_t i) noexcept { return view()[i]; }
  /// Index i of the first dimension, read-only: an element for rank 1, a view of rank - 1 otherwise.
  [[nodiscard]] decltype(auto) operator[](index_t i) const noexcept { return view()[i]; }

  /// Copies the elements of a view of the same shape into this tensor; ShapeError naming both
  /// shapes otherwise.
  template <class Other>
  void copy_from(const TensorView<Other, Rank>& source) {
    if (source.shape() != shape_)
      throw ShapeError("heed::Tensor::copy_from: a view of shape " + to_string(source.shape()) + " into a tensor of " +
                       to_string(shape_));
    if (numel() == 0) return;  // an empty view may have no data at all: nothing to offset
    if (source.is_contiguous()) {
      std::copy_n(source.data(), numel(), data());
      return;
    }
    Scalar* out = data();
    for_each_index(source, [&](const auto& value) { *out++ = value; });
  }

 private:
  // Negative extents, and shapes whose bytes a pointer difference cannot span (the product of
  // the non-zero extents × sizeof(Scalar) beyond PTRDIFF_MAX), are ShapeErrors: numel() and
  // every byte offset stay within index_t. docs/formats.md, "Limits".
  static Shape<Rank> checked(const Shape<Rank>& shape) {
    constexpr index_t max_elements = std::numeric_limits<index_t>::max() / static_cast<index_t>(sizeof(Scalar));
    index_t elements = 1;
    for (index_t extent : shape) {
      if (extent < 0) throw ShapeError("heed::Tensor: negative extent in shape " + to_string(shape));
      if (extent == 0) continue;
      if (elements > max_elements / extent)
        throw ShapeError("heed::Tensor: shape " + to_string(shape) + " of " + std::to_string(sizeof(Scalar)) +
                         "-byte elements needs more bytes than an index_t can count");
      elements *= extent;
    }
    return shape;
  }

  // Visits a strided view's elements in row-major order.
  template <class View, class F>
  static void for_each_index(const View& view, F&& f) {
    if constexpr (View::rank == 1) {
      for (index_t i = 0; i < view.size(0); ++i) f(view[i]);
    } else {
      for (index_t i = 0; i < view.size(0); ++i) for_each_index(view[i], f);
    }
  }

  Shape<Rank> shape_{};
  std::unique_ptr<Scalar, detail::AlignedDelete> data_;
};

/// The read-only view of a Tensor or TensorView: how generic entry points accept both.
template <class Scalar, std::size_t Rank>
[[nodiscard]] TensorView<const Scalar, Rank> as_view(const Tensor<Scalar, Rank>& t) noexcept {
  return t.view();
}
/// The read-only form of a view.
template <class Scalar, std::size_t Rank>
[[nodiscard]] TensorView<const std::remove_const_t<Scalar>, Rank> as_view(const TensorView<Scalar, Rank>& v) noexcept {
  return v;
}

/// A contiguous read-only view of `view`: the view itself when it is already dense, else a
/// copy made into `storage` (which must outlive the result).
template <class Scalar, std::size_t Rank>
[[nodiscard]] TensorView<const Scalar, Rank> contiguous(const TensorView<const Scalar, Rank>& view,
                                                        Tensor<Scalar, Rank>& storage) {
  if (view.is_contiguous()) return view;
  storage = Tensor<Scalar, Rank>(view);
  return storage.view();
}

/// A Tensor or a TensorView (read-only use): what generic entry points take.
template <class T>
concept TensorLike = detail::tensor_traits<std::remove_cvref_t<T>>::is_tensor;

/// The element type of a Tensor or TensorView (without const).
template <TensorLike T>
using scalar_of = typename detail::tensor_traits<std::remove_cvref_t<T>>::scalar;

/// The rank of a Tensor or TensorView.
template <TensorLike T>
inline constexpr std::size_t rank_of = detail::tensor_traits<std::remove_cvref_t<T>>::rank;

}  // namespace heed
