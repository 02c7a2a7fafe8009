#pragma once
// EncoderCall: the per-call options of the Transformer encoders, with PyTorch's names.

#include <optional>

#include "heed/core/tensor.hpp"
#include "heed/kernels/masked_rows.hpp"
#include "heed/kernels/sparse_masks.hpp"
#include "heed/nn/torch_mask.hpp"

namespace heed::nn {

/// The per-call options of TransformerEncoderLayer and TransformerEncoder (torch's forward
/// arguments mask, src_key_padding_mask and is_causal, and a sparse pattern, which torch would
/// take as a dense `mask`).
struct EncoderCall {
  /// torch's `mask` (TransformerEncoderLayer's `src_mask`; nn/torch_mask.hpp): bool, true = NOT
  /// allowed, or floating point, added; [L, L], [B·nhead, L, L] or [1, L, L]. The causal
  /// triangle (`generate_square_subsequent_mask`) runs as is_causal does.
  TorchMask mask{};
  TensorView<const bool, 2> src_key_padding_mask{};  ///< [B, L], true = padding
  bool is_causal = false;                            ///< position i attends to j <= i only
  MaskedRows masked_rows = MaskedRows::zero;         ///< MaskedRows::nan: PyTorch 1.13's fully masked rows
  /// Longformer's or BigBird's pattern over [L, L] (mask::Sparse: a window, global tokens, a
  /// block layout); combines with the padding and is_causal. Blocked tiles cost nothing.
  std::optional<mask::Sparse> sparse{};
};

}  // namespace heed::nn
