#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "heed/core/cast.hpp"
#include "heed/core/random.hpp"
#include "heed/kernels/softmax.hpp"
#include "heed/simd/kernel_table.hpp"
#include "reference/softmax.hpp"
#include "support/compare.hpp"
#include "support/golden.hpp"

namespace {

using heed::index_t;

TEST(SoftmaxGolden, MatchesTorchSoftmaxInFloatAndDouble) {
  const auto fx = heed::test::golden("softmax");
  const auto x32 = fx.get<float, 2>("x_f32");
  const auto x64 = fx.get<double, 2>("x_f64");
  const auto nan = heed::SoftmaxOptions{.masked_rows = heed::MaskedRows::nan};
  EXPECT_TRUE(heed::test::all_close(heed::softmax(x32, nan), fx.get<float, 2>("y_f32"), {1e-6, 1e-7}));
  EXPECT_TRUE(heed::test::all_close(heed::softmax(x64, nan), fx.get<double, 2>("y_f64"), {1e-13, 1e-15}));
  EXPECT_TRUE(
      heed::test::all_close(heed::softmax(fx.get<float, 2>("wide_x")), fx.get<float, 2>("wide_y"), {2e-6, 1e-8}));
}

TEST(SoftmaxGolden, FullyMaskedRowIsZeroByDefault) {
  const auto fx = heed::test::golden("softmax");
  const auto y = heed::softmax(fx.get<float, 2>("x_f32"));
  for (index_t j = 0; j < y.size(1); ++j) {
    EXPECT_EQ(y(4, j), 0.0f);
    EXPECT_TRUE(std::isnan(fx.get<float, 2>("y_f32")(4, j)));  // PyTorch 1.13's answer
  }
}

TEST(Softmax, MatchesTheDoubleReferenceAcrossLengths) {
  for (index_t n : {1, 7, 16, 65, 257}) {
    const auto x = heed::randn<float>({5, n}, static_cast<std::uint64_t>(n));
    const auto expected = heed::reference::softmax(x);
    EXPECT_TRUE(heed::test::all_close(heed::softmax(x), expected, {2e-6, 1e-8})) << "n=" << n;
  }
}

TEST(Softmax, RowsSumToOneAndWorkOnStridedViews) {
  const auto x = heed::randn<double>({4, 6, 9}, 1);
  const auto y = heed::softmax(x.view().transpose(1, 2));  // [4, 9, 6], strided input
  for (index_t b = 0; b < 4; ++b)
    for (index_t i = 0; i < 9; ++i) {
      double total = 0;
      for (index_t j = 0; j < 6; ++j) total += y(b, i, j);
      EXPECT_NEAR(total, 1.0, 1e-14);
    }
  const auto expected = heed::reference::softmax(x.view().transpose(1, 2));
  EXPECT_TRUE(heed::test::all_close(y, expected));
}

TEST(Softmax, MaskedSoftmaxIsSoftmaxOfTheMinusInfinityFill) {
  const auto x = heed::randn<double>({4, 9}, 3);
  heed::Tensor<bool, 2> keep({4, 9});
  heed::Tensor<double, 2> filled(x);
  for (index_t i = 0; i < 4; ++i)
    for (index_t j = 0; j < 9; ++j) {
      keep(i, j) = i != 3 && (i + j) % 3 != 0;  // row 3: nothing allowed
      if (!keep(i, j)) filled(i, j) = -INFINITY;
    }
  const auto y = heed::masked_softmax(x, keep);
  const auto expected = heed::reference::softmax(filled);  // NaN on row 3
  for (index_t j = 0; j < 9; ++j) {
    for (index_t i = 0; i < 3; ++i) EXPECT_NEAR(y(i, j), expected(i, j), 1e-15);
    EXPECT_EQ(y(3, j), 0.0);
    EXPECT_TRUE(std::isnan(expected(3, j)));
  }
  const auto y_nan = heed::masked_softmax(x, keep, {.masked_rows = heed::MaskedRows::nan});
  EXPECT_TRUE(std::isnan(y_nan(3, 0)));
  EXPECT_THROW((void)heed::masked_softmax(x, heed::Tensor<bool, 2>({4, 8})), heed::ShapeError);
}

TEST(Softmax, SixteenBitTensorsAreComputedInFloatAndRoundedOnce) {
  const auto x = heed::randn<float>({3, 37}, 5);
  const auto b = heed::cast<heed::bfloat16>(x);
  const auto y = heed::softmax(b);
  const auto expected = heed::reference::softmax(b);                       // the double softmax of the rounded inputs
  EXPECT_TRUE(heed::test::all_close(y, expected, {0x1p-8 + 1e-5, 1e-7}));  // one bfloat16 rounding
  heed::Tensor<bool, 2> keep({3, 37});
  for (heed::index_t j = 0; j < 37; j += 2) keep(1, j) = true;
  const auto m = heed::masked_softmax(heed::cast<heed::half>(x), keep);
  EXPECT_EQ(float(m(1, 1)), 0.0f);
  EXPECT_EQ(float(m(0, 0)), 0.0f);  // row 0: nothing kept, zeros by default
}

TEST(OnlineSoftmax, BlockwiseEqualsWholeRow) {
  const auto x = heed::randn<double>({1, 100}, 9);
  const auto whole = heed::reference::softmax(x);
  heed::detail::OnlineSoftmax<double> state;
  std::vector<double> blocks(x.data(), x.data() + 100);
  std::vector<double> scaled(100);
  // Fold three blocks; rescale the earlier exps by each correction, as the driver does.
  const index_t cuts[] = {0, 13, 64, 100};
  for (int b = 0; b < 3; ++b) {
    const double correction =
        state.update(heed::simd::attention_kernels<double>().softmax, blocks.data() + cuts[b], cuts[b + 1] - cuts[b]);
    for (index_t i = 0; i < cuts[b]; ++i) blocks[static_cast<std::size_t>(i)] *= correction;
  }
  const double norm = state.normalizer(heed::MaskedRows::zero);
  for (index_t i = 0; i < 100; ++i) EXPECT_NEAR(blocks[static_cast<std::size_t>(i)] * norm, whole(0, i), 1e-15);
}

TEST(OnlineSoftmax, AllMinusInfinityBlocksKeepTheStateEmpty) {
  heed::detail::OnlineSoftmax<float> state;
  float block[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
  EXPECT_EQ(state.update(heed::simd::attention_kernels<float>().softmax, block, 4), 1.0f);
  EXPECT_EQ(block[0], 0.0f);
  EXPECT_EQ(state.normalizer(heed::MaskedRows::zero), 0.0f);
  EXPECT_TRUE(std::isnan(state.normalizer(heed::MaskedRows::nan)));
}

}  // namespace
