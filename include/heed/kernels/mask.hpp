#pragma once
// Mask policies for the attention driver. Each is named by what `true` means, so no caller
// has to remember a convention:
//   mask::None                    every key visible
//   mask::Causal{offset}          query i sees key j iff j <= i + offset (offset 0: torch's
//                                 is_causal, top-left; offset = Lk - Lq: bottom-right, decoding)
//   mask::SlidingWindow{l, r}     query i sees keys [i + offset - l, i + offset + r]
//   mask::KeyPadding{ignore}      bool [B, Lk], true = padding, never attended
//   mask::Allowed{allowed}        bool, true = may attend ([Lq, Lk] or [B|1, H|1, Lq|1, Lk|1])
//   mask::Bias{bias}              float added to the scores (relative positions, -inf)
//   mask::ALiBi{slopes, offset}   slope_h · (j - i - offset) added, computed per tile (Press et
//                                 al. 2021); heed::alibi_slopes(H) gives BLOOM's slopes
//                                 (kernels/alibi.hpp, included here)
//   mask::all(a, b, ...)          visible iff visible under every one (an AllOf)
// and, for long sequences, in sparse_masks.hpp: BlockSparse, GlobalTokens, any(...) (the union),
// Sparse and bigbird_layout.
//
// A mask classifies each (query tile, key tile) as open (nothing to do), blocked (every
// score masked: the driver skips the tile entirely, no GEMM and no exp) or partial (apply()
// writes -inf or adds the bias). Causal and sliding-window masks are classified from the
// indices alone, which is what makes causal attention about half the work and sliding-window
// attention O(L·w).
//
// Masks built from tensors hold a view of them; built from a temporary Tensor they own it.

#include <algorithm>
#include <cmath>
#include <concepts>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/alibi.hpp"
#include "heed/kernels/mask_policy.hpp"
#include "heed/kernels/tile_ref.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/kernels/detail/mask_parts.hpp"
#include "heed/kernels/detail/mask_tensor.hpp"

namespace heed::mask {

/// Every key visible.
struct None {
  /// Checks the mask against the scores' {B, H, Lq, Lk}; ShapeError when it does not fit (MaskPolicy).
  void check(const Shape<4>&) const noexcept {}
  /// Whether tile t is open, blocked or partial under this mask (MaskPolicy; hot, unchecked).
  [[nodiscard]] Tile classify(const TileRef&) const noexcept { return Tile::open; }
  /// Masks the partial tile t: `scores` is its row-major [ni, nj] block with leading dimension `ld`; hidden scores
  /// become -inf, biases are added (MaskPolicy; hot, unchecked).
  template <class Acc>
  void apply(const TileRef&, Acc*, index_t) const noexcept {}
};

/// Query i sees key j iff j <= i + offset.
struct Causal {
  index_t offset = 0;  ///< query i sees keys up to i + offset (Lk - Lq: bottom-right, as in decoding)

  /// @copydoc None::check
  void check(const Shape<4>&) const noexcept {}
  /// 24 × 128: less of the diagonal computed and then masked than with the full-attention tiles
  /// (docs/decisions.md has the sweep).
  [[nodiscard]] TileShape preferred_tiles() const noexcept { return {24, 128}; }
  /// @copydoc None::classify
  [[nodiscard]] Tile classify(const TileRef& t) const noexcept {
    const index_t off = detail::bounded(offset);
    if (t.j0 > t.i0 + t.ni - 1 + off) return Tile::blocked;  // the first key is after every row's last visible one
    if (t.j0 + t.nj - 1 <= t.i0 + off) return Tile::open;    // the last key is visible even to the first row
    return Tile::partial;
  }
  /// A blocked tile is past every row's last visible key, and so is every key after it.
  [[nodiscard]] index_t next_visible_key(const TileRef&) const noexcept { return no_visible_key; }
  /// @copydoc None::apply
  template <class Acc>
  void apply(const TileRef& t, Acc* scores, index_t ld) const noexcept {
    const index_t off = detail::bounded(offset);
    for (index_t i = 0; i < t.ni; ++i) {
      const index_t first_hidden = std::max<index_t>(t.i0 + i + off + 1 - t.j0, 0);
      detail::hide(scores + i * ld, std::min(first_hidden, t.nj), t.nj);
    }
  }
};

/// Query i sees keys j with i + offset - left <= j <= i + offset + right (Longformer's local
/// attention; left = w, right = 0 is a causal window of w + 1 keys).
struct SlidingWindow {
  index_t left = 0;    ///< keys visible before the diagonal
  index_t right = 0;   ///< keys visible after the diagonal
  index_t offset = 0;  ///< the diagonal: query i is centred on key i + offset

