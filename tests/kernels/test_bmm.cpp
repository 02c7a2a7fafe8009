// heed::bmm and heed::baddbmm against the double reference (tests/reference/bmm.hpp): shapes that
// take every GEMM path (one row, partial tiles, k over a KC block, products split over the batch
// and each product split over the workers), strided views of a and b (b = Kᵀ), every broadcast of
// input, beta 0 with NaN in input, 16-bit results rounded once, empty shapes, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "heed/core/cast.hpp"
#include "heed/core/random.hpp"
#include "heed/kernels/bmm.hpp"
#include "reference/bmm.hpp"
#include "reference/softmax.hpp"
#include "support/compare.hpp"
#include "support/golden.hpp"

namespace {

using heed::index_t;
using heed::Shape;
using heed::Tensor;
using heed::reference::to_double;

// input [.., ..] of rank R expanded to [B, n, p] by PyTorch's rule (trailing dimensions aligned,
// dimensions of 1 stretched), by index arithmetic of the test's own.
template <std::size_t R>
Tensor<double, 3> expanded(const Tensor<double, R>& input, const Shape<3>& to) {
  Tensor<double, 3> out(to);
  for (index_t i = 0; i < to[0]; ++i)
    for (index_t r = 0; r < to[1]; ++r)
      for (index_t c = 0; c < to[2]; ++c) {
        const index_t at[3] = {i, r, c};
        index_t flat = 0;
        for (std::size_t e = 0; e < R; ++e) {
          const index_t index = input.size(e) == 1 ? 0 : at[3 - R + e];
          flat = flat * input.size(e) + index;
        }
        out(i, r, c) = input.data()[flat];
      }
  return out;
}

template <class T>
heed::test::Tolerance tolerance(index_t m) {
  if constexpr (std::is_same_v<T, double>) return {1e-12, 1e-12};
  if constexpr (std::is_same_v<T, float>) return {1e-5, 1e-6 * static_cast<double>(m)};
  // 16-bit: the inputs are exact, the product is summed in float and rounded once (u)
  const double u = std::is_same_v<T, heed::bfloat16> ? 0x1p-8 : 0x1p-11;
  return {u, u};
}

template <class T>
void check_bmm(index_t B, index_t n, index_t m, index_t p, int threads) {
  SCOPED_TRACE(testing::Message() << "B " << B << " n " << n << " m " << m << " p " << p << " threads " << threads);
  const auto a = heed::cast<T>(heed::randn<float>({B, n, m}, 1));
  const auto b = heed::cast<T>(heed::randn<float>({B, m, p}, 2));
  const auto expected = heed::reference::baddbmm({}, to_double(a), to_double(b), 0.0, 1.0);
  EXPECT_TRUE(heed::test::all_close(heed::bmm(a, b, threads), expected, tolerance<T>(m)));
}

TEST(Bmm, EveryPathFloat) {
  for (const int threads : {1, 2}) {
    check_bmm<float>(3, 1, 300, 70, threads);    // one row: the GEMV path
    check_bmm<float>(3, 13, 7, 33, threads);     // partial tiles
    check_bmm<float>(5, 40, 300, 17, threads);   // k over a KC block
    check_bmm<float>(1, 200, 64, 200, threads);  // one product over the workers
    check_bmm<float>(8, 9, 16, 9, threads);      // small products spread over the batch
  }
  check_bmm<double>(3, 13, 70, 33, 2);
}

TEST(Bmm, SixteenBitRoundedOnce) {
  for (const int threads : {1, 2}) {
    check_bmm<heed::bfloat16>(3, 13, 70, 33, threads);
    check_bmm<heed::half>(3, 13, 70, 33, threads);
    check_bmm<heed::bfloat16>(2, 1, 100, 40, threads);
  }
}

// Q · Kᵀ with K [B, L, d]: b is a transposed view (no copy); a is a view whose rows are strided
// (a slice of a wider tensor), and one whose last dimension is strided (copied first).
TEST(Bmm, StridedViews) {
  const index_t B = 3, Lq = 11, L = 19, d = 24;
  const auto wide = heed::randn<float>({B, Lq, d + 5}, 3);
  const auto k = heed::randn<float>({B, L, d}, 4);
  const auto q = wide.view().narrow(2, 0, d);
  const auto kt = k.view().transpose(1, 2);
  const auto expected = heed::reference::baddbmm({}, to_double(q), to_double(kt), 0.0, 1.0);
  EXPECT_TRUE(heed::test::all_close(heed::bmm(q, kt), expected, tolerance<float>(d)));
  const auto qt = heed::randn<float>({B, d, Lq}, 5);  // a = qtᵀ: its last dimension is strided
  const auto expected_t =
      heed::reference::baddbmm({}, to_double(qt.view().transpose(1, 2)), to_double(k.view().transpose(1, 2)), 0.0, 1.0);
  EXPECT_TRUE(heed::test::all_close(heed::bmm(qt.view().transpose(1, 2), kt), expected_t, tolerance<float>(d)));
}

template <class T, std::size_t R>
void check_baddbmm(const Shape<R>& input_shape, double beta, double alpha, int threads) {
  SCOPED_TRACE(testing::Message() << "input " << heed::to_string(input_shape) << " beta " << beta << " alpha " << alpha
                                  << " threads " << threads);
  const index_t B = 4, n = 7, m = 50, p = 21;
  const auto input = heed::cast<T>(heed::randn<float>(input_shape, 6));
  const auto a = heed::cast<T>(heed::randn<float>({B, n, m}, 7));
  const auto b = heed::cast<T>(heed::randn<float>({B, m, p}, 8));
  const auto expected =
      heed::reference::baddbmm(expanded(to_double(input), {B, n, p}), to_double(a), to_double(b), beta, alpha);
  const auto out = heed::baddbmm(input, a, b, {.beta = beta, .alpha = alpha, .threads = threads});
  EXPECT_TRUE(heed::test::all_close(out, expected, tolerance<T>(m)));
}

TEST(Baddbmm, EveryBroadcastOfInput) {
  for (const int threads : {1, 2}) {
    check_baddbmm<float, 3>({4, 7, 21}, 1.0, 1.0, threads);
    check_baddbmm<float, 3>({4, 7, 21}, 0.5, -2.0, threads);
    check_baddbmm<float, 2>({7, 21}, -1.5, 0.25, threads);
    check_baddbmm<float, 1>({21}, 2.0, 1.0, threads);
    check_baddbmm<float, 3>({1, 1, 21}, 1.0, 3.0, threads);
    check_baddbmm<float, 3>({4, 1, 21}, 1.0, 1.0, threads);
    check_baddbmm<float, 3>({4, 7, 1}, 0.75, 1.0, threads);
    check_baddbmm<float, 1>({1}, 1.0, 1.0, threads);
  }
  check_baddbmm<double, 2>({7, 21}, 0.5, 2.0, 2);
  check_baddbmm<heed::bfloat16, 3>({4, 7, 21}, 0.5, -2.0, 2);
  check_baddbmm<heed::half, 1>({21}, 1.0, 0.5, 1);
}

TEST(Baddbmm, BetaZeroDoesNotReadInput) {
  Tensor<float, 3> input({2, 3, 4});
  std::fill_n(input.data(), input.numel(), std::numeric_limits<float>::quiet_NaN());
  const auto a = heed::randn<float>({2, 3, 5}, 9);
  const auto b = heed::randn<float>({2, 5, 4}, 10);
  const auto out = heed::baddbmm(input, a, b, {.beta = 0.0, .alpha = 2.0});
  const auto expected = heed::reference::baddbmm({}, to_double(a), to_double(b), 0.0, 2.0);
  EXPECT_TRUE(heed::test::all_close(out, expected, tolerance<float>(5)));
}

// PyTorch 1.13's torch.bmm and torch.baddbmm (tests/golden/generate.py, fixture "bmm").
TEST(Baddbmm, MatchesPyTorch) {
  const auto fx = heed::test::golden("bmm");
  const auto a = fx.get<float, 3>("a"), b = fx.get<float, 3>("b");
  const heed::test::Tolerance tol{1e-5, 1e-5};
  EXPECT_TRUE(heed::test::all_close(heed::bmm(a, b), fx.get<float, 3>("bmm"), tol));
  EXPECT_TRUE(
      heed::test::all_close(heed::baddbmm(fx.get<float, 3>("full"), a, b), fx.get<float, 3>("baddbmm_full"), tol));
  EXPECT_TRUE(heed::test::all_close(heed::baddbmm(fx.get<float, 1>("row"), a, b, {.beta = 0.5, .alpha = -2.0}),
                                    fx.get<float, 3>("baddbmm_row"), tol));
  EXPECT_TRUE(heed::test::all_close(heed::baddbmm(fx.get<float, 2>("plane"), a, b, {.beta = -1.5, .alpha = 0.25}),
                                    fx.get<float, 3>("baddbmm_plane"), tol));
  EXPECT_TRUE(heed::test::all_close(heed::baddbmm(fx.get<float, 3>("column"), a, b, {.beta = 0.75}),
                                    fx.get<float, 3>("baddbmm_column"), tol));
  Tensor<float, 3> nan({4, 7, 21});
  std::fill_n(nan.data(), nan.numel(), std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(heed::test::all_close(heed::baddbmm(nan, a, b, {.beta = 0.0, .alpha = 2.0}),
                                    fx.get<float, 3>("baddbmm_nan_beta0"), tol));
  // bfloat16: heed rounds the float result once, so it is within half a unit in the last place
  // (2^-8 relative, at most) of PyTorch's float result on the same rounded inputs. PyTorch 1.13's
  // own bfloat16 result rounds as it sums (up to 0.5 off at 19 here): heed's is never farther from
  // the float result than it.
  const auto out16 = heed::baddbmm(fx.get<heed::bfloat16, 3>("full_bf16"), fx.get<heed::bfloat16, 3>("a_bf16"),
                                   fx.get<heed::bfloat16, 3>("b_bf16"), {.beta = 0.5, .alpha = -2.0});
  const auto exact = fx.get<float, 3>("baddbmm_bf16_in_float");
  const auto torch16 = fx.get<heed::bfloat16, 3>("baddbmm_bf16");
  for (index_t i = 0; i < exact.numel(); ++i) {
    const double want = exact.data()[i], ours = static_cast<float>(out16.data()[i]);
    const double theirs = static_cast<float>(torch16.data()[i]);
    EXPECT_LE(std::abs(ours - want), std::abs(want) * 0x1p-8 + 1e-5) << i;
    EXPECT_LE(std::abs(ours - want), std::abs(theirs - want) + std::abs(want) * 0x1p-9 + 1e-5) << i;
  }
}

TEST(Bmm, EmptyShapes) {
  EXPECT_EQ(heed::bmm(Tensor<float, 3>({0, 3, 4}), Tensor<float, 3>({0, 4, 5})).shape(), (Shape<3>{0, 3, 5}));
  EXPECT_EQ(heed::bmm(Tensor<float, 3>({2, 0, 4}), Tensor<float, 3>({2, 4, 5})).shape(), (Shape<3>{2, 0, 5}));
  // an inner dimension of 0: the product is 0, so out = beta · input
  const auto input = heed::randn<float>({2, 3, 5}, 11);
  const auto out = heed::baddbmm(input, Tensor<float, 3>({2, 3, 0}), Tensor<float, 3>({2, 0, 5}), {.beta = 0.5});
  for (index_t i = 0; i < out.numel(); ++i) EXPECT_EQ(out.data()[i], 0.5f * input.data()[i]) << i;
  const auto zero = heed::bmm(Tensor<float, 3>({2, 3, 0}), Tensor<float, 3>({2, 0, 5}), 2);
  for (index_t i = 0; i < zero.numel(); ++i) EXPECT_EQ(zero.data()[i], 0.0f) << i;
}

TEST(Bmm, BadShapesAreShapeErrors) {
  const auto expect_error = [](const auto& call, const std::string& text) {
    try {
      call();
      ADD_FAILURE() << "no ShapeError";
    } catch (const heed::ShapeError& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  const Tensor<float, 3> a({2, 3, 4}), b({2, 5, 6}), b3({3, 4, 6}), good({2, 4, 6});
  expect_error([&] { (void)heed::bmm(a, b); },
               "heed::bmm: a [B, n, m] and b [B, m, p] expected, got a [2, 3, 4] and b [2, 5, 6]");
  expect_error([&] { (void)heed::bmm(a, b3); }, "got a [2, 3, 4] and b [3, 4, 6]");
  expect_error(
      [&] {
        (void)heed::baddbmm(Tensor<float, 2>({4, 6}), a, good);
      },
      "heed::baddbmm: input [4, 6] does not broadcast to the product's shape [2, 3, 6]");
  expect_error([&] { (void)heed::baddbmm(Tensor<float, 3>({3, 3, 6}), a, good); }, "input [3, 3, 6]");
  expect_error([&] { (void)heed::baddbmm(Tensor<float, 1>({6}), a, b); }, "heed::baddbmm: a [B, n, m]");
}

}  // namespace
