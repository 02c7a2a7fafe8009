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
  // Otherwise shown[e] = 1 where some part shows element e: each part marks what it hides with
  // -inf on a zeroed tile of its own (the buffers are the worker thread's, grown once).
  thread_local std::vector<T> part;
  thread_local std::vector<unsigned char> shown;
  const auto n = static_cast<std::size_t>(t.ni * t.nj);
  if (part.size() < n) part.resize(n);
  if (shown.size() < n) shown.resize(n);
  std::fill_n(shown.begin(), n, static_cast<unsigned char>(0));
  u.each([&](const auto& m) {
    if (m.classify(t) == mask::Tile::blocked) return;
    std::fill_n(part.begin(), n, T(0));
    m.apply(t, part.data(), t.nj);
    for (std::size_t e = 0; e < n; ++e)
      if (part[e] == T(0)) shown[e] = 1;
  });
  for (index_t i = 0; i < t.ni; ++i)
    for (index_t j = 0; j < t.nj; ++j)
      if (!shown[static_cast<std::size_t>(i * t.nj + j)]) scores[i * ld + j] = minus_inf<T>;
}

// A blocked union resumes at the nearest resumption of its parts (each of which blocks the tile).
template <class U>
index_t union_next_visible_key(const U& u, const TileRef& t) noexcept {
  index_t next = mask::no_visible_key;
  u.each([&](const auto& m) { next = std::min(next, mask::next_visible_key(m, t)); });
  return next;
}

}  // namespace heed::detail
