#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "heed/core/error.hpp"
#include "heed/core/detail/buffer_cache.hpp"
#include "heed/core/parallel.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/tile_ref.hpp"
#include "heed/simd/kernel_table.hpp"
#include "heed/simd/vector_ops.hpp"

// The bound forms of the score policies of heed/kernels/score.hpp: what `bind` returns for one
// call's q and k, and the driver calls per tile. With grouped heads, a tile's query head t.h
// reads key head t.hk in place.
namespace heed::detail {

// scale · Q_tile K_tileᵀ. With enough query rows to pay for it (Lq >= 2·mr), Kᵀ is packed into
// panels once per call (prepare(), which the driver calls before the tiles) and each
// tile is computed by the level's tile entry (simd/kernel_table.hpp); tiles whose first
// key does not start a panel (a user's block_k that is not a multiple of nr) and short query
// sequences take one vectorized dot product per (query, key) instead.
template <class Storage>
class DotScorer {
 public:
  using Acc = accumulator_t<Storage>;

  DotScorer(TensorView<const Storage, 4> q, TensorView<const Storage, 4> k, Acc scale)
      : q_(q), k_(k), scale_(scale), kernels_(simd::attention_kernels<Storage>()) {}

  // Bytes of packed Kᵀ per (batch, key head), 0 when this call does not pack.
  [[nodiscard]] index_t packed_bytes() const noexcept {
    if (q_.size(2) < 2 * kernels_.mr || k_.size(2) == 0 || q_.size(3) == 0) return 0;
    return panel_values() * index_t{sizeof(Storage)};
  }

  // Packs Kᵀ of the (batch, key head) groups [first, first + count) (group b·Hk + hk), on
  // `threads` workers, each group in pieces of keys so that one long head still keeps every
  // worker busy; the tiles of other groups must not be scored until they are prepared. The
  // buffer is reused from one chunk of groups to the next. Until prepare has run (a wrapper that
  // does not forward it, or the driver's decode path, which reads K once and never packs it),
  // scores() takes the dot-product path: slower for many query rows, never wrong.
  void prepare(int threads, index_t first, index_t count) {
    if (packed_bytes() == 0) return;
    reserve(first, count);
    const index_t pieces = (k_.size(2) + pack_piece_keys - 1) / pack_piece_keys;
    parallel_for(count * pieces, threads,
                 [&](index_t task, int) { pack_keys(first + task / pieces, task % pieces * pack_piece_keys); });
  }

  // prepare in two steps, for a driver whose workers each pack the groups they compute: the
  // buffer for groups [first, first + count), then pack(group) for each of them, on any worker;
  // a group's tiles must not be scored until its pack() has returned.
  void reserve(index_t first, index_t count) {
    if (packed_bytes() == 0) return;
    panel_stride_ = panel_values();
    if (count > capacity_) {
      // not value-initialized: pack_kt writes every value (the padding keys too), on the workers
      packed_ = aligned_storage<Storage>(count * panel_stride_, false);
      capacity_ = count;
    }
    first_ = first;
    prepared_ = true;
  }
  void pack(index_t group) {
    if (packed_bytes() == 0) return;
    for (index_t j0 = 0; j0 < k_.size(2); j0 += pack_piece_keys) pack_keys(group, j0);
  }

  // Where the packed Kᵀ of keys [j0, j0 + nj) of (batch b, key head hk) lies, and its bytes
  // ({nullptr, 0} where the tile is not read from packed panels): what the driver asks ahead for.
  [[nodiscard]] std::pair<const Storage*, index_t> packed_keys(index_t b, index_t hk, index_t j0,
                                                               index_t nj) const noexcept {
    const index_t nr = kernels_.nr;
    if (!prepared_ || j0 % nr != 0) return {nullptr, 0};
    return {panels(b, hk) + j0 * packed_depth(), (nj + nr - 1) / nr * nr * packed_depth() * index_t{sizeof(Storage)}};
  }

  void scores(const TileRef& t, Acc* out, index_t ld) const {
    const index_t d = q_.size(3);
    if (prepared_ && t.j0 % kernels_.nr == 0) {
      if constexpr (std::is_same_v<Storage, bfloat16>) {
        if (kernels_.pairs) return pair_scores(t, out, ld);
      }
      Acc* widened = nullptr;  // 16-bit queries: the tile's rows in Acc, for the micro-kernel's broadcasts
      if constexpr (!std::is_same_v<Storage, Acc>) {
        thread_local std::vector<Acc> rows;
        rows.resize(static_cast<std::size_t>(t.ni * d));
        widened = rows.data();
      }
      kernels_.tile_scores(d, &q_(t.b, t.h, t.i0, 0), q_.stride(2), t.ni, panels(t.b, t.hk) + t.j0 * d, t.nj, out, ld,
                           scale_, widened);
      return;
    }
    kernels_.rows_scores(d, &q_(t.b, t.h, t.i0, 0), q_.stride(2), t.ni, &k_(t.b, t.hk, t.j0, 0), k_.stride(2), t.nj,
                         out, ld, scale_);
  }

  // The scores of a one-row tile (a decoding step) for `heads` query heads from t.h on, which all
  // read key head t.hk: head t.h + g's row at out + g · ld_head. The heads' rows share each load
  // of K (the decode path's grouped heads), where scores() per head would read K `heads` times.
  void group_scores(const TileRef& t, index_t heads, Acc* out, index_t ld_head) const {
    kernels_.rows_scores(q_.size(3), &q_(t.b, t.h, t.i0, 0), q_.stride(1), heads, &k_(t.b, t.hk, t.j0, 0), k_.stride(2),
                         t.nj, out, ld_head, scale_);
  }