  /// @copydoc None::check
  void check(const Shape<4>&) const {
    if (left < 0 || right < 0)
      throw ShapeError("heed::mask::SlidingWindow: left and right must be >= 0, got left = " + std::to_string(left) +
                       ", right = " + std::to_string(right));
  }
  /// Key tiles about as wide as the window (a multiple of 32, from 32 to 256), so that few keys
  /// outside it are computed.
  [[nodiscard]] TileShape preferred_tiles() const noexcept {
    const index_t width = (detail::bounded(left) + detail::bounded(right) + 1 + 31) / 32 * 32;  // (a preference)
    return {48, std::clamp<index_t>(width, 32, 256)};
  }
  /// @copydoc None::classify
  [[nodiscard]] Tile classify(const TileRef& t) const noexcept {
    // query i sees keys i + lo ... i + hi
    const index_t lo = detail::window_edge(offset, left, false), hi = detail::window_edge(offset, right, true);
    const index_t i_first = t.i0, i_last = t.i0 + t.ni - 1;
    const index_t j_first = t.j0, j_last = t.j0 + t.nj - 1;
    if (j_first > i_last + hi || j_last < i_first + lo) return Tile::blocked;
    if (j_first >= i_last + lo && j_last <= i_first + hi) return Tile::open;
    return Tile::partial;
  }
  /// A blocked tile left of the window resumes where the first row's window begins; one right of
  /// it has nothing after it.
  [[nodiscard]] index_t next_visible_key(const TileRef& t) const noexcept {
    const index_t first = t.i0 + detail::window_edge(offset, left, false);
    return t.j0 + t.nj <= first ? first : no_visible_key;
  }
  /// @copydoc None::apply
  template <class Acc>
  void apply(const TileRef& t, Acc* scores, index_t ld) const noexcept {
    const index_t first = detail::window_edge(offset, left, false), last = detail::window_edge(offset, right, true);
    for (index_t i = 0; i < t.ni; ++i) {
      const index_t at = t.i0 + i - t.j0;  // the query's position relative to the tile's first key
      const index_t lo = std::clamp<index_t>(at + first, 0, t.nj);
      const index_t hi = std::clamp<index_t>(at + last + 1, 0, t.nj);
      Acc* row = scores + i * ld;
      detail::hide(row, 0, lo);
      detail::hide(row, std::max(lo, hi), t.nj);
    }
  }
};

/// bool [B, Lk]: true marks a padding key, which no query attends to (torch's key_padding_mask).
class KeyPadding {
 public:
  /// Views (or, from a temporary Tensor, owns) a bool [B, Lk] mask, true = padding.
  template <TensorLike X>
  requires(std::is_same_v<scalar_of<X>, bool>&& rank_of<X> == 2) KeyPadding(X&& ignore)
      : ignore_(as_rank4(std::forward<X>(ignore))) {}  // NOLINT(google-explicit-constructor)

  /// @copydoc None::check
  void check(const Shape<4>& dims) const {
    if (batch_ != dims[0] || keys_ != dims[3])
      throw ShapeError("heed::mask::KeyPadding: mask of shape [" + std::to_string(batch_) + ", " +
                       std::to_string(keys_) + "] does not match [B, Lk] = [" + std::to_string(dims[0]) + ", " +
                       std::to_string(dims[3]) + "] of the scores " + detail::scores_text(dims));
  }
  /// @copydoc None::classify
  [[nodiscard]] Tile classify(const TileRef& t) const noexcept {
    const bool* row = ignore_.row(t.b, 0, 0);
    const index_t s = ignore_.column_stride();
    index_t padded = 0;
    for (index_t j = t.j0; j < t.j0 + t.nj; ++j) padded += row[j * s] ? 1 : 0;
    return padded == 0 ? Tile::open : padded == t.nj ? Tile::blocked : Tile::partial;
  }
  /// @copydoc None::apply
  template <class Acc>
  void apply(const TileRef& t, Acc* scores, index_t ld) const noexcept {
    const bool* row = ignore_.row(t.b, 0, 0);
    const index_t s = ignore_.column_stride();
    for (index_t j = 0; j < t.nj; ++j)
      if (row[(t.j0 + j) * s])
        for (index_t i = 0; i < t.ni; ++i) scores[i * ld + j] = detail::minus_inf<Acc>;
  }

