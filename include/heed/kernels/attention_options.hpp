#pragma once
// The options of heed::attention and attention_into, and the tile counts they can report.

#include "heed/core/shape.hpp"
#include "heed/kernels/masked_rows.hpp"

namespace heed {

/// Tiles the driver visited, by what the mask said of them (for tests and tuning).
struct AttentionStats {
  index_t open = 0;     ///< visited with no mask applied
  index_t partial = 0;  ///< visited, with the mask applied to the scores
  index_t blocked = 0;  ///< skipped: no scores, no exp, no GEMM
};

/// Per-call options of the attention driver.
struct AttentionOptions {
  bool need_weights = false;                  ///< also return the probabilities [B, H, Lq, Lk]
  MaskedRows masked_rows = MaskedRows::zero;  ///< a fully masked row gives 0 (default) or NaN (PyTorch 1.13)
  int num_threads = 0;                        ///< 0: heed::num_threads(); at most heed::max_threads are used
  // (a tile larger than the call's rows or keys is cut to them: block sizes past any length work)
  index_t block_q = 0;              ///< query rows per tile; 0: the mask's preference, else 96
  index_t block_k = 0;              ///< keys per tile; 0: the mask's preference, else 256
  AttentionStats* stats = nullptr;  ///< when set, receives the tile counts
};

}  // namespace heed
