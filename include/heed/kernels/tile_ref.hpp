#pragma once
// TileRef: how the attention driver names one tile of the score matrix to its policies.

#include "heed/core/shape.hpp"

namespace heed {

/// One tile of the score matrix of batch b and query head h: query rows [i0, i0 + ni), key
/// columns [j0, j0 + nj). The driver hands it to score and mask policies alike. With grouped
/// heads (Hkv key/value heads for Hq query heads), query head h reads key/value head
/// hk = h / (Hq / Hkv), which the driver computes once per query tile; without them hk == h.
/// Set every field: `{b, h, i0, ni, j0, nj, hk}` (a compiler's missing-initializer warning
/// names a TileRef built without hk).
struct TileRef {
  index_t b;   ///< batch index
  index_t h;   ///< query head
  index_t i0;  ///< first query row
  index_t ni;  ///< number of query rows
  index_t j0;  ///< first key column
  index_t nj;  ///< number of key columns
  index_t hk;  ///< the key/value head query head h reads (h itself without grouped heads)
};

/// The tile a mask would rather be computed in (0: no preference), which the driver uses unless
/// the caller sets AttentionOptions::block_q / block_k: a causal mask wants tiles small enough
/// that little of the diagonal is computed and then masked.
struct TileShape {
  index_t block_q = 0;  ///< query rows per tile (0: no preference)
  index_t block_k = 0;  ///< key columns per tile (0: no preference)
};

}  // namespace heed
