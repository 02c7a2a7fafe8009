#pragma once
// seed::SelfAttention: the tutorial's multi-head self-attention with an optional causal mask
// (its PyTorch class: SeedProjected in tests/golden/generate.py; docs/design.md names the seeds). Q, K and V all come
// from x. State dict: w_q, w_k, w_v, out_proj. `causal` hides future positions with -inf (torch.triu(..., diagonal=1)),
// as the seed does.

#include <string>

#include "heed/core/tensor.hpp"
#include "heed/nn/seed/multi_head_options.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/nn/seed/detail/seed_heads.hpp"

namespace heed::nn::seed {

/// The per-call options of SelfAttention.
struct SelfAttentionCall {
  bool causal = false;                        ///< position i attends to j <= i only
  MaskedRows masked_rows = MaskedRows::zero;  ///< (a causal row always sees itself)
};

/// The seed's SelfAttention(d_model, n_heads): see the top of this file.
template <class Scalar = float>
class SelfAttention : private detail::SeedHeads<Scalar> {
  using Base = detail::SeedHeads<Scalar>;

 public:
  /// ShapeError unless d_model is a positive multiple of n_heads.
  explicit SelfAttention(const MultiHeadOptions& o) : Base(o, "out_proj.", "SelfAttention") {}

  using Base::load;
  using Base::options;

  /// x [B, L, d_model] → output [B, L, d_model], weights [B, H, L, L]:
  /// `sa(x)` or `sa(x, {.causal = true})`.
  template <TensorLike X>
  [[nodiscard]] MultiHeadResult<Scalar> operator()(const X& x, const SelfAttentionCall& call = {}) const {
    const auto v = as_view(x);
    heed::mask::Dynamic<Scalar> masks;
    if (call.causal) masks.causal.emplace();
    return this->run(v, v, v, masks, call.masked_rows);
  }
};

}  // namespace heed::nn::seed
