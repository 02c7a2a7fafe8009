#pragma once
// Sparse attention patterns for long sequences, beside the masks of mask.hpp:
//   mask::BlockSparse{layout, block}  bool [nbq, nbk], [H, nbq, nbk] or [B, H, nbq, nbk]: true =
//                                     query block bi may attend key block bj (blocks of `block`
//                                     positions, the last one shorter when L is not a multiple)
//   mask::GlobalTokens{tokens}        bool [L] or [B, L]: a global token attends every key and is
//                                     attended by every query (self-attention, Lq = Lk = L)
//   mask::any(a, b, ...)              visible iff visible under any of them (an AnyOf)
//   mask::Sparse{window, global, blocks}
//                                     the same union with its parts chosen at run time: what the
//                                     modules take (nn::MultiheadAttentionCall::sparse)
//   mask::bigbird_layout(nb, {...})   BigBird's block layout: window, global and random blocks
//                                     (kernels/bigbird.hpp, included here)
//
// Longformer (Beltagy et al. 2020, https://arxiv.org/abs/2004.05150) is
// any(SlidingWindow{w, w}, GlobalTokens{g}); BigBird (Zaheer et al. 2020,
// https://arxiv.org/abs/2007.14062) is BlockSparse{bigbird_layout(...), block}. A tile outside
// the pattern is blocked and costs nothing (no score, no exp, no GEMM), so the work grows with
// the visible tiles, O(L·w), not with L².
//
// A union only hides: its parts must be visibility masks (a Bias or ALiBi inside any() is a
// compile error; add biases with mask::all(mask::any(...), bias)).

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/bigbird.hpp"
#include "heed/kernels/mask.hpp"
#include "heed/kernels/tile_ref.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/kernels/detail/mask_tensor.hpp"
#include "heed/kernels/detail/mask_union.hpp"

namespace heed::mask {

/// Blocks of the score matrix: `layout` is bool [nbq, nbk], [H, nbq, nbk] or [B, H, nbq, nbk]
/// (dimensions of extent 1 broadcast), true where query block bi may attend key block bj. Block
/// bi covers queries [bi·block, (bi + 1)·block), the last block what is left; nbq = ⌈Lq / block⌉
/// and nbk = ⌈Lk / block⌉. The driver computes in tiles that fit the blocks, so a block is
/// either fully computed or skipped.
class BlockSparse {
 public:
  /// A layout bool [nbq, nbk], [H, nbq, nbk] or [B, H, nbq, nbk] of `block`-square blocks; ShapeError for block < 1.
  template <TensorLike X>
  requires std::is_same_v < scalar_of<X>,
  bool > BlockSparse(X&& layout, index_t block)
      : layout_(as_rank4(std::forward<X>(layout))),
  block_(detail::bounded(block)) {
    // (a block past any length means the same as one of 2^52, and keeps block arithmetic in range)
    if (block < 1)
      throw ShapeError("heed::mask::BlockSparse: the block size must be >= 1, got " + std::to_string(block) +
                       " (layout " + layout_.original_shape() + ")");
    if ((block_ & (block_ - 1)) == 0) shift_ = std::countr_zero(static_cast<std::uint64_t>(block_));
  }

  /// Positions per block, in both the query and the key dimension.
  [[nodiscard]] index_t block() const noexcept { return block_; }

