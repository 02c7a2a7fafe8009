#pragma once
// heed::cast<To>(x): a tensor converted element by element to another element type, the way
// PyTorch's `x.to(dtype)` converts: to bfloat16 and half by rounding to nearest (ties to even),
// from them exactly (every bfloat16 and half is a float).

#include <cstddef>
#include <type_traits>

#include "heed/core/scalar.hpp"
#include "heed/core/tensor.hpp"

namespace heed {

/// `value` as a To: through float when either side is 16-bit (the conversions Eigen defines),
/// static_cast otherwise.
template <class To, class From>
[[nodiscard]] inline To convert(From value) noexcept {
  if constexpr (std::is_same_v<To, From>)
    return value;
  else if constexpr (is_16bit_float_v<To> || is_16bit_float_v<From>)
    return static_cast<To>(static_cast<float>(value));
  else
    return static_cast<To>(value);
}

/// A dense copy of x with every element converted to To (any strides; the result is contiguous).
template <class To, TensorLike X>
[[nodiscard]] Tensor<To, rank_of<X>> cast(const X& x) {
  using From = scalar_of<X>;
  const auto v = as_view(x);
  const Tensor<From, rank_of<X>> dense(v);  // row-major order, whatever v's strides
  Tensor<To, rank_of<X>> out(v.shape(), uninitialized);
  const From* src = dense.data();
  To* dst = out.data();
  for (index_t i = 0; i < out.numel(); ++i) dst[i] = convert<To>(src[i]);
  return out;
}

}  // namespace heed
