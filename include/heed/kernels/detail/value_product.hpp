#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <algorithm>
#include <memory>
#include <type_traits>
#include <vector>

#include "heed/core/detail/buffer_cache.hpp"
#include "heed/core/parallel.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/detail/look_ahead.hpp"
#include "heed/kernels/detail/online_softmax.hpp"
#include "heed/kernels/detail/tile_walk.hpp"
#include "heed/simd/kernel_table.hpp"
#include "heed/simd/vector_ops.hpp"

namespace heed::detail {

static_assert(max_span_tiles <= simd::max_pv_runs, "a span's runs must fit simd::attention_tile_pv");

// The value product of the tiled loop, O = c·O + P·V over a span, beside the scorer's S = Q·Kᵀ:
// where the softmax leaves P, what is packed before the tiles, and the product. Two ways:
//   - widened (every storage type, every target): P stays in S in the accumulator type, V is
//     read in place (16-bit values widened in registers) by simd::attention_tile_pv;
//   - pairs (bfloat16 storage where the target has AVX-512 BF16 and the CPU's choice is pairs,
//     simd::bf16_pairs_chosen; query tiles of 2·mr rows and more, an even block_k): V is packed
//     with its keys in pairs (simd::pack_v_pairs) a chunk of (batch, key/value head) groups at a
//     time, the softmax rounds P to bfloat16 as it writes it, and the product runs on vdpbf16ps
//     (simd::pair_tile_pv). Scores, m, l and O stay float; rounding P costs at most
//     2^-8 · Σ_j p_j·|v_j| in each output (docs/decisions.md, "Attention kernel v2, second
//     part"). Spans start at an even key (block_k even).
template <class Storage>
class ValueProduct {
 public:
  using Acc = accumulator_t<Storage>;

  ValueProduct(const TensorView<const Storage, 4>& v, index_t Lq, index_t block_k)
      : v_(v),
        kernels_(simd::attention_kernels<Storage>()),
        pairs_(kernels_.pairs && block_k % 2 == 0 && Lq >= 2 * kernels_.mr && v.size(3) > 0),
        nr_(kernels_.nr),
        key_pairs_((v.size(2) + 1) / 2),
        col_panels_((v.size(3) + nr_ - 1) / nr_),
        group_values_(col_panels_ * key_pairs_ * 2 * nr_) {}

  // Bytes packed per (batch, key/value head) group: 0 unless on pairs.
  [[nodiscard]] index_t packed_bytes() const noexcept { return pairs_ ? group_values_ * index_t{sizeof(Storage)} : 0; }

  // Room for `count` packed groups (once per call: every chunk of groups reuses it).
  void reserve(index_t count) {
    if (pairs_) packed_ = aligned_storage<Storage>(count * group_values_, false);
  }
  // Packs group g (b·Hkv + hk) into its place `g - first` of the chunk that starts at `first`.
  void pack(index_t g, index_t first) {
    for (index_t j0 = 0; pairs_ && j0 < v_.size(2); j0 += piece) pack_piece(g, first, j0);
  }
  // Packs the chunk's groups [first, first + count) on `threads` workers, in pieces of keys, so
  // that one long head keeps every worker busy.
  void prepare(int threads, index_t first, index_t count) {
    if (!pairs_) return;
    const index_t pieces = (v_.size(2) + piece - 1) / piece;
    parallel_for(count * pieces, threads,
                 [&](index_t task, int) { pack_piece(first + task / pieces, first, task % pieces * piece); });
  }

  // Asks `ahead` for the values of keys [j0, j0 + nj) of (b, key/value head hk), packed at
  // chunk place `packed`: what the product will read for them.
  void ask_ahead(LookAhead& ahead, index_t b, index_t hk, index_t packed, index_t j0, index_t nj) const noexcept {
    if (pairs_) {
      for (index_t cp = 0; cp < col_panels_; ++cp)
        ahead.add(packed_.get() + packed * group_values_ + cp * key_pairs_ * 2 * nr_ + j0 * nr_,
                  (nj + 1) / 2 * 2 * nr_ * index_t{sizeof(Storage)});
    } else {
      ahead.add(&v_(b, hk, j0, 0), ((nj - 1) * v_.stride(2) + v_.size(3)) * index_t{sizeof(Storage)});
    }
  }

