#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include "heed/core/shape.hpp"
#include "heed/kernels/detail/tile_walk.hpp"
#include "heed/simd/vector_ops.hpp"

namespace heed::detail {

// Memory regions (the key tiles a worker's next query tile reads and its current one does not:
// BigBird's random blocks, a window's next tile) asked for into L2 a few lines per step of the
// current tile, so that they arrive while it computes. Past the L3 a random block's keys and
// values come from memory; asked for all at once at the start of a tile, they queued behind
// each other and helped nothing (docs/decisions.md, "Long sequences, sixth part").
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

}  // namespace heed::detail
