// The attention kernels against PyTorch 1.13 (fixtures from tests/golden/generate.py).
#include <gtest/gtest.h>

#include <cmath>

#include "heed/kernels.hpp"
#include "support/compare.hpp"
#include "support/golden.hpp"

namespace {

using heed::index_t;
using heed::test::all_close;
using heed::test::golden;

constexpr heed::test::Tolerance float_tol{1e-5, 1e-6};

TEST(AttentionGolden, SeedScaledDotProductAttention) {
  const auto fx = golden("sdpa_seed");
  const auto q = fx.get<float, 4>("q"), k = fx.get<float, 4>("k"), v = fx.get<float, 4>("v");
  const auto r = heed::attention(q, k, v, heed::ScaledDot{}, heed::mask::None{}, {.need_weights = true});
  EXPECT_EQ(r.output.shape(), (heed::Shape<4>{2, 4, 5, 16}));
  EXPECT_TRUE(all_close(r.output, fx.get<float, 4>("output"), float_tol));
  EXPECT_TRUE(all_close(r.weights, fx.get<float, 4>("weights"), float_tol));
  EXPECT_TRUE(all_close(heed::scaled_dot_product_attention(q, k, v), fx.get<float, 4>("output"), float_tol));
}

TEST(AttentionGolden, SeedMaskZeroMeansMaskedIsMaskAllowed) {
  const auto fx = golden("sdpa_seed");
  const auto q = fx.get<float, 4>("q"), k = fx.get<float, 4>("k"), v = fx.get<float, 4>("v");
  // The seed's mask [B, 1, Lq, Lk]: 1 = keep. heed names that convention mask::Allowed.
  const auto mask = fx.get<bool, 4>("mask");
  const auto r = heed::attention(q, k, v, heed::ScaledDot{}, heed::mask::Allowed{mask}, {.need_weights = true});
  EXPECT_TRUE(all_close(r.output, fx.get<float, 4>("output_masked"), float_tol));
  EXPECT_TRUE(all_close(r.weights, fx.get<float, 4>("weights_masked"), float_tol));
  // The seed's padding mask [B, 1, 1, Lk] broadcasts over heads and queries.
  const auto pad = fx.get<bool, 4>("pad");
  const auto p = heed::attention(q, k, v, heed::ScaledDot{}, heed::mask::Allowed{pad}, {.need_weights = true});
  EXPECT_TRUE(all_close(p.output, fx.get<float, 4>("output_pad"), float_tol));
  EXPECT_TRUE(all_close(p.weights, fx.get<float, 4>("weights_pad"), float_tol));
}

TEST(AttentionGolden, SeedMinusOneBillionFillIsABias) {
  // masked_fill(mask == 0, -1e9) on a fully masked row gives uniform weights, not zeros:
  // that is a bias of -1e9, not a hidden key. mask::Bias reproduces it exactly.
  const auto fx = golden("sdpa_seed");
  const auto q = fx.get<float, 4>("q"), k = fx.get<float, 4>("k"), v = fx.get<float, 4>("v");
  const auto full = fx.get<bool, 4>("full_mask");
  heed::Tensor<float, 4> bias(full.shape());
  for (index_t i = 0; i < bias.numel(); ++i) bias.data()[i] = full.data()[i] ? 0.0f : -1e9f;
  const auto r = heed::attention(q, k, v, heed::ScaledDot{}, heed::mask::Bias{bias}, {.need_weights = true});
  EXPECT_TRUE(all_close(r.output, fx.get<float, 4>("output_full"), float_tol));
  EXPECT_TRUE(all_close(r.weights, fx.get<float, 4>("weights_full"), float_tol));
  EXPECT_NEAR(r.weights(0, 0, 2, 3), 1.0f / 6.0f, 1e-6f);
  // mask::Allowed hides the keys instead: the fully masked row attends to nothing.
  const auto a = heed::attention(q, k, v, heed::ScaledDot{}, heed::mask::Allowed{full}, {.need_weights = true});
  for (index_t j = 0; j < 6; ++j) EXPECT_EQ(a.weights(0, 0, 2, j), 0.0f);
  for (index_t c = 0; c < 16; ++c) EXPECT_EQ(a.output(0, 0, 2, c), 0.0f);
}

TEST(AttentionGolden, CausalSelfAttention) {
  const auto fx = golden("causal_self_attention");
  const auto q = fx.get<float, 4>("q"), k = fx.get<float, 4>("k"), v = fx.get<float, 4>("v");
  const auto r = heed::attention(q, k, v, heed::ScaledDot{}, heed::mask::Causal{},
                                 {.need_weights = true, .block_q = 8, .block_k = 8});
  EXPECT_TRUE(all_close(r.output, fx.get<float, 4>("output"), float_tol));
  EXPECT_TRUE(all_close(r.weights, fx.get<float, 4>("weights"), float_tol));
  // The seed's causality check: row 0 attends to nothing after itself.
  EXPECT_EQ(r.weights(0, 0, 0, 0), 1.0f);
  for (index_t j = 1; j < 20; ++j) EXPECT_EQ(r.weights(0, 0, 0, j), 0.0f);
}

TEST(AttentionGolden, Seed002DotProductAndAdditiveScoring) {
  const auto fx = golden("seed002_scores");
  const auto query = fx.get<float, 2>("query");  // [B, h]
  const auto keys = fx.get<float, 3>("keys");    // [B, L, h]
  const index_t B = keys.size(0), L = keys.size(1), h = keys.size(2);
  const auto q = query.view().reshape(heed::Shape<3>{B, 1, h});  // one query per batch row
  const auto dot = heed::attention(q, keys, keys, heed::Dot{}, heed::mask::None{}, {.need_weights = true});
  EXPECT_TRUE(all_close(dot.weights.view().reshape(heed::Shape<2>{B, L}), fx.get<float, 2>("dot_weights"), float_tol));

  const auto wq = fx.get<float, 2>("additive.query_proj.weight"), wk = fx.get<float, 2>("additive.key_proj.weight");
  const auto bq = fx.get<float, 1>("additive.query_proj.bias"), bk = fx.get<float, 1>("additive.key_proj.bias");
  const auto score_w = fx.get<float, 2>("additive.score.weight");  // [1, h]; its bias shifts every score equally
  const heed::Additive<float> additive{.w_q = wq, .w_k = wk, .v = score_w.view()[0], .b_q = bq, .b_k = bk};
  const auto add = heed::attention(q, keys, keys, additive, heed::mask::None{}, {.need_weights = true});
  EXPECT_TRUE(
      all_close(add.weights.view().reshape(heed::Shape<2>{B, L}), fx.get<float, 2>("additive_weights"), float_tol));
}

double entropy(const heed::TensorView<const float, 3>& w) {
  double e = 0;
  for (index_t j = 0; j < w.size(2); ++j) {
    const double p = w(0, 0, j);
    if (p > 0) e -= p * std::log(p);
  }
  return e;
}

TEST(AttentionGolden, UnscaledScoresSharpenAsDepthGrows) {
  const auto fx = golden("sharpening");
  double previous_unscaled = 1e9;
  for (index_t d : {16, 64, 256}) {
    const auto suffix = std::to_string(d);
    const auto q = fx.get<float, 1>("q" + suffix);
    const auto k = fx.get<float, 2>("k" + suffix);
    const auto q3 = q.view().reshape(heed::Shape<3>{1, 1, d});
    const auto k3 = k.view().reshape(heed::Shape<3>{1, 10, d});
    const auto scaled = heed::attention(q3, k3, k3, heed::ScaledDot{}, heed::mask::None{}, {.need_weights = true});
    const auto unscaled = heed::attention(q3, k3, k3, heed::Dot{}, heed::mask::None{}, {.need_weights = true});
    EXPECT_TRUE(
        all_close(scaled.weights.view().reshape(heed::Shape<1>{10}), fx.get<float, 1>("scaled" + suffix), float_tol));
    EXPECT_TRUE(all_close(unscaled.weights.view().reshape(heed::Shape<1>{10}), fx.get<float, 1>("unscaled" + suffix),
                          {1e-5, 1e-7}));
    const double h_unscaled = entropy(unscaled.weights), h_scaled = entropy(scaled.weights);
    std::printf("d = %3ld: entropy scaled %.3f, unscaled %.3f nats\n", static_cast<long>(d), h_scaled, h_unscaled);
    EXPECT_LE(h_unscaled, previous_unscaled);  // the seed's point: without 1/sqrt(d) the weights sharpen
    EXPECT_GT(h_scaled, h_unscaled);
    previous_unscaled = h_unscaled;
  }
}

}  // namespace