 private:
  // [B, Lk] is viewed as [B, 1, 1, Lk].
  template <class X>
  detail::MaskTensor<bool> as_rank4(X&& ignore) {
    const auto v = as_view(ignore);
    batch_ = v.size(0);
    keys_ = v.size(1);
    if constexpr (!std::is_lvalue_reference_v<X>) {
      Tensor<bool, 4> owned(Shape<4>{batch_, 1, 1, keys_});
      owned.copy_from(TensorView<const bool, 4>(v.data(), owned.shape(), {v.stride(0), 0, 0, v.stride(1)}));
      return detail::MaskTensor<bool>(std::move(owned), "KeyPadding");
    } else {
      return detail::MaskTensor<bool>(
          TensorView<const bool, 4>(v.data(), {batch_, 1, 1, keys_}, {v.stride(0), 0, 0, v.stride(1)}), "KeyPadding");
    }
  }

  index_t batch_ = 0, keys_ = 0;
  detail::MaskTensor<bool> ignore_;
};

/// bool, true = may attend: the convention of torch's scaled_dot_product_attention and of
/// the seeds' `masked_fill(mask == 0, ...)`. Shapes [Lq, Lk] or rank 4, broadcasting over 1s.
class Allowed {
 public:
  /// Views (or, from a temporary Tensor, owns) a bool mask, true = may attend.
  template <TensorLike X>
  requires std::is_same_v < scalar_of<X>,
  bool > Allowed(X&& allowed) : allowed_(std::forward<X>(allowed), "Allowed") {}  // NOLINT(google-explicit-constructor)

  /// @copydoc None::check
  void check(const Shape<4>& dims) const { allowed_.check(dims); }
  /// @copydoc None::classify
  [[nodiscard]] Tile classify(const TileRef& t) const noexcept {
    const index_t s = allowed_.column_stride();
    index_t visible = 0;
    for (index_t i = 0; i < t.ni; ++i) {
      const bool* row = allowed_.row(t.b, t.h, t.i0 + i);
      for (index_t j = t.j0; j < t.j0 + t.nj; ++j) visible += row[j * s] ? 1 : 0;
    }
    return visible == t.ni * t.nj ? Tile::open : visible == 0 ? Tile::blocked : Tile::partial;
  }
  /// @copydoc None::apply
  template <class Acc>
  void apply(const TileRef& t, Acc* scores, index_t ld) const noexcept {
    const index_t s = allowed_.column_stride();
    for (index_t i = 0; i < t.ni; ++i) {
      const bool* row = allowed_.row(t.b, t.h, t.i0 + i);
      for (index_t j = 0; j < t.nj; ++j)
        if (!row[(t.j0 + j) * s]) scores[i * ld + j] = detail::minus_inf<Acc>;
    }
  }

 private:
  detail::MaskTensor<bool> allowed_;
};

/// Added to the scores before the softmax; -inf hides a key. Shapes as for Allowed.
template <class Scalar = float>
class Bias {
 public:
  /// Views (or, from a temporary Tensor, owns) the bias, added to the scores.
  template <TensorLike X>
  requires std::is_same_v<scalar_of<X>, Scalar> Bias(X&& bias)
      : bias_(std::forward<X>(bias), "Bias") {}  // NOLINT(google-explicit-constructor)

