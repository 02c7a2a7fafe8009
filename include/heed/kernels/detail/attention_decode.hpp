#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

#include "heed/core/parallel.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/attention_options.hpp"
#include "heed/kernels/mask.hpp"
#include "heed/kernels/tile_ref.hpp"
#include "heed/kernels/detail/attention_scratch.hpp"
#include "heed/kernels/detail/online_softmax.hpp"
#include "heed/kernels/detail/value_product.hpp"
#include "heed/simd/kernel_table.hpp"
#include "heed/simd/vector_ops.hpp"

namespace heed::detail {

// The decode path (flash-decoding): few query rows against many keys, as in a generation step
// (one new token against a long KV cache). The general loop would give each (batch, query head,
// query tile) a task of its own: with one query row there are few tasks, each reads its own copy
// of K and V, and with grouped heads the heads of one group read the same K/V once each. Here a
// task is (batch, key/value head, key range): its rows are the Lq query rows of every query
// head of the group (G·Lq rows, head-major), so each K/V tile is read once for the whole group,
// and the keys are split into ranges so that a few heads still keep every worker busy. Each
// range keeps its own (m, l, O) per row; the ranges are merged once at the end:
//     m = max_s m_s,   l = Σ_s exp(m_s - m)·l_s,   O = Σ_s exp(m_s - m)·O_s,   out = O / l.
// The scratch is the worker threads' own (thread_local, grown, never shrunk): a step allocates
// nothing once the first step of its size has run. Weights are not produced here (the general
// loop writes them).
inline constexpr index_t decode_max_rows = 16;     // Lq up to this...
inline constexpr index_t decode_min_keys = 512;    // ...and Lk from this take the decode path
inline constexpr index_t decode_block_k = 128;     // keys per tile: a float K tile of d = 64 fits L1
inline constexpr index_t decode_split_keys = 512;  // keys per range

template <class Acc>
struct DecodeScratch {
  std::vector<Acc> scores, acc, correction;
  std::vector<OnlineSoftmax<Acc>> rows;
  std::vector<mask::Tile> kinds;

