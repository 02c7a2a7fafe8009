#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "heed/core/detail/buffer_cache.hpp"
#include "heed/core/parallel.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/attention_options.hpp"
#include "heed/kernels/mask.hpp"
#include "heed/kernels/tile_ref.hpp"
#include "heed/kernels/detail/online_softmax.hpp"
#include "heed/simd/attention_kernel.hpp"
#include "heed/simd/vector_ops.hpp"

namespace heed::detail {

inline constexpr index_t default_block_q = 96;
inline constexpr index_t default_block_k = 256;
inline constexpr index_t max_span_keys = 512;                   // visited tiles in a row are computed as one span...
inline constexpr index_t max_span_tiles = 16;                   // ...of at most this many keys and tiles
inline constexpr index_t pack_budget_bytes = index_t{8} << 20;  // packed K (and V) per chunk of heads
inline constexpr index_t look_ahead_bytes = index_t{8} << 20;   // a head's K and V from this size on: LookAhead

// One worker's buffers, reused across its tiles, in the accumulator type. Aligned apart: a
// worker's tile counts are written at every tile, and sharing a cache line with the next
// worker's buffer pointers cost 4% of a two-core Longformer pass (N = 65536).
template <class T>
struct alignas(128) AttentionScratch {
  std::vector<T> scores;      // [block_q, block_k]: S, then P, of the current tile
  std::vector<T> acc;         // [block_q, dv]: O, unnormalized
  std::vector<T> correction;  // [block_q]: exp(m_old - m_new) of the current tile, per row
  std::vector<T> ones;        // [block_q]: the c of O = c · O + P V for a span's later runs
  std::vector<OnlineSoftmax<T>> rows;
  std::vector<T> m_at;            // [block_q, key tiles]: the running max when a tile was written
  std::vector<index_t> visited;   // [key tiles]: the current query tile's visited key tiles, in order...
  std::vector<mask::Tile> kinds;  // ...and whether each is open or partial
  AttentionStats stats;
};

// The key tiles (b, h)'s query tile [q0, q0 + qn) visits, in key order, at most `most` of them,
// with their kinds (open or partial) where `kinds` is not null. A blocked tile is skipped; a
// mask that knows where its next visible key is lets the walk jump there.
template <class Mask>
index_t visited_tiles(const Mask& mask, index_t b, index_t h, index_t q0, index_t qn, index_t bk, index_t Lk,
                      index_t* ids, mask::Tile* kinds, index_t most) noexcept {
  const index_t k_tiles = (Lk + bk - 1) / bk;
  index_t count = 0;
  for (index_t jt = 0; jt < k_tiles && count < most;) {
    const TileRef tile{b, h, q0, qn, jt * bk, std::min(bk, Lk - jt * bk)};
    const mask::Tile kind = mask.classify(tile);
    if (kind == mask::Tile::blocked) {
      jt = std::max(jt + 1, std::min(k_tiles, mask::next_visible_key(mask, tile) / bk));
      continue;
    }
    if (kinds) kinds[count] = kind;
    ids[count++] = jt++;
  }
  return count;
}

// Memory regions (the key tiles a worker's next query tile reads and its current one does not:
// BigBird's random blocks, a window's next tile) asked for into L2 a few lines per step of the
// current tile, so that they arrive while it computes. Once a head's K and V pass the L3
// (look_ahead_bytes and more), a random block's keys and values come from memory; asked for all
// at once at the start of a tile, they queued behind each other and helped nothing
// (docs/decisions.md, "Long sequences").
class LookAhead {
 public:
  static constexpr index_t most = 2 * max_span_tiles;

  void add(const void* p, index_t bytes) noexcept {
    if (regions_ == most || bytes <= 0) return;
    at_[regions_] = static_cast<const char*>(p);
    lines_[regions_] = (bytes + line - 1) / line;
    total_ += lines_[regions_++];
  }
  // Spread what was added over `steps` calls to step().
  void spread(index_t steps) noexcept { per_step_ = steps > 0 ? (total_ + steps - 1) / steps : total_; }
  void step() noexcept {
    for (index_t n = 0; n < per_step_ && region_ < regions_; ++n) {
      simd::prefetch_l2(at_[region_] + line_ * line);
      if (++line_ == lines_[region_]) {
        line_ = 0;
        ++region_;
      }
    }
  }

