#pragma once
// Softmax along the last dimension, numerically stable: exp(x - max x) / sum exp(x - max x),
// so no exp overflows however large the inputs. -inf entries get probability 0. A row whose
// entries are all -inf (fully masked) has no distribution: heed writes zeros by default
// (FlashAttention, ggml and PyTorch ≥ 2.5 do the same), MaskedRows::nan reproduces PyTorch 1.13.
//
// OnlineSoftmax is the same computation one block of a row at a time (Milakov & Gimelshein
// 2018, https://arxiv.org/abs/1805.02867): the attention driver keeps one per query row.

#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <type_traits>

#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/simd/vector_ops.hpp"

namespace heed {

/// What a fully masked row (every score -inf) becomes.
enum class MaskedRows {
  zero,  ///< zeros: the row attends to nothing (default)
  nan,   ///< NaN, as PyTorch 1.13's softmax and attention produce
};

struct SoftmaxOptions {
  MaskedRows masked_rows = MaskedRows::zero;
};

namespace kernels {

/// y = softmax(x) over n contiguous elements (y may be x).
template <class T>
void softmax_row(const T* x, T* y, index_t n, MaskedRows masked_rows) noexcept {
  const T row_max = simd::max(x, n);
  if (row_max == -std::numeric_limits<T>::infinity()) {
    const T fill = masked_rows == MaskedRows::nan ? std::numeric_limits<T>::quiet_NaN() : T(0);
    for (index_t i = 0; i < n; ++i) y[i] = fill;
    return;
  }
  const T total = simd::exp_sum(x, row_max, y, n);
  simd::scale(T(1) / total, y, n);
}

/// The running state of a softmax computed block by block.
///   m: the largest score seen so far (-inf before any);
///   l: sum over seen scores s of exp(s - m).
/// Invariant: after every update, the true softmax of the seen scores is exp(s - m) / l.
template <class T>
struct OnlineSoftmax {
  T m = -std::numeric_limits<T>::infinity();
  T l = T(0);

  /// Folds in a block of scores, overwriting them with exp(s - m_new), and returns the
  /// factor exp(m_old - m_new) by which every quantity accumulated so far (l and the
  /// output row) must be scaled. A block of only -inf leaves the state as it was.
  T update(T* scores, index_t n) noexcept {
    const T block_max = simd::max(scores, n);
    const T m_new = block_max > m ? block_max : m;
    if (m_new == -std::numeric_limits<T>::infinity()) {  // nothing seen yet can attend
      for (index_t i = 0; i < n; ++i) scores[i] = T(0);
      return T(1);
    }
    const T correction = std::exp(m - m_new);  // exp(-inf) = 0 on the first block
    l = l * correction + simd::exp_sum(scores, m_new, scores, n);
    m = m_new;
    return correction;
  }

  /// The factor that turns the accumulated row into the softmax-weighted result, or the
  /// fill for a fully masked row (l == 0).
  [[nodiscard]] T normalizer(MaskedRows masked_rows) const noexcept {
    if (l > T(0)) return T(1) / l;
    return masked_rows == MaskedRows::nan ? std::numeric_limits<T>::quiet_NaN() : T(0);
  }
};

}  // namespace kernels

/// Softmax over the last dimension of any tensor, as torch.softmax(x, dim=-1).
template <TensorLike X>
[[nodiscard]] auto softmax(const X& x, SoftmaxOptions options = {}) {
  using T = scalar_of<X>;
  static_assert(std::is_floating_point_v<T>, "softmax needs a floating-point tensor");
  const auto in = as_view(x);
  Tensor<T, rank_of<X>> out(in);  // contiguous copy, transformed in place
  const index_t n = out.shape().back();
  if (n == 0) return out;
  for (T* row = out.data(); row != out.data() + out.numel(); row += n)
    kernels::softmax_row(row, row, n, options.masked_rows);
  return out;
}

/// Softmax over the last dimension of the entries `allowed` keeps (true = keep; the same shape
/// as x): masked entries get probability 0, as softmax(x.masked_fill(~allowed, -inf)) does. A row
/// with nothing allowed follows options.masked_rows.
template <TensorLike X, TensorLike M>
[[nodiscard]] auto masked_softmax(const X& x, const M& allowed, SoftmaxOptions options = {}) {
  using T = scalar_of<X>;
  static_assert(std::is_floating_point_v<T>, "masked_softmax needs a floating-point tensor");
  static_assert(std::is_same_v<scalar_of<M>, bool> && rank_of<M> == rank_of<X>, "the mask is bool, x's rank");
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
    kernels::softmax_row(row, row, n, options.masked_rows);
  return out;
}

}  // namespace heed
