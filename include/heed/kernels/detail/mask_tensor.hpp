#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <cstddef>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/simd/vector_ops.hpp"

namespace heed::detail {

template <class T>
inline constexpr T minus_inf = -std::numeric_limits<T>::infinity();

// Hides scores [from, to) of a row: -inf there.
template <class T>
void hide(T* row, index_t from, index_t to) noexcept {
  if (to > from) simd::fill(row + from, to - from, minus_inf<T>);
}

// An offset or a window of a mask clamped to ±2^52: past any index a tensor can have (a tensor's
// bytes fit in index_t), so the mask means the same (INT64_MAX for "unbounded" works), and sums
// of a few of them and of indices cannot overflow.
[[nodiscard]] constexpr index_t bounded(index_t x) noexcept {
  constexpr index_t bound = index_t{1} << 52;
  return x < -bound ? -bound : (x > bound ? bound : x);
}

// offset - reach (before) or offset + reach (after) for a reach >= 0, exact where the result is
// within ±2^52 and saturated there otherwise (a window's edges relative to its query): unlike
// bounded(offset) - bounded(reach), which makes INT64_MAX - INT64_MAX of a window centred far to
// the right with an unbounded reach 0 instead of "every key".
[[nodiscard]] constexpr index_t window_edge(index_t offset, index_t reach, bool after) noexcept {
  constexpr index_t max = std::numeric_limits<index_t>::max(), min = std::numeric_limits<index_t>::min();
  if (after) return offset > max - reach ? bounded(max) : bounded(offset + reach);
  return offset < min + reach ? bounded(min) : bounded(offset - reach);
}

inline std::string scores_text(const Shape<4>& dims) {
  return "[B, H, Lq, Lk] = " + to_string(dims);
}

// A rank-4 mask tensor that broadcasts over any dimension of extent 1 (stride 0 there), from a
// rank-2 [Lq, Lk] or a rank-4 tensor. Views the caller's tensor, or owns a temporary one.
template <class Scalar>
class MaskTensor {
 public:
  MaskTensor() = default;

  template <TensorLike X>
  requires std::is_same_v<scalar_of<X>, Scalar> MaskTensor(X&& x, const char* what) : what_(what) {
    if constexpr (!std::is_lvalue_reference_v<X> && !std::is_const_v<std::remove_reference_t<X>> &&
                  std::is_same_v<std::remove_cvref_t<X>, Tensor<Scalar, rank_of<X>>>) {
      auto owned = std::make_shared<const std::remove_cvref_t<X>>(std::move(x));  // keep a temporary alive
      bind(owned->view());
      owner_ = std::move(owned);
    } else {
      bind(as_view(x));
    }
  }

  // Throws ShapeError unless every dimension equals dims or is 1.
  void check(const Shape<4>& dims) const {
    for (std::size_t d = 0; d < 4; ++d)
      if (shape_[d] != 1 && shape_[d] != dims[d])
        throw ShapeError(std::string("heed::mask::") + what_ + ": mask of shape " + original_ +
                         " does not broadcast to the scores " + scores_text(dims));
  }

  [[nodiscard]] const Scalar* row(index_t b, index_t h, index_t i) const noexcept {
    return data_ + b * strides_[0] + h * strides_[1] + i * strides_[2];
  }
  [[nodiscard]] index_t column_stride() const noexcept { return strides_[3]; }
  // The shape seen as rank 4 (a rank-2 mask is [1, 1, Lq, Lk]), and as the caller gave it.
  [[nodiscard]] const Shape<4>& shape() const noexcept { return shape_; }
  [[nodiscard]] const std::string& original_shape() const noexcept { return original_; }

 private:
  template <std::size_t Rank>
  void bind(const TensorView<const Scalar, Rank>& v) {
    static_assert(Rank == 2 || Rank == 4, "a mask is [Lq, Lk] or [B, H, Lq, Lk] (dimensions of extent 1 broadcast)");
    original_ = to_string(v.shape());
    data_ = v.data();
    for (std::size_t d = 0; d < Rank; ++d) {
      shape_[4 - Rank + d] = v.size(d);
      strides_[4 - Rank + d] = v.size(d) == 1 ? 0 : v.stride(d);
    }
  }

  const Scalar* data_ = nullptr;
  Shape<4> shape_{1, 1, 1, 1};
  Shape<4> strides_{0, 0, 0, 0};
  std::string original_;
  const char* what_ = "";
  std::shared_ptr<const void> owner_;
};

}  // namespace heed::detail