 private:
  static constexpr index_t line = 64;
  const char* at_[most];
  index_t lines_[most];
  index_t regions_ = 0, total_ = 0, per_step_ = 0, region_ = 0, line_ = 0;
};

// O[0:ni, :] = c · O + Σ_r P_r V_r over a span's runs of keys: P_r is the next keys[r] columns of
// P [ni, Σ keys] (side by side, leading dimension ldp), V_r keys[r] rows from v[r] (ldv apart, in
// V's storage type), O [ni, dv] (leading dimension dv), c per row (nullptr: O = Σ P_r V_r); ones
// is a row of ones (only read when several runs meet a single row). The micro-kernel keeps each
// block of O in registers across the runs: one pass over O per span, not one per run. Full
// NR-wide column blocks first, then a half-width block where one vector of columns is left
// (d = 80, 96, ...), the last dv % (NR / 2) columns on a plain loop.
template <class T, class TV>
void accumulate_pv(const T* p, index_t ldp, index_t ni, index_t runs, const index_t* keys, const TV* const* v,
                   index_t ldv, index_t dv, T* o, const T* c, const T* ones) noexcept {
  constexpr index_t MR = simd::AttentionTile<T>::mr, NR = simd::AttentionTile<T>::nr, W = NR / 2;
  if (ni == 1) {  // one row: run by run, the later runs adding to O
    for (index_t r = 0, col = 0; r < runs; col += keys[r++])
      simd::attention_row_pv(keys[r], p + col, v[r], ldv, dv, o, r == 0 ? c : ones);
    return;
  }
  const TV* at[max_span_tiles];  // the runs' rows from column c0 on
  const auto columns = [&](index_t c0) {
    for (index_t r = 0; r < runs; ++r) at[r] = v[r] + c0;
  };
  index_t full = dv / NR * NR;
  for (index_t c0 = 0; c0 < full; c0 += NR) {
    columns(c0);
    for (index_t ir = 0; ir < ni; ir += MR)
      simd::attention_micro_kernel_runs<T>(runs, keys, at, ldv, p + ir * ldp, ldp, std::min(MR, ni - ir), NR,
                                           o + ir * dv + c0, dv, c ? c + ir : nullptr, T(1));
  }
  if (dv - full >= W) {
    columns(full);
    for (index_t ir = 0; ir < ni; ir += MR)
      simd::attention_micro_kernel_runs<T, 1>(runs, keys, at, ldv, p + ir * ldp, ldp, std::min(MR, ni - ir), W,
                                              o + ir * dv + full, dv, c ? c + ir : nullptr, T(1));
    full += W;
  }
  for (index_t i = 0; i < ni; ++i)
    for (index_t col = full; col < dv; ++col) {
      T sum = c ? c[i] * o[i * dv + col] : T(0);
      for (index_t r = 0, k0 = 0; r < runs; k0 += keys[r++])
        for (index_t j = 0; j < keys[r]; ++j) sum += p[i * ldp + k0 + j] * static_cast<T>(v[r][j * ldv + col]);
      o[i * dv + col] = sum;
    }
}

// to += from, count by count (each worker counts its own tiles; the driver sums them).
inline void add_stats(AttentionStats& to, const AttentionStats& from) noexcept {
  to.open += from.open;
  to.partial += from.partial;
  to.blocked += from.blocked;
}

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
inline constexpr index_t decode_split_keys = 512;  // fewest keys per range when splitting

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

template <class T, class Scorer, class Mask>
void attention_decode(const TensorView<T, 4>& out, const TensorView<const T, 4>& v, Scorer& scorer, const Mask& mask,
                      const AttentionOptions& options, index_t bk, int threads) {
  using Acc = accumulator_t<T>;
  const index_t B = out.size(0), H = out.size(1), Lq = out.size(2), dv = out.size(3);
  const index_t Hkv = v.size(1), Lk = v.size(2), G = H / Hkv, R = G * Lq;
  const index_t k_tiles = (Lk + bk - 1) / bk, groups = B * Hkv;
  // Enough ranges for two tasks per worker, none shorter than decode_split_keys.
  const index_t most = std::max<index_t>(1, Lk / decode_split_keys);
  const index_t wanted = threads > 1 ? (2 * threads + groups - 1) / groups : 1;
  const index_t split = std::clamp(wanted, index_t{1}, most);
  const index_t per_range = (k_tiles + split - 1) / split;
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
    T* dst = &out(b, h, i, 0);
    const index_t os = out.stride(3);
    for (index_t c = 0; c < dv; ++c) dst[c * os] = static_cast<T>(any ? o[c] * norm : norm * Acc(0));
  };

