#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "heed/core/shape.hpp"
#include "heed/kernels/masked_rows.hpp"
#include "heed/simd/attention_kernel.hpp"
#include "heed/simd/kernel_table.hpp"

namespace heed::detail {

// The softmax of heed/kernels/softmax.hpp, one row at a time, and the same computation one block
// of a row at a time (the online softmax of Milakov & Gimelshein 2018,
// https://arxiv.org/abs/1805.02867), of which the attention driver keeps one per query row.

// y = softmax(x) over n contiguous elements (y may be x), on the row pieces of the level in use.
template <class Acc>
void softmax_row(const Acc* x, Acc* y, index_t n, MaskedRows masked_rows) noexcept {
  const simd::SoftmaxKernels<Acc>& k = simd::attention_kernels<Acc>().softmax;
  const Acc row_max = k.max(x, n);
  if (row_max == -std::numeric_limits<Acc>::infinity()) {
    // every score -inf (a masked row), or some NaN among them: NaN poisons the row, as in PyTorch
    const bool poisoned = std::any_of(x, x + n, [](Acc v) { return std::isnan(v); });
    const Acc fill = poisoned || masked_rows == MaskedRows::nan ? std::numeric_limits<Acc>::quiet_NaN() : Acc(0);
    for (index_t i = 0; i < n; ++i) y[i] = fill;
    return;
  }
  const Acc total = k.exp_sum(x, row_max, y, n);
  k.scale(Acc(1) / total, y, n);
}

// The running state of a softmax computed block by block.
//   m: the largest score seen so far (-inf before any);
//   l: sum over seen scores s of exp(s - m).
// Invariant: after every update, the true softmax of the seen scores is exp(s - m) / l.
// A NaN score makes l NaN for good (the row's output and weights are NaN, as PyTorch's softmax
// makes them); l == 0 means no visible key yet (a fully masked row, if it stays so).
template <class Acc>
struct OnlineSoftmax {
  Acc m = -std::numeric_limits<Acc>::infinity();
  Acc l = Acc(0);

  // Folds in a block of scores, overwriting them with exp(s - m_new), and returns the
  // factor exp(m_old - m_new) by which every quantity accumulated so far (l and the
  // output row) must be scaled. A block of only -inf leaves the state as it was. `k`: the
  // level's row pieces (simd::AttentionKernels::softmax).
  Acc update(const simd::SoftmaxKernels<Acc>& k, Acc* scores, index_t n) noexcept {
    return fold(k, scores, n, [&](Acc m_new) { return k.exp_sum(scores, m_new, scores, n); });
  }

  // The same, writing exp(s - m_new) rounded to bfloat16 into `rounded` (the P of the pair
  // products, simd/attention_kernel.hpp) instead of over the scores; l sums the unrounded values.
  Acc update(const simd::SoftmaxKernels<Acc>& k, Acc* scores, index_t n, bfloat16* rounded) noexcept {
    return fold(k, scores, n, [&](Acc m_new) { return k.exp_sum_rounded(scores, m_new, rounded, n); });
  }

  // The factor that turns the accumulated row into the softmax-weighted result (NaN after a NaN
  // score), or the fill for a fully masked row (l == 0).
  [[nodiscard]] Acc normalizer(MaskedRows masked_rows) const noexcept {
    if (l != Acc(0)) return Acc(1) / l;
    return masked_rows == MaskedRows::nan ? std::numeric_limits<Acc>::quiet_NaN() : Acc(0);
  }

 private:
  // exp_into(m_new) writes the block's exp(s - m_new) where the caller wants it and returns their
  // sum; a block with nothing visible yet writes zeros there through it (exp(-inf) = 0).
  template <class ExpInto>
  Acc fold(const simd::SoftmaxKernels<Acc>& k, Acc* scores, index_t n, ExpInto exp_into) noexcept {
    const Acc block_max = k.max(scores, n);
    const Acc m_new = block_max > m ? block_max : m;
    if (m_new == -std::numeric_limits<Acc>::infinity()) {  // nothing seen yet can attend, or a NaN
      bool poisoned = false;
      for (index_t i = 0; i < n; ++i) {
        poisoned = poisoned || std::isnan(scores[i]);
        scores[i] = -std::numeric_limits<Acc>::infinity();
      }
      exp_into(Acc(0));  // exp(-inf - 0) = 0 everywhere
      if (poisoned) l = std::numeric_limits<Acc>::quiet_NaN();
      return Acc(1);
    }
    // exp(-inf) = 0 on the first block; 1 without a call when the maximum stands (most blocks)
    const Acc correction = m_new == m ? Acc(1) : simd::softmax_exp(m - m_new);
    l = l * correction + exp_into(m_new);
    m = m_new;
    return correction;
  }
};

}  // namespace heed::detail
