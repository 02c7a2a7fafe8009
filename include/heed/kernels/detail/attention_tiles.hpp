#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <thread>
#include <utility>
#include <vector>

#include "heed/core/parallel.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/attention_options.hpp"
#include "heed/kernels/mask.hpp"
#include "heed/kernels/tile_ref.hpp"
#include "heed/kernels/detail/attention_decode.hpp"
#include "heed/kernels/detail/attention_scratch.hpp"
#include "heed/kernels/detail/look_ahead.hpp"
#include "heed/kernels/detail/online_softmax.hpp"
#include "heed/kernels/detail/scorer_protocol.hpp"
#include "heed/kernels/detail/tile_walk.hpp"
#include "heed/kernels/detail/value_product.hpp"
#include "heed/simd/vector_ops.hpp"

namespace heed::detail {

inline constexpr index_t pack_budget_bytes = index_t{8} << 20;  // packed K (and V) per chunk of heads
inline constexpr index_t look_ahead_bytes = index_t{8} << 20;   // a head's K and V from this size on: LookAhead
inline constexpr index_t attention_serial_work = 64 * 1024;     // multiply-adds below which one worker runs

// The tiled loop. For each (batch, head, query tile), in parallel:
//     m = -inf, l = 0, O = 0                       running max, running sum, accumulator
//     for each span of key tiles the mask does not block:   blocked tiles cost nothing
//         S = score(Q_tile, K_span)                 the scorer (micro-kernel, or tanh-and-dot)
//         mask.apply(S)                             only on partially masked tiles
//         m_new = max(m, rowmax S); P = exp(S - m_new)
//         l = l·exp(m - m_new) + rowsum P; O = O·exp(m - m_new) + P·V_span   (the value product)
//     O = O / l                                     l == 0: the row was fully masked
// FlashAttention-2's loop order (Dao 2023, https://arxiv.org/abs/2307.08691) with the online
// softmax of Milakov & Gimelshein (https://arxiv.org/abs/1805.02867): memory stays O(tile)
// whatever the sequence length, unless the caller asks for the weights. A span is up to
// max_span_keys keys of visited tiles, blocked ones possibly between them (tile_walk.hpp): one
// softmax update per row and one pass over O per span (docs/decisions.md, "Spans of 512 keys").
//
// With weights requested, each visited tile's P = exp(S - m_at_that_time) is written to the
// weights row together with m_at_that_time; once the row is done, every segment is rescaled by
// exp(m_then - m_final) / l. One pass, no recomputation.
//
// What is packed (Kᵀ by the scorer, V by the value product) is packed for a chunk of (batch,
// key/value head) groups at a time, their tiles computed, then the next chunk: the packed copies
// of a long sequence stay within pack_budget_bytes and in cache while they are read, and come
// from the same reused buffer call after call. Nothing here starts a thread: the tasks and the
// packing run on parallel_for's or run_team's workers.
template <class Storage, PackingScorer Scorer, class Mask>
class TiledAttention {
 public:
  using Acc = accumulator_t<Storage>;

  // out [B, Hq, Lq, dv]; weights empty or [B, Hq, Lq, Lk], zeroed; v [B, Hkv, Lk, dv]; query
  // tiles of bq rows, key tiles of bk keys (even where the value product runs on pairs).
  TiledAttention(const TensorView<Storage, 4>& out, const TensorView<Storage, 4>& weights,
                 const TensorView<const Storage, 4>& v, Scorer& scorer, const Mask& mask,
                 const AttentionOptions& options, int threads, index_t bq, index_t bk)
      : out_(out),
        weights_(weights),
        scorer_(scorer),
        mask_(mask),
        options_(options),
        values_(v, out.size(2), bk),
        threads_(threads),
        Lq_(out.size(2)),
        Lk_(v.size(2)),
        dv_(out.size(3)),
        Hkv_(v.size(1)),
        group_(out.size(1) / v.size(1)),
        bq_(bq),
        bk_(bk),
        q_tiles_((Lq_ + bq - 1) / bq),
        k_tiles_((Lk_ + bk - 1) / bk),
        // no wider than the call's keys: a decoding step's scratch is then a row of them
        span_tiles_(
            std::max<index_t>(1, std::min(k_tiles_, std::clamp<index_t>(max_span_keys / bk, 1, max_span_tiles)))),
        ld_(span_tiles_ * bk),
        with_weights_(!weights.empty()),
        groups_(out.size(0) * Hkv_),
        group_bytes_(values_.packed_bytes() + scorer.packed_bytes()),
        // With two or more workers and a group for each, every worker packs the groups it claims
        // itself and computes their tiles, then helps with the groups still running: a worker
        // reads the packed copy it wrote, not its neighbour's (docs/decisions.md, "Long
        // sequences, ninth part"). A chunk then holds a group per worker at least.
        own_groups_(threads > 1 && groups_ >= threads && group_bytes_ > 0),
        chunk_(group_bytes_ > 0
                   ? std::clamp<index_t>(pack_budget_bytes / group_bytes_, own_groups_ ? threads : 1, groups_)
                   : groups_),
        // past the L3, each query tile asks ahead for the key tiles its worker's next one adds
        look_ahead_(scorer.packed_bytes() > 0 &&
                    scorer.packed_bytes() + Lk_ * dv_ * index_t{sizeof(Storage)} >= look_ahead_bytes),
        scratch_(threads, std::min(bq, Lq_), ld_, dv_, k_tiles_, with_weights_) {
    values_.reserve(chunk_);
  }

