// Issue #46's defects of the modules' public entry points, a test each: PyTorch's result where
// PyTorch accepts the input (checked against a double-precision computation), a heed error where
// it does not, never a wrong answer or a sanitizer report.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "heed/nn.hpp"
#include "support/compare.hpp"

namespace {

using heed::index_t;
using heed::Tensor;
using heed::test::all_close;

TEST(DefinedInputs, MultiheadAttentionWithACacheRefusesAQueryLongerThanTheKey) {  // #46, defect 3
  heed::nn::MultiheadAttention<float> mha({.embed_dim = 8, .num_heads = 2});
  auto cache = mha.make_cache({.batch = 1, .max_len = 16});
  const auto q = heed::randn<float>({1, 3, 8}, 1), kv = heed::randn<float>({1, 1, 8}, 2);
  EXPECT_THROW((void)mha(q, kv, kv, {.cache = &cache}), heed::ShapeError);
  EXPECT_EQ(cache.max_length(), 0);  // refused before anything was appended
  // a query no longer than the key: the last positions of the new keys, as the header says
  const auto q2 = heed::randn<float>({1, 2, 8}, 3), kv3 = heed::randn<float>({1, 3, 8}, 4);
  const auto with_cache = mha(q2, kv3, kv3, {.need_weights = true, .cache = &cache});
  EXPECT_EQ(with_cache.weights(0, 0, 0, 2), 0.0f);  // query 0 sits at position 1: key 2 is after it
  EXPECT_GT(with_cache.weights(0, 0, 0, 1), 0.0f);
  EXPECT_GT(with_cache.weights(0, 0, 1, 2), 0.0f);
}

TEST(DefinedInputs, SeedMultiHeadAttentionInHalfGivesAFullyMaskedRowUniformWeights) {  // #46, defect 5
  heed::nn::seed::MultiHeadAttention<heed::half> mha({.d_model = 8, .n_heads = 2});
  const auto x = heed::cast<heed::half>(heed::randn<float>({1, 4, 8}, 1));
  Tensor<bool, 4> keep({1, 1, 4, 4}, true);
  for (index_t j = 0; j < 4; ++j) keep(0, 0, 2, j) = false;  // query 2 sees nothing
  const auto r = mha(x, x, x, keep);
  for (index_t h = 0; h < 2; ++h)
    for (index_t j = 0; j < 4; ++j) EXPECT_EQ(static_cast<float>(r.weights(0, h, 2, j)), 0.25f) << h << ", " << j;
}

TEST(DefinedInputs, SEBlockSqueezeWiderThanItsInput) {  // #46, defect 7: torchvision's SqueezeExcitation(2, 64)
  constexpr index_t C = 2, S = 64;
  heed::nn::TensorDict d;
  const auto w1 = heed::randn<float>({S, C, 1, 1}, 1), w2 = heed::randn<float>({C, S, 1, 1}, 3);
  const auto b1 = heed::randn<float>({S}, 2), b2 = heed::randn<float>({C}, 4);
  d.set("fc1.weight", w1).set("fc1.bias", b1).set("fc2.weight", w2).set("fc2.bias", b2);
  heed::nn::SEBlock<float> se({.channels = C, .squeeze_channels = S});
  se.load(d, "", {.strict = true});
  const auto x = heed::randn<float>({3, C, 5, 7}, 5);
  const auto r = se.forward(x);
  for (index_t b = 0; b < 3; ++b) {
    double pooled[C] = {}, hidden[S], gate[C];
    for (index_t c = 0; c < C; ++c)
      for (index_t i = 0; i < 35; ++i) pooled[c] += x.data()[(b * C + c) * 35 + i] / 35.0;
    for (index_t s = 0; s < S; ++s) {
      hidden[s] = b1(s);
      for (index_t c = 0; c < C; ++c) hidden[s] += w1(s, c, 0, 0) * pooled[c];
      hidden[s] = std::max(hidden[s], 0.0);
    }
    for (index_t c = 0; c < C; ++c) {
      double z = b2(c);
      for (index_t s = 0; s < S; ++s) z += w2(c, s, 0, 0) * hidden[s];
      gate[c] = 1 / (1 + std::exp(-z));
      EXPECT_NEAR(r.channel_weights(b, c), gate[c], 1e-6);
      EXPECT_NEAR(r.output(b, c, 4, 6), x(b, c, 4, 6) * gate[c], 1e-5);
    }
  }
}

TEST(DefinedInputs, EmbeddingPaddingIdxAsPyTorchTakesIt) {  // #46, defect 8
  heed::nn::Embedding<float> last({.num_embeddings = 5, .embedding_dim = 3, .padding_idx = -1});
  EXPECT_EQ(last.options().padding_idx, 4);
  Tensor<std::int64_t, 2> ids({1, 2});
  ids(0, 0) = 4;
  ids(0, 1) = 3;
  const auto y = last(ids);
  for (index_t c = 0; c < 3; ++c) EXPECT_EQ(y(0, 0, c), 0.0f);  // the padding row starts at zero
  EXPECT_NE(y(0, 1, 0), 0.0f);
  EXPECT_THROW(heed::nn::Embedding<float>({.num_embeddings = 5, .embedding_dim = 3, .padding_idx = 5}),
               heed::ShapeError);
  EXPECT_THROW(heed::nn::Embedding<float>({.num_embeddings = 5, .embedding_dim = 3, .padding_idx = -6}),
               heed::ShapeError);
}

TEST(DefinedInputs, LinearSetChecksItsShapes) {  // #46, defect 9
  heed::nn::Linear<float> linear({.in_features = 4, .out_features = 3});
  EXPECT_THROW(linear.set(heed::randn<float>({5, 4}, 1), heed::randn<float>({3}, 2)), heed::ShapeError);
  EXPECT_THROW(linear.set(heed::randn<float>({3, 4}, 1), heed::randn<float>({2}, 2)), heed::ShapeError);
  EXPECT_THROW(linear.set(heed::randn<float>({3, 4}, 1), Tensor<float, 1>()), heed::ShapeError);
  const auto w = heed::randn<float>({3, 4}, 1);
  const auto b = heed::randn<float>({3}, 2);
  linear.set(w, b);
  const auto x = heed::randn<float>({2, 4}, 3);
  const auto y = linear(x);
  for (index_t i = 0; i < 2; ++i)
    for (index_t o = 0; o < 3; ++o) {
      double expected = b(o);
      for (index_t c = 0; c < 4; ++c) expected += static_cast<double>(w(o, c)) * x(i, c);
      EXPECT_NEAR(y(i, o), expected, 1e-5);
    }
  heed::nn::Linear<float> no_bias({.in_features = 4, .out_features = 3, .bias = false});
  EXPECT_THROW(no_bias.set(w, b), heed::ShapeError);
  EXPECT_NO_THROW(no_bias.set(w, Tensor<float, 1>()));
}

TEST(DefinedInputs, DefaultConstructedNormsRefuseInput) {  // #46, defect 13
  EXPECT_THROW((void)heed::nn::LayerNorm<float>()(Tensor<float, 2>({2, 0})), heed::ShapeError);
  EXPECT_THROW((void)heed::nn::RMSNorm<float>()(Tensor<float, 2>({2, 0})), heed::ShapeError);
}

TEST(DefinedInputs, CachesAtTheirEdges) {  // #46, defect 14
  heed::nn::KVCache<float> cache(1, 2, 4, 3);
  const auto k = heed::randn<float>({1, 2, 3, 4}, 1);
  (void)cache.append(k.view(), k.view());
  EXPECT_EQ(cache.length(0), 3);
  cache.truncate_row(0, 3);  // a full row to its own length: nothing dropped
  cache.truncate(3);
  EXPECT_EQ(cache.length(0), 3);
  EXPECT_EQ(cache.keys()(0, 1, 2, 3), k(0, 1, 2, 3));
  cache.truncate_row(0, 1);
  EXPECT_EQ(cache.keys().size(2), 1);
  EXPECT_EQ(cache.keys()(0, 1, 0, 3), k(0, 1, 0, 3));
  heed::nn::KVCache<float> empty(1, 2, 4, 0);
  empty.reset();
  EXPECT_EQ(empty.length(0), 0);

  heed::nn::TransformerDecoder<float> dec({.d_model = 8, .nhead = 2, .dim_feedforward = 16});
  heed::nn::DecoderCache<float> unmade;
  const auto tgt = heed::randn<float>({1, 2, 8}, 2), memory = heed::randn<float>({1, 3, 8}, 3);
  EXPECT_THROW((void)dec(tgt, memory, {.cache = &unmade}), heed::ShapeError);
}

TEST(DefinedInputs, EmptySequencesAndPlanesAsPyTorch) {  // #46, defect 12
  heed::nn::MultiheadAttention<float> mha({.embed_dim = 8, .num_heads = 2});
  const Tensor<float, 3> none({2, 0, 8});
  const auto r = mha(none, none, none);
  EXPECT_EQ(r.output.shape(), (heed::Shape<3>{2, 0, 8}));
  EXPECT_EQ(r.weights.shape(), (heed::Shape<4>{2, 1, 0, 0}));
  heed::nn::TransformerEncoder<float> enc({.d_model = 8, .nhead = 2, .dim_feedforward = 16, .num_layers = 2});
  EXPECT_EQ(enc(none).shape(), (heed::Shape<3>{2, 0, 8}));
  EXPECT_EQ(heed::nn::PositionalEncoding<float>({.d_model = 4})(Tensor<float, 3>({2, 0, 4})).shape(),
            (heed::Shape<3>{2, 0, 4}));
  EXPECT_EQ(
      heed::nn::LearnedPositionalEmbedding<float>({.max_len = 4, .d_model = 4})(Tensor<float, 3>({2, 0, 4})).shape(),
      (heed::Shape<3>{2, 0, 4}));
  // PyTorch's conv2d refuses an empty plane, so the spatial attentions do
  EXPECT_THROW((void)heed::nn::SpatialAttention<float>({.kernel_size = 7})(Tensor<float, 4>({1, 3, 4, 0})),
               heed::ShapeError);
  EXPECT_THROW((void)heed::nn::CBAM<float>({.channels = 16, .reduction = 4}).forward(Tensor<float, 4>({1, 16, 0, 4})),
               heed::ShapeError);
  EXPECT_EQ(
      heed::nn::CBAM<float>({.channels = 16, .reduction = 4}).forward(Tensor<float, 4>({0, 16, 4, 4})).output.shape(),
      (heed::Shape<4>{0, 16, 4, 4}));
}

}  // namespace
