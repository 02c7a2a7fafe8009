// The simd primitives against plain loops in double precision, at lengths around the batch
// width (0, 1, 7, 15, 16, 17, 63, 64, 65, 1000), so every full-batch/tail split is exercised.
// This file is also built at -march=x86-64, x86-64-v3, x86-64-v4 and with HEED_SIMD_SCALAR.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <type_traits>
#include <vector>

#include "heed/core/random.hpp"
#include "heed/simd.hpp"

namespace {

using heed::index_t;
constexpr index_t lengths[] = {0, 1, 7, 15, 16, 17, 63, 64, 65, 1000};

template <class T>
class VectorOps : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(VectorOps, Scalars);

template <class T>
std::vector<T> data(index_t n, std::uint64_t seed, T scale = T(1)) {
  const auto t = heed::randn<T>(heed::Shape<1>{n}, seed);
  std::vector<T> v(t.data(), t.data() + n);
  for (auto& x : v) x *= scale;
  return v;
}

// Relative error allowed for sums of n products accumulated in T (reassociation).
template <class T>
double sum_tolerance(index_t n) {
  return 8.0 * static_cast<double>(std::numeric_limits<T>::epsilon()) * std::sqrt(static_cast<double>(n) + 1);
}

// Distance in units in the last place of T between a computed value and an exact one.
template <class T>
double ulps(T computed, double exact) {
  const T rounded = static_cast<T>(exact);
  if (computed == rounded) return 0;
  const T next = std::nextafter(rounded, std::numeric_limits<T>::infinity());
  const double ulp = static_cast<double>(next) - static_cast<double>(rounded);
  return std::abs(static_cast<double>(computed) - exact) / ulp;
}

TEST(Simd, ReportsItsArchitecture) {
  std::printf("heed::simd architecture: %s, float lanes %zu, double lanes %zu\n", heed::simd::arch_name,
              heed::simd::width<float>, heed::simd::width<double>);
#if defined(HEED_SIMD_SCALAR)
  EXPECT_FALSE(heed::simd::vectorized);
  EXPECT_EQ(heed::simd::width<float>, 1u);
#else
  EXPECT_TRUE(heed::simd::vectorized);
  EXPECT_GE(heed::simd::width<float>, 4u);
#endif
}

// The instruction-set tag follows the compile-time target, so that the arch overloads (the
// 16-bit conversions, the AVX-512 row sums) are the ones that run: not silently the generic ones.
TEST(Simd, TargetIsaFollowsTheCompiler) {
  using heed::simd::target_isa;
#if defined(HEED_SIMD_SCALAR)
  EXPECT_TRUE((std::is_same_v<target_isa, heed::simd::generic_isa>));
#elif defined(__aarch64__)
  EXPECT_TRUE((std::is_same_v<target_isa, heed::simd::neon_isa>));
  EXPECT_EQ(heed::simd::width<float>, 4u);
  EXPECT_EQ(heed::simd::width<double>, 2u);
#elif defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
#if defined(__AVX512BF16__)
  EXPECT_TRUE((std::is_same_v<target_isa, heed::simd::avx512_bf16_isa>));
  EXPECT_TRUE(heed::simd::bf16_pair_products);
#else
  EXPECT_TRUE((std::is_same_v<target_isa, heed::simd::avx512_isa>));
  EXPECT_FALSE(heed::simd::bf16_pair_products);
#endif
  EXPECT_EQ(heed::simd::width<float>, 16u);
#elif defined(__AVX2__) && defined(__FMA__)
  EXPECT_TRUE((std::is_same_v<target_isa, heed::simd::avx2_isa>));
  EXPECT_EQ(heed::simd::width<float>, 8u);
#else
  EXPECT_TRUE((std::is_same_v<target_isa, heed::simd::generic_isa>));
#endif
}

// The prefetch hints (the driver's LookAhead asks for every line of a region, from its start on):
// they never fault, not even on a null pointer, and change nothing they touch.
TEST(Simd, PrefetchHintsNeverFaultAndChangeNothing) {
  std::vector<float> x(100);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i) * 0.5f;
  const auto before = x;
  const char* bytes = reinterpret_cast<const char*>(x.data());
  for (std::size_t at = 0; at < x.size() * sizeof(float); at += 16) {
    heed::simd::prefetch(bytes + at);
    heed::simd::prefetch_l2(bytes + at);
    heed::simd::prefetch_for_write(const_cast<char*>(bytes) + at);
  }
  heed::simd::prefetch(nullptr);
  heed::simd::prefetch_l2(nullptr);
  heed::simd::prefetch_for_write(nullptr);
  EXPECT_EQ(x, before);
}

