#pragma once
// EncoderCall: the per-call options of the Transformer encoders, with PyTorch's names.

#include "heed/core/tensor.hpp"
#include "heed/kernels/masked_rows.hpp"

namespace heed::nn {

/// The per-call options of TransformerEncoderLayer and TransformerEncoder (torch's forward
/// arguments src_key_padding_mask and is_causal).
struct EncoderCall {
  TensorView<const bool, 2> src_key_padding_mask{};  ///< [B, L], true = padding
  bool is_causal = false;                            ///< position i attends to j <= i only
  MaskedRows masked_rows = MaskedRows::zero;
};

}  // namespace heed::nn
