#pragma once
// seed::CrossAttention: the tutorial's cross-attention (SeedProjected in tests/golden/generate.py): Q from the target
// sequence, K and V from the source, so Lq ≠ Lk. State dict: w_q, w_k, w_v, out_proj. The seed's optional mask hides
// keys where mask == 0 (with -inf): heed's mask::Allowed. A fully masked row is NaN in PyTorch; heed gives zeros unless
// MaskedRows::nan is asked for.

#include <string>

#include "heed/core/tensor.hpp"
#include "heed/nn/seed/multi_head_options.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/nn/seed/detail/seed_heads.hpp"

namespace heed::nn::seed {

/// The seed's CrossAttention(d_model, n_heads): see the top of this file.
template <class Scalar = float>
class CrossAttention : private detail::SeedHeads<Scalar> {
  using Base = detail::SeedHeads<Scalar>;

 public:
  /// ShapeError unless d_model is a positive multiple of n_heads.
  explicit CrossAttention(const MultiHeadOptions& o) : Base(o, "out_proj.", "CrossAttention") {}

  using Base::load;
  using Base::options;

  /// target [B, Lt, d_model], source [B, Ls, d_model] → output [B, Lt, d_model], weights [B, H, Lt, Ls]
  template <TensorLike T, TensorLike S>
  [[nodiscard]] MultiHeadResult<Scalar> operator()(const T& target, const S& source) const {
    const auto s = as_view(source);
    return this->run(as_view(target), s, s, {}, MaskedRows::zero);
  }

  /// With the seed's mask: bool, true = may attend, [Lt, Ls] or broadcasting to [B, H, Lt, Ls].
  template <TensorLike T, TensorLike S, TensorLike M>
  [[nodiscard]] MultiHeadResult<Scalar> operator()(const T& target, const S& source, const M& allowed,
                                                   MaskedRows masked_rows = MaskedRows::zero) const {
    const auto s = as_view(source);
    heed::mask::Dynamic<Scalar> masks;
    masks.allowed.emplace(allowed);
    return this->run(as_view(target), s, s, masks, masked_rows);
  }
};

}  // namespace heed::nn::seed
