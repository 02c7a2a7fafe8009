// heed::gemm_nt (C = A·Wᵀ with W packed) against a double-precision loop, over shapes that
// hit every edge: partial MR row tiles, partial NR column panels, k across KC blocks, strided
// A and C, accumulation, one and two threads; row blocks whose short tail joins the last block
// (200, 401 rows) and a tail long enough to be a block of its own (250).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "heed/core/random.hpp"
#include "heed/kernels/gemm.hpp"
#include "support/compare.hpp"

namespace {

using heed::index_t;

template <class T>
void check(index_t m, index_t n, index_t k, bool accumulate, int threads) {
  SCOPED_TRACE(testing::Message() << "m " << m << " n " << n << " k " << k << " accumulate " << accumulate
                                  << " threads " << threads);
  const index_t lda = k + 3, ldc = n + 5;  // strided rows
  const auto a = heed::randn<T>({m, lda}, 1);
  const auto w = heed::randn<T>({n, k}, 2);
  auto c = heed::randn<T>({m, ldc}, 3);
  heed::Tensor<double, 2> expected({m, ldc});
  for (index_t i = 0; i < m; ++i)
    for (index_t j = 0; j < ldc; ++j) {
      double sum = (accumulate || j >= n) ? static_cast<double>(c(i, j)) : 0.0;
      if (j < n)
        for (index_t kk = 0; kk < k; ++kk) sum += static_cast<double>(a(i, kk)) * static_cast<double>(w(j, kk));
      expected(i, j) = sum;
    }
  const heed::PackedMatrix<T> packed(w.data(), n, k);
  heed::gemm_nt(a.data(), lda, m, packed, c.data(), ldc, {.accumulate = accumulate, .threads = threads});
  heed::Tensor<T, 2> expected_t({m, ldc});
  for (index_t i = 0; i < expected.numel(); ++i) expected_t.data()[i] = static_cast<T>(expected.data()[i]);
  const double rtol = sizeof(T) == 4 ? 1e-4 : 1e-11;
  EXPECT_TRUE(heed::test::all_close(c, expected_t, {rtol, rtol * 10}));
}

TEST(Gemm, FloatEveryEdge) {
  for (const index_t m : {1, 5, 12, 13, 25, 200, 250, 401})
    for (const index_t n : {1, 31, 32, 33, 100})
      for (const index_t k : {1, 7, 256, 300}) check<float>(m, n, k, false, 1);
}

TEST(Gemm, AccumulatesAndRunsOnTwoThreads) {
  for (const bool accumulate : {false, true})
    for (const int threads : {1, 2}) {
      check<float>(401, 65, 600, accumulate, threads);
      check<double>(37, 20, 513, accumulate, threads);
    }
}

TEST(Gemm, BiasAndReluInTheLastBlockOnly) {
  const index_t m = 29, n = 45, k = 400;  // two k blocks, partial row and column tiles
  const auto a = heed::randn<float>({m, k}, 4);
  const auto w = heed::randn<float>({n, k}, 5);
  const auto bias = heed::randn<float>({n}, 6);
  const heed::PackedMatrix<float> packed(w.data(), n, k, bias.data());
  for (const bool accumulate : {false, true}) {
    auto c = heed::randn<float>({m, n}, 7);
    heed::Tensor<float, 2> expected({m, n});
    for (index_t i = 0; i < m; ++i)
      for (index_t j = 0; j < n; ++j) {
        double sum = (accumulate ? static_cast<double>(c(i, j)) : 0.0) + static_cast<double>(bias(j));
        for (index_t kk = 0; kk < k; ++kk) sum += static_cast<double>(a(i, kk)) * static_cast<double>(w(j, kk));
        expected(i, j) = static_cast<float>(std::max(sum, 0.0));
      }
    heed::gemm_nt(a.data(), k, m, packed, c.data(), n, {.accumulate = accumulate, .relu = true});
    EXPECT_TRUE(heed::test::all_close(c, expected, {1e-4, 1e-3})) << "accumulate " << accumulate;
  }
}

TEST(Gemm, DoubleAndEmptyDepth) {
  for (const index_t m : {1, 7, 13})
    for (const index_t n : {3, 16, 17}) check<double>(m, n, 70, true, 1);
  check<float>(9, 10, 0, false, 1);  // k = 0: C = 0
  check<float>(9, 10, 0, true, 1);   // k = 0, accumulate: C unchanged
}

TEST(Gemm, AddsAnotherMatrixWithoutTouchingIt) {
  // C = D + A·Wᵀ + bias, D with its own leading dimension: partial tiles, two k blocks, 1 and 2 threads
  const index_t m = 203, n = 45, k = 400, ldd = n + 7;
  const auto a = heed::randn<float>({m, k}, 8);
  const auto w = heed::randn<float>({n, k}, 9);
  const auto bias = heed::randn<float>({n}, 10);
  const auto d = heed::randn<float>({m, ldd}, 11);
  const heed::PackedMatrix<float> packed(w.data(), n, k, bias.data());
  heed::Tensor<float, 2> expected({m, n});
  for (index_t i = 0; i < m; ++i)
    for (index_t j = 0; j < n; ++j) {
      double sum = static_cast<double>(d(i, j)) + static_cast<double>(bias(j));
      for (index_t kk = 0; kk < k; ++kk) sum += static_cast<double>(a(i, kk)) * static_cast<double>(w(j, kk));
      expected(i, j) = static_cast<float>(sum);
    }
  for (const int threads : {1, 2})
    for (const bool accumulate : {false, true}) {  // the addend wins over accumulate
      auto c = heed::randn<float>({m, n}, 12);
      const heed::Tensor<float, 2> d_before(d);
      heed::gemm_nt(a.data(), k, m, packed, c.data(), n,
                    {.accumulate = accumulate, .addend = d.data(), .ld_addend = ldd, .threads = threads});
      EXPECT_TRUE(heed::test::all_close(c, expected, {1e-4, 1e-3})) << "threads " << threads;
      EXPECT_TRUE(std::equal(d.data(), d.data() + d.numel(), d_before.data()));
    }
}

// One row of A (a decoding step's GEMV) takes its own loop: W's panels shared among the workers,
// the single-row kernel. Every width, depth, worker count, bias/ReLU and addend.
TEST(Gemm, OneRowSplitsThePanelsAcrossWorkers) {
  for (const index_t n : {1, 33, 200, 1000})
    for (const index_t k : {1, 7, 400})
      for (const int threads : {1, 2, 3}) {
        check<float>(1, n, k, threads == 2, threads);
        check<double>(1, n, k, threads != 2, threads);
      }
  const index_t n = 150, k = 500;
  const auto a = heed::randn<float>({1, k}, 13);
  const auto w = heed::randn<float>({n, k}, 14);
  const auto bias = heed::randn<float>({n}, 15);
  const auto d = heed::randn<float>({1, n}, 16);
  const heed::PackedMatrix<float> packed(w.data(), n, k, bias.data());
  for (const bool relu : {false, true})
    for (const int threads : {1, 2}) {
      heed::Tensor<float, 2> expected({1, n});
      for (index_t j = 0; j < n; ++j) {
        double sum = static_cast<double>(d(0, j)) + static_cast<double>(bias(j));
        for (index_t kk = 0; kk < k; ++kk) sum += static_cast<double>(a(0, kk)) * static_cast<double>(w(j, kk));
        expected(0, j) = static_cast<float>(relu ? std::max(sum, 0.0) : sum);
      }
      auto c = heed::randn<float>({1, n}, 17);
      heed::gemm_nt(a.data(), k, 1, packed, c.data(), n,
                    {.addend = d.data(), .ld_addend = n, .relu = relu, .threads = threads});
      EXPECT_TRUE(heed::test::all_close(c, expected, {1e-4, 1e-3})) << "relu " << relu << ", threads " << threads;
    }
}

// bfloat16 A, W and C (float arithmetic; on a target with AVX-512 BF16, W packed in pairs and
// the products on vdpbf16ps): against the double product of the same bfloat16 values, C rounded
// once (u = 2^-8) plus float's sums. Odd depths (a pair padded with zero), several k blocks, one
// row (the row kernel), bias, ReLU, an addend and accumulation, one and two threads.
// rows_view(first, n) multiplies as those rows of W (and of the bias) packed on their own, to the
// bit, and keeps its panels when the matrix it came from is gone; float and bfloat16 (pairs where
// this CPU runs them).
template <class T>
void check_rows_view() {
  const index_t nr = heed::simd::gemm_kernels<T>().nr, k = 37, m = 29, n = 3 * nr + 5;
  const auto to_t = [](const heed::Tensor<float, 2>& x) {
    heed::Tensor<T, 2> y({x.size(0), x.size(1)});
    for (index_t i = 0; i < x.numel(); ++i) y.data()[i] = T(x.data()[i]);
    return y;
  };
  const auto w = to_t(heed::randn<float>({n, k}, 40));
  const auto bias = to_t(heed::randn<float>({1, n}, 41));
  const auto a = to_t(heed::randn<float>({m, k}, 42));
  for (const auto& [first, rows] : {std::pair<index_t, index_t>{0, nr}, {nr, nr + 3}, {2 * nr, nr + 5}, {3 * nr, 5}}) {
    SCOPED_TRACE(testing::Message() << "first " << first << " rows " << rows);
    heed::PackedMatrix<T> view;
    {
      const heed::PackedMatrix<T> all(w.data(), n, k, bias.data());
      view = all.rows_view(first, rows);
    }
    const heed::PackedMatrix<T> alone(w.data() + first * k, rows, k, bias.data() + first);
    ASSERT_EQ(view.rows(), rows);
    ASSERT_EQ(view.cols(), k);
    ASSERT_TRUE(view.has_bias());
    heed::Tensor<T, 2> got({m, rows}), want({m, rows});
    heed::gemm_nt(a.data(), k, m, view, got.data(), rows);
    heed::gemm_nt(a.data(), k, m, alone, want.data(), rows);
    for (index_t i = 0; i < got.numel(); ++i)
      ASSERT_EQ(static_cast<float>(got.data()[i]), static_cast<float>(want.data()[i])) << i;
  }
}

TEST(Gemm, RowsViewMultipliesAsTheRowsPackedAlone) {
  check_rows_view<float>();
  check_rows_view<heed::bfloat16>();
}

TEST(Gemm, Bfloat16OnEveryPath) {
  using heed::bfloat16;
  const auto to_bf16 = [](const heed::Tensor<float, 2>& x) {
    heed::Tensor<bfloat16, 2> y({x.size(0), x.size(1)});
    for (index_t i = 0; i < x.numel(); ++i) y.data()[i] = bfloat16(x.data()[i]);
    return y;
  };
  int seed = 20;
  for (const index_t m : {1, 13, 200})
    for (const index_t n : {1, 33, 64})
      for (const index_t k : {1, 7, 192, 401})
        for (const int mode : {0, 1, 2}) {  // 0: plain, 1: bias + ReLU + accumulate, 2: bias + addend
          SCOPED_TRACE(testing::Message() << "m " << m << " n " << n << " k " << k << " mode " << mode);
          const auto a = to_bf16(heed::randn<float>({m, k}, ++seed));
          const auto w = to_bf16(heed::randn<float>({n, k}, ++seed));
          const auto bias = heed::randn<float>({n}, ++seed);
          const auto d = to_bf16(heed::randn<float>({m, n}, ++seed));
          auto c = to_bf16(heed::randn<float>({m, n}, ++seed));
          heed::Tensor<bfloat16, 1> bias16({n});
          for (index_t j = 0; j < n; ++j) bias16(j) = bfloat16(bias(j));
          const heed::PackedMatrix<bfloat16> packed(w.data(), n, k, mode > 0 ? bias16.data() : nullptr);
          heed::Tensor<double, 2> want({m, n}), scale({m, n});
          for (index_t i = 0; i < m; ++i)
            for (index_t j = 0; j < n; ++j) {
              double sum = mode == 0 ? 0.0 : double(float(bias16(j)));
              double mag = std::abs(sum);
              if (mode == 1) sum += double(float(c(i, j))), mag += std::abs(double(float(c(i, j))));
              if (mode == 2) sum += double(float(d(i, j))), mag += std::abs(double(float(d(i, j))));
              for (index_t kk = 0; kk < k; ++kk) {
                const double prod = double(float(a(i, kk))) * double(float(w(j, kk)));
                sum += prod;
                mag += std::abs(prod);
              }
              want(i, j) = mode == 1 ? std::max(sum, 0.0) : sum;
              scale(i, j) = mag;
            }
          heed::GemmOptions<bfloat16> options{.threads = static_cast<int>(1 + (m + n + k) % 2)};
          if (mode == 1) options.accumulate = true, options.relu = true;
          if (mode == 2) options.addend = d.data(), options.ld_addend = n;
          heed::gemm_nt(a.data(), k, m, packed, c.data(), n, options);
          for (index_t i = 0; i < m; ++i)
            for (index_t j = 0; j < n; ++j) {
              const double got = double(float(c(i, j)));
              ASSERT_NEAR(got, want(i, j), 0x1p-8 * std::abs(want(i, j)) + 1e-6 * scale(i, j) + 1e-30) << i << "," << j;
            }
        }
}

}  // namespace

namespace {

// No rows, or no columns, or no depth, on two workers: nothing past C is touched, and a depth of
// 0 gives C = bias (the row-block split divided by the row-block count, 0 without rows).
TEST(Gemm, EmptyDimensionsOnTwoWorkers) {
  for (const index_t m : {0, 1, 300})
    for (const index_t n : {0, 70})
      for (const index_t k : {0, 200}) {
        SCOPED_TRACE(testing::Message() << "m " << m << " n " << n << " k " << k);
        const auto a = heed::randn<float>({m + 1, k + 1}, 7);
        const auto w = heed::randn<float>({n + 1, k + 1}, 8);
        const auto bias = heed::randn<float>({n + 1}, 9);
        std::vector<float> c(static_cast<std::size_t>(m * n + 1), -7.0f);
        const heed::PackedMatrix<float> packed(w.data(), n, k, bias.data());
        heed::gemm_nt(a.data(), k + 1, m, packed, c.data(), n, {.threads = 2});
        EXPECT_EQ(c.back(), -7.0f);  // the value past C
        if (k == 0) {
          for (index_t i = 0; i < m * n; ++i) EXPECT_EQ(c[static_cast<std::size_t>(i)], bias(i % n));
        }
      }
}

}  // namespace
