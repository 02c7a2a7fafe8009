// seed::AdditiveAttention (seed 002's Bahdanau module) against PyTorch 1.13.
#include <gtest/gtest.h>

#include <cmath>

#include "heed/nn/seed/additive_attention.hpp"
#include "support/compare.hpp"
#include "support/golden.hpp"

namespace {

using heed::index_t;
using heed::test::all_close;
using namespace heed::nn::seed;

constexpr heed::test::Tolerance tol{1e-5, 1e-6};

TEST(SeedAdditiveAttentionGolden, WeightsMatchPyTorch) {
  const auto fx = heed::test::golden("seed002_scores");
  AdditiveAttention<float> add({.hidden_dim = 24});
  add.load(fx, "additive.", {.strict = true});
  const auto r = add(fx.get<float, 2>("query"), fx.get<float, 3>("keys"));
  EXPECT_TRUE(all_close(r.weights, fx.get<float, 2>("additive_weights"), tol));
  EXPECT_EQ(r.context.shape(), (heed::Shape<2>{3, 24}));
}

}  // namespace