  /// @copydoc None::check
  void check(const Shape<4>& dims) const {
    const auto fail = [&](const std::string& what) {
      throw ShapeError("heed::mask::BlockSparse: " + what + " (layout " + layout_.original_shape() + ", block " +
                       std::to_string(block_) + ", scores " + detail::scores_text(dims) + ")");
    };
    const index_t nbq = dims[2] == 0 ? 0 : (dims[2] - 1) / block_ + 1,
                  nbk = dims[3] == 0 ? 0 : (dims[3] - 1) / block_ + 1;
    const Shape<4>& s = layout_.shape();
    if (s[2] != nbq || s[3] != nbk)
      fail("the layout must have [" + std::to_string(nbq) + ", " + std::to_string(nbk) +
           "] blocks: ceil(Lq / block), ceil(Lk / block)");
    if ((s[0] != 1 && s[0] != dims[0]) || (s[1] != 1 && s[1] != dims[1]))
      fail("the layout's batch and head dimensions must be 1 or [B, H] = [" + std::to_string(dims[0]) + ", " +
           std::to_string(dims[1]) + "]");
  }
  /// Tiles inside one block each (edges dividing the block, up to 128 queries × 256 keys).
  [[nodiscard]] TileShape preferred_tiles() const noexcept {
    return {detail::tile_fitting(block_, 128), detail::tile_fitting(block_, 256)};
  }
  /// @copydoc None::classify
  [[nodiscard]] Tile classify(const TileRef& t) const noexcept {
    const index_t bi0 = block_of(t.i0), bi1 = block_of(t.i0 + t.ni - 1);
    const index_t bj0 = block_of(t.j0), bj1 = block_of(t.j0 + t.nj - 1);
    const index_t s = layout_.column_stride();
    index_t on = 0;
    for (index_t bi = bi0; bi <= bi1; ++bi) {
      const bool* row = layout_.row(t.b, t.h, bi);
      for (index_t bj = bj0; bj <= bj1; ++bj) on += row[bj * s] ? 1 : 0;
    }
    return on == 0 ? Tile::blocked : on == (bi1 - bi0 + 1) * (bj1 - bj0 + 1) ? Tile::open : Tile::partial;
  }
  /// The first key block after the tile that one of its query blocks may attend.
  [[nodiscard]] index_t next_visible_key(const TileRef& t) const noexcept {
    const index_t bi0 = block_of(t.i0), bi1 = block_of(t.i0 + t.ni - 1), from = block_of(t.j0 + t.nj - 1) + 1;
    const index_t s = layout_.column_stride();
    index_t next = layout_.shape()[3];
    for (index_t bi = bi0; bi <= bi1; ++bi) {
      const bool* row = layout_.row(t.b, t.h, bi);
      for (index_t bj = from; bj < next; ++bj)
        if (row[bj * s]) {
          next = bj;
          break;
        }
    }
    return next == layout_.shape()[3] ? no_visible_key : next * block_;
  }
  /// @copydoc None::apply
  template <class Acc>
  void apply(const TileRef& t, Acc* scores, index_t ld) const noexcept {
    const index_t s = layout_.column_stride();
    for (index_t bi = t.i0 / block_; bi * block_ < t.i0 + t.ni; ++bi) {
      const bool* row = layout_.row(t.b, t.h, bi);
      const index_t i_lo = std::max(t.i0, bi * block_) - t.i0, i_hi = std::min(t.i0 + t.ni, (bi + 1) * block_) - t.i0;
      for (index_t bj = t.j0 / block_; bj * block_ < t.j0 + t.nj; ++bj) {
        if (row[bj * s]) continue;
        const index_t j_lo = std::max(t.j0, bj * block_) - t.j0, j_hi = std::min(t.j0 + t.nj, (bj + 1) * block_) - t.j0;
        for (index_t i = i_lo; i < i_hi; ++i) detail::hide(scores + i * ld, j_lo, j_hi);
      }
    }
  }

 private:
  template <class X>
  static detail::MaskTensor<bool> as_rank4(X&& layout) {
    constexpr std::size_t rank = rank_of<X>;
    static_assert(rank >= 2 && rank <= 4, "a block layout is [nbq, nbk], [H, nbq, nbk] or [B, H, nbq, nbk]");
    if constexpr (rank == 3) {  // [H, nbq, nbk] is [1, H, nbq, nbk]
      const auto v = as_view(layout);
      const TensorView<const bool, 4> v4(v.data(), {1, v.size(0), v.size(1), v.size(2)},
                                         {0, v.stride(0), v.stride(1), v.stride(2)});
      if constexpr (!std::is_lvalue_reference_v<X>)
        return {Tensor<bool, 4>(v4), "BlockSparse"};  // own a temporary
      else
        return {v4, "BlockSparse"};
    } else {
      return {std::forward<X>(layout), "BlockSparse"};
    }
  }

  // The block holding position i: a shift for a power-of-two block (the driver classifies every
  // tile of the score matrix, blocked or not, and a 64-bit division costs more than the rest).
  [[nodiscard]] index_t block_of(index_t i) const noexcept { return shift_ >= 0 ? i >> shift_ : i / block_; }

