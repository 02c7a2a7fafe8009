// simd::load_widened against Eigen's scalar conversions, for every bfloat16 and half bit
// pattern (the AVX2 shift for bfloat16, F16C for half, AVX-512, and the generic loop, in the -march
// variants of this test), store_narrowed / narrow against heed::convert (round to nearest,
// ties to even) for every float whose rounding is in question, and dot_widened against a
// double loop.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "heed/core/cast.hpp"
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

// widen: whole vectors and a scalar tail, value for value.
TEST(Convert, WidenCopiesEveryValueExactly) {
  for (const index_t n : {index_t{0}, index_t{1}, index_t{17}, index_t{37}, index_t{100}}) {
    const auto b = heed::cast<heed::bfloat16>(heed::randn<float>({n + 1}, 3));
    const auto h = heed::cast<heed::half>(heed::randn<float>({n + 1}, 4));
    std::vector<float> wb(static_cast<std::size_t>(n + 1), -7.0f), wh(wb);
    simd::widen(b.data(), wb.data(), n);
    simd::widen(h.data(), wh.data(), n);
    for (index_t i = 0; i < n; ++i) {
      ASSERT_EQ(wb[static_cast<std::size_t>(i)], static_cast<float>(b(i))) << "bfloat16 " << i << " of " << n;
      ASSERT_EQ(wh[static_cast<std::size_t>(i)], static_cast<float>(h(i))) << "half " << i << " of " << n;
    }
    EXPECT_EQ(wb[static_cast<std::size_t>(n)], -7.0f);  // nothing past n
    EXPECT_EQ(wh[static_cast<std::size_t>(n)], -7.0f);
  }
}

// Floats around every finite 16-bit pattern: the pattern itself, random low bits, the tie
// between it and the next pattern and one float ulp either side of the tie; plus infinities,
// NaNs, zeros, the largest float, values that round to half's infinity and to its subnormals.
template <class T>
std::vector<float> narrowing_cases() {
  std::vector<float> cases;
  std::uint64_t state = 12345;
  for (std::uint32_t bits = 0; bits < 65536; ++bits) {
    const float exact = static_cast<float>(std::bit_cast<T>(static_cast<std::uint16_t>(bits)));
    const float next = static_cast<float>(std::bit_cast<T>(static_cast<std::uint16_t>(bits + 1)));
    if (!std::isfinite(exact)) continue;
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const std::uint32_t b = std::bit_cast<std::uint32_t>(exact);
    cases.push_back(exact);
    cases.push_back(std::bit_cast<float>(b ^ static_cast<std::uint32_t>(state >> 51)));  // random low bits
    if (std::isfinite(next) && (bits & 0x7FFF) != 0x7FFF) {
      const float tie = static_cast<float>((double(exact) + double(next)) / 2);  // exact in float
      const std::uint32_t t = std::bit_cast<std::uint32_t>(tie);
      for (std::uint32_t v : {t, t - 1, t + 1}) cases.push_back(std::bit_cast<float>(v));
    }
  }
  for (float v :
       {INFINITY, -INFINITY, NAN, -NAN, 0.0f, -0.0f, 3.4028235e38f, -3.4028235e38f, 65504.0f, 65520.0f, 1e-8f, -6e-8f})
    cases.push_back(v);
  return cases;
}

template <class T>
void expect_narrowing_rounds_like_convert() {
  const std::vector<float> cases = narrowing_cases<T>();
  std::vector<T> got(cases.size());
  simd::narrow(cases.data(), got.data(), static_cast<index_t>(cases.size()));
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const T want = heed::convert<T>(cases[i]);
    if (std::isnan(cases[i])) {
      ASSERT_TRUE(std::isnan(static_cast<float>(got[i]))) << "case " << i;
    } else {
      ASSERT_EQ(std::bit_cast<std::uint16_t>(got[i]), std::bit_cast<std::uint16_t>(want))
          << "case " << i << ": " << cases[i] << " (bits " << std::hex << std::bit_cast<std::uint32_t>(cases[i]) << ")";
    }
  }
}

TEST(Convert, Bfloat16NarrowingRoundsLikeConvert) {
  expect_narrowing_rounds_like_convert<heed::bfloat16>();
}
TEST(Convert, HalfNarrowingRoundsLikeConvert) {
  expect_narrowing_rounds_like_convert<heed::half>();
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