  // Every query tile, a chunk of groups at a time.
  void run() {
    for (index_t first = 0; first < groups_; first += chunk_) {
      const index_t count = std::min(chunk_, groups_ - first);
      if (own_groups_) {
        run_own_groups(first, count);
      } else {
        scorer_.prepare(threads_, first, count);
        values_.prepare(threads_, first, count);
        parallel_for(count * tasks_per_group(), threads_, [&](index_t task, int worker) {
          group_task(first + task / tasks_per_group(), first, task % tasks_per_group(), worker);
        });
      }
    }
    if (options_.stats) *options_.stats = scratch_.stats();
  }

 private:
  [[nodiscard]] index_t tasks_per_group() const noexcept { return group_ * q_tiles_; }

  // The chunk's groups [first, first + count), each packed by the worker that claims it, which
  // then computes its tasks; a worker with no group left helps with those still running.
  void run_own_groups(index_t first, index_t count) {
    scorer_.reserve(first, count);
    std::vector<std::atomic<index_t>> next_task(static_cast<std::size_t>(count));  // per group
    std::vector<std::atomic<bool>> packed(static_cast<std::size_t>(count));
    std::atomic<index_t> unclaimed{0};
    const auto drain = [&](index_t c, int worker) {
      auto& next = next_task[static_cast<std::size_t>(c)];
      for (index_t rest; (rest = next.fetch_add(1, std::memory_order_relaxed)) < tasks_per_group();)
        group_task(first + c, first, rest, worker);
    };
    run_team(threads_, [&](int worker, int) {
      for (index_t c; (c = unclaimed.fetch_add(1, std::memory_order_relaxed)) < count;) {
        scorer_.pack(first + c);
        values_.pack(first + c, first);
        packed[static_cast<std::size_t>(c)].store(true, std::memory_order_release);
        drain(c, worker);
      }
      // every group is claimed: help with those still running, once their owner has packed them
      for (index_t c = 0; c < count; ++c) {
        if (next_task[static_cast<std::size_t>(c)].load(std::memory_order_relaxed) >= tasks_per_group()) continue;
        while (!packed[static_cast<std::size_t>(c)].load(std::memory_order_acquire))
          std::this_thread::yield();  // to the owner, should it share this core
        drain(c, worker);
      }
    });
  }

  // Task `rest` of group g (chunk from `first`): its query heads' last query tile first, then the
  // others in order (neighbours share window tiles): a costly last tile (BigBird's last global
  // block, a causal mask's last rows) then does not start when the others are about to finish.
  void group_task(index_t g, index_t first, index_t rest, int worker) {
    const index_t nth = rest % q_tiles_, qt = nth == 0 ? q_tiles_ - 1 : nth - 1;
    const index_t b = g / Hkv_, hk = g % Hkv_, i0 = qt * bq_;
    query_tile(QueryTile{b, hk * group_ + rest / q_tiles_, hk, i0, std::min(bq_, Lq_ - i0)}, g - first, worker);
  }

  // Query tile q, whose group is packed at chunk place `packed`: the loop of the comment above.
  void query_tile(const QueryTile& q, index_t packed, int worker) {
    AttentionScratch<Acc>& s = scratch_.of(worker);
    s.start(q.ni);
    // the key tiles this query tile visits, walked once: the spans and the look-ahead read them
    const index_t visited = visited_tiles(mask_, q, bk_, Lk_, s.visited.data(), s.kinds.data(), k_tiles_);
    s.stats.blocked += k_tiles_ - visited;
    for (index_t u = 0; u < visited; ++u)
      ++(s.kinds[static_cast<std::size_t>(u)] == mask::Tile::open ? s.stats.open : s.stats.partial);
    LookAhead ahead;  // nothing added: its steps do nothing
    if (look_ahead_) ask_ahead(ahead, s, visited, q, packed);
    bool started = false;  // O holds a value (before the first span it is not even zero)
    for (index_t first = 0, count = 0; first < visited; first += count) {
      count = std::min(span_tiles_, visited - first);
      span(s, KeySpan(s.visited.data() + first, count, bk_, Lk_), first, count, q, packed, started, ahead);
      started = true;
    }
    write_rows(s, q, started);
  }