  detail::MaskTensor<bool> layout_;
  index_t block_;
  int shift_ = -1;  // log2(block) when block is a power of two
};

/// bool [L] or [B, L], true = a global token: it attends every key and every query attends
/// it (Longformer's global attention). For self-attention: Lq = Lk = L. Alone, a non-global
/// query sees only the global keys; combine it with a window: any(SlidingWindow{w, w},
/// GlobalTokens{g}). The flags are copied (with their prefix counts, which classify a tile in
/// constant time).
class GlobalTokens {
 public:
  /// Copies the flags, bool [L] (every batch row) or [B, L].
  template <TensorLike X>
  requires std::is_same_v < scalar_of<X>,
  bool > &&(rank_of<X> == 1 || rank_of<X> == 2) GlobalTokens(const X& tokens) {  // NOLINT(google-explicit-constructor)
    const auto v = as_view(tokens);
    auto d = std::make_shared<Data>();
    if constexpr (rank_of<X> == 1) {
      d->batch = 1;
      d->length = v.size(0);
    } else {
      d->batch = v.size(0);
      d->length = v.size(1);
    }
    d->shape = to_string(v.shape());
    d->flags.resize(static_cast<std::size_t>(d->batch * d->length));
    d->prefix.resize(static_cast<std::size_t>(d->batch * (d->length + 1)));
    d->next.resize(static_cast<std::size_t>(d->batch * (d->length + 1)));
    for (index_t b = 0; b < d->batch; ++b) {
      index_t* prefix = d->prefix.data() + b * (d->length + 1);
      prefix[0] = 0;
      for (index_t i = 0; i < d->length; ++i) {
        bool flag;
        if constexpr (rank_of<X> == 1)
          flag = v(i);
        else
          flag = v(b, i);
        d->flags[static_cast<std::size_t>(b * d->length + i)] = flag ? 1 : 0;
        prefix[i + 1] = prefix[i] + (flag ? 1 : 0);
      }
      index_t* next = d->next.data() + b * (d->length + 1);
      next[d->length] = d->length;
      for (index_t i = d->length - 1; i >= 0; --i)
        next[i] = d->flags[static_cast<std::size_t>(b * d->length + i)] ? i : next[i + 1];
    }
    data_ = std::move(d);
  }

  /// @copydoc None::check
  void check(const Shape<4>& dims) const {
    if (dims[2] != data_->length || dims[3] != data_->length || (data_->batch != 1 && data_->batch != dims[0]))
      throw ShapeError("heed::mask::GlobalTokens: tokens of shape " + data_->shape + " do not fit the scores " +
                       detail::scores_text(dims) + " (they need Lq = Lk = L, and B or 1 rows)");
  }
  /// @copydoc None::classify
  [[nodiscard]] Tile classify(const TileRef& t) const noexcept {
    const index_t queries = count(t.b, t.i0, t.ni), keys = count(t.b, t.j0, t.nj);
    if (queries == t.ni || keys == t.nj) return Tile::open;
    return queries == 0 && keys == 0 ? Tile::blocked : Tile::partial;
  }
  /// A blocked tile has no global query: its queries next see the next global key.
  [[nodiscard]] index_t next_visible_key(const TileRef& t) const noexcept {
    const index_t* next = data_->next.data() + (data_->batch == 1 ? 0 : t.b) * (data_->length + 1);
    const index_t j = next[std::min(t.j0 + t.nj, data_->length)];
    return j == data_->length ? no_visible_key : j;
  }
  /// @copydoc None::apply
  template <class Acc>
  void apply(const TileRef& t, Acc* scores, index_t ld) const noexcept {
    const index_t b = data_->batch == 1 ? 0 : t.b;
    const unsigned char* flags = data_->flags.data() + b * data_->length;
    const index_t* next = data_->next.data() + b * (data_->length + 1);
    const index_t end = t.j0 + t.nj;
    for (index_t i = 0; i < t.ni; ++i) {
      if (flags[t.i0 + i]) continue;
      // a non-global row keeps the global keys only: hide the runs between them
      Acc* row = scores + i * ld;
      for (index_t j = t.j0; j < end;) {
        const index_t global = std::min(next[j], end);
        detail::hide(row, j - t.j0, global - t.j0);
        j = global + 1;
      }
    }
  }

 private:
  struct Data {
    index_t batch = 1, length = 0;
    std::string shape;                 // as the caller gave it
    std::vector<unsigned char> flags;  // [batch, length]
    std::vector<index_t> prefix;       // [batch, length + 1]: global tokens before each position
    std::vector<index_t> next;         // [batch, length + 1]: the first global token from each position (length: none)
  };
  [[nodiscard]] index_t count(index_t b, index_t first, index_t n) const noexcept {
    const index_t* prefix = data_->prefix.data() + (data_->batch == 1 ? 0 : b) * (data_->length + 1);
    return prefix[first + n] - prefix[first];
  }

