#pragma once
// MultiHeadAttention: the seed's own class (seed 000 §2.1; not torch.nn.MultiheadAttention,
// which is heed::nn::MultiheadAttention). State dict: w_q, w_k, w_v, w_o (nn.Linear each).
// Its mask ([B, 1, 1, Lk] or [B, 1, Lq, Lk], 1 = keep) is applied as the seed applies it,
// masked_fill(mask == 0, -1e9): a bias of -1e9, so even a fully masked row matches the seed
// (uniform weights). Use mask::Allowed with the functional API to hide keys instead.

#include <string>

#include "heed/nn/projected_attention.hpp"

namespace heed::nn {

template <class Scalar = float>
class MultiHeadAttention : private detail::ProjectedAttention<Scalar> {
  using Base = detail::ProjectedAttention<Scalar>;

 public:
  explicit MultiHeadAttention(const SeedAttentionOptions& o) : Base(o, "w_o.", "MultiHeadAttention") {}

  using Base::load;
  using Base::options;

  template <TensorLike Q, TensorLike K, TensorLike V>
  [[nodiscard]] SeedAttentionResult<Scalar> operator()(const Q& query, const K& key, const V& value) const {
    return this->run(as_view(query), as_view(key), as_view(value), mask::None{}, MaskedRows::zero);
  }

  /// mask: bool, 1 = keep, broadcasting to [B, H, Lq, Lk] (the seed's [B, 1, 1, Lk] or [B, 1, Lq, Lk]).
  template <TensorLike Q, TensorLike K, TensorLike V, TensorLike M>
  [[nodiscard]] SeedAttentionResult<Scalar> operator()(const Q& query, const K& key, const V& value,
                                                       const M& keep) const {
    static_assert(std::is_same_v<scalar_of<M>, bool>, "the seed's mask is boolean (1 = keep)");
    const auto m = as_view(keep);
    Tensor<Scalar, rank_of<M>> bias(m.shape());
    const Tensor<bool, rank_of<M>> dense(m);
    for (index_t i = 0; i < bias.numel(); ++i) bias.data()[i] = dense.data()[i] ? Scalar(0) : Scalar(-1e9);
    return this->run(as_view(query), as_view(key), as_view(value), mask::Bias<Scalar>{std::move(bias)},
                     MaskedRows::zero);
  }
};

}  // namespace heed::nn
