// Attention with bfloat16 and half storage against the double reference computed from the same
// rounded inputs. Scores, softmax and the output accumulate in float, so the error is the final
// rounding of the output to 16 bits plus float's own (about 2^-24 per operation):
//   output:  |o - o_ref| <= u·|o_ref| + 2e-5          u = 2^-8 (bfloat16), 2^-11 (half)
//   weights: |w - w_ref| <= 2u·|w_ref| + 1e-6         (rounded when written, again when rescaled)
// with a margin of 1e-4 relative for the float arithmetic. Where bfloat16 tiles run on AVX-512
// BF16 pair products (cpu_info().bf16_pairs), P is rounded to bfloat16 before P·V, which adds
//   |Σ_j (p_j - rounded(p_j))·v_j| <= u·Σ_j p_j·|v_j|
// to the output bound (the reference computes Σ_j p_j·|v_j| as attention over |v|). Checked over
// odd shapes, every mask, grouped heads and head dims 32 to 256 (docs/decisions.md derives it).
#include <cmath>
#include <string>

#include "heed/core/cast.hpp"
#include "heed/simd/attention_kernel.hpp"
#include "kernels/attention_cases.hpp"

namespace {

using heed::index_t;
using namespace heed::test;
namespace reference = heed::reference;

template <class T>
class Attention16 : public ::testing::Test {};
using Storage = ::testing::Types<heed::bfloat16, heed::half>;
TYPED_TEST_SUITE(Attention16, Storage);

template <class T>
constexpr double unit_roundoff() {
  return std::is_same_v<T, heed::bfloat16> ? 0x1p-8 : 0x1p-11;
}

template <class T>
void expect_within_bound(const Inputs<float>& in, ScoreKind score_kind, MaskKind mask_kind,
                         heed::AttentionOptions options) {
  SCOPED_TRACE(std::string("score ") + name(score_kind) + ", mask " + name(mask_kind) + ", Lq " +
               std::to_string(in.n.Lq) + ", Lk " + std::to_string(in.n.Lk) + ", d " + std::to_string(in.n.d) + ", H " +
               std::to_string(in.n.H) + "/" + std::to_string(in.n.kv_heads()));
  const auto q = heed::cast<T>(in.q), k = heed::cast<T>(in.k), v = heed::cast<T>(in.v);
  const auto wq = heed::cast<T>(in.wq), wk = heed::cast<T>(in.wk);
  const auto vs = heed::cast<T>(in.v_score), bq = heed::cast<T>(in.bq), bk = heed::cast<T>(in.bk);
  // the reference sees exactly the rounded values
  const auto qd = reference::to_double(q), kd = reference::to_double(k), vd = reference::to_double(v);
  const auto wqd = reference::to_double(wq), wkd = reference::to_double(wk);
  const auto vsd = reference::to_double(vs);
  const auto bqd = reference::to_double(bq), bkd = reference::to_double(bk);
  const double u = unit_roundoff<T>();
  const Tolerance out_tol{u + 1e-4, 2e-5}, weight_tol{2 * u + 1e-4, 1e-6};
  in.with_mask(mask_kind, [&](const auto& mask, const reference::MaskFn& ref_mask) {
    const auto run = [&](const auto& score, const reference::ScoreFn& ref_score) {
      const auto expected = reference::attention(qd, kd, vd, ref_score, ref_mask, false);
      const auto got = heed::attention(q, k, v, score, mask, options);
      if (std::is_same_v<T, heed::bfloat16> && heed::cpu_info().bf16_pairs) {
        // the pair products' rounding of P: u·Σ_j p_j·|v_j| more, element by element
        auto vabs = vd;
        for (index_t i = 0; i < vabs.numel(); ++i) vabs.data()[i] = std::abs(vabs.data()[i]);
        const auto spread = reference::attention(qd, kd, vabs, ref_score, ref_mask, false).output;
        index_t worse = 0;
        for (index_t i = 0; i < spread.numel(); ++i) {
          const double want = expected.output.data()[i], have = double(static_cast<float>(got.output.data()[i]));
          const double bound = out_tol.rtol * std::abs(want) + u * (1 + 1e-4) * spread.data()[i] + out_tol.atol;
          if (!(std::abs(have - want) <= bound) && !(std::isnan(want) && std::isnan(have)) && worse++ < 3)
            ADD_FAILURE() << "output " << i << ": " << have << " vs " << want << ", bound " << bound;
        }
        EXPECT_EQ(worse, 0);
      } else {
        EXPECT_TRUE(all_close(got.output, expected.output, out_tol));
      }
      if (options.need_weights) {
        EXPECT_TRUE(all_close(got.weights, expected.weights, weight_tol));
      }
    };
    switch (score_kind) {
      case ScoreKind::scaled_dot:
        return run(heed::ScaledDot{}, reference::scaled_dot(qd, kd, 1.0 / std::sqrt(double(in.n.d))));
      case ScoreKind::dot:
        return run(heed::Dot{}, reference::scaled_dot(qd, kd, 1.0));
      case ScoreKind::additive:
        return run(heed::Additive<T>{.w_q = wq, .w_k = wk, .v = vs, .b_q = bq, .b_k = bk},
                   reference::additive(qd, kd, wqd, wkd, vsd, bqd, bkd));
    }
  });
}

TYPED_TEST(Attention16, EveryMaskAndScoreOverOddShapes) {
  const Dims shapes[] = {{2, 2, 65, 257, 8, 8}, {3, 1, 7, 7, 64, 16}, {1, 4, 33, 70, 16, 12, 2}, {2, 1, 1, 9, 5, 3}};
  int variant = 0;
  for (const Dims& dims : shapes) {
    const Inputs<float> in(dims, static_cast<std::uint64_t>(dims.Lq + dims.Lk));
    for (ScoreKind score : {ScoreKind::scaled_dot, ScoreKind::dot, ScoreKind::additive})
      for (MaskKind mask : all_masks) {
        ++variant;
        expect_within_bound<TypeParam>(in, score, mask,
                                       {.need_weights = variant % 2 == 0,
                                        .num_threads = 1 + variant % 2,
                                        .block_q = variant % 3 == 0 ? 0 : 16,
                                        .block_k = variant % 3 == 0 ? 0 : 32});
      }
  }
}

TYPED_TEST(Attention16, HeadDimsFrom32To256OnTheMicroKernel) {
  for (index_t d : {32, 64, 80, 96, 128, 256}) {
    const Inputs<float> in({1, 2, 100, 300, d, d}, static_cast<std::uint64_t>(d));
    expect_within_bound<TypeParam>(in, ScoreKind::scaled_dot, MaskKind::none, {});
    expect_within_bound<TypeParam>(in, ScoreKind::scaled_dot, MaskKind::causal_bottom_right, {.need_weights = true});
  }
}

TEST(Attention16Half, ScoresPastTheLargestHalfDoNotOverflow) {
  // q·k = 64 · 200 · 200 = 2.56e6 > 65504: scores live in float, so nothing becomes inf or NaN
  const auto q = heed::full<heed::half>({1, 1, 20, 64}, heed::half(200.0f));
  auto v = heed::randn<heed::half>({1, 1, 20, 64}, 3);
  const auto r = heed::attention(q, q, v, heed::Dot{}, heed::mask::Causal{}, {.need_weights = true});
  for (index_t i = 0; i < r.output.numel(); ++i) ASSERT_TRUE(std::isfinite(float(r.output.data()[i])));
  EXPECT_EQ(float(r.weights(0, 0, 19, 0)), float(heed::half(1.0f / 20)));  // equal scores: uniform
}

// The driver's decode path (few query rows, many keys: each K/V tile read once per group of
// query heads, key ranges merged) in 16-bit storage, within the same bound.
TYPED_TEST(Attention16, DecodePathWithGroupedHeads) {
  int variant = 0;
  for (const Dims dims : {Dims{1, 8, 1, 700, 64, 64, 2}, Dims{2, 4, 3, 1030, 32, 16}}) {
    const Inputs<float> in(dims, static_cast<std::uint64_t>(dims.Lk));
    for (MaskKind mask : {MaskKind::none, MaskKind::causal_bottom_right, MaskKind::key_padding, MaskKind::bias})
      expect_within_bound<TypeParam>(in, ScoreKind::scaled_dot, mask, {.num_threads = 1 + (++variant) % 3});
  }
}

}  // namespace
