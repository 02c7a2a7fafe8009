#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <cstddef>
#include <limits>
#include <memory>
#include <vector>

#include "heed/core/scalar.hpp"
#include "heed/core/shape.hpp"
#include "heed/kernels/attention_options.hpp"
#include "heed/kernels/mask.hpp"
#include "heed/kernels/detail/online_softmax.hpp"

namespace heed::detail {

// to += from, count by count (each worker counts its own tiles; the driver sums them).
inline void add_stats(AttentionStats& to, const AttentionStats& from) noexcept {
  to.open += from.open;
  to.partial += from.partial;
  to.blocked += from.blocked;
}

// One worker's buffers for the tiled loop, reused across its query tiles, in the accumulator
// type Acc. Aligned apart: a worker's tile counts are written at every tile, and a cache line
// shared with the next worker's buffers slowed two workers down (docs/decisions.md, "Long
// sequences, tenth part").
template <class Acc>
struct alignas(128) AttentionScratch {
  std::vector<Acc> scores;      // [block_q, span keys]: S, then P, of the current span
  std::vector<Acc> acc;         // [block_q, dv]: O, unnormalized
  std::vector<Acc> correction;  // [block_q]: exp(m_old - m_new) of the current span, per row
  std::vector<Acc> ones;        // [block_q]: the c of O = c · O + P V for a span's later runs
  std::vector<OnlineSoftmax<Acc>> rows;
  std::vector<Acc> m_at;            // [block_q, key tiles]: the running max when a tile's weights were written
  std::vector<index_t> visited;     // [key tiles]: the current query tile's visited key tiles, in order...
  std::vector<mask::Tile> kinds;    // ...and whether each is open or partial
  std::vector<bfloat16> rounded_p;  // P rounded to bfloat16, for pair products (value_product.hpp)
  AttentionStats stats;

  // Starts a query tile of `rows` rows: every row's softmax state empty, no weights written.
  void start(index_t rows_in_tile) {
    std::fill(rows.begin(), rows.begin() + rows_in_tile, OnlineSoftmax<Acc>{});
    if (!m_at.empty()) std::fill(m_at.begin(), m_at.end(), -std::numeric_limits<Acc>::infinity());
  }
};

// The workers' scratch: each worker allocates its own, on its own thread, at its first task.
// The allocator then takes it from that thread's pool (glibc keeps an arena per thread), away
// from what the other workers write at every row, rather than side by side with the other
// workers' buffers (docs/decisions.md, "Long sequences, tenth part").
template <class Acc>
class WorkerScratch {
 public:
  // For `threads` workers, query tiles of up to `block_q` rows, spans of `span_keys` keys, dv
  // value columns, k_tiles key tiles, with or without the weights.
  WorkerScratch(int threads, index_t block_q, index_t span_keys, index_t dv, index_t k_tiles, bool with_weights)
      : own_(static_cast<std::size_t>(threads)),
        bq_(block_q),
        ld_(span_keys),
        dv_(dv),
        k_tiles_(k_tiles),
        with_weights_(with_weights) {}

  AttentionScratch<Acc>& of(int worker) {
    auto& own = own_[static_cast<std::size_t>(worker)];
    if (own) [[likely]]
      return *own;
    own = std::make_unique<AttentionScratch<Acc>>();
    AttentionScratch<Acc>& s = *own;
    const auto size = [](index_t n) { return static_cast<std::size_t>(n); };
    s.scores.resize(size(bq_ * ld_));
    s.acc.resize(size(bq_ * dv_));
    s.correction.resize(size(bq_));
    s.ones.assign(size(bq_), Acc(1));
    s.rows.resize(size(bq_));
    s.visited.resize(size(k_tiles_));
    s.kinds.resize(size(k_tiles_));
    if (with_weights_) s.m_at.resize(size(bq_ * k_tiles_));
    return s;
  }

  // The tile counts of every worker, summed.
  [[nodiscard]] AttentionStats stats() const noexcept {
    AttentionStats total;
    for (const auto& s : own_)
      if (s) add_stats(total, s->stats);
    return total;
  }

 private:
  std::vector<std::unique_ptr<AttentionScratch<Acc>>> own_;
  index_t bq_, ld_, dv_, k_tiles_;
  bool with_weights_;
};

}  // namespace heed::detail
