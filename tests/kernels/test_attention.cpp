// The tiled driver against the naive double reference: every score policy × every mask,
// odd shapes (Lq, Lk ∈ {1, 7, 65, 257}, d ∈ {1, 8, 64, 80}), Lq ≠ Lk, float and double, with
// and without weights, 1 and 2 threads, and tile sizes small enough that every case spans
// many tiles (so open, blocked and partial tiles all occur). Tolerances: float rtol 2e-4,
// atol 2e-5; double rtol 1e-10, atol 1e-11 (attention_cases.hpp).
#include "kernels/attention_cases.hpp"

namespace {

using heed::AttentionOptions;
using heed::index_t;
using namespace heed::test;

template <class T>
class AttentionVsReference : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(AttentionVsReference, Scalars);

TYPED_TEST(AttentionVsReference, EveryLengthAndDepthScaledDot) {
  for (index_t Lq : {1, 7, 65, 257})
    for (index_t Lk : {1, 7, 65, 257})
      for (index_t d : {1, 8, 64, 80}) {
        if (Lq * Lk * d > 257 * 65 * 64) continue;  // the largest products only in the next test
        const Inputs<TypeParam> in({1, 2, Lq, Lk, d, d == 1 ? 3 : d},
                                   static_cast<std::uint64_t>(Lq * 1000 + Lk * 10 + d));
        expect_matches_reference(in, ScoreKind::scaled_dot, MaskKind::none,
                                 {.need_weights = (Lq + Lk) % 2 == 0, .num_threads = 1, .block_q = 16, .block_k = 32});
      }
}

TYPED_TEST(AttentionVsReference, LargestShapeWithDefaultTiles) {
  const Inputs<TypeParam> in({1, 2, 257, 257, 80, 80});
  expect_matches_reference(in, ScoreKind::scaled_dot, MaskKind::causal, {.need_weights = true, .num_threads = 2});
  expect_matches_reference(in, ScoreKind::scaled_dot, MaskKind::none, {.num_threads = 1});
}

TYPED_TEST(AttentionVsReference, EveryScoreTimesEveryMask) {
  const Dims shapes[] = {{2, 2, 65, 257, 8, 8}, {3, 1, 7, 7, 64, 16}, {2, 2, 257, 65, 80, 80}, {3, 2, 1, 7, 1, 5}};
  int variant = 0;
  for (const Dims& dims : shapes) {
    const Inputs<TypeParam> in(dims, static_cast<std::uint64_t>(dims.Lq + dims.Lk));
    for (ScoreKind score : {ScoreKind::scaled_dot, ScoreKind::dot, ScoreKind::additive})
      for (MaskKind mask : all_masks) {
        ++variant;
        AttentionOptions options{.need_weights = variant % 2 == 0,
                                 .num_threads = 1 + variant % 3 / 2,
                                 .block_q = variant % 4 == 0 ? 0 : 16,
                                 .block_k = variant % 4 == 0 ? 0 : 32};
        expect_matches_reference(in, score, mask, options);
      }
  }
}

TYPED_TEST(AttentionVsReference, WorkersThatEachPackTheirOwnHeadsAgreeWithOneWorker) {
  // Three workers over five heads: each worker packs the heads it claims and computes their
  // tiles, then helps with the others; over two key/value heads (grouped queries, fewer heads
  // than workers) they share the packing instead. Every tile is computed the same way whichever
  // worker runs it, so the outputs equal one worker's exactly.
  for (index_t kv_heads : {5, 2}) {
    const Inputs<TypeParam> in(
        {.B = 1, .H = kv_heads == 5 ? 5 : 6, .Lq = 200, .Lk = 300, .d = 64, .dv = 64, .Hkv = kv_heads},
        static_cast<std::uint64_t>(70 + kv_heads));
    expect_matches_reference(in, ScoreKind::scaled_dot, MaskKind::causal, {.num_threads = 3, .block_q = 32});
    heed::AttentionStats one_stats, three_stats;
    const auto one = heed::attention(in.q, in.k, in.v, heed::ScaledDot{}, heed::mask::Causal{},
                                     {.num_threads = 1, .block_q = 32, .stats = &one_stats});
    const auto three = heed::attention(in.q, in.k, in.v, heed::ScaledDot{}, heed::mask::Causal{},
                                       {.num_threads = 3, .block_q = 32, .stats = &three_stats});
    EXPECT_TRUE(all_close(three.output, one.output, {0, 0}));
    EXPECT_EQ(three_stats.open, one_stats.open);
    EXPECT_EQ(three_stats.partial, one_stats.partial);
    EXPECT_EQ(three_stats.blocked, one_stats.blocked);
    EXPECT_GT(one_stats.blocked, 0);
  }
}

TYPED_TEST(AttentionVsReference, WorkersWithoutATaskLeaveTheResultAndCountsAlone) {
  // Four workers over a single query tile (40 rows: past the decode path): the workers that get no task allocate no
  // scratch (each allocates its own at its first task) and count no tiles.
  const Inputs<TypeParam> in({.B = 1, .H = 1, .Lq = 40, .Lk = 700, .d = 64, .dv = 64}, 91);
  expect_matches_reference(in, ScoreKind::scaled_dot, MaskKind::key_padding, {.num_threads = 4, .block_k = 64});
  heed::AttentionStats one_stats, four_stats;
  const auto one = heed::attention(in.q, in.k, in.v, heed::ScaledDot{}, heed::mask::Causal{},
                                   {.num_threads = 1, .block_q = 64, .block_k = 64, .stats = &one_stats});
  const auto four = heed::attention(in.q, in.k, in.v, heed::ScaledDot{}, heed::mask::Causal{},
                                    {.num_threads = 4, .block_q = 64, .block_k = 64, .stats = &four_stats});
  EXPECT_TRUE(all_close(four.output, one.output, {0, 0}));
  EXPECT_EQ(four_stats.open + four_stats.partial + four_stats.blocked, 11);  // ceil(700 / 64) key tiles
  EXPECT_EQ(four_stats.open, one_stats.open);
  EXPECT_EQ(four_stats.partial, one_stats.partial);
  EXPECT_EQ(four_stats.blocked, one_stats.blocked);
}

TYPED_TEST(AttentionVsReference, GroupedQueryHeadsReadTheirGroupsKeysAndValues) {
  // Hq = 6 over Hkv = 3 (groups of 2), 2 and 1 (multi-query), with every score and mask.
  int variant = 0;
  for (index_t kv_heads : {3, 2, 1}) {
    const Inputs<TypeParam> in({.B = 2, .H = 6, .Lq = 33, .Lk = 70, .d = 16, .dv = 12, .Hkv = kv_heads},
                               static_cast<std::uint64_t>(40 + kv_heads));
    for (ScoreKind score : {ScoreKind::scaled_dot, ScoreKind::dot, ScoreKind::additive})
      for (MaskKind mask : all_masks) {
        ++variant;
        expect_matches_reference(
            in, score, mask,
            {.need_weights = variant % 2 == 0, .num_threads = 1 + variant % 2, .block_q = 16, .block_k = 32});
      }
  }
  // Grouped heads equal full heads whose K and V are repeated: k[:, h] = k_kv[:, h / 3].
  const Inputs<TypeParam> in({.B = 1, .H = 6, .Lq = 9, .Lk = 20, .d = 8, .dv = 8, .Hkv = 2});
  heed::Tensor<TypeParam, 4> k_full({1, 6, 20, 8}), v_full({1, 6, 20, 8});
  for (index_t h = 0; h < 6; ++h)
    for (index_t j = 0; j < 20; ++j)
      for (index_t c = 0; c < 8; ++c) {
        k_full(0, h, j, c) = in.k(0, h / 3, j, c);
        v_full(0, h, j, c) = in.v(0, h / 3, j, c);
      }
  const auto grouped = heed::attention(in.q, in.k, in.v, heed::ScaledDot{}, heed::mask::Causal{});
  const auto repeated = heed::attention(in.q, k_full, v_full, heed::ScaledDot{}, heed::mask::Causal{});
  EXPECT_TRUE(all_close(grouped.output, repeated.output, {0, 0}));
}

TYPED_TEST(AttentionVsReference, ThreadsAndTilesDoNotChangeTheAnswer) {
  const Inputs<TypeParam> in({2, 3, 65, 100, 16, 16});
  const auto base = heed::attention(in.q, in.k, in.v, heed::ScaledDot{}, heed::mask::Causal{},
                                    {.need_weights = true, .num_threads = 1});
  for (int threads : {1, 2})
    for (index_t bq : {1, 16, 64})
      for (index_t bk : {1, 7, 256}) {
        const auto r = heed::attention(in.q, in.k, in.v, heed::ScaledDot{}, heed::mask::Causal{},
                                       {.need_weights = true, .num_threads = threads, .block_q = bq, .block_k = bk});
        EXPECT_TRUE(all_close(r.output, base.output, attention_tolerance<TypeParam>())) << bq << "x" << bk;
        EXPECT_TRUE(all_close(r.weights, base.weights, attention_tolerance<TypeParam>())) << bq << "x" << bk;
      }
}

TYPED_TEST(AttentionVsReference, RankThreeInputsAreOneHead) {
  const auto q = heed::randn<TypeParam>({2, 9, 8}, 1), k = heed::randn<TypeParam>({2, 13, 8}, 2),
             v = heed::randn<TypeParam>({2, 13, 5}, 3);
  const auto r = heed::attention(q, k, v, heed::ScaledDot{}, heed::mask::None{}, {.need_weights = true});
  EXPECT_EQ(r.output.shape(), (heed::Shape<3>{2, 9, 5}));
  EXPECT_EQ(r.weights.shape(), (heed::Shape<3>{2, 9, 13}));
  const auto four = heed::attention(
      q.view().reshape(heed::Shape<4>{2, 1, 9, 8}), k.view().reshape(heed::Shape<4>{2, 1, 13, 8}),
      v.view().reshape(heed::Shape<4>{2, 1, 13, 5}), heed::ScaledDot{}, heed::mask::None{}, {.need_weights = true});
  EXPECT_TRUE(all_close(r.output.view().reshape(heed::Shape<4>{2, 1, 9, 5}), four.output, {0, 0}));
}

TYPED_TEST(AttentionVsReference, StridedInputsAndOutputs) {
  // [B, L, H, d] buffers seen as [B, H, L, d], as the modules use them.
  const auto qb = heed::randn<TypeParam>({2, 11, 3, 8}, 4), kb = heed::randn<TypeParam>({2, 17, 3, 8}, 5),
             vb = heed::randn<TypeParam>({2, 17, 3, 8}, 6);
  const auto q = qb.view().transpose(1, 2), k = kb.view().transpose(1, 2), v = vb.view().transpose(1, 2);
  heed::Tensor<TypeParam, 4> out_buffer({2, 11, 3, 8});
  heed::attention_into(out_buffer.view().transpose(1, 2), heed::TensorView<TypeParam, 4>{}, q, k, v, heed::ScaledDot{},
                       heed::mask::Causal{}, {.block_q = 4, .block_k = 4});
  const auto dense = heed::attention(heed::Tensor<TypeParam, 4>(q), heed::Tensor<TypeParam, 4>(k),
                                     heed::Tensor<TypeParam, 4>(v), heed::ScaledDot{}, heed::mask::Causal{});
  EXPECT_TRUE(all_close(out_buffer.view().transpose(1, 2), dense.output, attention_tolerance<TypeParam>()));
  // a non-unit stride in the last dimension is copied, not mis-read
  const auto q_t = heed::randn<TypeParam>({2, 3, 8, 11}, 7);
  const auto r = heed::attention(q_t.view().transpose(2, 3), k, v);
  const auto r_dense = heed::attention(heed::Tensor<TypeParam, 4>(q_t.view().transpose(2, 3)), k, v);
  EXPECT_TRUE(all_close(r.output, r_dense.output, {0, 0}));
}

}  // namespace
