// The tiles a module's attention computes (MultiheadAttentionCall::stats): a sparse pattern's
// blocked blocks and a KV cache's keys past a row's length are skipped inside the modules as
// they are by the kernels alone (mask::Dynamic, kernels/dynamic_mask.hpp). Counted by hand from
// the patterns, not from the masks' own classification.
#include <gtest/gtest.h>

#include "heed/core/random.hpp"
#include "heed/nn/multihead_attention.hpp"

namespace {

using heed::index_t;
using heed::Tensor;
namespace mask = heed::mask;

constexpr index_t E = 64, H = 2;

heed::nn::MultiheadAttention<float> module() {
  return heed::nn::MultiheadAttention<float>({.embed_dim = E, .num_heads = H});
}

TEST(ModuleTiles, ASparsePatternsBlockedBlocksAreSkipped) {
  const index_t L = 512, block = 64, nb = L / block;  // 64 × 64 tiles: one per block
  Tensor<bool, 2> layout({nb, nb});
  for (index_t i = 0; i < nb; ++i) layout(i, i) = layout(i, 0) = true;  // the diagonal and the first column
  const auto mha = module();
  const auto x = heed::randn<float>({1, L, E}, 1);
  heed::AttentionStats stats;
  (void)mha(
      x, x, x,
      {.need_weights = false, .sparse = mask::Sparse{.blocks = mask::BlockSparse{layout, block}}, .stats = &stats});
  EXPECT_EQ(stats.open, H * (2 * nb - 1));  // 15 allowed blocks a head
  EXPECT_EQ(stats.partial, 0);
  EXPECT_EQ(stats.blocked, H * (nb * nb - (2 * nb - 1)));  // 49 skipped

  // with the last block of keys padded too: the diagonal's last block is blocked as well, the
  // first column's blocks stay open, and the padding makes no other tile partial
  Tensor<bool, 2> padding({1, L});
  for (index_t j = L - block; j < L; ++j) padding(0, j) = true;
  (void)mha(x, x, x,
            {.key_padding_mask = padding,
             .need_weights = false,
             .sparse = mask::Sparse{.blocks = mask::BlockSparse{layout, block}},
             .stats = &stats});
  EXPECT_EQ(stats.open, H * (2 * nb - 2));
  EXPECT_EQ(stats.blocked, H * (nb * nb - (2 * nb - 2)));
}

TEST(ModuleTiles, ACachesKeysPastARowsLengthAreSkipped) {
  const auto mha = module();
  auto cache = mha.make_cache({.batch = 2, .max_len = 1024});
  const auto prompt = heed::randn<float>({2, 600, E}, 2);
  (void)mha(prompt, prompt, prompt, {.need_weights = false, .cache = &cache});
  cache.truncate_row(1, 100);  // row 1 continues from position 100, row 0 from 600
  const auto chunk = heed::randn<float>({2, 40, E}, 3);
  heed::AttentionStats stats;
  (void)mha(chunk, chunk, chunk, {.need_weights = false, .cache = &cache, .stats = &stats});
  // 640 keys in 5 tiles of 128, 40 queries in tiles of 24 (a causal mask's tiles). Query tile
  // [i0, i0 + ni) of row b sees keys up to i0 + ni - 1 + offset(b): a key tile past it is
  // blocked, one whose last key every row sees is open, the rest partial.
  const index_t offsets[2] = {600, 100}, Lq = 40, Lk = 640, bq = 24, bk = 128;
  heed::AttentionStats expected;
  for (const index_t offset : offsets)
    for (index_t i0 = 0; i0 < Lq; i0 += bq)
      for (index_t j0 = 0; j0 < Lk; j0 += bk) {
        const index_t ni = std::min(bq, Lq - i0), nj = std::min(bk, Lk - j0);
        index_t& count = j0 > i0 + ni - 1 + offset    ? expected.blocked
                         : j0 + nj - 1 <= i0 + offset ? expected.open
                                                      : expected.partial;
        count += H;
      }
  EXPECT_EQ(expected.blocked, H * 7);  // row 1: 4 of its first query tile's key tiles, 3 of its second's
  EXPECT_EQ(stats.open, expected.open);
  EXPECT_EQ(stats.partial, expected.partial);
  EXPECT_EQ(stats.blocked, expected.blocked);
}

}  // namespace
