// MultiheadAttention, TransformerEncoderLayer and LayerNorm with bfloat16 / half weights and
// activations, against the float module loaded with the same (rounded) weights and run on the
// same (rounded) input. Every 16-bit intermediate (the projections, the attention context, the
// feed-forward hidden layer, the output) is rounded once to nearest, relative error ≤ u
// (u = 2⁻⁸ for bfloat16, 2⁻¹¹ for half), and each rounding passes through maps that are well
// conditioned at these scales (weights ~ 1/sqrt(fan_in), LayerNorm outputs ~ 1), so the
// difference is a few u of the output's magnitude: measured, at most 1.1 u · max|y| here. The
// bound asserted is 4u relative plus 4u · max|y|; at 1u (plus 1u · max|y|) the tests fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "heed/core/cast.hpp"
#include "heed/core/random.hpp"
#include "heed/nn/layer_norm.hpp"
#include "heed/nn/multihead_attention.hpp"
#include "heed/nn/transformer_encoder_layer.hpp"
#include "heed/nn/weights.hpp"
#include "support/compare.hpp"

namespace {

using heed::index_t;
using heed::Tensor;

template <class T>
constexpr double unit_roundoff() {
  return std::is_same_v<T, heed::bfloat16> ? 0x1p-8 : 0x1p-11;
}

// a random parameter, rounded to T and kept as float: both modules load exactly these values
template <class T, std::size_t R>
Tensor<float, R> rounded(const heed::Shape<R>& shape, double scale, std::uint64_t seed) {
  Tensor<float, R> t = heed::randn<float, R>(shape, seed);
  for (index_t i = 0; i < t.numel(); ++i)
    t.data()[i] = static_cast<float>(heed::convert<T>(t.data()[i] * static_cast<float>(scale)));
  return t;
}

template <class T, std::size_t R>
void expect_close_to_float(const Tensor<T, R>& got, const Tensor<float, R>& expected, double factor = 4) {
  const double u = unit_roundoff<T>();
  double scale = 0;
  for (index_t i = 0; i < expected.numel(); ++i) scale = std::max(scale, std::abs(double(expected.data()[i])));
  const auto widened = heed::cast<float>(got);
  EXPECT_TRUE(heed::test::all_close(widened, expected, {factor * u, factor * u * scale}));
}

void add_mha(heed::nn::TensorDict& d, const std::string& prefix, index_t E, std::uint64_t seed, auto round) {
  const double s = 1 / std::sqrt(double(E));
  d.set(prefix + "in_proj_weight", round(heed::Shape<2>{3 * E, E}, s, seed));
  d.set(prefix + "in_proj_bias", round(heed::Shape<1>{3 * E}, 0.1, seed + 1));
  d.set(prefix + "out_proj.weight", round(heed::Shape<2>{E, E}, s, seed + 2));
  d.set(prefix + "out_proj.bias", round(heed::Shape<1>{E}, 0.1, seed + 3));
}

template <class T>
class Modules16 : public ::testing::Test {};
using Scalars = ::testing::Types<heed::bfloat16, heed::half>;
TYPED_TEST_SUITE(Modules16, Scalars);

TYPED_TEST(Modules16, MultiheadAttentionMatchesTheFloatModule) {
  using T = TypeParam;
  const index_t E = 64, H = 4;
  const auto round = [](auto shape, double s, std::uint64_t seed) { return rounded<T>(shape, s, seed); };
  heed::nn::TensorDict d;
  add_mha(d, "", E, 10, round);
  heed::nn::MultiheadAttention<float> reference({.embed_dim = E, .num_heads = H});
  heed::nn::MultiheadAttention<T> mha({.embed_dim = E, .num_heads = H});
  reference.load(d, "", {.strict = true});
  mha.load(d, "", {.strict = true});
  const auto x = round(heed::Shape<3>{2, 37, E}, 1.0, 20), kv = round(heed::Shape<3>{2, 53, E}, 1.0, 21);
  const auto x16 = heed::cast<T>(x), kv16 = heed::cast<T>(kv);
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "full");
    const auto expected = reference(x, kv, kv, {.is_causal = causal});
    const auto got = mha(x16, kv16, kv16, {.is_causal = causal});
    expect_close_to_float(got.output, expected.output);
    expect_close_to_float(got.weights, expected.weights);
  }
}

TYPED_TEST(Modules16, EncoderLayerMatchesTheFloatModule) {
  using T = TypeParam;
  const index_t E = 64, F = 256;
  const auto round = [](auto shape, double s, std::uint64_t seed) { return rounded<T>(shape, s, seed); };
  heed::nn::TensorDict d;
  add_mha(d, "self_attn.", E, 30, round);
  d.set("linear1.weight", round(heed::Shape<2>{F, E}, 1 / std::sqrt(double(E)), 40));
  d.set("linear1.bias", round(heed::Shape<1>{F}, 0.1, 41));
  d.set("linear2.weight", round(heed::Shape<2>{E, F}, 1 / std::sqrt(double(F)), 42));
  d.set("linear2.bias", round(heed::Shape<1>{E}, 0.1, 43));
  for (const char* norm : {"norm1.", "norm2."}) {
    d.set(std::string(norm) + "weight", round(heed::Shape<1>{E}, 0.2, 44));
    d.set(std::string(norm) + "bias", round(heed::Shape<1>{E}, 0.1, 45));
  }
  for (bool norm_first : {false, true}) {
    SCOPED_TRACE(norm_first ? "norm_first" : "post-norm");
    const heed::nn::TransformerEncoderLayerOptions o{.d_model = E,
                                                     .nhead = 4,
                                                     .dim_feedforward = F,
                                                     .activation = heed::nn::Activation::gelu,
                                                     .norm_first = norm_first};
    heed::nn::TransformerEncoderLayer<float> reference(o);
    heed::nn::TransformerEncoderLayer<T> layer(o);
    reference.load(d, "", {.strict = true});
    layer.load(d, "", {.strict = true});
    const auto x = round(heed::Shape<3>{3, 29, E}, 1.0, 50);
    expect_close_to_float(layer(heed::cast<T>(x)), reference(x));
  }
}

TYPED_TEST(Modules16, LayerNormRoundsOnce) {
  using T = TypeParam;
  const index_t E = 77;
  const auto round = [](auto shape, double s, std::uint64_t seed) { return rounded<T>(shape, s, seed); };
  heed::nn::TensorDict d;
  d.set("weight", round(heed::Shape<1>{E}, 1.0, 1)).set("bias", round(heed::Shape<1>{E}, 1.0, 2));
  heed::nn::LayerNorm<float> reference({.normalized_shape = E});
  heed::nn::LayerNorm<T> norm({.normalized_shape = E});
  reference.load(d);
  norm.load(d);
  const auto x = round(heed::Shape<2>{5, E}, 3.0, 3);
  // the float result rounded to T, exactly: one rounding of the same float computation
  EXPECT_TRUE(heed::test::all_close(norm(heed::cast<T>(x)), heed::cast<T>(reference(x)), {0, 0}));
}

}  // namespace
