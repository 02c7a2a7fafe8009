#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "heed/core/shape.hpp"
#include "heed/kernels/mask_policy.hpp"
#include "heed/kernels/tile_ref.hpp"

// What the masks made of other masks share: an intersection (mask::AllOf, mask::Dynamic) and a
// union (mask::AnyOf, mask::Sparse, in mask_union.hpp). Each is written against u.each(f), which
// calls f on every part that is present.
namespace heed::detail {

template <class U>
void parts_check(const U& u, const Shape<4>& dims) {
  u.each([&](const auto& m) { m.check(dims); });
}

// The smallest preference of the parts, dimension by dimension.
template <class U>
TileShape parts_preferred_tiles(const U& u) noexcept {
  TileShape shape;
  u.each([&](const auto& m) { mask::merge_preference(shape, m); });
  return shape;
}

// An intersection: a key is visible iff every part shows it. A tile is blocked when some part
// blocks it, open when every part opens it; on a partial tile each part that does not open it
// applies itself.
template <class U>
mask::Tile intersection_classify(const U& u, const TileRef& t) noexcept {
  bool all_open = true, blocked = false;
  u.each([&](const auto& m) {
    const mask::Tile k = m.classify(t);
    all_open = all_open && k == mask::Tile::open;
    blocked = blocked || k == mask::Tile::blocked;
  });
  return blocked ? mask::Tile::blocked : all_open ? mask::Tile::open : mask::Tile::partial;
}

template <class U, class T>
void intersection_apply(const U& u, const TileRef& t, T* scores, index_t ld) noexcept {
  u.each([&](const auto& m) {
    if (m.classify(t) != mask::Tile::open) m.apply(t, scores, ld);
  });
}

// A blocked intersection resumes at the furthest resumption of the parts that block the tile:
// each hides everything before its own.
template <class U>
index_t intersection_next_visible_key(const U& u, const TileRef& t) noexcept {
  index_t next = t.j0 + t.nj;
  u.each([&](const auto& m) {
    if (m.classify(t) == mask::Tile::blocked) next = std::max(next, mask::next_visible_key(m, t));
  });
  return next;
}

}  // namespace heed::detail
