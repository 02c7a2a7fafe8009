#pragma once
// Softmax along the last dimension, numerically stable: exp(x - max x) / sum exp(x - max x),
// so no exp overflows however large the inputs. -inf entries get probability 0, and so do the
// entries more than 64 below their row's maximum (512 in double): exp(-64) = 1.6e-28 is lost
// beside the maximum's 1 in any float sum, and the cut keeps every probability normal (no
// subnormal, which Intel cores compute slowly: simd::softmax_floor). A row whose
// entries are all -inf (fully masked) has no distribution: heed writes zeros by default
// (FlashAttention, ggml and PyTorch ≥ 2.5 do the same), MaskedRows::nan reproduces PyTorch 1.13.

#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <type_traits>

#include "heed/core/cast.hpp"
#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/masked_rows.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/kernels/detail/online_softmax.hpp"

namespace heed {

/// The options of softmax and masked_softmax.
struct SoftmaxOptions {
  MaskedRows masked_rows = MaskedRows::zero;  ///< what a row with every element -inf becomes
};

/// Softmax over the last dimension of any tensor, as torch.softmax(x, dim=-1) (16-bit tensors
/// are computed in float and rounded once).
template <TensorLike X>
[[nodiscard]] auto softmax(const X& x, SoftmaxOptions options = {}) {
  using T = scalar_of<X>;
  static_assert(is_floating_v<T>, "softmax needs a floating-point tensor");
  if constexpr (is_16bit_float_v<T>) {  // computed in float, rounded once at the end
    return cast<T>(softmax(cast<float>(x), options));
  } else {
    const auto in = as_view(x);
    Tensor<T, rank_of<X>> out(in);  // contiguous copy, transformed in place
    const index_t n = out.shape().back();
    if (n == 0) return out;
    for (T* row = out.data(); row != out.data() + out.numel(); row += n)
      detail::softmax_row(row, row, n, options.masked_rows);
    return out;
  }
}

/// Softmax over the last dimension of the entries `allowed` keeps (true = keep; the same shape
/// as x): masked entries get probability 0, as softmax(x.masked_fill(~allowed, -inf)) does. A row
/// with nothing allowed follows options.masked_rows.
template <TensorLike X, TensorLike M>
[[nodiscard]] auto masked_softmax(const X& x, const M& allowed, SoftmaxOptions options = {}) {
  using T = scalar_of<X>;
  static_assert(is_floating_v<T>, "masked_softmax needs a floating-point tensor");
  static_assert(std::is_same_v<scalar_of<M>, bool> && rank_of<M> == rank_of<X>, "the mask is bool, x's rank");
  if constexpr (is_16bit_float_v<T>) {
    return cast<T>(masked_softmax(cast<float>(x), allowed, options));
  } else {
    const auto in = as_view(x);
    const auto keep = as_view(allowed);
    if (keep.shape() != in.shape())
      throw ShapeError("heed::masked_softmax: mask of shape " + to_string(keep.shape()) + " differs from x " +
                       to_string(in.shape()));
    Tensor<T, rank_of<X>> out(in);
    const Tensor<bool, rank_of<X>> dense_keep(keep);
    for (index_t i = 0; i < out.numel(); ++i)
      if (!dense_keep.data()[i]) out.data()[i] = -std::numeric_limits<T>::infinity();
    const index_t n = out.shape().back();
    if (n == 0) return out;
    for (T* row = out.data(); row != out.data() + out.numel(); row += n)
      detail::softmax_row(row, row, n, options.masked_rows);
    return out;
  }
}

}  // namespace heed
