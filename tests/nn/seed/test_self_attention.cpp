// seed::SelfAttention against the seed's PyTorch class (PyTorch 1.13 fixtures), with and without
// the causal mask.
#include <gtest/gtest.h>

#include <cmath>

#include "heed/nn/seed/self_attention.hpp"
#include "support/compare.hpp"
#include "support/golden.hpp"

namespace {

using heed::index_t;
using heed::test::all_close;
using namespace heed::nn::seed;

constexpr heed::test::Tolerance tol{1e-5, 1e-6};

TEST(SeedSelfAttentionGolden, WithAndWithoutCausalMask) {
  const auto fx = heed::test::golden("seed_modules");
  SelfAttention<float> sa({.d_model = 24, .n_heads = 3});
  sa.load(fx, "self.module.", {.strict = true});
  const auto x = fx.get<float, 3>("self.x");
  const auto enc = sa(x);
  EXPECT_TRUE(all_close(enc.output, fx.get<float, 3>("self.output"), tol));
  EXPECT_TRUE(all_close(enc.weights, fx.get<float, 4>("self.weights"), tol));
  const auto dec = sa(x, {.causal = true});
  EXPECT_TRUE(all_close(dec.output, fx.get<float, 3>("self.output_causal"), tol));
  EXPECT_TRUE(all_close(dec.weights, fx.get<float, 4>("self.weights_causal"), tol));
  for (index_t j = 5; j < 13; ++j) EXPECT_EQ(dec.weights(0, 0, 0, j), 0.0f);  // the seed's causality check
}

}  // namespace
