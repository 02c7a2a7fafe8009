// The seeds' own classes against the seeds' PyTorch code (PyTorch 1.13 fixtures): MultiHeadAttention
// (w_q/w_k/w_v/w_o, -1e9 mask fill), SelfAttention (causal), CrossAttention (Lq ≠ Lk, mask),
// PositionalEncoding, AdditiveAttention (seed 002) and AttentionClassifier.
#include <gtest/gtest.h>

#include <cmath>

#include "heed/nn/additive_attention.hpp"
#include "heed/nn/attention_classifier.hpp"
#include "heed/nn/cross_attention.hpp"
#include "heed/nn/learned_positional_embedding.hpp"
#include "heed/nn/multi_head_attention.hpp"
#include "heed/nn/positional_encoding.hpp"
#include "heed/nn/self_attention.hpp"
#include "support/compare.hpp"
#include "support/golden.hpp"

namespace {

using heed::index_t;
using heed::test::all_close;
using namespace heed::nn;

constexpr heed::test::Tolerance tol{1e-5, 1e-6};

TEST(SeedModulesGolden, MultiHeadAttention) {
  const auto fx = heed::test::golden("seed_modules");
  MultiHeadAttention<float> mha({.d_model = 24, .n_heads = 3});
  mha.load(fx, "mha.module.", {.strict = true});
  const auto q = fx.get<float, 3>("mha.q"), kv = fx.get<float, 3>("mha.kv");
  const auto r = mha(q, kv, kv);
  EXPECT_TRUE(all_close(r.output, fx.get<float, 3>("mha.output"), tol));
  EXPECT_TRUE(all_close(r.weights, fx.get<float, 4>("mha.weights"), tol));
  const auto m = mha(q, kv, kv, fx.get<bool, 4>("mha.keep"));  // [B, 1, 1, Lk], 1 = keep
  EXPECT_TRUE(all_close(m.output, fx.get<float, 3>("mha.output_masked"), tol));
  EXPECT_TRUE(all_close(m.weights, fx.get<float, 4>("mha.weights_masked"), tol));
}

TEST(SeedModulesGolden, SelfAttentionWithAndWithoutCausalMask) {
  const auto fx = heed::test::golden("seed_modules");
  SelfAttention<float> sa({.d_model = 24, .n_heads = 3});
  sa.load(fx, "self.module.", {.strict = true});
  const auto x = fx.get<float, 3>("self.x");
  const auto enc = sa(x);
  EXPECT_TRUE(all_close(enc.output, fx.get<float, 3>("self.output"), tol));
  EXPECT_TRUE(all_close(enc.weights, fx.get<float, 4>("self.weights"), tol));
  const auto dec = sa(x, /*causal=*/true);
  EXPECT_TRUE(all_close(dec.output, fx.get<float, 3>("self.output_causal"), tol));
  EXPECT_TRUE(all_close(dec.weights, fx.get<float, 4>("self.weights_causal"), tol));
  for (index_t j = 5; j < 13; ++j) EXPECT_EQ(dec.weights(0, 0, 0, j), 0.0f);  // the seed's causality check
}

TEST(SeedModulesGolden, CrossAttention) {
  const auto fx = heed::test::golden("seed_modules");
  CrossAttention<float> ca({.d_model = 24, .n_heads = 3});
  ca.load(fx, "cross.module.", {.strict = true});
  const auto x = fx.get<float, 3>("self.x");
  const auto target = x.view().narrow(1, 0, 7);  // x[:, :7], a strided view
  const auto source = fx.get<float, 3>("cross.source");
  const auto r = ca(target, source);
  EXPECT_EQ(r.weights.shape(), (heed::Shape<4>{2, 3, 7, 11}));
  EXPECT_TRUE(all_close(r.output, fx.get<float, 3>("cross.output"), tol));
  EXPECT_TRUE(all_close(r.weights, fx.get<float, 4>("cross.weights"), tol));
  const auto m = ca(target, source, fx.get<bool, 2>("cross.allowed"));
  EXPECT_TRUE(all_close(m.output, fx.get<float, 3>("cross.output_masked"), tol));
  EXPECT_TRUE(all_close(m.weights, fx.get<float, 4>("cross.weights_masked"), tol));
}

TEST(SeedModulesGolden, SinusoidalPositionalEncoding) {
  const auto fx = heed::test::golden("seed_modules");
  for (index_t d : {24, 128}) {
    const PositionalEncoding<float> pe({.d_model = d});
    const auto expected = fx.get<float, 3>("pe" + std::to_string(d));
    EXPECT_EQ(pe.pe().shape(), (heed::Shape<3>{1, 5000, d}));
    const auto ok = all_close(pe.pe().view().narrow(1, 0, expected.size(1)), expected, {2e-6, 2e-6});
    std::printf("pe d=%ld: %s\n", static_cast<long>(d), ok.message());
    EXPECT_TRUE(ok);
  }
  const PositionalEncoding<float> pe({.d_model = 24, .max_len = 10});
  EXPECT_THROW((void)pe(heed::randn<float>({1, 11, 24}, 1)), heed::ShapeError);
  EXPECT_THROW((void)pe(heed::randn<float>({1, 5, 20}, 1)), heed::ShapeError);
}

TEST(PositionalEmbedding, LearnedAddsTheTrainedRows) {
  TensorDict d;
  const auto table = heed::randn<float>({10, 4}, 3);
  d.set("pos.weight", table);
  LearnedPositionalEmbedding<float> pos({.max_len = 10, .d_model = 4});
  pos.load(d, "pos.", {.strict = true});
  const auto x = heed::randn<float>({2, 6, 4}, 4);
  const auto y = pos(x);
  for (index_t b = 0; b < 2; ++b)
    for (index_t t = 0; t < 6; ++t)
      for (index_t c = 0; c < 4; ++c) EXPECT_EQ(y(b, t, c), x(b, t, c) + table(t, c));
  EXPECT_THROW((void)pos(heed::randn<float>({1, 11, 4}, 5)), heed::ShapeError);
}

TEST(SeedModulesGolden, AdditiveAttentionModule) {
  const auto fx = heed::test::golden("seed002_scores");
  AdditiveAttention<float> add({.hidden_dim = 24});
  add.load(fx, "additive.", {.strict = true});
  const auto r = add(fx.get<float, 2>("query"), fx.get<float, 3>("keys"));
  EXPECT_TRUE(all_close(r.weights, fx.get<float, 2>("additive_weights"), tol));
  EXPECT_EQ(r.context.shape(), (heed::Shape<2>{3, 24}));
}

TEST(SeedModulesGolden, AttentionClassifier) {
  const auto fx = heed::test::golden("seed_modules");
  AttentionClassifier<float> clf({.vocab_size = 50, .embed_dim = 24, .hidden_dim = 40, .num_classes = 5, .n_heads = 3});
  clf.load(fx, "clf.module.", {.strict = true});
  const auto ids = fx.get<std::int64_t, 2>("clf.ids");
  const auto r = clf(ids);
  const auto ok = all_close(r.logits, fx.get<float, 2>("clf.logits"), tol);
  std::printf("classifier logits: %s\n", ok.message());
  EXPECT_TRUE(ok);
  EXPECT_TRUE(all_close(r.weights, fx.get<float, 2>("clf.weights"), tol));
  heed::Tensor<std::int64_t, 2> bad({1, 3});
  bad(0, 1) = 50;
  try {
    (void)clf(bad);
    FAIL();
  } catch (const heed::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("token id 50 at [0, 1] is outside the vocabulary of 50"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)clf(heed::Tensor<std::int64_t, 2>({2, 0})), heed::ShapeError);
}

}  // namespace
