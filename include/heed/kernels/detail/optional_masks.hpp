#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <optional>
#include <vector>

#include "heed/core/scalar.hpp"
#include "heed/kernels/mask.hpp"
#include "heed/kernels/sparse_masks.hpp"

namespace heed::detail {

// Causal with an offset per batch row: query i of row b sees key j iff j <= i + offsets[b]. A
// KV cache whose rows hold different lengths attends this way (kernels/mask.hpp's Causal is the
// same with one offset for every row).
struct RowCausal {
  std::vector<index_t> offsets;

  void check(const Shape<4>&) const noexcept {}
  [[nodiscard]] TileShape preferred_tiles() const noexcept { return mask::Causal{}.preferred_tiles(); }
  [[nodiscard]] mask::Tile classify(const TileRef& t) const noexcept {
    return mask::Causal{offsets[static_cast<std::size_t>(t.b)]}.classify(t);
  }
  template <class T>
  void apply(const TileRef& t, T* scores, index_t ld) const noexcept {
    mask::Causal{offsets[static_cast<std::size_t>(t.b)]}.apply(t, scores, ld);
  }
};

// The masks a module may combine in one call (a causal triangle, one with an offset per batch
// row, key padding, a boolean or a float attn_mask, a sparse pattern), each present or not, decided at run time: one
// mask type, so one copy of the driver per scalar type serves every combination (mask::all would make one per
// combination). Classifying a tile costs a branch per absent part, which is nothing beside the tile's GEMMs.
template <class Scalar>
struct OptionalMasks {
  std::optional<mask::Causal> causal;
  std::optional<RowCausal> row_causal;
  std::optional<mask::KeyPadding> padding;
  std::optional<mask::Allowed> allowed;
  std::optional<mask::Bias<accumulator_t<Scalar>>> bias;  // in the scores' type: -1e9 stays -1e9 for half
  std::optional<mask::Sparse> sparse;  // a union of its own parts; visible iff it and the rest show a key

  void check(const Shape<4>& dims) const {
    each([&](const auto& m) { m.check(dims); });
  }
  [[nodiscard]] mask::Tile classify(const TileRef& t) const noexcept {
    bool all_open = true, blocked = false;
    each([&](const auto& m) {
      const mask::Tile k = m.classify(t);
      all_open = all_open && k == mask::Tile::open;
      blocked = blocked || k == mask::Tile::blocked;
    });
    return blocked ? mask::Tile::blocked : all_open ? mask::Tile::open : mask::Tile::partial;
  }
  [[nodiscard]] TileShape preferred_tiles() const noexcept {
    TileShape shape;
    each([&](const auto& m) { mask::merge_preference(shape, m); });
    return shape;
  }
  template <class T>
  void apply(const TileRef& t, T* scores, index_t ld) const noexcept {
    each([&](const auto& m) {
      if (m.classify(t) != mask::Tile::open) m.apply(t, scores, ld);
    });
  }

 private:
  template <class F>
  void each(F&& f) const {
    if (causal) f(*causal);
    if (row_causal) f(*row_causal);
    if (padding) f(*padding);
    if (allowed) f(*allowed);
    if (bias) f(*bias);
    if (sparse) f(*sparse);
  }
};

}  // namespace heed::detail
