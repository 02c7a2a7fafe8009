// SEBlock, SpatialAttention and CBAM with bfloat16 / half tensors. A 16-bit module widens each
// sample and runs the float pipeline on it, so with the same (rounded) weights and input its
// outputs are exactly the float module's outputs rounded once to 16 bits: the test asserts
// equality, bit for bit, for the output and both attention maps.
#include <gtest/gtest.h>

#include <cmath>

#include "heed/core/cast.hpp"
#include "heed/core/random.hpp"
#include "heed/nn/vision/cbam.hpp"
#include "heed/nn/vision/se_block.hpp"
#include "heed/nn/vision/spatial_attention.hpp"
#include "heed/nn/weights.hpp"
#include "support/compare.hpp"

namespace {

using heed::index_t;
using heed::Tensor;

// a random tensor rounded to T, kept as float
template <class T, std::size_t R>
Tensor<float, R> rounded(const heed::Shape<R>& shape, double scale, std::uint64_t seed) {
  Tensor<float, R> t = heed::randn<float, R>(shape, seed);
  for (index_t i = 0; i < t.numel(); ++i)
    t.data()[i] = static_cast<float>(heed::convert<T>(t.data()[i] * float(scale)));
  return t;
}

template <class T, std::size_t R>
void expect_rounded_float(const Tensor<T, R>& got, const Tensor<float, R>& expected) {
  EXPECT_TRUE(heed::test::all_close(heed::cast<float>(got), heed::cast<float>(heed::cast<T>(expected)), {0, 0}));
}

template <class T>
class Vision16 : public ::testing::Test {};
using Scalars = ::testing::Types<heed::bfloat16, heed::half>;
TYPED_TEST_SUITE(Vision16, Scalars);

TYPED_TEST(Vision16, SEBlockIsTheFloatBlockRoundedOnce) {
  using T = TypeParam;
  const index_t C = 24, hidden = 6;
  heed::nn::TensorDict d;
  d.set("excitation.0.weight", rounded<T>(heed::Shape<2>{hidden, C}, 0.3, 1));
  d.set("excitation.2.weight", rounded<T>(heed::Shape<2>{C, hidden}, 0.3, 2));
  heed::nn::SEBlock<float> reference({.channels = C, .reduction = 4});
  heed::nn::SEBlock<T> se({.channels = C, .reduction = 4});
  reference.load(d, "", {.strict = true});
  se.load(d, "", {.strict = true});
  const auto x = rounded<T>(heed::Shape<4>{3, C, 7, 9}, 1.0, 3);
  const auto expected = reference.forward(x);
  const auto got = se.forward(heed::cast<T>(x));
  expect_rounded_float(got.output, expected.output);
  expect_rounded_float(got.channel_weights, expected.channel_weights);
}

TYPED_TEST(Vision16, SpatialAttentionIsTheFloatModuleRoundedOnce) {
  using T = TypeParam;
  heed::nn::TensorDict d;
  d.set("conv.weight", rounded<T>(heed::Shape<4>{1, 2, 5, 5}, 0.3, 4));
  heed::nn::SpatialAttention<float> reference({.kernel_size = 5});
  heed::nn::SpatialAttention<T> sa({.kernel_size = 5});
  reference.load(d, "", {.strict = true});
  sa.load(d, "", {.strict = true});
  const auto x = rounded<T>(heed::Shape<4>{2, 11, 6, 13}, 1.0, 5);
  const auto expected = reference.forward(x);
  const auto got = sa.forward(heed::cast<T>(x));
  expect_rounded_float(got.output, expected.output);
  expect_rounded_float(got.spatial_map, expected.spatial_map);
}

TYPED_TEST(Vision16, CBAMIsTheFloatModuleRoundedOnce) {
  using T = TypeParam;
  const index_t C = 32, hidden = 4;
  heed::nn::TensorDict d;
  d.set("channel_attn.2.weight", rounded<T>(heed::Shape<2>{hidden, C}, 0.3, 6));
  d.set("channel_attn.4.weight", rounded<T>(heed::Shape<2>{C, hidden}, 0.3, 7));
  d.set("spatial_attn.0.weight", rounded<T>(heed::Shape<4>{1, 2, 7, 7}, 0.2, 8));
  heed::nn::CBAM<float> reference({.channels = C, .reduction = 8, .kernel_size = 7});
  heed::nn::CBAM<T> cbam({.channels = C, .reduction = 8, .kernel_size = 7});
  reference.load(d, "", {.strict = true});
  cbam.load(d, "", {.strict = true});
  const auto x = rounded<T>(heed::Shape<4>{3, C, 9, 8}, 1.0, 9);
  const auto expected = reference.forward(x);
  const auto got = cbam.forward(heed::cast<T>(x));
  expect_rounded_float(got.output, expected.output);
  expect_rounded_float(got.channel_weights, expected.channel_weights);
  expect_rounded_float(got.spatial_map, expected.spatial_map);
}

}  // namespace