TYPED_TEST(VectorOps, DotAxpyScaleSum) {
  using T = TypeParam;
  for (index_t n : lengths) {
    const auto x = data<T>(n, 1), y = data<T>(n, 2);
    double dot = 0, sum = 0, abs_dot = 0, abs_sum = 0;
    for (index_t i = 0; i < n; ++i) {
      dot += double(x[i]) * double(y[i]);
      abs_dot += std::abs(double(x[i]) * double(y[i]));
      sum += double(x[i]);
      abs_sum += std::abs(double(x[i]));
    }
    EXPECT_NEAR(heed::simd::dot(x.data(), y.data(), n), dot, sum_tolerance<T>(n) * abs_dot) << "n=" << n;
    EXPECT_NEAR(heed::simd::sum(x.data(), n), sum, sum_tolerance<T>(n) * abs_sum) << "n=" << n;

    auto z = y;
    heed::simd::axpy(T(0.75), x.data(), z.data(), n);
    for (index_t i = 0; i < n; ++i)
      EXPECT_NEAR(z[i], 0.75 * x[i] + y[i], 4 * std::numeric_limits<T>::epsilon() * (std::abs(x[i]) + std::abs(y[i])))
          << i;

    auto s = x;
    heed::simd::scale(T(-3), s.data(), n);
    for (index_t i = 0; i < n; ++i) EXPECT_EQ(s[i], T(-3) * x[i]);
  }
}

// sum of a bfloat16 or half row: widened as it is read, summed in float.
TEST(VectorOps16, SumWidensSixteenBitRows) {
  for (index_t n : lengths) {
    const auto x = data<float>(n, 11, 3.0f);
    std::vector<heed::bfloat16> b(x.size());
    std::vector<heed::half> h(x.size());
    double want_b = 0, want_h = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      b[i] = heed::bfloat16(x[i]);
      h[i] = heed::half(x[i]);
      want_b += double(static_cast<float>(b[i]));
      want_h += double(static_cast<float>(h[i]));
    }
    double mass = 0;
    for (float v : x) mass += std::abs(double(v));
    const float got_b = heed::simd::sum(b.data(), n), got_h = heed::simd::sum(h.data(), n);
    EXPECT_NEAR(got_b, want_b, sum_tolerance<float>(n) * mass + 1e-30) << "n=" << n;
    EXPECT_NEAR(got_h, want_h, sum_tolerance<float>(n) * mass + 1e-30) << "n=" << n;
  }
}

TYPED_TEST(VectorOps, MaxFindsTheLargestIncludingInTheTail) {
  using T = TypeParam;
  EXPECT_EQ(heed::simd::max<T>(nullptr, 0), -std::numeric_limits<T>::infinity());
  for (index_t n : lengths) {
    if (n == 0) continue;
    for (index_t where : {index_t{0}, n / 2, n - 1}) {
      auto x = data<T>(n, 3);
      x[static_cast<std::size_t>(where)] = T(100);
      EXPECT_EQ(heed::simd::max(x.data(), n), T(100)) << "n=" << n << " at " << where;
    }
    std::vector<T> inf(static_cast<std::size_t>(n), -std::numeric_limits<T>::infinity());
    EXPECT_EQ(heed::simd::max(inf.data(), n), -std::numeric_limits<T>::infinity());
  }
}

