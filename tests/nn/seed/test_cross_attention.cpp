// seed::CrossAttention against the seed's PyTorch class (PyTorch 1.13 fixtures): Lq ≠ Lk, a strided
// target, the seed's mask.
#include <gtest/gtest.h>

#include <cmath>

#include "heed/nn/seed/cross_attention.hpp"
#include "support/compare.hpp"
#include "support/golden.hpp"

namespace {

using heed::index_t;
using heed::test::all_close;
using namespace heed::nn::seed;

constexpr heed::test::Tolerance tol{1e-5, 1e-6};

TEST(SeedCrossAttentionGolden, LengthsDifferAndTheSeedsMask) {
  const auto fx = heed::test::golden("seed_modules");
  CrossAttention<float> ca({.d_model = 24, .n_heads = 3});
  ca.load(fx, "cross.module.", {.strict = true});
  const auto x = fx.get<float, 3>("self.x");
  const auto target = x.view().slice(1, 0, 7);  // x[:, :7], a strided view
  const auto source = fx.get<float, 3>("cross.source");
  const auto r = ca(target, source);
  EXPECT_EQ(r.weights.shape(), (heed::Shape<4>{2, 3, 7, 11}));
  EXPECT_TRUE(all_close(r.output, fx.get<float, 3>("cross.output"), tol));
  EXPECT_TRUE(all_close(r.weights, fx.get<float, 4>("cross.weights"), tol));
  const auto m = ca(target, source, fx.get<bool, 2>("cross.allowed"));
  EXPECT_TRUE(all_close(m.output, fx.get<float, 3>("cross.output_masked"), tol));
  EXPECT_TRUE(all_close(m.weights, fx.get<float, 4>("cross.weights_masked"), tol));
}

}  // namespace
