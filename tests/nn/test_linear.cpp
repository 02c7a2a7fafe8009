// nn::Linear against the double reference (tests/reference/nn.hpp): odd feature counts that
// leave partial GEMM tiles, leading dimensions, strided inputs, with and without bias, the fused
// activations, the residual forms, loading and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "heed/core/random.hpp"
#include "heed/nn/linear.hpp"
#include "heed/simd/kernel_table.hpp"
#include "reference/nn.hpp"
#include "reference/softmax.hpp"
#include "support/compare.hpp"

namespace {

using heed::index_t;
using heed::Tensor;
using heed::nn::Activation;
using heed::nn::Linear;

template <class T>
constexpr heed::test::Tolerance tol() {
  if constexpr (sizeof(T) == 8)
    return {1e-11, 1e-12};
  else
    return {1e-4, 1e-5};
}

template <class T>
class LinearVsReference : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(LinearVsReference, Scalars);

TYPED_TEST(LinearVsReference, EveryShapeWithAndWithoutBias) {
  using T = TypeParam;
  for (index_t in : {1, 7, 64, 200})
    for (index_t out : {1, 5, 33, 96})
      for (bool bias : {true, false}) {
        SCOPED_TRACE(testing::Message() << "in " << in << " out " << out << " bias " << bias);
        Linear<T> lin({.in_features = in, .out_features = out, .bias = bias, .seed = 3});
        const auto x = heed::randn<T>({2, 13, in}, static_cast<std::uint64_t>(in + out));
        const auto y = lin(x);
        ASSERT_EQ(y.shape(), (heed::Shape<3>{2, 13, out}));
        const auto expected =
            heed::reference::linear(heed::reference::to_double(x.view().reshape(heed::Shape<2>{26, in})),
                                    heed::reference::to_double(lin.weight()), heed::reference::to_double(lin.bias()));
        EXPECT_TRUE(heed::test::all_close(y.view().reshape(heed::Shape<2>{26, out}), expected, tol<T>()));
      }
}

TYPED_TEST(LinearVsReference, StridedInputIsReadAsItsElements) {
  using T = TypeParam;
  const Linear<T> lin({.in_features = 9, .out_features = 4, .seed = 1});
  const auto xt = heed::randn<T>({9, 11}, 2);  // x = xtᵀ: [11, 9], strided
  const auto y = lin(xt.view().transpose(0, 1));
  const auto expected =
      heed::reference::linear(heed::reference::to_double(xt.view().transpose(0, 1)),
                              heed::reference::to_double(lin.weight()), heed::reference::to_double(lin.bias()));
  EXPECT_TRUE(heed::test::all_close(y, expected, tol<T>()));
}

TYPED_TEST(LinearVsReference, FusedActivationsAndResidualForms) {
  using T = TypeParam;
  const Linear<T> lin({.in_features = 70, .out_features = 50, .seed = 4});
  const auto x = heed::randn<T>({37, 70}, 5);
  const auto plain = heed::reference::linear(heed::reference::to_double(x), heed::reference::to_double(lin.weight()),
                                             heed::reference::to_double(lin.bias()));
  const std::pair<Activation, double (*)(double)> cases[] = {{Activation::relu, heed::reference::relu},
                                                             {Activation::gelu, heed::reference::gelu},
                                                             {Activation::gelu_tanh, heed::reference::gelu_tanh}};
  for (const auto& [activation, f] : cases) {
    Tensor<T, 2> y({37, 50});
    lin.rows(x, y.view(), activation);
    Tensor<double, 2> expected(plain);
    for (index_t i = 0; i < expected.numel(); ++i) expected.data()[i] = f(expected.data()[i]);
    EXPECT_TRUE(heed::test::all_close(y, expected, tol<T>())) << static_cast<int>(activation);
  }
  // out += x Wᵀ + b, and out = skip + x Wᵀ + b with skip untouched
  const auto start = heed::randn<T>({37, 50}, 6);
  Tensor<T, 2> acc(start);
  lin.rows_add(x, acc.view());
  Tensor<T, 2> fresh({37, 50});
  lin.rows_add(x, start.data(), fresh.view());
  Tensor<double, 2> expected(plain);
  for (index_t i = 0; i < expected.numel(); ++i) expected.data()[i] += static_cast<double>(start.data()[i]);
  EXPECT_TRUE(heed::test::all_close(acc, expected, tol<T>()));
  EXPECT_TRUE(heed::test::all_close(fresh, expected, tol<T>()));
}

TEST(Linear, LoadsTorchsNamesAndChecksShapes) {
  heed::nn::TensorDict d;
  const auto w = heed::randn<float>({3, 5}, 1);
  const auto b = heed::randn<float>({3}, 2);
  d.set("fc.weight", w).set("fc.bias", b);
  Linear<float> lin({.in_features = 5, .out_features = 3});
  lin.load(d, "fc.", {.strict = true});
  EXPECT_TRUE(heed::test::all_close(lin.weight(), w, {0, 0}));
  EXPECT_TRUE(heed::test::all_close(lin.bias(), b, {0, 0}));
  const auto x = heed::randn<float>({4, 5}, 3);
  const auto expected = heed::reference::linear(heed::reference::to_double(x), heed::reference::to_double(w),
                                                heed::reference::to_double(b));
  EXPECT_TRUE(heed::test::all_close(lin(x), expected, {1e-5, 1e-6}));  // the packed copy was rebuilt

  Linear<float> wide({.in_features = 6, .out_features = 3});
  EXPECT_THROW(wide.load(d, "fc."), heed::ShapeError);
  Linear<float> no_bias({.in_features = 5, .out_features = 3, .bias = false});
  EXPECT_THROW(no_bias.load(d, "fc.", {.strict = true}), heed::FormatError);  // fc.bias unused
  EXPECT_THROW(Linear<float>({.in_features = 0, .out_features = 3}), heed::ShapeError);
  try {
    (void)lin(heed::randn<float>({4, 6}, 4));
    FAIL();
  } catch (const heed::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("expects 5 input features, got x [4, 6]"), std::string::npos) << e.what();
  }
}