  /// @copydoc None::check
  void check(const Shape<4>& dims) const { bias_.check(dims); }
  /// @copydoc None::classify
  [[nodiscard]] Tile classify(const TileRef&) const noexcept { return Tile::partial; }
  /// @copydoc None::apply
  template <class Acc>
  void apply(const TileRef& t, Acc* scores, index_t ld) const noexcept {
    const index_t s = bias_.column_stride();
    for (index_t i = 0; i < t.ni; ++i) {
      const Scalar* row = bias_.row(t.b, t.h, t.i0 + i) + t.j0 * s;
      Acc* out = scores + i * ld;
      for (index_t j = 0; j < t.nj; ++j) out[j] += static_cast<Acc>(row[j * s]);
    }
  }

 private:
  detail::MaskTensor<Scalar> bias_;
};

template <TensorLike X>
Bias(X&&) -> Bias<scalar_of<X>>;

/// ALiBi (Press et al. 2021, https://arxiv.org/abs/2108.12409): adds slope_h · (j - i - offset)
/// to the score of query i and key j in head h, computed per tile (no [H, Lq, Lk] tensor). It
/// differs from BLOOM's slope_h · j by a constant per row, which the softmax cancels. Every key
/// stays visible: combine it with mask::Causal for a decoder (offset as for Causal).
struct ALiBi {
  std::vector<double> slopes;  ///< one per head, e.g. heed::alibi_slopes(H)
  index_t offset = 0;          ///< as Causal's offset: Lk - Lq when decoding

  /// @copydoc None::check
  void check(const Shape<4>& dims) const {
    if (static_cast<index_t>(slopes.size()) != dims[1])
      throw ShapeError("heed::mask::ALiBi: " + std::to_string(slopes.size()) + " slopes for " +
                       std::to_string(dims[1]) + " heads " + detail::scores_text(dims));
  }
  /// @copydoc None::classify
  [[nodiscard]] Tile classify(const TileRef&) const noexcept { return Tile::partial; }
  /// @copydoc None::apply
  template <class Acc>
  void apply(const TileRef& t, Acc* scores, index_t ld) const noexcept {
    const Acc slope = static_cast<Acc>(slopes[static_cast<std::size_t>(t.h)]);
    const index_t off = detail::bounded(offset);
    for (index_t i = 0; i < t.ni; ++i) {
      const index_t first = t.j0 - (t.i0 + i + off);  // j - i - offset at the tile's first key
      Acc* row = scores + i * ld;
      for (index_t j = 0; j < t.nj; ++j) row[j] += slope * static_cast<Acc>(first + j);
    }
  }
};

/// Visible iff visible under every mask; biases add up. Made by mask::all(...).
template <class... Masks>
class AllOf {
 public:
  /// The intersection of `masks` (mask::all deduces the types).
  explicit AllOf(Masks... masks) : masks_(std::move(masks)...) {}

  /// @copydoc None::check
  void check(const Shape<4>& dims) const { detail::parts_check(*this, dims); }
  /// @copydoc None::classify
  [[nodiscard]] Tile classify(const TileRef& t) const noexcept { return detail::intersection_classify(*this, t); }
  /// @copydoc None::apply
  template <class Acc>
  void apply(const TileRef& t, Acc* scores, index_t ld) const noexcept {
    detail::intersection_apply(*this, t, scores, ld);
  }
  /// The smallest preference of its parts, dimension by dimension.
  [[nodiscard]] TileShape preferred_tiles() const noexcept { return detail::parts_preferred_tiles(*this); }
  /// The furthest resumption of the parts that block the tile: each hides everything before its own.
  [[nodiscard]] index_t next_visible_key(const TileRef& t) const noexcept {
    return detail::intersection_next_visible_key(*this, t);
  }
  /// Calls f on every part (the shared intersection logic of kernels/detail/mask_parts.hpp).
  template <class F>
  void each(F&& f) const {
    std::apply([&](const auto&... m) { (f(m), ...); }, masks_);
  }

 private:
  std::tuple<Masks...> masks_;
};

/// Combines masks: `mask::all(mask::Causal{}, mask::KeyPadding{pad})`.
template <class... Masks>
[[nodiscard]] AllOf<std::remove_cvref_t<Masks>...> all(Masks&&... masks) {
  return AllOf<std::remove_cvref_t<Masks>...>(std::forward<Masks>(masks)...);
}

}  // namespace heed::mask