  std::shared_ptr<const Data> data_;
};

/// Masks that add a bias rather than only hide keys; a union (any) cannot hold them.
template <class M>
inline constexpr bool adds_bias = false;
template <class S>
inline constexpr bool adds_bias<Bias<S>> = true;
template <>
inline constexpr bool adds_bias<ALiBi> = true;
template <class... Ms>
inline constexpr bool adds_bias<AllOf<Ms...>> = (adds_bias<Ms> || ...);

/// Visible iff visible under any of the masks. Made by mask::any(...).
template <class... Masks>
class AnyOf {
  static_assert(sizeof...(Masks) > 0, "mask::any needs at least one mask");
  static_assert(!(adds_bias<Masks> || ...),
                "mask::any combines masks that hide keys; add a Bias or ALiBi with mask::all(mask::any(...), bias)");

 public:
  /// The union of `masks` (mask::any deduces the types).
  explicit AnyOf(Masks... masks) : masks_(std::move(masks)...) {}

  /// @copydoc None::check
  void check(const Shape<4>& dims) const { detail::parts_check(*this, dims); }
  /// @copydoc None::classify
  [[nodiscard]] Tile classify(const TileRef& t) const noexcept { return detail::union_classify(*this, t); }
  /// @copydoc None::apply
  template <class Acc>
  void apply(const TileRef& t, Acc* scores, index_t ld) const noexcept {
    detail::union_apply(*this, t, scores, ld);
  }
  /// The narrowest tile any part prefers.
  [[nodiscard]] TileShape preferred_tiles() const noexcept { return detail::parts_preferred_tiles(*this); }
  /// The nearest key any part makes visible after tile t (see mask::next_visible_key).
  [[nodiscard]] index_t next_visible_key(const TileRef& t) const noexcept {
    return detail::union_next_visible_key(*this, t);
  }

  /// Calls f on every part.
  template <class F>
  void each(F&& f) const {
    std::apply([&](const auto&... m) { (f(m), ...); }, masks_);
  }

 private:
  std::tuple<Masks...> masks_;
};

/// The union of masks: `mask::any(mask::SlidingWindow{256, 256}, mask::GlobalTokens{g})` is
/// Longformer's pattern.
template <class... Masks>
[[nodiscard]] AnyOf<std::remove_cvref_t<Masks>...> any(Masks&&... masks) {
  return AnyOf<std::remove_cvref_t<Masks>...>(std::forward<Masks>(masks)...);
}

/// A sparse pattern whose parts are chosen at run time: visible iff visible under any part
/// given (a sliding window, global tokens, a block layout). One type for every combination,
/// which is what the modules take (nn::MultiheadAttentionCall::sparse, nn::EncoderCall::sparse).
/// At least one part must be given.
struct Sparse {
  std::optional<SlidingWindow> window{};  ///< a local window, or none
  std::optional<GlobalTokens> global{};   ///< global tokens, or none
  std::optional<BlockSparse> blocks{};    ///< a block layout, or none

  /// @copydoc None::check
  void check(const Shape<4>& dims) const {
    if (!window && !global && !blocks)
      throw ShapeError("heed::mask::Sparse: no part given (set window, global or blocks)");
    detail::parts_check(*this, dims);
  }
  /// @copydoc None::classify
  [[nodiscard]] Tile classify(const TileRef& t) const noexcept { return detail::union_classify(*this, t); }
  /// @copydoc None::apply
  template <class Acc>
  void apply(const TileRef& t, Acc* scores, index_t ld) const noexcept {
    detail::union_apply(*this, t, scores, ld);
  }
  /// The narrowest tile any part prefers.
  [[nodiscard]] TileShape preferred_tiles() const noexcept { return detail::parts_preferred_tiles(*this); }
  /// The nearest key any part makes visible after tile t (see mask::next_visible_key).
  [[nodiscard]] index_t next_visible_key(const TileRef& t) const noexcept {
    return detail::union_next_visible_key(*this, t);
  }
  /// Calls f on every part given.
  template <class F>
  void each(F&& f) const {
    if (window) f(*window);
    if (global) f(*global);
    if (blocks) f(*blocks);
  }
};

}  // namespace heed::mask
