// heed::cast and the 16-bit element types: widening is exact, narrowing rounds to nearest with
// ties to even (PyTorch's .to(torch.bfloat16) / .to(torch.float16)), infinities and NaN survive,
// half overflows to infinity past 65504; tensors of 16-bit elements are ordinary tensors.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "heed/core/cast.hpp"
#include "heed/core/random.hpp"

namespace {

using heed::bfloat16;
using heed::half;
using heed::index_t;
using heed::Tensor;

std::uint16_t bits(bfloat16 x) {
  return std::bit_cast<std::uint16_t>(x);
}
std::uint16_t bits(half x) {
  return std::bit_cast<std::uint16_t>(x);
}

TEST(Cast, NarrowingRoundsToNearestEven) {
  Tensor<float, 1> x({6});
  x(0) = 1.0f + 0x1p-8f;             // halfway between bfloat16 1 and 1 + 2^-7: ties to even, 1
  x(1) = 1.0f + 3 * 0x1p-8f;         // halfway between 1 + 2^-7 and 1 + 2^-6: to 1 + 2^-6
  x(2) = 1.0f + 0x1p-8f + 0x1p-20f;  // just above halfway: up
  x(3) = -2.5f;
  x(4) = std::numeric_limits<float>::infinity();
  x(5) = std::numeric_limits<float>::quiet_NaN();
  const auto b = heed::cast<bfloat16>(x);
  EXPECT_EQ(float(b(0)), 1.0f);
  EXPECT_EQ(float(b(1)), 1.0f + 0x1p-6f);
  EXPECT_EQ(float(b(2)), 1.0f + 0x1p-7f);
  EXPECT_EQ(float(b(3)), -2.5f);
  EXPECT_TRUE(std::isinf(float(b(4))));
  EXPECT_TRUE(std::isnan(float(b(5))));
  EXPECT_EQ(bits(b(3)), 0xC020);

  x(0) = 1.0f + 0x1p-11f;  // half: ties to even, 1
  x(1) = 65504.0f;         // the largest half
  x(2) = 70000.0f;         // past it: infinity
  x(3) = 0x1p-24f;         // the smallest subnormal half
  const auto h = heed::cast<half>(x);
  EXPECT_EQ(float(h(0)), 1.0f);
  EXPECT_EQ(float(h(1)), 65504.0f);
  EXPECT_TRUE(std::isinf(float(h(2))));
  EXPECT_EQ(float(h(3)), 0x1p-24f);
  EXPECT_EQ(bits(h(1)), 0x7BFF);
}

TEST(Cast, WideningIsExactAndStridedViewsWork) {
  const auto x = heed::randn<float>({3, 5}, 1);
  const auto b = heed::cast<bfloat16>(x);
  const auto back = heed::cast<double>(b);
  for (index_t i = 0; i < 3; ++i)
    for (index_t j = 0; j < 5; ++j) {
      EXPECT_EQ(back(i, j), double(float(b(i, j))));
      EXPECT_LE(std::abs(back(i, j) - double(x(i, j))), std::abs(double(x(i, j))) * 0x1p-8);  // one rounding
    }
  const auto t = heed::cast<half>(x.view().transpose(0, 1));  // [5, 3], from a strided view
  EXPECT_EQ(t.shape(), (heed::Shape<2>{5, 3}));
  EXPECT_EQ(float(t(4, 2)), float(half(x(2, 4))));
  const auto i32 = heed::cast<std::int32_t>(heed::full<float>({2}, 2.75f));  // ordinary types: static_cast
  EXPECT_EQ(i32(0), 2);
}

TEST(Cast, SixteenBitTensorsAreZeroFilledAndCopy) {
  Tensor<bfloat16, 2> z({2, 3});
  for (index_t i = 0; i < z.numel(); ++i) EXPECT_EQ(float(z.data()[i]), 0.0f);
  const auto r = heed::randn<half>({4, 4}, 3);  // drawn in double, rounded
  Tensor<half, 2> copy(r);
  EXPECT_EQ(bits(copy(3, 3)), bits(r(3, 3)));
  static_assert(heed::is_scalar_v<bfloat16> && heed::is_floating_v<half> && !heed::is_floating_v<int>);
  static_assert(std::is_same_v<heed::accumulator_t<bfloat16>, float> &&
                std::is_same_v<heed::accumulator_t<double>, double>);
}

}  // namespace
