// simd::load_widened against Eigen's scalar conversions, for every bfloat16 and half bit
// pattern (the AVX2 shift for bfloat16, F16C for half, and the generic loop, in the -march
// variants of this test), and dot_widened against a double loop.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "heed/core/random.hpp"
#include "heed/simd/convert.hpp"
#include "heed/simd/vector_ops.hpp"

namespace {

using heed::index_t;
namespace simd = heed::simd;

template <class T>
void expect_every_pattern_widens_exactly() {
  constexpr std::size_t W = simd::width<float>;
  std::vector<T> values(65536 + W);
  for (std::uint32_t bits = 0; bits < 65536; ++bits) values[bits] = std::bit_cast<T>(static_cast<std::uint16_t>(bits));
  for (std::size_t i = 0; i + W <= 65536; i += W) {
    alignas(64) float got[W];
    simd::store(got, simd::load_widened(values.data() + i));
    for (std::size_t j = 0; j < W; ++j) {
      const float want = static_cast<float>(values[i + j]);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(got[j])) << "pattern " << i + j;
      } else {
        ASSERT_EQ(std::bit_cast<std::uint32_t>(got[j]), std::bit_cast<std::uint32_t>(want)) << "pattern " << i + j;
      }
    }
  }
}

TEST(Convert, EveryBfloat16PatternWidensExactly) {
  expect_every_pattern_widens_exactly<heed::bfloat16>();
}
TEST(Convert, EveryHalfPatternWidensExactly) {
  expect_every_pattern_widens_exactly<heed::half>();
}

TEST(Convert, DotWidenedEqualsTheDoubleSumWithinFloatRounding) {
  for (index_t n : {1, 7, 8, 31, 64, 257}) {
    const auto xf = heed::randn<float>({n}, 1), yf = heed::randn<float>({n}, 2);
    std::vector<heed::bfloat16> xb(static_cast<std::size_t>(n)), yb(xb.size());
    std::vector<heed::half> xh(xb.size()), yh(xb.size());
    double want_b = 0, want_h = 0;
    for (index_t i = 0; i < n; ++i) {
      const auto k = static_cast<std::size_t>(i);
      xb[k] = heed::bfloat16(xf(i));
      yb[k] = heed::bfloat16(yf(i));
      xh[k] = heed::half(xf(i));
      yh[k] = heed::half(yf(i));
      want_b += double(float(xb[k])) * double(float(yb[k]));
      want_h += double(float(xh[k])) * double(float(yh[k]));
    }
    // products of 16-bit values are exact in float; only the float sum rounds
    EXPECT_NEAR(simd::dot_widened(xb.data(), yb.data(), n), want_b, 1e-6 * double(n)) << n;
    EXPECT_NEAR(simd::dot_widened(xh.data(), yh.data(), n), want_h, 1e-6 * double(n)) << n;
  }
}

}  // namespace
