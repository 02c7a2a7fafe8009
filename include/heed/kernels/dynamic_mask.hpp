#pragma once
// mask::Dynamic, the masks a module assembles at run time in one type, and mask::CausalPerRow,
// the causal mask of a KV cache whose batch rows hold different lengths.
//
//   mask::Dynamic<float> masks;
//   masks.causal = mask::Causal{};
//   masks.padding.emplace(key_padding_mask);        // bool [B, Lk], true = padding
//   heed::attention(q, k, v, heed::ScaledDot{}, masks);
//
// Every part is optional and a key is visible iff every present part shows it, as mask::all
// would make it; but one type serves every combination, so one copy of the driver per scalar
// type runs them all (mask::all makes a type, and a driver, per combination). A tile costs a
// branch per absent part to classify, nothing beside its products; blocked tiles are skipped
// and blocked runs jumped over (next_visible_key) as with the parts alone.

#include <optional>
#include <string>
#include <vector>

#include "heed/core/error.hpp"
#include "heed/core/scalar.hpp"
#include "heed/core/shape.hpp"
#include "heed/kernels/mask.hpp"
#include "heed/kernels/mask_policy.hpp"
#include "heed/kernels/sparse_masks.hpp"
#include "heed/kernels/tile_ref.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/kernels/detail/mask_parts.hpp"

namespace heed::mask {

/// Causal with an offset per batch row: query i of row b sees key j iff j <= i + offsets[b]
/// (Causal is the same with one offset for every row). A KV cache whose rows hold different
/// lengths attends this way.
struct CausalPerRow {
  std::vector<index_t> offsets;  ///< one per batch row

  /// ShapeError unless there is an offset for each of the B batch rows.
  void check(const Shape<4>& dims) const {
    if (static_cast<index_t>(offsets.size()) != dims[0])
      throw ShapeError("heed::mask::CausalPerRow: " + std::to_string(offsets.size()) + " offsets for the scores " +
                       to_string(dims) + " (one per batch row)");
  }
  /// Causal's tiles.
  [[nodiscard]] TileShape preferred_tiles() const noexcept { return Causal{}.preferred_tiles(); }
  /// @copydoc None::classify
  [[nodiscard]] Tile classify(const TileRef& t) const noexcept { return row(t).classify(t); }
  /// @copydoc Causal::next_visible_key
  [[nodiscard]] index_t next_visible_key(const TileRef&) const noexcept { return no_visible_key; }
  /// @copydoc None::apply
  template <class Acc>
  void apply(const TileRef& t, Acc* scores, index_t ld) const noexcept {
    row(t).apply(t, scores, ld);
  }

 private:
  [[nodiscard]] Causal row(const TileRef& t) const noexcept { return Causal{offsets[static_cast<std::size_t>(t.b)]}; }
};

/// The intersection of the masks present, chosen at run time: a key is visible iff every part
/// shows it. Scalar is the tensors' scalar type (a bias is kept in its accumulator type, so that
/// -1e9 stays -1e9 for half).
template <class Scalar = float>
struct Dynamic {
  std::optional<Causal> causal;                     ///< a causal triangle
  std::optional<CausalPerRow> causal_per_row;       ///< a causal triangle per batch row
  std::optional<KeyPadding> padding;                ///< key padding, true = never attended
  std::optional<Allowed> allowed;                   ///< a boolean mask, true = may attend
  std::optional<Bias<accumulator_t<Scalar>>> bias;  ///< added to the scores
  std::optional<Sparse> sparse;                     ///< a sparse pattern (itself a union of its parts)

  /// Checks every present part against the scores' {B, H, Lq, Lk}.
  void check(const Shape<4>& dims) const { detail::parts_check(*this, dims); }
  /// Blocked when a part blocks the tile, open when every part opens it.
  [[nodiscard]] Tile classify(const TileRef& t) const noexcept { return detail::intersection_classify(*this, t); }
  /// Each part that does not open the tile applies itself.
  template <class Acc>
  void apply(const TileRef& t, Acc* scores, index_t ld) const noexcept {
    detail::intersection_apply(*this, t, scores, ld);
  }
  /// The smallest preference of the parts, dimension by dimension.
  [[nodiscard]] TileShape preferred_tiles() const noexcept { return detail::parts_preferred_tiles(*this); }
  /// The furthest resumption of the parts that block the tile.
  [[nodiscard]] index_t next_visible_key(const TileRef& t) const noexcept {
    return detail::intersection_next_visible_key(*this, t);
  }
  /// Calls f on every present part.
  template <class F>
  void each(F&& f) const {
    if (causal) f(*causal);
    if (causal_per_row) f(*causal_per_row);
    if (padding) f(*padding);
    if (allowed) f(*allowed);
    if (bias) f(*bias);
    if (sparse) f(*sparse);
  }
};

}  // namespace heed::mask
