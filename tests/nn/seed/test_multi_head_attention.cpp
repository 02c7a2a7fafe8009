// seed::MultiHeadAttention against the seed's PyTorch class (PyTorch 1.13 fixtures): w_q/w_k/w_v/w_o,
// the -1e9 mask fill.
#include <gtest/gtest.h>

#include <cmath>

#include "heed/nn/seed/multi_head_attention.hpp"
#include "support/compare.hpp"
#include "support/golden.hpp"

namespace {

using heed::index_t;
using heed::test::all_close;
using namespace heed::nn::seed;

constexpr heed::test::Tolerance tol{1e-5, 1e-6};

TEST(SeedMultiHeadAttentionGolden, WeightsAndTheMinusOneBillionMask) {
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

}  // namespace
