// MultiheadAttention against torch.nn.MultiheadAttention 1.13 (batch_first, eval): E = 24, H = 3,
// Lq = 7, Lk = 13, kdim ≠ vdim, padding, bool and float attn_mask, add_bias_kv, add_zero_attn,
// causal, weights averaged and per head, fully masked rows.
#include <gtest/gtest.h>

#include <cmath>

#include "heed/core/random.hpp"
#include "heed/nn/multihead_attention.hpp"
#include "support/compare.hpp"
#include "support/golden.hpp"

namespace {

using heed::index_t;
using heed::nn::MultiheadAttention;
using heed::test::all_close;

constexpr heed::test::Tolerance tol{1e-5, 1e-6};

struct Case {
  heed::io::SafeTensors fx = heed::test::golden("multihead_attention");
  heed::Tensor<float, 3> q, k, v;
  explicit Case(const std::string& name)
      : q(fx.get<float, 3>(name + ".query")),
        k(fx.get<float, 3>(name + ".key")),
        v(fx.get<float, 3>(name + ".value")) {}
};

void expect_matches(const Case& c, const std::string& name, const MultiheadAttention<float>& mha,
                    heed::nn::MultiheadAttentionCall<float> call) {
  call.need_weights = true;
  call.average_attn_weights = true;
  const auto avg = mha(c.q, c.k, c.v, call);
  const auto ok = all_close(avg.output, c.fx.get<float, 3>(name + ".output"), tol);
  std::printf("%s: output %s\n", name.c_str(), ok.message());
  EXPECT_TRUE(ok) << name;
  const auto w_avg = c.fx.get<float, 3>(name + ".weights_avg");  // PyTorch: [B, Lq, Lk]
  EXPECT_TRUE(all_close(avg.weights.view().reshape(w_avg.shape()), w_avg, tol)) << name;
  call.average_attn_weights = false;
  const auto heads = mha(c.q, c.k, c.v, call);
  EXPECT_TRUE(all_close(heads.weights, c.fx.get<float, 4>(name + ".weights_heads"), tol)) << name;
  call.need_weights = false;
  const auto fast = mha(c.q, c.k, c.v, call);
  EXPECT_TRUE(fast.weights.empty());
  EXPECT_TRUE(all_close(fast.output, avg.output, {0, 0}));
}

TEST(MultiheadAttentionGolden, SelfAttentionWithKeyPadding) {
  const Case c("self");
  MultiheadAttention<float> mha({.embed_dim = 24, .num_heads = 3});
  mha.load(c.fx, "self.module.", {.strict = true});
  const auto pad = c.fx.get<bool, 2>("self.key_padding_mask");
  expect_matches(c, "self", mha, {.key_padding_mask = pad});
}

TEST(MultiheadAttentionGolden, CrossAttentionWithKdimAndVdim) {
  const Case c("cross");
  MultiheadAttention<float> mha({.embed_dim = 24, .num_heads = 3, .kdim = 16, .vdim = 20});
  mha.load(c.fx, "cross.module.", {.strict = true});
  expect_matches(c, "cross", mha, {});
}

TEST(MultiheadAttentionGolden, BiasKvZeroAttnAndBoolMask) {
  const Case c("extra");
  MultiheadAttention<float> mha({.embed_dim = 24, .num_heads = 3, .add_bias_kv = true, .add_zero_attn = true});
  mha.load(c.fx, "extra.module.", {.strict = true});
  const auto not_allowed = c.fx.get<bool, 2>("extra.attn_mask");  // PyTorch: true = NOT allowed
  expect_matches(c, "extra", mha, {.attn_mask = not_allowed.view().reshape(heed::Shape<3>{1, 7, 13})});
}

TEST(MultiheadAttentionGolden, FloatMaskPerBatchAndHeadWithoutBias) {
  const Case c("biased");
  MultiheadAttention<float> mha({.embed_dim = 24, .num_heads = 3, .bias = false});
  mha.load(c.fx, "biased.module.", {.strict = true});
  const auto bias = c.fx.get<float, 3>("biased.attn_bias");
  expect_matches(c, "biased", mha, {.attn_bias = bias});
}

TEST(MultiheadAttentionGolden, CausalIsTheTriangularMask) {
  const Case c("causal");
  MultiheadAttention<float> mha({.embed_dim = 24, .num_heads = 3});
  mha.load(c.fx, "causal.module.");
  expect_matches(c, "causal", mha, {.is_causal = true});
}

TEST(MultiheadAttentionGolden, FullyMaskedRowsAreNaNOnlyWhenAsked) {
  const Case c("masked");
  MultiheadAttention<float> mha({.embed_dim = 24, .num_heads = 3});
  mha.load(c.fx, "masked.module.");
  const auto pad = c.fx.get<bool, 2>("masked.key_padding_mask");
  const auto expected = c.fx.get<float, 3>("masked.output");
  const auto nan = mha(c.q, c.k, c.v, {.key_padding_mask = pad, .masked_rows = heed::MaskedRows::nan});
  EXPECT_TRUE(all_close(nan.output, expected, tol));  // batch 0 equal, batch 1 NaN in both
  EXPECT_TRUE(std::isnan(expected(1, 0, 0)));
  const auto zero = mha(c.q, c.k, c.v, {.key_padding_mask = pad});
  for (index_t i = 0; i < 7; ++i)
    for (index_t e = 0; e < 24; ++e) EXPECT_FALSE(std::isnan(zero.output(1, i, e)));
  EXPECT_TRUE(all_close(zero.output.view()[0], expected.view()[0], tol));
}

TEST(MultiheadAttention, ErrorsNameTheShapes) {
  EXPECT_THROW(MultiheadAttention<float>({.embed_dim = 24, .num_heads = 5}), heed::ShapeError);
  const MultiheadAttention<float> mha({.embed_dim = 24, .num_heads = 3});
  const auto x = heed::randn<float>({2, 7, 24}, 1);
  try {
    (void)mha(x, heed::randn<float>({2, 9, 20}, 2), heed::randn<float>({2, 9, 24}, 3));
    FAIL();
  } catch (const heed::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("key [2, 9, 20]"), std::string::npos) << e.what();
  }
  const heed::Tensor<bool, 2> pad({3, 7});
  EXPECT_THROW((void)mha(x, x, x, {.key_padding_mask = pad}), heed::ShapeError);
  const heed::Tensor<bool, 3> mask({4, 7, 7});
  EXPECT_THROW((void)mha(x, x, x, {.attn_mask = mask}), heed::ShapeError);
  const auto fx = heed::test::golden("multihead_attention");
  MultiheadAttention<float> wrong({.embed_dim = 24, .num_heads = 3, .kdim = 16, .vdim = 20});
  EXPECT_THROW(wrong.load(fx, "self.module."), heed::FormatError);  // no q_proj_weight in a packed layout
}

