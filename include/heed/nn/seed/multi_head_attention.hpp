#pragma once
// seed::MultiHeadAttention: the tutorial's own multi-head attention class
// (SeedMultiHeadAttention in tests/golden/generate.py), not
// torch.nn.MultiheadAttention (that is heed::nn::MultiheadAttention). State dict: w_q, w_k, w_v,
// w_o (nn.Linear each). Its mask ([B, 1, 1, Lk] or [B, 1, Lq, Lk], 1 = keep) is applied as the
// seed applies it, masked_fill(mask == 0, -1e9): a bias of -1e9, so even a fully masked row
// matches the seed (uniform weights). Use mask::Allowed with the functional API to hide keys.

#include <string>
#include <type_traits>

#include "heed/core/tensor.hpp"
#include "heed/nn/seed/multi_head_options.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/nn/seed/detail/seed_heads.hpp"

namespace heed::nn::seed {

/// The seed's MultiHeadAttention(d_model, n_heads): see the top of this file.
template <class Scalar = float>
class MultiHeadAttention : private detail::SeedHeads<Scalar> {
  using Base = detail::SeedHeads<Scalar>;

 public:
  /// ShapeError unless d_model is a positive multiple of n_heads.
  explicit MultiHeadAttention(const MultiHeadOptions& o) : Base(o, "w_o.", "MultiHeadAttention") {}

  using Base::load;
  using Base::options;

  /// query [B, Lq, d_model], key and value [B, Lk, d_model], no mask.
  template <TensorLike Q, TensorLike K, TensorLike V>
  [[nodiscard]] MultiHeadResult<Scalar> operator()(const Q& query, const K& key, const V& value) const {
    return this->run(as_view(query), as_view(key), as_view(value), {}, MaskedRows::zero);
  }

  /// With the seed's mask: bool, 1 = keep, broadcasting to [B, H, Lq, Lk] (the seed's
  /// [B, 1, 1, Lk] or [B, 1, Lq, Lk]).
  template <TensorLike Q, TensorLike K, TensorLike V, TensorLike M>
  [[nodiscard]] MultiHeadResult<Scalar> operator()(const Q& query, const K& key, const V& value, const M& keep) const {
    static_assert(std::is_same_v<scalar_of<M>, bool>, "the seed's mask is boolean (1 = keep)");
    const auto m = as_view(keep);
    // in the scores' type (float for bfloat16 and half, where -1e9 would round to -inf)
    using A = accumulator_t<Scalar>;
    Tensor<A, rank_of<M>> bias(m.shape());
    const Tensor<bool, rank_of<M>> dense(m);
    for (index_t i = 0; i < bias.numel(); ++i) bias.data()[i] = dense.data()[i] ? A(0) : A(-1e9);
    heed::mask::Dynamic<Scalar> masks;
    masks.bias.emplace(std::move(bias));
    return this->run(as_view(query), as_view(key), as_view(value), masks, MaskedRows::zero);
  }
};

}  // namespace heed::nn::seed