// Measured with xsimd 8.1 at x86-64 (sse2), x86-64-v3 and x86-64-v4 over [-80, 80]: float exp
// ≤ 1.46 ulp, double exp ≤ 1.00 ulp (the scalar fallback, std::exp: 0.50). The assertion allows 2.
TYPED_TEST(VectorOps, ExpIsWithinTwoUlps) {
  using T = TypeParam;
  const index_t n = 20000;
  std::vector<T> x(static_cast<std::size_t>(n)), y(x.size());
  for (index_t i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = T(-80.0 + 160.0 * double(i) / double(n - 1));
  heed::simd::exp(x.data(), y.data(), n);
  double worst = 0;
  for (index_t i = 0; i < n; ++i) worst = std::max(worst, ulps(y[i], std::exp(double(x[i]))));
  std::printf("max exp error: %.2f ulp\n", worst);
  EXPECT_LE(worst, 2.0);
  for (index_t len : lengths) {
    auto v = data<T>(len, 4, T(10));
    std::vector<T> out(v.size());
    heed::simd::exp(v.data(), out.data(), len);
    for (index_t i = 0; i < len; ++i) EXPECT_LE(ulps(out[i], std::exp(double(v[i]))), 2.0);
  }
  const T special[] = {-std::numeric_limits<T>::infinity(), T(0), T(-1000), T(1000)};
  std::vector<T> sv(64, T(0));
  for (std::size_t i = 0; i < 4; ++i) sv[i * 16] = special[i];
  std::vector<T> so(64);
  heed::simd::exp(sv.data(), so.data(), 64);
  EXPECT_EQ(so[0], T(0));
  EXPECT_EQ(so[16], T(1));
  EXPECT_EQ(so[32], T(0));
  EXPECT_EQ(so[48], std::numeric_limits<T>::infinity());
}

// softmax_exp (a softmax's exp(score - max), AVX-512's vscalefps version or exp) over its
// domain x <= 0 down to -110: within 2 ulps of exp like exp itself from the floor
// (simd::softmax_floor, -64 for float) to 0, exactly 0 below the floor, so never subnormal, in
// the vector lanes and in the scalar version the loops' tails use; exp(-inf) = 0, exp(0) = 1 and
// a NaN stays a NaN. Measured for float: 1.21 ulp at x86-64-v4, where softmax_exp is heed's own,
// 1.34 with xsimd's exp (sse2, x86-64-v3).
TYPED_TEST(VectorOps, SoftmaxExpIsWithinTwoUlpsAboveTheFloorAndZeroBelow) {
  using T = TypeParam;
  using V = heed::simd::batch<T>;
  constexpr index_t W = static_cast<index_t>(heed::simd::width<T>);
  const T floor = heed::simd::softmax_floor<T>;
  const index_t n = 22000 / W * W;
  std::vector<T> x(static_cast<std::size_t>(n)), y(x.size());
  for (index_t i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = T(-110.0 * double(i) / double(n - 1));
  x[1] = floor;  // the floor itself and the float just below it
  x[2] = std::nextafter(floor, T(-1000));
  for (index_t i = 0; i < n; i += W)
    heed::simd::store(y.data() + i, heed::simd::softmax_exp(heed::simd::load(x.data() + i)));
  double worst = 0;
  for (index_t i = 0; i < n; ++i) {
    for (const T e : {y[i], heed::simd::softmax_exp(x[i])}) {  // the vector lanes, the scalar version
      if (x[i] >= floor) {
        worst = std::max(worst, ulps(e, std::exp(double(x[i]))));
        EXPECT_GE(e, std::numeric_limits<T>::min()) << "exp(" << x[i] << ")";
      } else {
        EXPECT_EQ(e, T(0)) << "exp(" << x[i] << ") below the floor";
      }
    }
  }
  std::printf("max softmax_exp error: %.2f ulp\n", worst);
  EXPECT_LE(worst, 2.0);
  std::vector<T> special(static_cast<std::size_t>(W), T(-1));
  special[0] = -std::numeric_limits<T>::infinity();
  if (W > 2) {
    special[1] = T(0);
    special[2] = std::numeric_limits<T>::quiet_NaN();
  }
  std::vector<T> out(special.size());
  heed::simd::store(out.data(), heed::simd::softmax_exp(V(heed::simd::load(special.data()))));
  EXPECT_EQ(out[0], T(0));
  if (W > 2) {
    EXPECT_EQ(out[1], T(1));
    EXPECT_TRUE(std::isnan(out[2]));
  }
  EXPECT_EQ(heed::simd::softmax_exp(-std::numeric_limits<T>::infinity()), T(0));
}

TYPED_TEST(VectorOps, ExpSumSubtractsTheShiftAndSums) {
  using T = TypeParam;
  for (index_t n : lengths) {
    auto x = data<T>(n, 5, T(4));
    std::vector<T> y(x.size());
    const T total = heed::simd::exp_sum(x.data(), T(2), y.data(), n);
    double expected = 0;
    for (index_t i = 0; i < n; ++i) {
      // exp of the argument as T rounds it: the kernel's subtraction is part of its contract
      const double e = std::exp(double(T(x[i] - T(2))));
      expected += e;
      EXPECT_LE(ulps(y[i], e), 2.0);
    }
    EXPECT_NEAR(total, expected, sum_tolerance<T>(n) * expected + 1e-30) << "n=" << n;
  }
}

TYPED_TEST(VectorOps, TanhSigmoidReluGelu) {
  using T = TypeParam;
  // 16 eps: erf-GELU for x << 0 cancels in 1 + erf(x/√2), as PyTorch's own formula does.
  const double tol = 16 * static_cast<double>(std::numeric_limits<T>::epsilon());
  for (index_t n : lengths) {
    const auto x = data<T>(n, 6, T(3));
    std::vector<T> th(x.size()), sg(x.size()), re(x.size()), ge(x.size()), gt(x.size());
    heed::simd::tanh(x.data(), th.data(), n);
    heed::simd::sigmoid(x.data(), sg.data(), n);
    heed::simd::relu(x.data(), re.data(), n);
    heed::simd::gelu(x.data(), ge.data(), n);
    heed::simd::gelu_tanh(x.data(), gt.data(), n);
    for (index_t i = 0; i < n; ++i) {
      const double v = x[i];
      EXPECT_NEAR(th[i], std::tanh(v), tol) << "tanh(" << v << ")";
      EXPECT_NEAR(sg[i], 1 / (1 + std::exp(-v)), tol) << "sigmoid(" << v << ")";
      EXPECT_EQ(re[i], v > 0 ? x[i] : T(0));
      EXPECT_NEAR(ge[i], 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))), tol * (1 + std::abs(v))) << "gelu(" << v << ")";
      const double inner = std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v);
      EXPECT_NEAR(gt[i], 0.5 * v * (1 + std::tanh(inner)), tol * (1 + std::abs(v))) << "gelu_tanh(" << v << ")";
    }
  }
}

