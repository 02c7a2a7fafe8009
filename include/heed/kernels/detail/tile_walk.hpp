#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <algorithm>

#include "heed/core/shape.hpp"
#include "heed/kernels/attention_options.hpp"
#include "heed/kernels/mask.hpp"
#include "heed/kernels/tile_ref.hpp"

// How the attention driver (attention_tiles.hpp) walks the key tiles of one query tile: the tile
// shape, the visited tiles in key order, and the spans it computes them in.
namespace heed::detail {

inline constexpr index_t default_block_q = 96;
inline constexpr index_t default_block_k = 256;
inline constexpr index_t max_span_keys = 512;  // visited tiles in a row are computed as one span...
inline constexpr index_t max_span_tiles = 16;  // ...of at most this many keys and tiles

// The tile the general loop computes in: the call's block_q/block_k, else the mask's preference,
// else the defaults (benchmarks use it to count the tiles a call visits).
template <class Mask>
TileShape chosen_tiles(const Mask& mask, const AttentionOptions& options) noexcept {
  TileShape preferred;
  mask::merge_preference(preferred, mask);
  return {options.block_q > 0     ? options.block_q
          : preferred.block_q > 0 ? preferred.block_q
                                  : default_block_q,
          options.block_k > 0     ? options.block_k
          : preferred.block_k > 0 ? preferred.block_k
                                  : default_block_k};
}

// One query tile: rows [i0, i0 + ni) of (batch b, query head h), which reads key/value head hk.
struct QueryTile {
  index_t b, h, hk, i0, ni;

  // its tile over keys [j0, j0 + nj)
  [[nodiscard]] TileRef keys(index_t j0, index_t nj) const noexcept { return TileRef{b, h, i0, ni, j0, nj, hk}; }
};

// The key tiles (of bk keys, Lk in all) query tile q visits, in key order, at most `most` of
// them, with their kinds (open or partial) where `kinds` is not null. A blocked tile is skipped;
// a mask that knows where its next visible key is lets the walk jump there.
template <class Mask>
index_t visited_tiles(const Mask& mask, const QueryTile& q, index_t bk, index_t Lk, index_t* ids, mask::Tile* kinds,
                      index_t most) noexcept {
  const index_t k_tiles = (Lk + bk - 1) / bk;
  index_t count = 0;
  for (index_t jt = 0; jt < k_tiles && count < most;) {
    const TileRef tile = q.keys(jt * bk, std::min(bk, Lk - jt * bk));
    const mask::Tile kind = mask.classify(tile);
    if (kind == mask::Tile::blocked) {
      jt = std::max(jt + 1, std::min(k_tiles, mask::next_visible_key(mask, tile) / bk));
      continue;
    }
    if (kinds) kinds[count] = kind;
    ids[count++] = jt++;
  }
  return count;
}

// Visited key tiles computed as one: their scores side by side in S (`keys` columns), one
// softmax update per row and one pass over O for all of them. Blocked tiles may lie between
// them; the span's runs are its stretches of consecutive tiles, scored and multiplied by V run
// by run. Only the tile at the end of the keys can be short, and it is then the span's last.
struct KeySpan {
  index_t runs = 0;                    // stretches of consecutive tiles
  index_t first_tile[max_span_tiles];  // run r: tiles [first_tile[r], + tiles[r])...
  index_t tiles[max_span_tiles];
  index_t col[max_span_tiles];  // ...whose scores start at column col[r] of S
  index_t keys = 0;             // columns of S: the span's keys
  index_t bk = 0, Lk = 0;

  // The span of `count` visited tiles `ids` (in key order).
  KeySpan(const index_t* ids, index_t count, index_t block_k, index_t key_count) noexcept : bk(block_k), Lk(key_count) {
    for (index_t u = 0; u < count; ++u) {
      if (runs > 0 && first_tile[runs - 1] + tiles[runs - 1] == ids[u]) {
        ++tiles[runs - 1];
      } else {
        first_tile[runs] = ids[u];
        tiles[runs++] = 1;
      }
    }
    keys = (count - 1) * bk + std::min(bk, Lk - ids[count - 1] * bk);
    for (index_t r = 0, c = 0; r < runs; c += tiles[r++] * bk) col[r] = c;
  }
  // run r's first key and its number of keys
  [[nodiscard]] index_t key(index_t r) const noexcept { return first_tile[r] * bk; }
  [[nodiscard]] index_t run_keys(index_t r) const noexcept { return std::min(tiles[r] * bk, Lk - key(r)); }
};

}  // namespace heed::detail