 private:
  // The tile on pair products: Q's rows are read in place (a copy with a zero appended when the
  // depth is odd), Kᵀ from its pair-packed panels.
  void pair_scores(const TileRef& t, Acc* out, index_t ld) const {
    const index_t d = q_.size(3), pairs_per_row = (d + 1) / 2;
    const Storage* kt = panels(t.b, t.hk) + t.j0 * 2 * pairs_per_row;
    const Storage* q = &q_(t.b, t.h, t.i0, 0);
    index_t ldq = q_.stride(2);
    if (d % 2 != 0) {
      thread_local std::vector<Storage> padded;
      padded.resize(static_cast<std::size_t>(t.ni * (d + 1)));
      for (index_t i = 0; i < t.ni; ++i) {
        std::copy_n(&q_(t.b, t.h, t.i0 + i, 0), d, padded.begin() + i * (d + 1));
        padded[static_cast<std::size_t>(i * (d + 1) + d)] = Storage(0.0f);
      }
      q = padded.data();
      ldq = d + 1;
    }
    kernels_.pair_tile_scores(pairs_per_row, q, ldq, t.ni, kt, t.nj, out, ld, scale_);
  }

  // keys per packing task: a multiple of every level's nr
  static constexpr index_t pack_piece_keys = 1024;

  // packs keys [j0, j0 + pack_piece_keys) of a reserved group
  void pack_keys(index_t group, index_t j0) {
    const index_t keys = k_.size(2), d = k_.size(3), depth = packed_depth();
    const index_t b = group / k_.size(1), h = group % k_.size(1), n = std::min(pack_piece_keys, keys - j0);
    Storage* out = packed_.get() + (group - first_) * panel_stride_ + j0 * depth;
    if constexpr (std::is_same_v<Storage, bfloat16>) {
      if (kernels_.pairs) return kernels_.pack_kt_pairs(&k_(b, h, j0, 0), k_.stride(2), n, d, out);
    }
    kernels_.pack_kt(&k_(b, h, j0, 0), k_.stride(2), n, d, out);
  }

  // rows of a packed panel: the key depth, rounded up to whole pairs for pair products
  [[nodiscard]] index_t packed_depth() const noexcept { return kernels_.pairs ? (k_.size(3) + 1) / 2 * 2 : k_.size(3); }
  // values of packed Kᵀ per (batch, key head): ceil(Lk / nr) panels of depth × nr
  [[nodiscard]] index_t panel_values() const noexcept {
    const index_t nr = kernels_.nr;
    return (k_.size(2) + nr - 1) / nr * nr * packed_depth();
  }
  // the packed panels of (batch b, key head hk), whose group has been prepared
  [[nodiscard]] const Storage* panels(index_t b, index_t hk) const noexcept {
    return packed_.get() + (b * k_.size(1) + hk - first_) * panel_stride_;
  }

  TensorView<const Storage, 4> q_, k_;
  Acc scale_;
  const simd::AttentionKernels<Storage>& kernels_;  // the level's entries; .pairs: Kᵀ packed in pairs
  index_t panel_stride_ = 0;                        // values per (batch, key head) in packed_
  index_t first_ = 0, capacity_ = 0;                // the first group packed, and how many groups fit
  std::unique_ptr<Storage, AlignedDelete> packed_;  // Kᵀ panels, [groups, ceil(Lk / nr), d, nr], 64-byte aligned
  bool prepared_ = false;
};

// Projected queries and keys (in the accumulator type), then vᵀ tanh(q' + k') per pair.
template <class Acc>
class AdditiveScorer {
 public:
  AdditiveScorer(Tensor<Acc, 4> q_proj, Tensor<Acc, 4> k_proj, Tensor<Acc, 1> v)
      : q_proj_(std::move(q_proj)), k_proj_(std::move(k_proj)), v_(std::move(v)) {}

  void scores(const TileRef& t, Acc* out, index_t ld) const {
    const index_t hidden = v_.size(0);
    const Acc* v = v_.data();
    if (hidden == 0) {  // vᵀ tanh(·) of no hidden unit: 0, as PyTorch's empty matmul
      for (index_t i = 0; i < t.ni; ++i) std::fill_n(out + i * ld, t.nj, Acc(0));
      return;
    }
    const auto tanh_dot = simd::vector_kernels<Acc>().tanh_dot;
    for (index_t i = 0; i < t.ni; ++i) {
      const Acc* qp = &q_proj_(t.b, t.h, t.i0 + i, 0);
      for (index_t j = 0; j < t.nj; ++j) out[i * ld + j] = tanh_dot(qp, &k_proj_(t.b, t.hk, t.j0 + j, 0), v, hidden);
    }
  }

 private:
  Tensor<Acc, 4> q_proj_, k_proj_;  // [B, H, L, hidden]
  Tensor<Acc, 1> v_;                // a dense copy: read contiguously in the hot loop
};

inline void check_same_depth(const Shape<4>& q, const Shape<4>& k, const char* who) {
  if (q[3] != k[3])
    throw ShapeError(std::string("heed::") + who + ": query depth " + std::to_string(q[3]) + " (q " + to_string(q) +
                     ") differs from key depth " + std::to_string(k[3]) + " (k " + to_string(k) + ")");
}

}  // namespace heed::detail
