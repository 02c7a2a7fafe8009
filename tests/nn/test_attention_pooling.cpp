// nn::AttentionPooling against the double reference (tests/reference/nn.hpp): softmax over the
// sequence of x·a + c, padded positions weighted 0, a fully padded row pooled to zeros (or NaN
// when asked), loading the seed's names, bad input.
#include <gtest/gtest.h>

#include <cmath>

#include "heed/core/random.hpp"
#include "heed/nn/attention_pooling.hpp"
#include "reference/nn.hpp"
#include "reference/softmax.hpp"
#include "support/compare.hpp"

namespace {

using heed::index_t;
using heed::Tensor;
using heed::nn::AttentionPooling;

TEST(AttentionPooling, MatchesTheReferenceWithAndWithoutPadding) {
  for (index_t L : {1, 9, 300})
    for (index_t E : {4, 48}) {
      SCOPED_TRACE(testing::Message() << "L " << L << " E " << E);
      heed::nn::TensorDict d;
      const auto a = heed::randn<float>({1, E}, 1);
      const auto c = heed::randn<float>({1}, 2);
      d.set("pool.0.weight", a).set("pool.0.bias", c);
      AttentionPooling<float> pool({.embed_dim = E});
      pool.load(heed::nn::Loader<heed::nn::TensorDict>(d, "pool."));
      const auto x = heed::randn<float>({3, L, E}, static_cast<std::uint64_t>(L + E));
      Tensor<bool, 2> pad({3, L});
      for (index_t j = 0; j < L; ++j) {
        pad(0, j) = j > 0 && j % 3 == 0;  // batch 0: every third position but the first
        pad(2, j) = true;                 // batch 2: nothing to pool
      }
      const auto xd = heed::reference::to_double(x);
      const auto ad = heed::reference::to_double(a.view().reshape(heed::Shape<1>{E}));
      for (bool padded : {false, true}) {
        const auto r = padded ? pool(x, pad) : pool(x);
        const auto expected =
            heed::reference::attention_pooling(xd, ad, double(c(0)), padded ? pad : Tensor<bool, 2>());
        EXPECT_TRUE(heed::test::all_close(r.pooled, expected.pooled, {2e-4, 2e-5})) << padded;
        EXPECT_TRUE(heed::test::all_close(r.weights, expected.weights, {2e-4, 2e-6})) << padded;
      }
      const auto nan = pool(x, pad, heed::MaskedRows::nan);
      EXPECT_TRUE(std::isnan(nan.pooled(2, 0)));
      EXPECT_FALSE(std::isnan(nan.pooled(1, 0)));
    }
}

TEST(AttentionPooling, BadWidthIsAShapeError) {
  const AttentionPooling<float> pool({.embed_dim = 8});
  try {
    (void)pool(heed::randn<float>({2, 5, 7}, 1));
    FAIL();
  } catch (const heed::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("expects [B, L, 8], got x [2, 5, 7]"), std::string::npos) << e.what();
  }
}

}  // namespace
