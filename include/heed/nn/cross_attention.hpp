#pragma once
// CrossAttention: the seed's cross-attention (seed 000 §3.2): Q from the target sequence,
// K and V from the source, so Lq ≠ Lk. State dict: w_q, w_k, w_v, out_proj. The seed's
// optional mask hides keys where mask == 0 (with -inf): heed's mask::Allowed. A fully
// masked row is NaN in PyTorch; heed gives zeros unless MaskedRows::nan is asked for.

#include <string>

#include "heed/nn/projected_attention.hpp"

namespace heed::nn {

template <class Scalar = float>
class CrossAttention : private detail::ProjectedAttention<Scalar> {
  using Base = detail::ProjectedAttention<Scalar>;

 public:
  explicit CrossAttention(const SeedAttentionOptions& o) : Base(o, "out_proj.", "CrossAttention") {}

  using Base::load;
  using Base::options;

  /// target [B, Lt, d_model], source [B, Ls, d_model] → output [B, Lt, d_model], weights [B, H, Lt, Ls]
  template <TensorLike T, TensorLike S>
  [[nodiscard]] SeedAttentionResult<Scalar> operator()(const T& target, const S& source) const {
    const auto s = as_view(source);
    return this->run(as_view(target), s, s, mask::None{}, MaskedRows::zero);
  }

  /// With the seed's mask: bool, true = may attend, [Lt, Ls] or broadcasting to [B, H, Lt, Ls].
  template <TensorLike T, TensorLike S, TensorLike M>
  [[nodiscard]] SeedAttentionResult<Scalar> operator()(const T& target, const S& source, const M& allowed,
                                                       MaskedRows masked_rows = MaskedRows::zero) const {
    const auto s = as_view(source);
    return this->run(as_view(target), s, s, mask::Allowed{allowed}, masked_rows);
  }
};

}  // namespace heed::nn
