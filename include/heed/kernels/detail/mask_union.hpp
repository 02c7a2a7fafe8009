#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "heed/core/shape.hpp"
#include "heed/kernels/mask_policy.hpp"
#include "heed/kernels/tile_ref.hpp"
#include "heed/kernels/detail/mask_parts.hpp"
#include "heed/kernels/detail/mask_tensor.hpp"
#include "heed/simd/vector_ops.hpp"

// What the sparse masks of kernels/sparse_masks.hpp share: the tile edge that fits a block, and
// the union of visibility masks behind mask::AnyOf and mask::Sparse (checks and preferred
// tiles as any mask of parts: mask_parts.hpp).
namespace heed::detail {

// The largest tile edge up to `most` that divides `block` (so that tiles never straddle two
// blocks), or `most` when block has no divisor from 16 up.
constexpr index_t tile_fitting(index_t block, index_t most) noexcept {
  for (index_t t = std::min(block, most); t >= 16; --t)
    if (block % t == 0) return t;
  return std::min(block, most);
}

// What a union of visibility masks does, for AnyOf and Sparse: u.each(f) calls f on every part.
// A tile is open when any part opens it, blocked when every part blocks it; on a partial tile
// an element stays visible when any part that does not block the tile shows it.
template <class U>
mask::Tile union_classify(const U& u, const TileRef& t) noexcept {
  bool open = false, all_blocked = true;
  u.each([&](const auto& m) {
    const mask::Tile k = m.classify(t);
    open = open || k == mask::Tile::open;
    all_blocked = all_blocked && k == mask::Tile::blocked;
  });
  return open ? mask::Tile::open : all_blocked ? mask::Tile::blocked : mask::Tile::partial;
}

template <class U, class T>
void union_apply(const U& u, const TileRef& t, T* scores, index_t ld) noexcept {
  // Usually one part reaches the tile (a window tile far from every global token): it applies
  // itself, as it would alone.
  int reaching = 0;
  u.each([&](const auto& m) { reaching += m.classify(t) == mask::Tile::blocked ? 0 : 1; });
  if (reaching == 1) {
    u.each([&](const auto& m) {
      if (m.classify(t) != mask::Tile::blocked) m.apply(t, scores, ld);
    });
    return;
  }
  // Otherwise each reaching part marks what it hides with -inf on a zeroed tile of its own, and
  // shown keeps the largest mark of each element: 0 where some part shows it, -inf where every
  // part hides it. The buffers are the worker thread's, grown once; fills and maxima run on
  // simd's vector ops (per-element branches on thread-local vectors took 6% of Longformer's
  // time: docs/decisions.md, "Longformer's partial tiles, on an Intel Xeon").
  thread_local std::vector<T> part_buffer;
  thread_local std::vector<T> shown_buffer;
  const index_t n = t.ni * t.nj;
  if (part_buffer.size() < static_cast<std::size_t>(n)) part_buffer.resize(static_cast<std::size_t>(n));
  if (shown_buffer.size() < static_cast<std::size_t>(n)) shown_buffer.resize(static_cast<std::size_t>(n));
  T* const part = part_buffer.data();
  T* const shown = shown_buffer.data();
  simd::fill(shown, n, minus_inf<T>);
  u.each([&](const auto& m) {
    if (m.classify(t) == mask::Tile::blocked) return;
    simd::fill(part, n, T(0));
    m.apply(t, part, t.nj);
    simd::maximum(part, shown, n);
  });
  // A hidden element becomes -inf whatever its score (a NaN or +inf score too, as torch's masked_fill).
  for (index_t i = 0; i < t.ni; ++i) {
    T* const row = scores + i * ld;
    const T* const row_shown = shown + i * t.nj;
    for (index_t j = 0; j < t.nj; ++j) row[j] = row_shown[j] == T(0) ? row[j] : minus_inf<T>;
  }
}

// A blocked union resumes at the nearest resumption of its parts (each of which blocks the tile).
template <class U>
index_t union_next_visible_key(const U& u, const TileRef& t) noexcept {
  index_t next = mask::no_visible_key;
  u.each([&](const auto& m) { next = std::min(next, mask::next_visible_key(m, t)); });
  return next;
}

}  // namespace heed::detail