  // Where the rounded P of a span of `keys` keys and `rows` rows goes (nullptr when P stays in
  // S), its rows rounded_ld(keys) apart, in the worker's buffer.
  [[nodiscard]] bfloat16* rounded_p(std::vector<bfloat16>& buffer, index_t rows, index_t keys) const {
    if (!pairs_) return nullptr;
    buffer.resize(static_cast<std::size_t>(rows * rounded_ld(keys)));
    return buffer.data();
  }
  [[nodiscard]] static index_t rounded_ld(index_t keys) noexcept { return 2 * ((keys + 1) / 2); }

  // One row's softmax step over its `keys` scores: folds them into `state` and leaves P where
  // the product reads it (in `row`, or rounded in `rounded`, with a zero after an odd count); the
  // float P stays in `row` too where `keep_row` (the weights need it). Returns the row's
  // correction exp(m_old - m_new).
  Acc softmax_row(OnlineSoftmax<Acc>& state, Acc* row, index_t keys, bfloat16* rounded, bool keep_row) const noexcept {
    if constexpr (is_bf16) {
      if (pairs_) {
        const Acc correction =
            keep_row ? state.update(kernels_.softmax, row, keys) : state.update(kernels_.softmax, row, keys, rounded);
        if (keep_row) kernels_.softmax.round(row, rounded, keys);
        if (keys % 2 != 0) rounded[keys] = bfloat16(0.0f);
        return correction;
      }
    }
    return state.update(kernels_.softmax, row, keys);
  }

  // The softmax row pieces of the level in use.
  [[nodiscard]] const simd::SoftmaxKernels<Acc>& softmax_kernels() const noexcept { return kernels_.softmax; }

  // O = c·O + P·V over the span's runs for the query tile's `rows` rows of (b, key/value head
  // hk): P in S (leading dimension ld) or in `rounded`; c per row for the first run (nullptr:
  // O = P·V), the later runs adding to O (`ones`).
  void accumulate(const KeySpan& span, const Acc* S, index_t ld, const bfloat16* rounded, index_t rows, index_t b,
                  index_t hk, index_t packed, Acc* O, const Acc* c, const Acc* ones) const noexcept {
    const index_t dv = v_.size(3);
    if constexpr (is_bf16) {
      if (pairs_) {
        const index_t lda = rounded_ld(span.keys);
        for (index_t r = 0; r < span.runs; ++r)
          kernels_.pair_tile_pv((span.run_keys(r) + 1) / 2, rounded + span.col[r], lda, rows,
                                packed_.get() + packed * group_values_ + span.key(r) * nr_, key_pairs_ * 2 * nr_, dv, O,
                                r > 0 ? ones : c);
        return;
      }
    }
    index_t keys[max_span_tiles];
    const Storage* from[max_span_tiles];
    for (index_t r = 0; r < span.runs; ++r) {
      keys[r] = span.run_keys(r);
      from[r] = &v_(b, hk, span.key(r), 0);
    }
    kernels_.tile_pv(S, ld, rows, span.runs, keys, from, v_.stride(2), dv, O, c, ones);
  }

 private:
  static constexpr bool is_bf16 = std::is_same_v<Storage, bfloat16>;
  static constexpr index_t piece = 1024;  // keys per packing task

  void pack_piece(index_t g, index_t first, index_t j0) {
    if constexpr (is_bf16) {
      const index_t Hkv = v_.size(1);
      kernels_.pack_v_pairs(&v_(g / Hkv, g % Hkv, j0, 0), v_.stride(2), std::min(piece, v_.size(2) - j0), v_.size(3),
                            packed_.get() + (g - first) * group_values_ + j0 * nr_, key_pairs_ * 2 * nr_);
    }
  }

  TensorView<const Storage, 4> v_;
  const simd::AttentionKernels<Storage>& kernels_;
  bool pairs_;
  index_t nr_;                                     // columns of a pair-packed panel of V (the level's nr)
  index_t key_pairs_, col_panels_, group_values_;  // group_values_: packed values per group
  std::unique_ptr<Storage, AlignedDelete> packed_;
};

}  // namespace heed::detail