TYPED_TEST(VectorOps, ElementwiseAndFusedOps) {
  using T = TypeParam;
  for (index_t n : lengths) {
    const auto x = data<T>(n, 7), y = data<T>(n, 8), v = data<T>(n, 9);
    auto sum = y, mx = y, prod = y, fused = y, scaled = y, s2 = y, m2 = y;
    heed::simd::add(x.data(), sum.data(), n);
    heed::simd::maximum(x.data(), mx.data(), n);
    heed::simd::multiply(x.data(), y.data(), prod.data(), n);
    heed::simd::multiply_scaled(T(1.5), x.data(), y.data(), fused.data(), n);
    heed::simd::scale_into(T(-2), x.data(), scaled.data(), n);
    heed::simd::scaled_sum_max(T(0.5), x.data(), s2.data(), m2.data(), n);
    auto filled = y;
    if (n > 1)  // data() + 1 of an empty vector would offset a null pointer
      heed::simd::fill(filled.data() + 1, n - 2, -std::numeric_limits<T>::infinity());
    double td = 0;
    for (index_t i = 0; i < n; ++i) {
      EXPECT_EQ(sum[i], y[i] + x[i]);
      EXPECT_EQ(mx[i], std::max(y[i], x[i]));
      EXPECT_EQ(prod[i], x[i] * y[i]);
      EXPECT_NEAR(fused[i], 1.5 * double(x[i]) * double(y[i]),
                  4 * std::numeric_limits<T>::epsilon() * std::abs(fused[i]));
      EXPECT_EQ(scaled[i], T(-2) * x[i]);
      EXPECT_EQ(s2[i], y[i] + T(0.5) * x[i]);
      EXPECT_EQ(m2[i], std::max(y[i], T(0.5) * x[i]));
      EXPECT_EQ(filled[i], i == 0 || i == n - 1 ? y[i] : -std::numeric_limits<T>::infinity()) << "fill, n = " << n;
      td += double(v[i]) * std::tanh(double(x[i]) + double(y[i]));
    }
    EXPECT_NEAR(heed::simd::tanh_dot(x.data(), y.data(), v.data(), n), td,
                sum_tolerance<T>(n) * (1 + std::abs(td)) * 4);
  }
}

