#pragma once
// DecoderCall: the per-call options of the Transformer decoders, with PyTorch's names, in the
// order of torch's forward arguments (tgt_mask, memory_mask, tgt_key_padding_mask,
// memory_key_padding_mask, tgt_is_causal).

#include "heed/core/tensor.hpp"
#include "heed/kernels/masked_rows.hpp"
#include "heed/nn/kv_cache.hpp"

namespace heed::nn {

/// The per-call options of TransformerDecoderLayer and TransformerDecoder. Bool masks follow
/// PyTorch: true = NOT allowed; a float mask goes in the *_bias fields (added to the scores).
template <class Scalar>
struct DecoderCall {
  TensorView<const bool, 3> tgt_mask{};                 ///< [1 or B·H, L, L], self-attention
  TensorView<const bool, 3> memory_mask{};              ///< [1 or B·H, L, S], cross-attention
  TensorView<const bool, 2> tgt_key_padding_mask{};     ///< [B, L] (with a cache: [B, cached + L])
  TensorView<const bool, 2> memory_key_padding_mask{};  ///< [B, S]
  bool tgt_is_causal = false;                           ///< target position i attends to j <= i only
  TensorView<const Scalar, 3> tgt_bias{};               ///< a float tgt_mask
  TensorView<const Scalar, 3> memory_bias{};            ///< a float memory_mask
  MaskedRows masked_rows = MaskedRows::zero;            ///< MaskedRows::nan: PyTorch 1.13's fully masked rows
  /// From make_cache: each call appends its target positions to the self-attention caches and
  /// attends causally over everything cached (tgt_mask and tgt_bias then do not apply); the
  /// memory is projected on the first call and reused after.
  DecoderCache<Scalar>* cache = nullptr;
};

}  // namespace heed::nn