  // One span: S = its scores, masked tile by tile; each row's softmax step (P where the value
  // product reads it, and into the weights when asked); O = correction·O + P·V.
  void span(AttentionScratch<Acc>& s, const KeySpan& span, index_t first, index_t count, const QueryTile& q,
            index_t packed, bool started, LookAhead& ahead) {
    Acc* S = s.scores.data();
    const index_t* tile_ids = s.visited.data() + first;
    const mask::Tile* kinds = s.kinds.data() + first;
    for (index_t r = 0; r < span.runs; ++r) scorer_.scores(q.keys(span.key(r), span.run_keys(r)), S + span.col[r], ld_);
    for (index_t u = 0; u < count; ++u)
      if (kinds[u] == mask::Tile::partial) mask_.apply(key_tile(q, tile_ids[u]), S + u * bk_, ld_);

    bfloat16* rounded = values_.rounded_p(s.rounded_p, q.ni, span.keys);
    for (index_t i = 0; i < q.ni; ++i) {
      ahead.step();
      Acc* row = S + i * ld_;
      OnlineSoftmax<Acc>& state = s.rows[static_cast<std::size_t>(i)];
      s.correction[static_cast<std::size_t>(i)] = values_.softmax_row(
          state, row, span.keys, rounded ? rounded + i * values_.rounded_ld(span.keys) : nullptr, with_weights_);
      if (with_weights_) {
        for (index_t r = 0; r < span.runs; ++r) {
          Storage* w = &weights_(q.b, q.h, q.i0 + i, span.key(r));
          const Acc* p = row + span.col[r];
          for (index_t j = 0; j < span.run_keys(r); ++j) w[j] = static_cast<Storage>(p[j]);
        }
        for (index_t u = 0; u < count; ++u) s.m_at[static_cast<std::size_t>(i * k_tiles_ + tile_ids[u])] = state.m;
      }
    }
    values_.accumulate(span, S, ld_, rounded, q.ni, q.b, q.hk, packed, s.acc.data(),
                       started ? s.correction.data() : nullptr, s.ones.data());
  }

  // The rows' outputs O / l (or the fill of a fully masked row), and their weights rescaled from
  // exp(s - m_then) to exp(s - m) / l, 0 where s - m < softmax_floor: there w < exp(floor + m -
  // m_then) = cut, tested before the product, which could be subnormal.
  void write_rows(const AttentionScratch<Acc>& s, const QueryTile& q, bool started) {
    const Acc* O = s.acc.data();
    for (index_t i = 0; i < q.ni; ++i) {
      const OnlineSoftmax<Acc>& state = s.rows[static_cast<std::size_t>(i)];
      const Acc norm = state.normalizer(options_.masked_rows);
      Storage* o = &out_(q.b, q.h, q.i0 + i, 0);
      const index_t os = out_.stride(3);
      // norm · 0 carries a NaN normalizer (MaskedRows::nan) into a row no tile reached
      for (index_t c = 0; c < dv_; ++c)
        o[c * os] = static_cast<Storage>(started ? O[i * dv_ + c] * norm : norm * Acc(0));
      if (!with_weights_) continue;
      Storage* w = &weights_(q.b, q.h, q.i0 + i, 0);
      if (state.l == Acc(0) || std::isnan(state.l)) {  // fully masked: all fill (0 is there); a NaN score: all NaN
        if (std::isnan(norm)) std::fill(w, w + Lk_, static_cast<Storage>(norm));
        continue;
      }
      for (index_t jt = 0; jt < k_tiles_; ++jt) {
        const Acc m_then = s.m_at[static_cast<std::size_t>(i * k_tiles_ + jt)];
        if (m_then == -std::numeric_limits<Acc>::infinity()) continue;  // blocked, or nothing visible yet
        const index_t j0 = jt * bk_, nj = std::min(bk_, Lk_ - j0);
        const Acc factor = simd::softmax_exp(m_then - state.m) * norm;
        const Acc cut = std::exp(simd::softmax_floor<Acc> + (state.m - m_then));
        if constexpr (std::is_same_v<Storage, Acc>) {
          values_.softmax_kernels().scale_above(factor, cut, w + j0, nj);
        } else {  // 16-bit weights: widen, scale, round once more
          for (index_t j = j0; j < j0 + nj; ++j) {
            const Acc p = static_cast<Acc>(w[j]);
            w[j] = static_cast<Storage>(simd::zero_below(p, cut, p) * factor);
          }
        }
      }
    }
  }