// Lane i of reduce_add_rows is the sum of row i's lanes (the decode path's W-keys-at-a-time
// scores rest on it; xsimd 8.1's own AVX-512 version got it wrong).
TYPED_TEST(VectorOps, ReduceAddRowsSumsEachRow) {
  using T = TypeParam;
  constexpr index_t W = static_cast<index_t>(heed::simd::width<T>);
  const auto x = data<T>(W * W, 21);
  heed::simd::batch<T> rows[W];
  for (index_t r = 0; r < W; ++r) rows[r] = heed::simd::load(x.data() + r * W);
  alignas(64) T sums[W];
  heed::simd::store(sums, heed::simd::reduce_add_rows(rows));
  for (index_t r = 0; r < W; ++r) {
    double expected = 0;
    for (index_t c = 0; c < W; ++c) expected += double(x[static_cast<std::size_t>(r * W + c)]);
    EXPECT_NEAR(sums[r], expected, sum_tolerance<T>(W) * (1 + std::abs(expected))) << "row " << r;
  }
}

TYPED_TEST(VectorOps, LayerNormMatchesTwoPassDouble) {
  using T = TypeParam;
  for (index_t n : lengths) {
    if (n == 0) continue;
    auto x = data<T>(n, 10, T(3));
    for (auto& xi : x) xi += T(5);  // an offset: the variance must be taken about the mean
    const auto w = data<T>(n, 11), b = data<T>(n, 12);
    double mean = 0, var = 0;
    for (T xi : x) mean += double(xi);
    mean /= double(n);
    for (T xi : x) var += (double(xi) - mean) * (double(xi) - mean);
    const double eps = 1e-5, inv = 1 / std::sqrt(var / double(n) + eps);
    std::vector<T> y(x.size()), plain(x.size());
    heed::simd::layer_norm(x.data(), y.data(), w.data(), b.data(), T(eps), n);
    heed::simd::layer_norm(x.data(), plain.data(), static_cast<const T*>(nullptr), static_cast<const T*>(nullptr),
                           T(eps), n);
    const double tol = 64 * std::numeric_limits<T>::epsilon() * std::sqrt(double(n) + 1);
    for (index_t i = 0; i < n; ++i) {
      const double normed = (double(x[i]) - mean) * inv;
      EXPECT_NEAR(plain[i], normed, tol * (1 + std::abs(normed))) << "n=" << n << " i=" << i;
      EXPECT_NEAR(y[i], normed * double(w[i]) + double(b[i]), tol * (1 + std::abs(normed * w[i]) + std::abs(b[i])))
          << "n=" << n << " i=" << i;
    }
    heed::simd::layer_norm(x.data(), x.data(), w.data(), b.data(), T(eps), n);  // in place
    EXPECT_EQ(x, y) << "n=" << n;
  }
}

}  // namespace
