// nn::LayerNorm against the double reference (tests/reference/nn.hpp): widths below, at and
// above a SIMD register, large offsets (the variance is taken in two passes), eps, without the
// affine parameters, loading and bad input.
#include <gtest/gtest.h>

#include "heed/core/random.hpp"
#include "heed/nn/layer_norm.hpp"
#include "reference/nn.hpp"
#include "reference/softmax.hpp"
#include "support/compare.hpp"

namespace {

using heed::index_t;
using heed::nn::LayerNorm;

TEST(LayerNorm, MatchesTheReferenceOverWidthsAndOffsets) {
  for (index_t d : {1, 3, 8, 17, 64, 200})
    for (double offset : {0.0, 1000.0}) {
      SCOPED_TRACE(testing::Message() << "d " << d << " offset " << offset);
      heed::nn::TensorDict params;
      const auto w = heed::randn<float>({d}, 1), b = heed::randn<float>({d}, 2);
      params.set("norm.weight", w).set("norm.bias", b);
      LayerNorm<float> norm({.normalized_shape = d, .eps = 1e-5});
      norm.load(params, "norm.", {.strict = true});
      auto x = heed::randn<float>({3, 5, d}, 3);
      for (index_t i = 0; i < x.numel(); ++i) x.data()[i] += static_cast<float>(offset);
      const auto y = norm(x);
      const auto expected =
          heed::reference::layer_norm(heed::reference::to_double(x.view().reshape(heed::Shape<2>{15, d})),
                                      heed::reference::to_double(w), heed::reference::to_double(b), 1e-5);
      // Near 1000 a float's ulp is 6e-5, and the mean of d of them carries about sqrt(d) such
      // roundings: the bound there is 1e-3, which a one-pass variance (E[x²] - E[x]², off by
      // order 1 at this offset) would not meet. d = 1: every row normalizes to the bias.
      const heed::test::Tolerance tol =
          offset == 0 ? heed::test::Tolerance{2e-4, 2e-5} : heed::test::Tolerance{0, 1e-3};
      EXPECT_TRUE(heed::test::all_close(y.view().reshape(heed::Shape<2>{15, d}), expected, tol));
    }
}

TEST(LayerNorm, DoubleEpsAndNoAffineParameters) {
  const LayerNorm<double> norm({.normalized_shape = 33, .eps = 0.5, .elementwise_affine = false});
  const auto x = heed::randn<double>({7, 33}, 4);
  const auto expected = heed::reference::layer_norm(x, {}, {}, 0.5);
  EXPECT_TRUE(heed::test::all_close(norm(x), expected, {1e-12, 1e-13}));
  heed::nn::TensorDict nothing;
  LayerNorm<double> loaded({.normalized_shape = 33, .eps = 0.5, .elementwise_affine = false});
  EXPECT_NO_THROW(loaded.load(nothing, "norm.", {.strict = true}));  // no parameters to load
}

TEST(LayerNorm, BadWidthsAreShapeErrors) {
  EXPECT_THROW(LayerNorm<float>({.normalized_shape = 0}), heed::ShapeError);
  const LayerNorm<float> norm({.normalized_shape = 8});
  try {
    (void)norm(heed::randn<float>({2, 7}, 1));
    FAIL();
  } catch (const heed::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("normalizes 8 features, got x [2, 7]"), std::string::npos) << e.what();
  }
}

}  // namespace
