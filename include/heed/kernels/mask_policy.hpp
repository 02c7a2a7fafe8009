#pragma once
// What the attention driver asks of a mask (the MaskPolicy concept), the three answers a mask
// gives about a tile, and the two optional questions (the tile it prefers, where the next
// visible key is). The masks themselves are in mask.hpp, sparse_masks.hpp and dynamic_mask.hpp.

#include <algorithm>
#include <concepts>
#include <limits>

#include "heed/core/shape.hpp"
#include "heed/kernels/tile_ref.hpp"

namespace heed::mask {

/// What a mask says of one tile: nothing masked, everything masked (the driver skips it), or
/// some of it (apply() runs).
enum class Tile { open, blocked, partial };

/// What the driver needs of a mask. `check` validates against {B, H, Lq, Lk} and throws
/// ShapeError; `classify` and `apply` are hot and check nothing. `scores` is the tile's
/// row-major [ni, nj] block with leading dimension `ld`. A mask may also offer
/// `TileShape preferred_tiles() const`, the tile it would rather be computed in, and
/// `index_t next_visible_key(const TileRef&) const`, where to resume after a tile it blocks
/// (mask::next_visible_key below).
template <class M, class T>
concept MaskPolicy = requires(const M& m, const Shape<4>& dims, const TileRef& t, T* scores, index_t ld) {
  m.check(dims);
  { m.classify(t) } -> std::same_as<Tile>;
  m.apply(t, scores, ld);
};

/// `shape` narrowed to what mask `m` prefers, if it says (0 in a dimension: no preference).
template <class M>
void merge_preference(TileShape& shape, const M& m) noexcept {
  if constexpr (requires { m.preferred_tiles(); }) {
    const TileShape p = m.preferred_tiles();
    const auto narrow = [](index_t& have, index_t want) {
      if (want > 0 && (have == 0 || want < have)) have = want;
    };
    narrow(shape.block_q, p.block_q);
    narrow(shape.block_k, p.block_k);
  }
}

/// What next_visible_key returns when no key after the tile is visible to its queries.
inline constexpr index_t no_visible_key = std::numeric_limits<index_t>::max();

/// Where the driver resumes after tile t, which `m` blocks: a key position p >= t.j0 + t.nj such
/// that no query of t sees a key in [t.j0, p). A mask that knows where its next visible key is
/// says so with a member `index_t next_visible_key(const TileRef&) const` (no_visible_key: none
/// further), and the driver skips the tiles between unclassified (a 64-key block layout over
/// 65536 keys would otherwise classify 1024 tiles per query tile to visit eight); for the rest
/// it resumes at the next tile.
template <class M>
[[nodiscard]] index_t next_visible_key(const M& m, const TileRef& t) noexcept {
  if constexpr (requires {
                  { m.next_visible_key(t) } -> std::same_as<index_t>;
                })
    return std::max(m.next_visible_key(t), t.j0 + t.nj);
  else
    return t.j0 + t.nj;
}

}  // namespace heed::mask