// set(weight, bias, packed) and use_packed read the panels they are given: two Linears on their
// rows of one stacked matrix give the bits of Linears that packed their own copies; a packed
// matrix of another shape, or with a bias where the Linear has none (or the reverse), is a
// ShapeError that changes nothing.
TEST(Linear, ReadsTheRowsOfAStackedPackedMatrix) {
  const index_t nr = heed::simd::gemm_kernels<float>().nr, in = 40, top = 2 * nr, bottom = nr + 7;
  const auto w = heed::randn<float>({top + bottom, in}, 8);
  const auto b = heed::randn<float>({top + bottom}, 9);
  const heed::PackedMatrix<float> stacked(w.data(), top + bottom, in, b.data());
  const auto rows_of = [](const Tensor<float, 2>& t, index_t first, index_t n) {
    return Tensor<float, 2>(t.view().slice(0, first, first + n));
  };
  const auto part_of = [](const Tensor<float, 1>& t, index_t first, index_t n) {
    return Tensor<float, 1>(t.view().slice(0, first, first + n));
  };
  Linear<float> shared_top({.in_features = in, .out_features = top});
  Linear<float> own_top({.in_features = in, .out_features = top});
  shared_top.set(rows_of(w, 0, top), part_of(b, 0, top), stacked.rows_view(0, top));
  own_top.set(rows_of(w, 0, top), part_of(b, 0, top));
  Linear<float> shared_bottom({.in_features = in, .out_features = bottom});
  Linear<float> own_bottom({.in_features = in, .out_features = bottom});
  own_bottom.set(rows_of(w, top, bottom), part_of(b, top, bottom));
  shared_bottom.set(rows_of(w, top, bottom), part_of(b, top, bottom));
  shared_bottom.use_packed(stacked.rows_view(top, bottom));
  const auto x = heed::randn<float>({23, in}, 10);
  EXPECT_TRUE(heed::test::all_close(shared_top(x), own_top(x), {0, 0}));
  EXPECT_TRUE(heed::test::all_close(shared_bottom(x), own_bottom(x), {0, 0}));
  const auto expected =
      heed::reference::linear(heed::reference::to_double(x), heed::reference::to_double(own_top.weight()),
                              heed::reference::to_double(own_top.bias()));
  EXPECT_TRUE(heed::test::all_close(shared_top(x), expected, tol<float>()));
  // what it multiplies by is the packed matrix's, whatever weight() holds
  const auto w2 = heed::randn<float>({top, in}, 13);
  const auto b2 = heed::randn<float>({top}, 14);
  Linear<float> other({.in_features = in, .out_features = top});
  other.set(rows_of(w, 0, top), part_of(b, 0, top));
  other.use_packed(heed::PackedMatrix<float>(w2.data(), top, in, b2.data()));
  EXPECT_TRUE(
      heed::test::all_close(other(x),
                            heed::reference::linear(heed::reference::to_double(x), heed::reference::to_double(w2),
                                                    heed::reference::to_double(b2)),
                            tol<float>()));

  const auto message = [](auto&& f) {
    try {
      f();
    } catch (const heed::ShapeError& e) {
      return std::string(e.what());
    }
    return std::string("no ShapeError");
  };
  const std::string wrong_rows = ": a packed [" + std::to_string(bottom) + ", 40] matrix for a Linear of 40 → " +
                                 std::to_string(top) + " features";
  EXPECT_EQ(message([&] { shared_top.use_packed(stacked.rows_view(top, bottom)); }),
            "heed::nn::Linear::use_packed" + wrong_rows);
  EXPECT_EQ(message([&] {
              shared_top.set(heed::randn<float>({top, in}, 11), heed::randn<float>({top}, 12),
                             stacked.rows_view(top, bottom));
            }),
            "heed::nn::Linear::set" + wrong_rows);
  EXPECT_TRUE(heed::test::all_close(shared_top.weight(), own_top.weight(), {0, 0}));  // unchanged
  EXPECT_TRUE(heed::test::all_close(shared_top(x), own_top(x), {0, 0}));
  const heed::PackedMatrix<float> no_bias(w.data(), top, in);
  EXPECT_EQ(message([&] { shared_top.use_packed(no_bias); }),
            "heed::nn::Linear::use_packed: the packed matrix has no bias, this Linear has one");
  Linear<float> biasless({.in_features = in, .out_features = top, .bias = false});
  EXPECT_EQ(message([&] { biasless.use_packed(stacked.rows_view(0, top)); }),
            "heed::nn::Linear::use_packed: the packed matrix has a bias, this Linear has none");
}

