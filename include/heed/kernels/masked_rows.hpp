#pragma once
// MaskedRows: what a row with nothing to attend to becomes, in softmax and in attention.

namespace heed {

/// What a fully masked row (every score -inf) becomes.
enum class MaskedRows {
  zero,  ///< zeros: the row attends to nothing (default)
  nan,   ///< NaN, as PyTorch 1.13's softmax and attention produce
};

}  // namespace heed