  static DecodeScratch& mine(index_t rows_needed, index_t bk, index_t dv, index_t group) {
    thread_local DecodeScratch s;
    const auto grow = [](auto& v, index_t n) {
      if (v.size() < static_cast<std::size_t>(n)) v.resize(static_cast<std::size_t>(n));
    };
    grow(s.scores, rows_needed * bk);
    grow(s.acc, rows_needed * dv);
    grow(s.correction, rows_needed);
    grow(s.rows, rows_needed);
    grow(s.kinds, group);
    return s;
  }
};

template <class Storage, class Scorer, class Mask>
void attention_decode(const TensorView<Storage, 4>& out, const TensorView<const Storage, 4>& v, Scorer& scorer,
                      const Mask& mask, const AttentionOptions& options, index_t bk, int threads) {
  using Acc = accumulator_t<Storage>;
  const index_t B = out.size(0), H = out.size(1), Lq = out.size(2), dv = out.size(3);
  const index_t Hkv = v.size(1), Lk = v.size(2), G = H / Hkv, R = G * Lq;
  const index_t k_tiles = (Lk + bk - 1) / bk, groups = B * Hkv;
  // Ranges of decode_split_keys keys, whatever the worker count: a row's sums then run in the
  // same order on one worker as on eight, and the output is the same to the bit.
  const index_t per_range = std::max<index_t>(1, decode_split_keys / bk);
  const index_t ranges = (k_tiles + per_range - 1) / per_range;
  // Per (group, range): R rows of [m, l, O (dv)], merged after the tasks; one range writes out
  // directly.
  const index_t partial_row = dv + 2;
  thread_local std::vector<Acc> partial;
  if (ranges > 1 && partial.size() < static_cast<std::size_t>(groups * ranges * R * partial_row))
    partial.resize(static_cast<std::size_t>(groups * ranges * R * partial_row));
  Acc* const partials = partial.data();
  std::vector<AttentionStats> stats(options.stats ? static_cast<std::size_t>(threads) : 0);

  const auto write_row = [&](index_t b, index_t h, index_t i, const Acc* o, Acc norm, bool any) {
    Storage* dst = &out(b, h, i, 0);
    const index_t os = out.stride(3);
    // norm · 0 carries a NaN normalizer (MaskedRows::nan) into a row no key reached
    for (index_t c = 0; c < dv; ++c) dst[c * os] = static_cast<Storage>(any ? o[c] * norm : norm * Acc(0));
  };

  parallel_for(groups * ranges, threads, [&](index_t task, int worker) {
    const index_t b = task / (Hkv * ranges), hk = (task / ranges) % Hkv, range = task % ranges;
    DecodeScratch<Acc>& s = DecodeScratch<Acc>::mine(R, bk, dv, G);
    const simd::AttentionKernels<Storage>& kernels = simd::attention_kernels<Storage>();
    Acc* S = s.scores.data();
    Acc* O = s.acc.data();
    std::fill(s.rows.begin(), s.rows.begin() + R, OnlineSoftmax<Acc>{});
    bool started = false;
    AttentionStats counted;
    const index_t first = range * per_range, last = std::min(k_tiles, first + per_range);
    for (index_t jt = first; jt < last; ++jt) {
      const index_t j0 = jt * bk, nj = std::min(bk, Lk - j0);
      bool any_visible = false;
      for (index_t g = 0; g < G; ++g) {
        const mask::Tile kind = mask.classify(TileRef{b, hk * G + g, 0, Lq, j0, nj, hk});
        s.kinds[static_cast<std::size_t>(g)] = kind;
        any_visible = any_visible || kind != mask::Tile::blocked;
        ++(kind == mask::Tile::open ? counted.open : kind == mask::Tile::partial ? counted.partial : counted.blocked);
      }
      if (!any_visible) continue;
      // one query row per head and a scorer that scores a group's heads together: K read once
      bool grouped = false;
      if constexpr (requires(const Scorer& sc, const TileRef& t, Acc* p, index_t n) { sc.group_scores(t, n, p, n); }) {
        grouped = G > 1 && Lq == 1;
        if (grouped) scorer.group_scores(TileRef{b, hk * G, 0, 1, j0, nj, hk}, G, S, bk);
      }
      for (index_t g = 0; g < G; ++g) {
        Acc* Sg = S + g * Lq * bk;
        const TileRef tile{b, hk * G + g, 0, Lq, j0, nj, hk};
        const mask::Tile kind = s.kinds[static_cast<std::size_t>(g)];
        if (kind == mask::Tile::blocked) {
          for (index_t i = 0; i < Lq; ++i) std::fill_n(Sg + i * bk, nj, -std::numeric_limits<Acc>::infinity());
          continue;
        }
        if (!grouped) scorer.scores(tile, Sg, bk);
        if (kind == mask::Tile::partial) mask.apply(tile, Sg, bk);
      }
      for (index_t r = 0; r < R; ++r)
        s.correction[static_cast<std::size_t>(r)] =
            s.rows[static_cast<std::size_t>(r)].update(kernels.softmax, S + r * bk, nj);
      const Storage* rows = &v(b, hk, j0, 0);
      kernels.tile_pv(S, bk, R, 1, &nj, &rows, v.stride(2), dv, O, started ? s.correction.data() : nullptr, nullptr);
      started = true;
    }
    if (options.stats) add_stats(stats[static_cast<std::size_t>(worker)], counted);
    if (ranges == 1) {
      for (index_t r = 0; r < R; ++r) {
        const Acc norm = s.rows[static_cast<std::size_t>(r)].normalizer(options.masked_rows);
        write_row(b, hk * G + r / Lq, r % Lq, O + r * dv, norm, started);
      }
      return;
    }
    Acc* p = partials + ((b * Hkv + hk) * ranges + range) * R * partial_row;
    for (index_t r = 0; r < R; ++r, p += partial_row) {
      const OnlineSoftmax<Acc>& row = s.rows[static_cast<std::size_t>(r)];
      p[0] = started ? row.m : -std::numeric_limits<Acc>::infinity();
      p[1] = started ? row.l : Acc(0);
      if (started && row.l != Acc(0)) std::copy_n(O + r * dv, dv, p + 2);
    }
  });

  if (ranges > 1) {
    parallel_for(groups, threads, [&](index_t group, int) {
      const index_t b = group / Hkv, hk = group % Hkv;
      const Acc* base = partials + group * ranges * R * partial_row;
      thread_local std::vector<Acc> merged;
      if (merged.size() < static_cast<std::size_t>(dv)) merged.resize(static_cast<std::size_t>(dv));
      for (index_t r = 0; r < R; ++r) {
        Acc m = -std::numeric_limits<Acc>::infinity();
        bool poisoned = false;  // a range saw a NaN score: the row is NaN
        for (index_t x = 0; x < ranges; ++x) {
          const Acc* p = base + (x * R + r) * partial_row;
          if (std::isnan(p[1]))
            poisoned = true;
          else if (p[1] != Acc(0))
            m = std::max(m, p[0]);
        }
        OnlineSoftmax<Acc> total;  // l = 0 unless some range saw a visible key
        std::fill_n(merged.begin(), dv, Acc(0));
        if (poisoned) {
          total.l = std::numeric_limits<Acc>::quiet_NaN();
        } else if (m != -std::numeric_limits<Acc>::infinity()) {
          total.m = m;
          for (index_t x = 0; x < ranges; ++x) {
            const Acc* p = base + (x * R + r) * partial_row;
            if (p[1] == Acc(0)) continue;
            const Acc factor = simd::softmax_exp(p[0] - m);
            total.l += factor * p[1];
            simd::vector_kernels<Acc>().axpy(factor, p + 2, merged.data(), dv);
          }
        }
        write_row(b, hk * G + r / Lq, r % Lq, merged.data(), total.normalizer(options.masked_rows), total.l != Acc(0));
      }
    });
  }

  if (options.stats) {
    *options.stats = {};
    for (const auto& c : stats) add_stats(*options.stats, c);
  }
}

}  // namespace heed::detail
