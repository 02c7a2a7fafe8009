#pragma once
// SelfAttention: the seed's multi-head self-attention with an optional causal mask (seed 000
// §3.1). Q, K and V all come from x. State dict: w_q, w_k, w_v, out_proj. `causal` hides
// future positions with -inf (torch.triu(..., diagonal=1)), as the seed does.

#include <string>

#include "heed/nn/projected_attention.hpp"

namespace heed::nn {

template <class Scalar = float>
class SelfAttention : private detail::ProjectedAttention<Scalar> {
  using Base = detail::ProjectedAttention<Scalar>;

 public:
  explicit SelfAttention(const SeedAttentionOptions& o) : Base(o, "out_proj.", "SelfAttention") {}

  using Base::load;
  using Base::options;

  /// x [B, L, d_model] → output [B, L, d_model], weights [B, H, L, L]
  template <TensorLike X>
  [[nodiscard]] SeedAttentionResult<Scalar> operator()(const X& x, bool causal = false) const {
    const auto v = as_view(x);
    if (causal) return this->run(v, v, v, mask::Causal{}, MaskedRows::zero);
    return this->run(v, v, v, mask::None{}, MaskedRows::zero);
  }
};

}  // namespace heed::nn