TEST(MultiheadAttention, AddSelfAttentionIsTheResidualConnection) {
  // out = skip + self_attention(x), with out a separate tensor, or x itself (in place)
  const Case c("self");
  MultiheadAttention<float> mha({.embed_dim = 24, .num_heads = 3});
  mha.load(c.fx, "self.module.", {.strict = true});
  const auto pad = c.fx.get<bool, 2>("self.key_padding_mask");
  const auto attended = mha(c.q, c.q, c.q, {.key_padding_mask = pad, .need_weights = false}).output;
  const auto skip = heed::randn<float>(c.q.shape(), 4);
  heed::Tensor<float, 3> expected(skip);
  for (index_t i = 0; i < expected.numel(); ++i) expected.data()[i] += attended.data()[i];

  heed::Tensor<float, 3> out(c.q.shape());
  mha.add_self_attention(c.q, skip.view(), out.view(), {.key_padding_mask = pad});
  EXPECT_TRUE(all_close(out, expected, tol));

  heed::Tensor<float, 3> x(c.q);  // in place: out = x + attention(x)
  mha.add_self_attention(x, x.view(), x.view(), {.key_padding_mask = pad});
  heed::Tensor<float, 3> expected_in_place(c.q);
  for (index_t i = 0; i < expected_in_place.numel(); ++i) expected_in_place.data()[i] += attended.data()[i];
  EXPECT_TRUE(all_close(x, expected_in_place, tol));

  heed::Tensor<float, 3> short_out({c.q.size(0), c.q.size(1) - 1, 24});
  try {
    mha.add_self_attention(c.q, skip.view(), short_out.view(), {.key_padding_mask = pad});
    FAIL();
  } catch (const heed::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find(heed::to_string(short_out.shape())), std::string::npos) << e.what();
  }
}

}  // namespace

namespace {

// The q, k and v projections read their rows of the stacked q/k/v panels where E is a multiple
// of the GEMM's panel width (64 here), and packed copies of their own where it is not (24):
// either way, a query that is a copy of the key (three projections) gives the bits of the same
// tensor (one stacked projection), after a load and from the constructor's initialization.
TEST(MultiheadAttention, SeparateProjectionsGiveTheStackedBits) {
  for (const index_t E : {64, 24}) {
    MultiheadAttention<float> mha({.embed_dim = E, .num_heads = 4, .seed = 7});
    for (const bool loaded : {false, true}) {
      if (loaded) {
        heed::nn::TensorDict weights;
        weights.set("in_proj_weight", heed::randn<float>({3 * E, E}, 8));
        weights.set("in_proj_bias", heed::randn<float>({3 * E}, 9));
        weights.set("out_proj.weight", heed::randn<float>({E, E}, 10));
        weights.set("out_proj.bias", heed::randn<float>({E}, 11));
        mha.load(weights, "", {.strict = true});
      }
      const auto x = heed::randn<float>({2, 37, E}, 12);
      const heed::Tensor<float, 3> copy(x.view());
      const auto stacked = mha(x, x, x), separate = mha(x, copy, copy);
      EXPECT_TRUE(all_close(separate.output, stacked.output, {0, 0})) << "E " << E << " loaded " << loaded;
      EXPECT_TRUE(all_close(separate.weights, stacked.weights, {0, 0})) << "E " << E << " loaded " << loaded;
    }
  }
}

}  // namespace