  // Asks `ahead` for the key tiles this worker's next query tile of the head visits and this
  // one does not: the next tile when the worker computes its own group, else the one after the
  // other workers' if the scheduler hands out tiles in turn.
  void ask_ahead(LookAhead& ahead, const AttentionScratch<Acc>& s, index_t visited, const QueryTile& q,
                 index_t packed) const {
    const index_t next = q.i0 + (own_groups_ ? 1 : threads_) * bq_;
    if (next >= Lq_) return;
    index_t there[max_span_tiles];
    const QueryTile after{q.b, q.h, q.hk, next, std::min(bq_, Lq_ - next)};
    const index_t n_there = visited_tiles(mask_, after, bk_, Lk_, there, nullptr, max_span_tiles);
    for (index_t u = 0; u < n_there; ++u) {
      if (std::binary_search(s.visited.data(), s.visited.data() + visited, there[u])) continue;
      const index_t j0 = there[u] * bk_, nj = std::min(bk_, Lk_ - j0);
      const auto [keys, key_bytes] = scorer_.packed_keys(q.b, q.hk, j0, nj);
      ahead.add(keys, key_bytes);
      values_.ask_ahead(ahead, q.b, q.hk, packed, j0, nj);
    }
    ahead.spread(q.ni * std::max<index_t>(1, (visited + span_tiles_ - 1) / span_tiles_));  // a step per row update
  }

  // q's key tile number jt
  [[nodiscard]] TileRef key_tile(const QueryTile& q, index_t jt) const noexcept {
    return q.keys(jt * bk_, std::min(bk_, Lk_ - jt * bk_));
  }

  TensorView<Storage, 4> out_, weights_;
  Scorer& scorer_;
  const Mask& mask_;
  const AttentionOptions& options_;
  ValueProduct<Storage> values_;
  int threads_;
  index_t Lq_, Lk_, dv_, Hkv_, group_;  // group_: query heads per key/value head
  index_t bq_, bk_, q_tiles_, k_tiles_, span_tiles_, ld_;
  bool with_weights_;
  index_t groups_, group_bytes_;  // (batch, key/value head) groups, and the bytes packed per group
  bool own_groups_;
  index_t chunk_;  // groups packed and computed at a time
  bool look_ahead_;
  WorkerScratch<Acc> scratch_;
};

// The driver. All shapes have been validated by the caller; q, k, v have unit stride in their
// last dimension; out is [B, Hq, Lq, dv]; v is [B, Hkv, Lk, dv] with Hq = G·Hkv, query head h
// reading key/value head h / G; weights is empty or [B, Hq, Lq, Lk], zeroed. Few query rows
// against many keys without weights take the decode path (attention_decode.hpp), the rest the
// tiled loop.
template <class Storage, class Scorer, class Mask>
void attention_tiles(const TensorView<Storage, 4>& out, const TensorView<Storage, 4>& weights,
                     const TensorView<const Storage, 4>& v, Scorer& scorer, const Mask& mask,
                     const AttentionOptions& options) {
  static_assert(check_scorer<Scorer, accumulator_t<Storage>>());
  const index_t Lq = out.size(2), Lk = v.size(2);
  // A call too small to pay for a parallel region (a decoding step over a short cache: 8 heads
  // of 65 keys are some 30k multiply-adds, about the cost of starting and joining the workers)
  // runs on the caller; the workers do not change a bit of the result.
  const index_t work = out.size(0) * out.size(1) * Lq * Lk * 2 * out.size(3);
  const int threads = work < attention_serial_work
                          ? 1
                          : std::clamp(options.num_threads > 0 ? options.num_threads : num_threads(), 1, max_threads);
  // A tile taller or wider than the call's rows or keys (rounded up to even: pair products) is
  // the same tile as the call's own size: requested sizes beyond it are cut there, and the tile
  // and task counts cannot overflow.
  const index_t even_keys = Lk + (Lk & 1);
  if (weights.empty() && Lq <= decode_max_rows && Lk >= decode_min_keys) {
    TileShape preferred;
    mask::merge_preference(preferred, mask);
    const index_t decode_bk = std::min(options.block_k > 0     ? options.block_k
                                       : preferred.block_k > 0 ? std::min(preferred.block_k, decode_block_k)
                                                               : decode_block_k,
                                       std::max(even_keys, decode_block_k));
    attention_decode(out, v, scorer, mask, options, decode_bk, threads);
    return;
  }
  const TileShape tiles = chosen_tiles(mask, options);
  const index_t bq = std::min(tiles.block_q, std::max(Lq, default_block_q));
  const index_t bk = std::min(tiles.block_k, std::max(even_keys, default_block_k));
  if constexpr (PackingScorer<Scorer>) {
    TiledAttention<Storage, Scorer, Mask>(out, weights, v, scorer, mask, options, threads, bq, bk).run();
  } else {
    NoPacking<Scorer> unpacked(scorer);
    TiledAttention<Storage, NoPacking<Scorer>, Mask>(out, weights, v, unpacked, mask, options, threads, bq, bk).run();
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
