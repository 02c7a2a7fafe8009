#pragma once
// BigBird's block layout (Zaheer et al. 2020, https://arxiv.org/abs/2007.14062):
//   mask::BigBirdOptions              the window, global and random blocks of the pattern
//   mask::bigbird_layout(nb, {...})   the bool [nb, nb] layout that mask::BlockSparse reads
// BigBird attention is mask::BlockSparse{mask::bigbird_layout(nb, options), block}
// (kernels/sparse_masks.hpp, which includes this header).

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/core/detail/splitmix64.hpp"

namespace heed::mask {

/// The parts of BigBird's pattern, in blocks (Zaheer et al. 2020, section 2 and appendix D).
struct BigBirdOptions {
  index_t window = 3;      ///< blocks around the diagonal: an odd count, 3 = bi - 1, bi, bi + 1
  index_t global = 2;      ///< global blocks: the first ⌈g/2⌉ and the last ⌊g/2⌋ (ITC)
  index_t random = 3;      ///< random key blocks per query block, outside window and global
  std::uint64_t seed = 0;  ///< the same seed gives the same layout everywhere (splitmix64)
};

/// BigBird's block layout [num_blocks, num_blocks] for BlockSparse, as in the paper's internal
/// transformer construction (ITC), where the global tokens are existing blocks: query block bi
/// attends key block bj when bi or bj is global, when |bi - bj| <= window / 2, or when bj is one
/// of bi's `random` random blocks, drawn among the blocks neither of those already shows (fewer
/// when fewer are left). ShapeError for num_blocks < 1, an even or negative window, negative
/// global or random, or more global blocks than blocks.
[[nodiscard]] inline Tensor<bool, 2> bigbird_layout(index_t num_blocks, const BigBirdOptions& options = {}) {
  const auto fail = [&](const std::string& what) {
    throw ShapeError("heed::mask::bigbird_layout: " + what + " (num_blocks " + std::to_string(num_blocks) +
                     ", window " + std::to_string(options.window) + ", global " + std::to_string(options.global) +
                     ", random " + std::to_string(options.random) + ")");
  };
  if (num_blocks < 1) fail("num_blocks must be >= 1");
  if (options.window < 1 || options.window % 2 == 0)
    fail("the window counts blocks centred on the diagonal: 1, 3, 5, ...");
  if (options.global < 0 || options.random < 0) fail("global and random must be >= 0");
  if (options.global > num_blocks) fail("more global blocks than blocks");
  const index_t nb = num_blocks, first = (options.global + 1) / 2, last = options.global / 2;
  const auto global = [&](index_t b) { return b < first || b >= nb - last; };
  Tensor<bool, 2> layout({nb, nb});
  for (index_t i = 0; i < nb; ++i)
    for (index_t j = 0; j < nb; ++j)
      layout(i, j) = global(i) || global(j) || (j >= i - options.window / 2 && j <= i + options.window / 2);
  detail::SplitMix64 gen(options.seed);
  std::vector<index_t> free;
  for (index_t i = 0; i < nb; ++i) {
    if (global(i)) continue;
    free.clear();
    for (index_t j = 0; j < nb; ++j)
      if (!layout(i, j)) free.push_back(j);
    // the first `random` of a Fisher-Yates shuffle of the free blocks
    const index_t picks = std::min<index_t>(options.random, static_cast<index_t>(free.size()));
    for (index_t p = 0; p < picks; ++p) {
      const auto left = static_cast<std::uint64_t>(free.size()) - static_cast<std::uint64_t>(p);
      const auto pick = static_cast<std::size_t>(p) + static_cast<std::size_t>(gen.next() % left);
      std::swap(free[static_cast<std::size_t>(p)], free[pick]);
      layout(i, free[static_cast<std::size_t>(p)]) = true;
    }
  }
  return layout;
}

}  // namespace heed::mask
