// nn::RMSNorm and nn::SwiGLU, the blocks of a Llama layer: against PyTorch (the fixture
// "llama_blocks": torch 2.4's RMSNorm written out for PyTorch 1.13, Hugging Face's LlamaMLP),
// against the double references (tests/reference/nn.hpp) over widths around a SIMD register,
// in bfloat16 and half against the reference of the rounded inputs, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "heed/core/cast.hpp"
#include "heed/core/random.hpp"
#include "heed/nn/rms_norm.hpp"
#include "heed/nn/swiglu.hpp"
#include "reference/nn.hpp"
#include "reference/softmax.hpp"
#include "support/compare.hpp"
#include "support/golden.hpp"

namespace {

using heed::index_t;
using heed::Shape;
using heed::Tensor;
using heed::nn::RMSNorm;
using heed::nn::SwiGLU;
using heed::reference::to_double;

constexpr heed::test::Tolerance float_tol{1e-5, 1e-6};

// ff(x) in double: down(silu(gate x + bg) ⊙ (up x + bu)) + bd.
Tensor<double, 2> swiglu_reference(const Tensor<double, 2>& x, const heed::nn::TensorDict& p, const std::string& prefix,
                                   bool bias) {
  const auto param2 = [&](const std::string& n) { return to_double(p.get<float, 2>(prefix + n + ".weight")); };
  const auto param1 = [&](const std::string& n) {
    return bias ? to_double(p.get<float, 1>(prefix + n + ".bias")) : Tensor<double, 1>();
  };
  auto gate = heed::reference::linear(x, param2("gate_proj"), param1("gate_proj"));
  const auto up = heed::reference::linear(x, param2("up_proj"), param1("up_proj"));
  for (index_t i = 0; i < gate.numel(); ++i) gate.data()[i] = heed::reference::silu(gate.data()[i]) * up.data()[i];
  return heed::reference::linear(gate, param2("down_proj"), param1("down_proj"));
}

TEST(RMSNorm, MatchesPyTorch) {
  const auto fx = heed::test::golden("llama_blocks");
  const auto x = fx.get<float, 3>("x"), small = fx.get<float, 3>("small");
  for (const std::string name : {"eps", "default", "plain"}) {
    SCOPED_TRACE(name);
    const heed::nn::RMSNormOptions o{.normalized_shape = 48,
                                     .eps = name == "default" ? std::nullopt : std::optional<double>(1e-5),
                                     .elementwise_affine = name != "plain"};
    RMSNorm<float> norm(o);
    norm.load(fx, "norm_" + name + ".", {.strict = false});
    EXPECT_TRUE(heed::test::all_close(norm(x), fx.get<float, 3>("norm_" + name + ".output"), float_tol));
    // |x| ~ 1e-3: mean(x²) ~ 1e-6, so eps = 1e-5 dominates and eps = float epsilon does not
    EXPECT_TRUE(heed::test::all_close(norm(small), fx.get<float, 3>("norm_" + name + ".small_output"), float_tol));
  }
  EXPECT_EQ(RMSNorm<float>({.normalized_shape = 4}).eps(), std::numeric_limits<float>::epsilon());
  EXPECT_EQ(RMSNorm<heed::bfloat16>({.normalized_shape = 4}).eps(), std::numeric_limits<float>::epsilon());
  EXPECT_EQ(RMSNorm<double>({.normalized_shape = 4}).eps(), std::numeric_limits<double>::epsilon());
}

TEST(RMSNorm, MatchesTheReferenceOverWidths) {
  for (index_t d : {1, 3, 8, 17, 64, 200}) {
    SCOPED_TRACE(testing::Message() << "d " << d);
    heed::nn::TensorDict params;
    const auto w = heed::randn<float>({d}, 1);
    params.set("weight", w);
    RMSNorm<float> norm({.normalized_shape = d, .eps = 1e-6});
    norm.load(params, "", {.strict = true});
    const auto x = heed::randn<float>({3, 5, d}, 3);
    const auto expected = heed::reference::rms_norm(to_double(x.view().reshape(Shape<2>{15, d})), to_double(w), 1e-6);
    EXPECT_TRUE(heed::test::all_close(norm(x).view().reshape(Shape<2>{15, d}), expected, {2e-5, 2e-6}));
    const RMSNorm<double> exact({.normalized_shape = d, .eps = 0.25, .elementwise_affine = false});
    const auto xd = heed::randn<double>({4, d}, 5);
    EXPECT_TRUE(heed::test::all_close(exact(xd), heed::reference::rms_norm(xd, {}, 0.25), {1e-13, 1e-14}));
  }
}

TEST(SwiGLU, MatchesLlamaMLP) {
  const auto fx = heed::test::golden("llama_blocks");
  const auto x = fx.get<float, 3>("x");
  for (const bool bias : {false, true}) {
    const std::string name = bias ? "mlp_bias" : "mlp";
    SCOPED_TRACE(name);
    SwiGLU<float> mlp({.dim = 48, .hidden_dim = 80, .bias = bias});
    mlp.load(fx, name + ".module.", {.strict = true});
    const auto y = mlp(x);
    EXPECT_TRUE(heed::test::all_close(y, fx.get<float, 3>(name + ".output"), float_tol));
    // rows_add: the residual form a decoder block uses, in place
    Tensor<float, 3> residual = x;
    mlp.rows_add(x.data(), residual.data(), residual.data(), 21);
    Tensor<float, 3> expected = x;
    for (index_t i = 0; i < expected.numel(); ++i) expected.data()[i] += y.data()[i];
    EXPECT_TRUE(heed::test::all_close(residual, expected, float_tol));
  }
}

template <class T>
class Blocks16 : public ::testing::Test {};
using Scalars = ::testing::Types<heed::bfloat16, heed::half>;
TYPED_TEST_SUITE(Blocks16, Scalars);

// 16-bit weights and activations against the double reference of the rounded inputs: RMSNorm
// rounds once (u·|y|), SwiGLU rounds its gate, up and product before down_proj (a few u).
TYPED_TEST(Blocks16, AgainstTheReferenceOfTheRoundedInputs) {
  using T = TypeParam;
  const double u = std::is_same_v<T, heed::bfloat16> ? 0x1p-8 : 0x1p-11;
  const auto fx = heed::test::golden("llama_blocks");
  const auto x = heed::cast<T>(fx.get<float, 3>("x"));
  const auto x2 = to_double(x.view().reshape(Shape<2>{21, 48}));

  RMSNorm<T> norm({.normalized_shape = 48, .eps = 1e-5});
  norm.load(fx, "norm_eps.", {.strict = false});
  const auto expected_norm = heed::reference::rms_norm(x2, to_double(norm.weight()), 1e-5);
  EXPECT_TRUE(heed::test::all_close(norm(x).view().reshape(Shape<2>{21, 48}), expected_norm, {u, 1e-5}));

  heed::nn::TensorDict rounded;
  for (const char* n : {"gate_proj", "up_proj", "down_proj"}) {
    const std::string key = std::string("mlp.module.") + n + ".weight";
    rounded.set(key, heed::cast<float>(heed::cast<T>(fx.get<float, 2>(key))));
  }
  SwiGLU<T> mlp({.dim = 48, .hidden_dim = 80});
  mlp.load(rounded, "mlp.module.", {.strict = true});
  const auto expected = swiglu_reference(x2, rounded, "mlp.module.", false);
  // the intermediate roundings (gate, up, their product) each add u relative to a hidden value,
  // and down_proj sums 80 of them: a few u of the output's scale
  EXPECT_TRUE(heed::test::all_close(mlp(x).view().reshape(Shape<2>{21, 48}), expected, {6 * u, 6 * u}));
}

// Many rows (the product silu(gate) ⊙ up split over workers) and a hidden width over the 16-bit
// product's chunk of 256 values, with biases: against the double reference of the (rounded)
// weights.
template <class T>
void check_wide_swiglu(double tol) {
  const index_t n = 300, d = 32, F = 300;
  heed::nn::TensorDict rounded;
  std::uint64_t seed = 11;
  for (const char* p : {"gate_proj", "up_proj", "down_proj"}) {
    const index_t rows = std::string(p) == "down_proj" ? d : F, cols = std::string(p) == "down_proj" ? F : d;
    auto w = heed::randn<float>({rows, cols}, seed++);
    for (index_t i = 0; i < w.numel(); ++i) w.data()[i] /= std::sqrt(static_cast<float>(cols));  // outputs ~ 1
    rounded.set(std::string(p) + ".weight", heed::cast<float>(heed::cast<T>(w)));
    rounded.set(std::string(p) + ".bias", heed::cast<float>(heed::cast<T>(heed::randn<float>({rows}, seed++))));
  }
  SwiGLU<T> mlp({.dim = d, .hidden_dim = F, .bias = true});
  mlp.load(rounded, "", {.strict = true});
  const auto x = heed::cast<T>(heed::randn<float>({n, d}, 3));
  const auto expected = swiglu_reference(to_double(x), rounded, "", true);
  EXPECT_TRUE(heed::test::all_close(mlp(x), expected, {tol, tol}));
}

TEST(SwiGLU, ManyRowsAndAWideHiddenLayer) {
  check_wide_swiglu<float>(2e-5);
  check_wide_swiglu<heed::bfloat16>(6 * 0x1p-8);
  check_wide_swiglu<heed::half>(6 * 0x1p-11);
}

TEST(LlamaBlocks, BadInputIsAShapeError) {
  EXPECT_THROW(RMSNorm<float>({.normalized_shape = 0}), heed::ShapeError);
  EXPECT_THROW(RMSNorm<float>({.normalized_shape = 4, .eps = -1.0}), heed::ShapeError);
  EXPECT_THROW(SwiGLU<float>({.dim = 4, .hidden_dim = 0}), heed::ShapeError);
  const RMSNorm<float> norm({.normalized_shape = 8});
  try {
    (void)norm(heed::randn<float>({2, 7}, 1));
    FAIL();
  } catch (const heed::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("normalizes 8 features, got x [2, 7]"), std::string::npos) << e.what();
  }
  const SwiGLU<float> mlp({.dim = 8, .hidden_dim = 16});
  try {
    (void)mlp(heed::randn<float>({3, 9}, 1));
    FAIL();
  } catch (const heed::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("expects 8 input features, got x [3, 9]"), std::string::npos) << e.what();
  }
}

}  // namespace
