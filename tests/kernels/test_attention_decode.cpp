// The driver's decode path (few query rows against many keys: kernels/detail/attention_decode.hpp,
// attention_decode): each task takes every query head of a key/value group over a range of keys,
// and the ranges are merged at the end. Checked against the naive double reference over every
// mask and score, grouped heads, 1 and 16 query rows (and 2, 3 below), key counts that are not multiples of the
// tile, and 1, 2 and 3 workers (one, two and several key ranges per group).
#include <cmath>
#include <limits>

#include "kernels/attention_cases.hpp"

namespace {

using heed::AttentionOptions;
using heed::AttentionStats;
using heed::index_t;
using namespace heed::test;

template <class T>
class Decode : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(Decode, Scalars);

TYPED_TEST(Decode, EveryMaskOverGroupedHeadsAndKeyRanges) {
  int variant = 0;
  for (index_t kv_heads : {4, 2, 1})
    for (index_t Lq : {1, 16}) {
      const index_t Lk = Lq == 16 ? 1037 : 700;
      const Inputs<TypeParam> in({.B = 2, .H = 4, .Lq = Lq, .Lk = Lk, .d = 16, .dv = 24, .Hkv = kv_heads},
                                 static_cast<std::uint64_t>(kv_heads * 100 + Lq));
      for (MaskKind mask : all_masks) {
        ++variant;
        expect_matches_reference(in, ScoreKind::scaled_dot, mask, {.num_threads = 1 + variant % 3});
      }
    }
}

TYPED_TEST(Decode, EveryScorePolicy) {
  const Inputs<TypeParam> in({.B = 1, .H = 6, .Lq = 3, .Lk = 611, .d = 8, .dv = 8, .Hkv = 2}, 7);
  for (ScoreKind score : {ScoreKind::scaled_dot, ScoreKind::dot, ScoreKind::additive})
    for (int threads : {1, 2})
      expect_matches_reference(in, score, MaskKind::causal_bottom_right, {.num_threads = threads});
}

TYPED_TEST(Decode, HeadDimsAndUserTiles) {
  for (index_t d : {1, 64, 80, 128}) {
    const Inputs<TypeParam> in({.B = 1, .H = 2, .Lq = 2, .Lk = 520, .d = d, .dv = d}, static_cast<std::uint64_t>(d));
    expect_matches_reference(in, ScoreKind::scaled_dot, MaskKind::key_padding, {.num_threads = 2});
    expect_matches_reference(in, ScoreKind::scaled_dot, MaskKind::none, {.num_threads = 2, .block_k = 33});
  }
}

// Batch row 1 has every key padded: its rows are fully masked, whichever worker saw which range.
TYPED_TEST(Decode, FullyMaskedRowsGiveZeroOrNaN) {
  using T = TypeParam;
  const index_t B = 2, H = 4, Lq = 2, Lk = 1500, d = 8;
  const auto q = heed::randn<T>({B, H, Lq, d}, 1), k = heed::randn<T>({B, 2, Lk, d}, 2),
             v = heed::randn<T>({B, 2, Lk, d}, 3);
  heed::Tensor<bool, 2> pad({B, Lk});
  for (index_t j = 0; j < Lk; ++j) pad(1, j) = true;
  for (int threads : {1, 3})
    for (heed::MaskedRows rows : {heed::MaskedRows::zero, heed::MaskedRows::nan}) {
      const auto out = heed::attention(q, k, v, heed::ScaledDot{}, heed::mask::KeyPadding{pad},
                                       {.masked_rows = rows, .num_threads = threads})
                           .output;
      for (index_t h = 0; h < H; ++h)
        for (index_t i = 0; i < Lq; ++i)
          for (index_t c = 0; c < d; ++c) {
            EXPECT_TRUE(std::isfinite(double(out(0, h, i, c))));
            if (rows == heed::MaskedRows::nan)
              EXPECT_TRUE(std::isnan(double(out(1, h, i, c))));
            else
              EXPECT_EQ(out(1, h, i, c), T(0));
          }
    }
}

// The decode path's tiles are 128 keys wide (the general loop's 256): the counts prove which
// loop ran, and a window blocks the tiles outside it for every head.
TEST(DecodeTiles, CountsShowTheDecodeLoopAndItsBlockedTiles) {
  const index_t H = 8, Lk = 1024;
  const auto q = heed::randn<float>({1, H, 1, 16}, 1), k = heed::randn<float>({1, 2, Lk, 16}, 2),
             v = heed::randn<float>({1, 2, Lk, 16}, 3);
  for (int threads : {1, 2}) {
    AttentionStats stats;
    (void)heed::attention(q, k, v, heed::ScaledDot{}, heed::mask::Causal{Lk - 1},
                          {.num_threads = threads, .stats = &stats});
    EXPECT_EQ(stats.open, H * Lk / 128);
    EXPECT_EQ(stats.partial + stats.blocked, 0);
    // keys [Lk - 1 - 200, Lk - 1]: the last two tiles, the one before partially
    (void)heed::attention(q, k, v, heed::ScaledDot{}, heed::mask::SlidingWindow{.left = 200, .offset = Lk - 1},
                          {.num_threads = threads, .block_k = 128, .stats = &stats});
    EXPECT_EQ(stats.blocked, H * 6);
    EXPECT_EQ(stats.partial, H * 1);
    EXPECT_EQ(stats.open, H * 1);
  }
  // with weights the general loop runs (256-wide tiles)
  AttentionStats stats;
  (void)heed::attention(q, k, v, heed::ScaledDot{}, heed::mask::None{}, {.need_weights = true, .stats = &stats});
  EXPECT_EQ(stats.open, H * Lk / 256);
}

}  // namespace
