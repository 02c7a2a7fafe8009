#pragma once
// The one attention driver. Every attention in heed, from the functional
// scaled_dot_product_attention to the Transformer encoder, runs through attention_into():
//
//     out = softmax(score(q, k) + mask) · v
//
// computed tile by tile with an online softmax (FlashAttention-2's loop: Dao 2023,
// https://arxiv.org/abs/2307.08691), so memory stays O(tile) whatever the sequence length
// unless the weights are asked for. The score policy (score.hpp) says how a tile of scores is
// computed; the mask policy (mask.hpp) says which tiles are open, blocked (skipped, no work at
// all) or partial. docs/design.md describes the loop; kernels/detail/attention_tiles.hpp is it.
//
// Heads: q is [B, Hq, Lq, d], k and v [B, Hkv, Lk, ·] with Hq a multiple of Hkv (grouped-query
// attention; Hkv = 1 is multi-query): query head h reads key/value head h / (Hq / Hkv) in place.

#include <algorithm>
#include <string>
#include <type_traits>

#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/attention_options.hpp"
#include "heed/kernels/mask.hpp"
#include "heed/kernels/score.hpp"
#include "heed/kernels/softmax.hpp"
#include "heed/kernels/sparse_masks.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/kernels/detail/attention_tiles.hpp"

