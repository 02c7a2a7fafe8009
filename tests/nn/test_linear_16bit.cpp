// nn::Linear with bfloat16 and half weights and activations: the product is accumulated in
// float and each output rounded once, so against the double reference of the same rounded
// inputs the error is the output's rounding, u·|y| (u = 2⁻⁸ for bfloat16, 2⁻¹¹ for half), plus
// float accumulation (well under 1e-5 at these depths). Odd shapes leave partial tiles; depths
// over the GEMM's k block (192) check that C stays float between k blocks.
#include <gtest/gtest.h>

#include "heed/core/cast.hpp"
#include "heed/core/random.hpp"
#include "heed/nn/linear.hpp"
#include "heed/nn/weights.hpp"
#include "reference/nn.hpp"
#include "reference/softmax.hpp"
#include "support/compare.hpp"

namespace {

using heed::index_t;
using heed::Tensor;
using heed::nn::Activation;
using heed::nn::Linear;
using heed::reference::to_double;

template <class T>
heed::test::Tolerance tol() {
  return {std::is_same_v<T, heed::bfloat16> ? 0x1p-8 : 0x1p-11, 1e-5};
}

template <class T>
class Linear16 : public ::testing::Test {};
using Scalars = ::testing::Types<heed::bfloat16, heed::half>;
TYPED_TEST_SUITE(Linear16, Scalars);

TYPED_TEST(Linear16, EveryShapeAgainstTheReferenceOfTheRoundedInputs) {
  using T = TypeParam;
  for (index_t in : {1, 7, 64, 200, 450})
    for (index_t out : {1, 5, 33, 96})
      for (bool bias : {true, false}) {
        SCOPED_TRACE(testing::Message() << "in " << in << " out " << out << " bias " << bias);
        Linear<T> lin({.in_features = in, .out_features = out, .bias = bias, .seed = 3});
        const auto x = heed::cast<T>(heed::randn<float>({2, 101, in}, static_cast<std::uint64_t>(in + out)));
        const auto y = lin(x);
        ASSERT_EQ(y.shape(), (heed::Shape<3>{2, 101, out}));
        const auto expected = heed::reference::linear(to_double(x.view().reshape(heed::Shape<2>{202, in})),
                                                      to_double(lin.weight()), to_double(lin.bias()));
        EXPECT_TRUE(heed::test::all_close(y.view().reshape(heed::Shape<2>{202, out}), expected, tol<T>()));
      }
}

TYPED_TEST(Linear16, ActivationsAndResidualsOnTheFloatRow) {
  using T = TypeParam;
  const Linear<T> lin({.in_features = 300, .out_features = 50, .seed = 4});
  const auto x = heed::cast<T>(heed::randn<float>({37, 300}, 5));
  const auto plain = heed::reference::linear(to_double(x), to_double(lin.weight()), to_double(lin.bias()));
  const std::pair<Activation, double (*)(double)> cases[] = {{Activation::relu, heed::reference::relu},
                                                             {Activation::gelu, heed::reference::gelu},
                                                             {Activation::gelu_tanh, heed::reference::gelu_tanh},
                                                             {Activation::silu, heed::reference::silu}};
  for (const auto& [activation, f] : cases) {
    Tensor<T, 2> y({37, 50});
    lin.rows(x, y.view(), activation);
    Tensor<double, 2> expected(plain);
    for (index_t i = 0; i < expected.numel(); ++i) expected.data()[i] = f(expected.data()[i]);
    EXPECT_TRUE(heed::test::all_close(y, expected, tol<T>())) << static_cast<int>(activation);
  }
  // out += x Wᵀ + b, and out = skip + x Wᵀ + b: the addend joins the float sum, one rounding
  const auto start = heed::cast<T>(heed::randn<float>({37, 50}, 6));
  Tensor<T, 2> acc(start);
  lin.rows_add(x, acc.view());
  Tensor<T, 2> fresh({37, 50});
  lin.rows_add(x, start.data(), fresh.view());
  Tensor<double, 2> expected(plain);
  for (index_t i = 0; i < expected.numel(); ++i) expected.data()[i] += static_cast<double>(start.data()[i]);
  EXPECT_TRUE(heed::test::all_close(acc, expected, tol<T>()));
  EXPECT_TRUE(heed::test::all_close(fresh, expected, tol<T>()));
}

// One row (a decoding step) takes its own path (the workers split W's panels, a single-row
// kernel): every width around a chunk of panels, depths over a k block, bias, activations,
// residual, on one worker and two, against the double reference of the rounded inputs.
TYPED_TEST(Linear16, OneRowAsManyRows) {
  using T = TypeParam;
  for (index_t in : {7, 200, 450})
    for (index_t out : {1, 33, 96, 130})
      for (int threads : {1, 2}) {
        SCOPED_TRACE(testing::Message() << "in " << in << " out " << out << " threads " << threads);
        heed::set_num_threads(threads);
        Linear<T> lin({.in_features = in, .out_features = out, .bias = out != 33, .seed = 8});
        const auto x = heed::cast<T>(heed::randn<float>({1, in}, static_cast<std::uint64_t>(in * out)));
        const auto plain = heed::reference::linear(to_double(x), to_double(lin.weight()), to_double(lin.bias()));
        EXPECT_TRUE(heed::test::all_close(lin(x), plain, tol<T>()));
        Tensor<T, 2> y({1, out});
        lin.rows(x, y.view(), Activation::silu);
        Tensor<double, 2> expected(plain);
        for (index_t i = 0; i < out; ++i) expected.data()[i] = heed::reference::silu(expected.data()[i]);
        EXPECT_TRUE(heed::test::all_close(y, expected, tol<T>()));
        const auto skip = heed::cast<T>(heed::randn<float>({1, out}, 9));
        Tensor<T, 2> sum({1, out});
        lin.rows_add(x, skip.data(), sum.view());
        expected = plain;
        for (index_t i = 0; i < out; ++i) expected.data()[i] += static_cast<double>(skip.data()[i]);
        EXPECT_TRUE(heed::test::all_close(sum, expected, tol<T>()));
      }
  heed::set_num_threads(0);
}

TYPED_TEST(Linear16, LoadsFloatAndSixteenBitWeights) {
  using T = TypeParam;
  const auto w = heed::randn<float>({3, 5}, 1);
  const auto b = heed::randn<float>({3}, 2);
  // float parameters are rounded to T as they load (as torch's .to(dtype))
  heed::nn::TensorDict d;
  d.set("fc.weight", w).set("fc.bias", b);
  Linear<T> lin({.in_features = 5, .out_features = 3});
  lin.load(d, "fc.", {.strict = true});
  EXPECT_TRUE(heed::test::all_close(lin.weight(), heed::cast<T>(w), {0, 0}));
  EXPECT_TRUE(heed::test::all_close(lin.bias(), heed::cast<T>(b), {0, 0}));
  // T parameters load as they are
  heed::nn::TensorDict d16;
  d16.set("weight", heed::cast<T>(w)).set("bias", heed::cast<T>(b));
  Linear<T> lin16({.in_features = 5, .out_features = 3});
  lin16.load(d16);
  const auto x = heed::cast<T>(heed::randn<float>({4, 5}, 3));
  EXPECT_TRUE(heed::test::all_close(lin16(x), lin(x), {0, 0}));
  EXPECT_THROW((void)lin(heed::cast<T>(heed::randn<float>({4, 6}, 4))), heed::ShapeError);
}

}  // namespace
