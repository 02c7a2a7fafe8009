// The activations of the feed-forward blocks against their double definitions
// (tests/reference/nn.hpp), over a range that crosses 0 and reaches the tails, at lengths that
// leave a scalar tail after the SIMD batches; and the names PyTorch spells them with.
#include <gtest/gtest.h>

#include <vector>

#include "heed/nn/activation.hpp"
#include "reference/nn.hpp"

namespace {

using heed::index_t;
using heed::nn::Activation;

template <class T>
void expect_matches(Activation a, double (*definition)(double), double tolerance) {
  for (index_t n : {1, 7, 16, 101}) {
    std::vector<T> x(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i)
      x[static_cast<std::size_t>(i)] = static_cast<T>(-8.0 + 16.0 * double(i) / double(n));
    const std::vector<T> input = x;
    heed::nn::apply_activation(a, x.data(), n);
    for (index_t i = 0; i < n; ++i) {
      const double expected = definition(static_cast<double>(input[static_cast<std::size_t>(i)]));
      EXPECT_NEAR(static_cast<double>(x[static_cast<std::size_t>(i)]), expected, tolerance * (1 + std::abs(expected)))
          << "activation " << static_cast<int>(a)
          << " at x = " << static_cast<double>(input[static_cast<std::size_t>(i)]);
    }
  }
}

TEST(Activation, MatchesTheDefinitionsInFloatAndDouble) {
  expect_matches<float>(Activation::relu, heed::reference::relu, 0);
  expect_matches<float>(Activation::gelu, heed::reference::gelu, 2e-6);
  expect_matches<float>(Activation::gelu_tanh, heed::reference::gelu_tanh, 2e-6);
  expect_matches<float>(Activation::silu, heed::reference::silu, 2e-6);
  expect_matches<double>(Activation::silu, heed::reference::silu, 1e-13);
  expect_matches<double>(Activation::relu, heed::reference::relu, 0);
  expect_matches<double>(Activation::gelu, heed::reference::gelu, 1e-13);
  expect_matches<double>(Activation::gelu_tanh, heed::reference::gelu_tanh, 1e-13);
}

TEST(Activation, NamesArePyTorchsAndUnknownOnesAreFormatErrors) {
  EXPECT_EQ(heed::nn::activation_from_name("relu"), Activation::relu);
  EXPECT_EQ(heed::nn::activation_from_name("gelu"), Activation::gelu);
  EXPECT_EQ(heed::nn::activation_from_name("gelu_tanh"), Activation::gelu_tanh);
  EXPECT_EQ(heed::nn::activation_from_name("silu"), Activation::silu);
  try {
    (void)heed::nn::activation_from_name("swish");
    FAIL();
  } catch (const heed::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown activation \"swish\""), std::string::npos) << e.what();
  }
}

}  // namespace