namespace heed {

/// output [.., Lq, dv]; weights [.., Lq, Lk] with need_weights, else empty.
template <class Scalar, std::size_t Rank>
struct AttentionResult {
  Tensor<Scalar, Rank> output;   ///< [.., Lq, dv]
  Tensor<Scalar, Rank> weights;  ///< [.., Lq, Lk] with need_weights, else empty
};

/// The validated entry point that modules use: writes softmax(score(q, k) + mask) · v into
/// `out` [B, Hq, Lq, dv] (any strides, e.g. a transposed [B, Lq, H, dv] buffer) and, when
/// `weights` is non-empty, the probabilities into it ([B, Hq, Lq, Lk], any strides too).
/// Neither may share memory with q, k, v or each other (ShapeError): attention does not run in
/// place. k and v may have fewer
/// heads than q (see above). T may be float, double, bfloat16 or half: 16-bit tensors stay
/// 16-bit in memory, and scores, softmax and the output accumulate in float. ShapeError, naming
/// every shape, for anything that does not fit.
template <class T, class Score, class Mask>
requires ScorePolicy<Score, T> && mask::MaskPolicy<Mask, accumulator_t<T>>
void attention_into(const TensorView<T, 4>& out, const TensorView<T, 4>& weights, const TensorView<const T, 4>& q,
                    const TensorView<const T, 4>& k, const TensorView<const T, 4>& v, const Score& score,
                    const Mask& mask, const AttentionOptions& options = {}) {
  static_assert(is_floating_v<T>, "attention needs float, double, bfloat16 or half tensors");
  const auto fail = [&](const std::string& what) {
    throw ShapeError("heed::attention: " + what + " (q " + to_string(q.shape()) + ", k " + to_string(k.shape()) +
                     ", v " + to_string(v.shape()) + ")");
  };
  const index_t heads = q.size(1), kv_heads = k.size(1);
  if (k.size(0) != q.size(0) || v.size(0) != q.size(0)) fail("batch sizes differ");
  if (v.size(1) != kv_heads) fail("k and v have different head counts");
  if (kv_heads == 0 ? heads != 0 : heads % kv_heads != 0)
    fail("the key/value heads (" + std::to_string(kv_heads) + ") do not divide the query heads (" +
         std::to_string(heads) + ")");
  if (k.size(2) != v.size(2)) fail("k and v have different lengths");
  score.check(q.shape(), k.shape());
  const Shape<4> dims{q.size(0), heads, q.size(2), k.size(2)};
  mask.check(dims);
  const Shape<4> out_shape{q.size(0), heads, q.size(2), v.size(3)};
  if (out.shape() != out_shape) fail("output is " + to_string(out.shape()) + ", expected " + to_string(out_shape));
  if (!weights.empty() && weights.shape() != dims)
    fail("weights are " + to_string(weights.shape()) + ", expected " + to_string(dims));
  if (options.block_q < 0 || options.block_k < 0) fail("negative block size");
  for (const TensorView<const T, 4>& input : {q, k, v})
    if (detail::may_overlap(out, input) || (!weights.empty() && detail::may_overlap(weights, input)))
      fail(
          "the output or the weights overlap q, k or v: attention does not run in place, write into another "
          "tensor");
  if (!weights.empty() && detail::may_overlap(out, weights)) fail("the output and the weights overlap");
  if (options.stats) *options.stats = {};  // a call that computes nothing counts no tile
  if (out.numel() == 0 && weights.empty()) return;
  if (k.size(2) == 0) {  // no keys: PyTorch's softmax(empty) · v is 0 whatever masked_rows says
    detail::assign_each(out, [](index_t, index_t, index_t, index_t) { return T(0); });
    return;
  }
  // Empty depths, as PyTorch's matmuls of empty matrices: a query and key of depth 0 score 0
  // (an empty dot product), so each row's output is the mean of its visible values; values of
  // depth 0 leave only the weights to compute. The driver then runs on depth-1 zeros.
  constexpr bool dot_score = std::is_same_v<Score, ScaledDot> || std::is_same_v<Score, Dot>;
  if ((dot_score && q.size(3) == 0) || v.size(3) == 0) {
    Tensor<T, 4> q_one, k_one, v_one, out_one;
    const auto depth_one = [](const TensorView<const T, 4>& x, Tensor<T, 4>& storage) {
      if (x.size(3) > 0) return x;
      storage = Tensor<T, 4>(Shape<4>{x.size(0), x.size(1), x.size(2), 1});
      return TensorView<const T, 4>(storage.view());
    };
    TensorView<T, 4> out1 = out;
    if (v.size(3) == 0) {
      out_one = Tensor<T, 4>(Shape<4>{out.size(0), out.size(1), out.size(2), 1});
      out1 = out_one.view();
    }
    attention_into(out1, weights, dot_score ? depth_one(q, q_one) : q, dot_score ? depth_one(k, k_one) : k,
                   depth_one(v, v_one), score, mask, options);
    return;
  }
  // The driver writes rows of unit stride; an output or weights view of another inner stride (a
  // transposed or reversed buffer) gets the result through a dense copy.
  const bool strided_out = out.stride(3) != 1 && out.size(3) > 1;
  const bool strided_weights = !weights.empty() && weights.stride(3) != 1 && weights.size(3) > 1;
  if (strided_out || strided_weights) {
    Tensor<T, 4> out_dense(out.shape()), weights_dense(weights.empty() ? Shape<4>{} : weights.shape());
    attention_into(out_dense.view(), weights_dense.view(), q, k, v, score, mask, options);
    detail::assign_each(out, [&](index_t b, index_t h, index_t i, index_t j) { return out_dense(b, h, i, j); });
    if (!weights.empty())
      detail::assign_each(weights,
                          [&](index_t b, index_t h, index_t i, index_t j) { return weights_dense(b, h, i, j); });
    return;
  }

  Tensor<T, 4> q_dense, k_dense, v_dense;
  const auto qd = detail::unit_inner(q, q_dense);
  const auto kd = detail::unit_inner(k, k_dense);
  const auto vd = detail::unit_inner(v, v_dense);
  auto scorer = score.template bind<T>(qd, kd);
  detail::attention_tiles(out, weights, vd, scorer, mask, options);
}

/// softmax(score(q, k) + mask) · v for q [B, Hq, Lq, d], k [B, Hkv, Lk, d], v [B, Hkv, Lk, dv]
/// (Hq a multiple of Hkv), or the same without the heads dimension. Returns the output and,
/// with {.need_weights = true}, the weights.
template <TensorLike Q, TensorLike K, TensorLike V, class Score = ScaledDot, class Mask = mask::None>
[[nodiscard]] auto attention(const Q& q, const K& k, const V& v, const Score& score = {}, const Mask& mask = {},
                             const AttentionOptions& options = {}) {
  using T = scalar_of<Q>;
  constexpr std::size_t Rank = rank_of<Q>;
  static_assert(std::is_same_v<scalar_of<K>, T> && std::is_same_v<scalar_of<V>, T>,
                "q, k and v must have one scalar type: convert with heed::cast<T>(tensor)");
  static_assert(rank_of<K> == Rank && rank_of<V> == Rank, "q, k and v must have the same rank");
  static_assert(Rank == 3 || Rank == 4, "attention takes [B, H, L, d] or [B, L, d] tensors");
  const auto q4 = detail::as_heads(as_view(q));
  const auto k4 = detail::as_heads(as_view(k));
  const auto v4 = detail::as_heads(as_view(v));

  AttentionResult<T, Rank> result;
  auto shaped = [](index_t b, index_t h, index_t rows, index_t cols) {
    if constexpr (Rank == 4)
      return Shape<4>{b, h, rows, cols};
    else
      return Shape<3>{b, rows, cols};
  };
  // Output and weights are allocated from q's and v's shapes; attention_into checks the rest.
  // Negative or mismatched batch sizes must not reach the allocation, so check those first.
  if (k4.size(0) != q4.size(0) || v4.size(0) != q4.size(0))
    throw ShapeError("heed::attention: batch sizes differ (q " + to_string(as_view(q).shape()) + ", k " +
                     to_string(as_view(k).shape()) + ", v " + to_string(as_view(v).shape()) + ")");
  // The driver writes every output element (a fully masked row too), so the output starts
  // uninitialized: zeroing it first would be a second pass over memory the tiles write anyway.
  result.output = Tensor<T, Rank>(shaped(q4.size(0), q4.size(1), q4.size(2), v4.size(3)), uninitialized);
  if (options.need_weights) result.weights = Tensor<T, Rank>(shaped(q4.size(0), q4.size(1), q4.size(2), k4.size(2)));
  attention_into(detail::as_heads(result.output.view()),
                 options.need_weights ? detail::as_heads(result.weights.view()) : TensorView<T, 4>{}, q4, k4, v4, score,
                 mask, options);
  return result;
}

/// softmax(q kᵀ / sqrt(d) + mask) · v, like torch.nn.functional.scaled_dot_product_attention
/// (with heed's typed masks: pass mask::Allowed for SDPA's boolean attn_mask).
template <TensorLike Q, TensorLike K, TensorLike V, class Mask = mask::None>
[[nodiscard]] auto scaled_dot_product_attention(const Q& q, const K& k, const V& v, const Mask& mask = {},
                                                AttentionOptions options = {}) {
  options.need_weights = false;
  return attention(q, k, v, ScaledDot{}, mask, options).output;
}

}  // namespace heed