// Non-finite values follow IEEE arithmetic, as in PyTorch: a NaN in weight row o makes output
// feature o NaN for every input and leaves the others finite; an infinite input feature makes its
// row non-finite and leaves the other rows finite (docs/formats.md, "Non-finite values").
TEST(Linear, NonFiniteWeightsAndInputsPropagateOnlyWhereTheyEnter) {
  auto w = heed::randn<float>({33, 40}, 5);
  w(1, 17) = std::numeric_limits<float>::quiet_NaN();
  heed::nn::TensorDict d;
  d.set("weight", w).set("bias", heed::randn<float>({33}, 6));
  Linear<float> lin({.in_features = 40, .out_features = 33});
  lin.load(d);
  auto x = heed::randn<float>({70, 40}, 7);
  x(2, 9) = std::numeric_limits<float>::infinity();
  const auto y = lin(x);
  for (index_t i = 0; i < 70; ++i)
    for (index_t o = 0; o < 33; ++o) {
      if (o == 1)
        EXPECT_TRUE(std::isnan(y(i, o))) << i << "," << o;
      else if (i == 2)
        EXPECT_FALSE(std::isfinite(y(i, o))) << i << "," << o;
      else
        EXPECT_TRUE(std::isfinite(y(i, o))) << i << "," << o;
    }
}

}  // namespace