  parallel_for(groups * ranges, threads, [&](index_t task, int worker) {
    const index_t b = task / (Hkv * ranges), hk = (task / ranges) % Hkv, range = task % ranges;
    DecodeScratch<Acc>& s = DecodeScratch<Acc>::mine(R, bk, dv, G);
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
        const mask::Tile kind = mask.classify(TileRef{b, hk * G + g, 0, Lq, j0, nj});
        s.kinds[static_cast<std::size_t>(g)] = kind;
        any_visible = any_visible || kind != mask::Tile::blocked;
        ++(kind == mask::Tile::open ? counted.open : kind == mask::Tile::partial ? counted.partial : counted.blocked);
      }
      if (!any_visible) continue;
      for (index_t g = 0; g < G; ++g) {
        Acc* Sg = S + g * Lq * bk;
        const TileRef tile{b, hk * G + g, 0, Lq, j0, nj};
        const mask::Tile kind = s.kinds[static_cast<std::size_t>(g)];
        if (kind == mask::Tile::blocked) {
          for (index_t i = 0; i < Lq; ++i) std::fill_n(Sg + i * bk, nj, -std::numeric_limits<Acc>::infinity());
          continue;
        }
        scorer.scores(tile, Sg, bk);
        if (kind == mask::Tile::partial) mask.apply(tile, Sg, bk);
      }
      for (index_t r = 0; r < R; ++r)
        s.correction[static_cast<std::size_t>(r)] = s.rows[static_cast<std::size_t>(r)].update(S + r * bk, nj);
      const T* rows = &v(b, hk, j0, 0);
      accumulate_pv<Acc, T>(S, bk, R, 1, &nj, &rows, v.stride(2), dv, O, started ? s.correction.data() : nullptr,
                            nullptr);
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
            simd::axpy(factor, p + 2, merged.data(), dv);
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

// The tile the general loop computes in: the call's block_q/block_k, else the mask's preference,
// else the defaults (benchmarks use it to count the tiles a call visits).
template <class Mask>
TileShape chosen_tiles(const Mask& mask, const AttentionOptions& options) noexcept {
  TileShape preferred;
  mask::merge_preference(preferred, mask);
  return {options.block_q > 0     ? options.block_q
          : preferred.block_q > 0 ? preferred.block_q
                                  : default_block_q,
          options.block_k > 0     ? options.block_k
          : preferred.block_k > 0 ? preferred.block_k
                                  : default_block_k};
}

// The driver. All shapes have been validated by the caller; q, k, v have unit stride in their
// last dimension; out is [B, Hq, Lq, dv]; v is [B, Hkv, Lk, dv] with Hq = G·Hkv, query head h
// reading key/value head h / G; weights is empty or [B, Hq, Lq, Lk], zeroed.
//
// For each (batch, head, query tile), in parallel:
//     m = -inf, l = 0, O = 0                       running max, running sum, accumulator
//     for each key tile the mask does not block:   blocked tiles cost nothing
//         S = score(Q_tile, K_tile)                 the score policy (micro-kernel, or tanh-and-dot)
//         mask.apply(S)                             only on partially masked tiles
//         m_new = max(m, rowmax S); P = exp(S - m_new)
//         l = l·exp(m - m_new) + rowsum P; O = O·exp(m - m_new) + P·V_tile   (one micro-kernel pass)
//     O = O / l                                     l == 0: the row was fully masked
// FlashAttention-2's loop order (Dao 2023, https://arxiv.org/abs/2307.08691) with the online
// softmax of Milakov & Gimelshein (https://arxiv.org/abs/1805.02867): memory stays O(tile)
// whatever the sequence length, unless the caller asks for the weights.
//
// With weights requested, each visited tile's P = exp(S - m_at_that_time) is written to the
// weights row together with m_at_that_time; once the row is done, every segment is rescaled by
// exp(m_then - m_final) / l. One pass, no recomputation.
//
// Nothing here starts a thread: the tasks (and the packing before them) run on parallel_for's
// or run_team's workers, and every product runs on the calling worker.
template <class T, class Scorer, class Mask>
void attention_tiles(const TensorView<T, 4>& out, const TensorView<T, 4>& weights, const TensorView<const T, 4>& v,
                     Scorer& scorer, const Mask& mask, const AttentionOptions& options) {
  using Acc = accumulator_t<T>;
  const index_t B = out.size(0), H = out.size(1), Lq = out.size(2), dv = out.size(3), Lk = v.size(2);
  const index_t group = H / v.size(1);  // query heads per key/value head
  TileShape preferred;
  mask::merge_preference(preferred, mask);
  const TileShape tiles = chosen_tiles(mask, options);  // not a structured binding: clang 14 cannot capture one
  // A tile taller or wider than the call's rows or keys (rounded up to even: pair products) is
  // the same tile as the call's own size: requested sizes beyond it are cut there, and the tile
  // and task counts below cannot overflow.
  const index_t even_keys = Lk + (Lk & 1);
  const index_t bq = std::min(tiles.block_q, std::max(Lq, default_block_q));
  const index_t bk = std::min(tiles.block_k, std::max(even_keys, default_block_k));
  const bool with_weights = !weights.empty();
  const int threads = std::clamp(options.num_threads > 0 ? options.num_threads : num_threads(), 1, max_threads);
  if (!with_weights && Lq <= decode_max_rows && Lk >= decode_min_keys) {
    const index_t decode_bk = std::min(options.block_k > 0     ? options.block_k
                                       : preferred.block_k > 0 ? std::min(preferred.block_k, decode_block_k)
                                                               : decode_block_k,
                                       std::max(even_keys, decode_block_k));
    attention_decode(out, v, scorer, mask, options, decode_bk, threads);
    return;
  }
  const index_t q_tiles = (Lq + bq - 1) / bq;
  const index_t k_tiles = (Lk + bk - 1) / bk;
  // The visited key tiles are computed in spans of up to max_span_keys keys: one softmax update
  // per row and one rescale of O per span instead of per tile. A span gathers the next visited
  // tiles whether or not blocked ones lie between them (a 64-key BigBird row of 3 window, 2
  // global and 3 random blocks is one span, not six); its scores sit side by side in S, and
  // its runs of consecutive tiles are scored and multiplied by V run by run. Masks still apply
  // tile by tile, and the counts stay per tile. 512 keys ran 1-2% faster than 256 in every
  // case measured, dense included (a 96 × 512 S is 192 KB, in L2; docs/decisions.md).
  const index_t span_tiles = std::clamp<index_t>(max_span_keys / bk, 1, max_span_tiles);
  const index_t ld = span_tiles * bk;

  // bfloat16 where the target has AVX-512 BF16: V is packed with its keys in pairs, each span's P
  // is rounded to bfloat16, and O = c·O + P·V runs on pair products (vdpbf16ps). Scores, m, l
  // and O stay float; rounding P costs at most 2^-8 · Σ_j p_j·|v_j| in each output
  // (docs/decisions.md). Spans must start at an even key: block_k even.
  constexpr bool pairs = std::is_same_v<T, bfloat16> && simd::bf16_pair_products;
  constexpr index_t NR = simd::pair_panel;
  const index_t Hkv = v.size(1), key_pairs = (Lk + 1) / 2, col_panels = (dv + NR - 1) / NR;
  const bool pair_pv = pairs && bk % 2 == 0 && Lq >= 2 * simd::AttentionTile<Acc>::mr && dv > 0;
  const index_t v_panels = col_panels * key_pairs * 2 * NR;  // packed V values per (batch, key/value head)
  std::unique_ptr<T, AlignedDelete> packed_v;

  // What is packed (Kᵀ by the scorer, V for pair products) is packed for a chunk of (batch,
  // key/value head) groups at a time, their tiles computed, then the next chunk: the packed
  // copies of a long sequence stay within pack_budget_bytes (and in cache while they are read)
  // instead of doubling K's memory, and come from the same reused buffer call after call.
  const index_t groups = B * Hkv, tasks_per_group = group * q_tiles;
  index_t group_bytes = pair_pv ? v_panels * index_t{sizeof(T)} : 0;
  if constexpr (requires { scorer.packed_bytes(); }) group_bytes += scorer.packed_bytes();
  // With two or more workers and a group for each, every worker packs the groups it claims
  // itself and computes their tiles, then helps with the groups still running: a worker reads
  // the packed copy it wrote, not one its neighbour wrote (two workers ran BigBird 4-5% and
  // Longformer 2-2.5% faster so; docs/decisions.md "Long sequences, ninth part"). A chunk then
  // holds a group per worker at least.
  constexpr bool packs_groups = requires {
    scorer.reserve(index_t{}, index_t{}), scorer.pack(index_t{});
  };
  const bool own_groups = packs_groups && threads > 1 && groups >= threads && group_bytes > 0;
  const index_t chunk =
      group_bytes > 0 ? std::clamp<index_t>(pack_budget_bytes / group_bytes, own_groups ? threads : 1, groups) : groups;
  if (pair_pv) packed_v = aligned_storage<T>(chunk * v_panels, false);
  // past the L3, each query tile asks ahead for the key tiles its worker's next one adds (LookAhead)
  bool look_ahead = false;
  if constexpr (requires { scorer.packed_keys(index_t{}, index_t{}, index_t{}, index_t{}); })
    look_ahead = scorer.packed_bytes() > 0 && scorer.packed_bytes() + Lk * dv * index_t{sizeof(T)} >= look_ahead_bytes;

  // Each worker allocates its scratch itself, on its own thread, at its first task: the
  // allocator then takes it from that thread's own pool (glibc keeps an arena per thread), away
  // from what the other workers write at every row. Allocated together by the calling thread,
  // the workers' buffers sat side by side, and on the development VM two workers then ran up to
  // 15% slower in some minutes (docs/decisions.md, "Long sequences, tenth part").
  std::vector<std::unique_ptr<AttentionScratch<Acc>>> scratch(static_cast<std::size_t>(threads));
  const auto scratch_of = [&](int worker) -> AttentionScratch<Acc>& {
    auto& own = scratch[static_cast<std::size_t>(worker)];
    if (own) [[likely]]
      return *own;
    own = std::make_unique<AttentionScratch<Acc>>();
    AttentionScratch<Acc>& s = *own;
    s.scores.resize(static_cast<std::size_t>(bq * ld));
    s.acc.resize(static_cast<std::size_t>(bq * dv));
    s.correction.resize(static_cast<std::size_t>(bq));
    s.ones.assign(static_cast<std::size_t>(bq), Acc(1));
    s.rows.resize(static_cast<std::size_t>(bq));
    s.visited.resize(static_cast<std::size_t>(k_tiles));
    s.kinds.resize(static_cast<std::size_t>(k_tiles));
    if (with_weights) s.m_at.resize(static_cast<std::size_t>(bq * k_tiles));
    return s;
  };

  // One task: query tile i0 of (batch b, query head h), whose key/value group is packed at
  // `packed` (chunk-relative).
  const auto run_task = [&](index_t b, index_t h, index_t i0, index_t packed, int worker) {
    AttentionScratch<Acc>& s = scratch_of(worker);
    const index_t ni = std::min(bq, Lq - i0);
    Acc* S = s.scores.data();
    Acc* O = s.acc.data();
    bool started = false;  // O holds a value (before the first visited tile it is not even zero)
    std::fill(s.rows.begin(), s.rows.begin() + ni, OnlineSoftmax<Acc>{});
    if (with_weights) std::fill(s.m_at.begin(), s.m_at.end(), -std::numeric_limits<Acc>::infinity());
    const auto tile_at = [&](index_t jt) { return TileRef{b, h, i0, ni, jt * bk, std::min(bk, Lk - jt * bk)}; };
    // the key tiles this query tile visits, walked once: the spans and the look-ahead read them
    const index_t visited = visited_tiles(mask, b, h, i0, ni, bk, Lk, s.visited.data(), s.kinds.data(), k_tiles);
    const index_t* const visited_ids = s.visited.data();
    s.stats.blocked += k_tiles - visited;
    for (index_t u = 0; u < visited; ++u)
      ++(s.kinds[static_cast<std::size_t>(u)] == mask::Tile::open ? s.stats.open : s.stats.partial);
    LookAhead ahead;  // nothing added: its steps do nothing
    if constexpr (requires { scorer.packed_keys(b, h, i0, ni); }) {
      // this worker's next query tile of the head: the next one when it computes its own group,
      // else the one after the other workers' if the scheduler hands out tiles in turn
      const index_t next = i0 + (own_groups ? 1 : threads) * bq;
      if (look_ahead && next < Lq) {
        index_t there[max_span_tiles];
        const index_t n_there =
            visited_tiles(mask, b, h, next, std::min(bq, Lq - next), bk, Lk, there, nullptr, max_span_tiles);
        for (index_t u = 0; u < n_there; ++u) {
          if (std::binary_search(visited_ids, visited_ids + visited, there[u])) continue;
          const index_t j0 = there[u] * bk, nj = std::min(bk, Lk - j0);
          const auto [keys, key_bytes] = scorer.packed_keys(b, h, j0, nj);
          ahead.add(keys, key_bytes);
          if (pair_pv) {
            for (index_t cp = 0; cp < col_panels; ++cp)
              ahead.add(packed_v.get() + packed * v_panels + cp * key_pairs * 2 * NR + j0 * NR,
                        (nj + 1) / 2 * 2 * NR * index_t{sizeof(T)});
          } else {
            ahead.add(&v(b, h / group, j0, 0), ((nj - 1) * v.stride(2) + dv) * index_t{sizeof(T)});
          }
        }
        ahead.spread(ni * std::max<index_t>(1, (visited + span_tiles - 1) / span_tiles));  // a step per row update
      }
    }
    index_t run_first[max_span_tiles], run_tiles[max_span_tiles];  // a span's runs of consecutive tiles

    for (index_t first = 0, count = 0; first < visited; first += count) {
      // the span: the next span_tiles visited tiles (blocked ones may lie between them)
      count = std::min(span_tiles, visited - first);
      const index_t* const tile_ids = visited_ids + first;
      const mask::Tile* const kinds = s.kinds.data() + first;
      index_t runs = 0;
      for (index_t u = 0; u < count; ++u) {
        if (runs > 0 && run_first[runs - 1] + run_tiles[runs - 1] == tile_ids[u]) {
          ++run_tiles[runs - 1];
        } else {
          run_first[runs] = tile_ids[u];
          run_tiles[runs++] = 1;
        }
      }
      // only the tile at the end of the keys can be short, and it is the span's last
      const index_t nj = (count - 1) * bk + std::min(bk, Lk - tile_ids[count - 1] * bk);
      // run r: keys [run_key(r), + run_keys(r)), columns of S from run_col(r) on
      const auto run_key = [&](index_t r) { return run_first[r] * bk; };
      const auto run_keys = [&](index_t r) { return std::min(run_tiles[r] * bk, Lk - run_key(r)); };
      index_t run_col[max_span_tiles];
      for (index_t r = 0, col = 0; r < runs; col += run_tiles[r++] * bk) run_col[r] = col;
      for (index_t r = 0; r < runs; ++r)
        scorer.scores(TileRef{b, h, i0, ni, run_key(r), run_keys(r)}, S + run_col[r], ld);
      for (index_t u = 0; u < count; ++u)
        if (kinds[u] == mask::Tile::partial) mask.apply(tile_at(tile_ids[u]), S + u * bk, ld);

      // P rounded to bfloat16 for the pair products (a zero after an odd span), written by the
      // softmax update instead of the float P
      thread_local std::vector<bfloat16> rounded;
      const index_t span_pairs = (nj + 1) / 2;
      if (pair_pv) rounded.resize(static_cast<std::size_t>(ni * 2 * span_pairs));
      for (index_t i = 0; i < ni; ++i) {
        ahead.step();
        Acc* row = S + i * ld;
        // row := exp(row - m_new); exp(m_old - m_new) rescales what was accumulated
        if constexpr (pairs) {
          if (pair_pv && !with_weights) {
            bfloat16* p = rounded.data() + i * 2 * span_pairs;
            s.correction[static_cast<std::size_t>(i)] = s.rows[static_cast<std::size_t>(i)].update(row, nj, p);
            if (nj % 2 != 0) p[nj] = bfloat16(0.0f);
            continue;
          }
        }
        s.correction[static_cast<std::size_t>(i)] = s.rows[static_cast<std::size_t>(i)].update(row, nj);
        if constexpr (pairs) {
          if (pair_pv) {  // the weights need the float P too: round a copy
            simd::narrow(row, rounded.data() + i * 2 * span_pairs, nj);
            if (nj % 2 != 0) rounded[static_cast<std::size_t>(i * 2 * span_pairs + nj)] = bfloat16(0.0f);
          }
        }
        if (with_weights) {
          for (index_t r = 0; r < runs; ++r) {
            T* w = &weights(b, h, i0 + i, run_key(r));
            const Acc* p = row + run_col[r];
            for (index_t j = 0; j < run_keys(r); ++j) w[j] = static_cast<T>(p[j]);
          }
          for (index_t u = 0; u < count; ++u)
            s.m_at[static_cast<std::size_t>(i * k_tiles + tile_ids[u])] = s.rows[static_cast<std::size_t>(i)].m;
        }
      }
      // O = O · correction + P · V_span: on pair products run by run (the first run rescales O or
      // starts it, the later ones add to it), else all runs in one pass over O
      const auto c_scale = [&](index_t r) -> const Acc* {
        if (r > 0) return s.ones.data();
        return started ? s.correction.data() : nullptr;
      };
      if constexpr (pairs) {
        if (pair_pv) {
          constexpr index_t MR = simd::AttentionTile<Acc>::mr;
          for (index_t r = 0; r < runs; ++r) {
            const T* vp = packed_v.get() + packed * v_panels + run_key(r) * NR;
            const index_t pairs_r = (run_keys(r) + 1) / 2;
            const Acc* c = c_scale(r);
            for (index_t cp = 0; cp < col_panels; ++cp)
              for (index_t ir = 0; ir < ni; ir += MR)
                simd::pair_micro_kernel(pairs_r, rounded.data() + ir * 2 * span_pairs + run_col[r], 2 * span_pairs,
                                        std::min(MR, ni - ir), vp + cp * key_pairs * 2 * NR, std::min(NR, dv - cp * NR),
                                        O + ir * dv + cp * NR, dv, c ? c + ir : nullptr, Acc(1));
          }
          started = true;
          continue;
        }
      }
      index_t keys[max_span_tiles];
      const T* rows[max_span_tiles];
      for (index_t r = 0; r < runs; ++r) {
        keys[r] = run_keys(r);
        rows[r] = &v(b, h / group, run_key(r), 0);
      }
      accumulate_pv(S, ld, ni, runs, keys, rows, v.stride(2), dv, O, c_scale(0), s.ones.data());
      started = true;
    }

    for (index_t i = 0; i < ni; ++i) {
      const OnlineSoftmax<Acc>& state = s.rows[static_cast<std::size_t>(i)];
      const Acc norm = state.normalizer(options.masked_rows);
      T* o = &out(b, h, i0 + i, 0);
      const index_t os = out.stride(3);
      for (index_t c = 0; c < dv; ++c) o[c * os] = static_cast<T>(started ? O[i * dv + c] * norm : norm * Acc(0));
      if (!with_weights) continue;
      T* w = &weights(b, h, i0 + i, 0);
      if (state.l == Acc(0) || std::isnan(state.l)) {  // fully masked: all fill (0 is there); a NaN score: all NaN
        if (std::isnan(norm)) std::fill(w, w + Lk, static_cast<T>(norm));
        continue;
      }
      for (index_t jt = 0; jt < k_tiles; ++jt) {
        const Acc m_then = s.m_at[static_cast<std::size_t>(i * k_tiles + jt)];
        if (m_then == -std::numeric_limits<Acc>::infinity()) continue;  // blocked, or nothing visible yet
        const index_t j0 = jt * bk, nj = std::min(bk, Lk - j0);
        // w = exp(s - m_then) becomes exp(s - m) / l, and 0 where s - m < softmax_floor: there
        // w < exp(floor + m - m_then) = cut, tested before the product, which could be subnormal
        const Acc factor = simd::softmax_exp(m_then - state.m) * norm;
        const Acc cut = std::exp(simd::softmax_floor<Acc> + (state.m - m_then));
        if constexpr (std::is_same_v<T, Acc>) {
          simd::scale_above(factor, cut, w + j0, nj);
        } else {  // 16-bit weights: widen, scale, round once more
          for (index_t j = j0; j < j0 + nj; ++j) {
            const Acc p = static_cast<Acc>(w[j]);
            w[j] = static_cast<T>(simd::zero_below(p, cut, p) * factor);
          }
        }
      }
    }
  };

  // V of keys [j0, j0 + v_piece) of group g (chunk-relative g - first) in pairs, for pair products
  constexpr index_t v_piece = 1024;
  const auto pack_v = [&](index_t g, index_t first, index_t j0) {
    if constexpr (pairs)
      simd::pack_v_pairs(&v(g / Hkv, g % Hkv, j0, 0), v.stride(2), std::min(v_piece, Lk - j0), dv,
                         packed_v.get() + (g - first) * v_panels + j0 * NR, key_pairs * 2 * NR);
  };
  // task `rest` of group g: its query heads' last query tile first, then the others in order
  // (neighbours share window tiles): a costly last tile (BigBird's last global block, a causal
  // mask's last rows) then does not start when the other workers are about to run out of work
  const auto run_group_task = [&](index_t g, index_t first, index_t rest, int worker) {
    const index_t nth = rest % q_tiles, qt = nth == 0 ? q_tiles - 1 : nth - 1;
    run_task(g / Hkv, (g % Hkv) * group + rest / q_tiles, qt * bq, g - first, worker);
  };

  for (index_t first = 0; first < groups; first += chunk) {
    const index_t count = std::min(chunk, groups - first);
    if constexpr (packs_groups) {
      if (own_groups) {
        scorer.reserve(first, count);
        std::vector<std::atomic<index_t>> next_task(static_cast<std::size_t>(count));  // per group
        std::vector<std::atomic<bool>> packed(static_cast<std::size_t>(count));
        std::atomic<index_t> unclaimed{0};
        const auto drain = [&](index_t c, int worker) {
          auto& next = next_task[static_cast<std::size_t>(c)];
          for (index_t rest; (rest = next.fetch_add(1, std::memory_order_relaxed)) < tasks_per_group;)
            run_group_task(first + c, first, rest, worker);
        };
        run_team(threads, [&](int worker, int) {
          for (index_t c; (c = unclaimed.fetch_add(1, std::memory_order_relaxed)) < count;) {
            scorer.pack(first + c);
            if (pair_pv)
              for (index_t j0 = 0; j0 < Lk; j0 += v_piece) pack_v(first + c, first, j0);
            packed[static_cast<std::size_t>(c)].store(true, std::memory_order_release);
            drain(c, worker);
          }
          // every group is claimed: help with those still running, once their owner has packed them
          for (index_t c = 0; c < count; ++c) {
            if (next_task[static_cast<std::size_t>(c)].load(std::memory_order_relaxed) >= tasks_per_group) continue;
            while (!packed[static_cast<std::size_t>(c)].load(std::memory_order_acquire))
              std::this_thread::yield();  // to the owner, should it share this core
            drain(c, worker);
          }
        });
        continue;
      }
    }
    if constexpr (requires { scorer.prepare(threads, first, count); }) scorer.prepare(threads, first, count);
    if constexpr (pairs) {
      if (pair_pv) {  // in pieces of keys, so that one long head keeps every worker busy
        const index_t pieces = (Lk + v_piece - 1) / v_piece;
        parallel_for(count * pieces, threads,
                     [&](index_t task, int) { pack_v(first + task / pieces, first, task % pieces * v_piece); });
      }
    }
    parallel_for(count * tasks_per_group, threads, [&](index_t task, int worker) {
      run_group_task(first + task / tasks_per_group, first, task % tasks_per_group, worker);
    });
  }

  if (options.stats) {
    *options.stats = {};
    for (const auto& s : scratch)
      if (s) add_stats(*options.stats, s->stats);
  }
}

// A view with unit stride in the last dimension: the view itself, or a dense copy kept in `storage`.
template <class T>
TensorView<const T, 4> unit_inner(const TensorView<const T, 4>& x, Tensor<T, 4>& storage) {
  if (x.stride(3) == 1 || x.size(3) <= 1) return x;
  storage = Tensor<T, 4>(x);
  return storage.view();
}

// to(b, h, i, j) = value(b, h, i, j) for every element of a view of any strides.
template <class T, class F>
void assign_each(const TensorView<T, 4>& to, F&& value) {
  for (index_t b = 0; b < to.size(0); ++b)
    for (index_t h = 0; h < to.size(1); ++h)
      for (index_t i = 0; i < to.size(2); ++i)
        for (index_t j = 0; j < to.size(3); ++j) to(b, h, i, j) = value(b, h, i, j);
}

// The bytes a view can touch, [first, last): its elements span this range whatever its strides.
template <class T>
std::pair<const std::byte*, const std::byte*> byte_extent(const TensorView<T, 4>& x) noexcept {
  if (x.numel() == 0) return {nullptr, nullptr};
  index_t lo = 0, hi = 0;
  for (std::size_t d = 0; d < 4; ++d) {
    const index_t reach = (x.size(d) - 1) * x.stride(d);
    (reach < 0 ? lo : hi) += reach;
  }
  const auto* base = reinterpret_cast<const std::byte*>(x.data());
  return {base + lo * index_t{sizeof(T)}, base + (hi + 1) * index_t{sizeof(T)}};
}

// Whether two views may share a byte (their extents intersect).
template <class A, class B>
bool may_overlap(const TensorView<A, 4>& a, const TensorView<B, 4>& b) noexcept {
  const auto [a0, a1] = byte_extent(a);
  const auto [b0, b1] = byte_extent(b);
  return a0 != nullptr && b0 != nullptr && std::less<>{}(a0, b1) && std::less<>{}(b0, a1);
}

// [B, L, d] seen as [B, 1, L, d].
template <class T, std::size_t Rank>
TensorView<T, 4> as_heads(const TensorView<T, Rank>& x) {
  if constexpr (Rank == 4) {
    return x;
  } else {
    static_assert(Rank == 3, "attention takes [B, H, L, d] or [B, L, d] tensors");
    return {x.data(), {x.size(0), 1, x.size(1), x.size(2)}, {x.stride(0), 0, x.stride(1), x.stride(2)}};
  }
}

}  // namespace heed::detail
