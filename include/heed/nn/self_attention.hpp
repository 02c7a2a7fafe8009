#pragma once
// SelfAttention: the seed's multi-head self-attention with an optional causal mask (seed 000
// §3.1). Q, K and V all come from x. State dict: w_q, w_k, w_v, out_proj. `causal` hides
// future positions with -inf (torch.triu(..., diagonal=1)), as the seed does.

#include <string>

#include "heed/nn/projected_attention.hpp"

namespace heed::nn {

template <class Scalar = float>
class SelfAttention {
 public:
  explicit SelfAttention(const SeedAttentionOptions& o) : impl_(o, "out_proj.", "SelfAttention") {}

  template <WeightSource S>
  void load(const Loader<S>& from) {
    impl_.load(from);
  }
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions options = {}) {
    load_module(*this, source, prefix, options);
  }

  /// x [B, L, d_model] → output [B, L, d_model], weights [B, H, L, L]
  template <TensorLike X>
  [[nodiscard]] SeedAttentionResult<Scalar> operator()(const X& x, bool causal = false) const {
    const auto v = as_view(x);
    if (causal) return impl_.run(v, v, v, mask::Causal{}, MaskedRows::zero);
    return impl_.run(v, v, v, mask::None{}, MaskedRows::zero);
  }

 private:
  detail::ProjectedAttention<Scalar> impl_;
};

}  // namespace heed::nn
