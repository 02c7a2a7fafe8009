// conv2d and the pooling reductions against naive double references.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "heed/core/random.hpp"
#include "heed/kernels/conv2d.hpp"
#include "heed/kernels/pooling.hpp"
#include "heed/simd/kernel_table.hpp"
#include "reference/conv2d.hpp"
#include "reference/softmax.hpp"
#include "support/compare.hpp"

namespace {

using heed::index_t;
using heed::Tensor;

template <class T>
class Conv2d : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(Conv2d, Scalars);

TYPED_TEST(Conv2d, MatchesTheReferenceOverKernelsPaddingsAndStrides) {
  using T = TypeParam;
  const heed::test::Tolerance tol =
      sizeof(T) == 8 ? heed::test::Tolerance{1e-12, 1e-12} : heed::test::Tolerance{1e-5, 1e-5};
  std::uint64_t seed = 1;
  for (index_t k : {1, 3, 7})
    for (auto [H, W] : {std::pair<index_t, index_t>{7, 9}, {13, 5}, {32, 32}, {1, 17}})
      for (index_t pad : {index_t{0}, k / 2, k})
        for (index_t stride : {1, 2, 3, 4}) {
          if (H + 2 * pad < k || W + 2 * pad < k) continue;
          const auto x = heed::randn<T>({2, 3, H, W}, seed++);
          const auto w = heed::randn<T>({4, 3, k, k}, seed++);
          const auto bias = heed::randn<T>({4}, seed++);
          const bool with_bias = seed % 2 == 0;
          const auto got = heed::conv2d(x, w, with_bias ? bias.view() : heed::TensorView<const T, 1>{},
                                        {.padding = pad, .stride = stride});
          const auto expected =
              heed::reference::conv2d(heed::reference::to_double(x), heed::reference::to_double(w),
                                      with_bias ? heed::reference::to_double(bias) : Tensor<double, 1>(), pad, stride);
          EXPECT_TRUE(heed::test::all_close(got, expected, tol))
              << "k " << k << ", " << H << "x" << W << ", pad " << pad << ", stride " << stride;
        }
}

// Strides and dilations other than 1 run on the GEMM (kernels/detail/conv2d_gemm.hpp): a ViT's
// patch embedding (kernel = stride = 16, sides that are not multiples of 16), dilation 2 and 3
// with and without stride and padding, receptive fields over
// several chunks of output pixels (K = 300 · 9 = 2700: chunks of 384 pixels of 2500), on one and
// two workers, one sample (each GEMM on all the workers) and three (a task each).
TYPED_TEST(Conv2d, StridedAndDilatedOnTheGemm) {
  using T = TypeParam;
  const heed::test::Tolerance tol =
      sizeof(T) == 8 ? heed::test::Tolerance{1e-12, 1e-12} : heed::test::Tolerance{2e-5, 2e-5};
  struct Case {
    index_t B, C, H, W, O, k, pad, stride, dilation = 1;
  };
  std::uint64_t seed = 50;
  for (const Case& c :
       {Case{1, 3, 64, 64, 32, 16, 0, 16}, Case{3, 3, 70, 50, 8, 16, 0, 16}, Case{1, 300, 100, 100, 4, 3, 1, 2},
        Case{3, 5, 33, 31, 6, 5, 2, 4}, Case{2, 4, 19, 23, 5, 3, 2, 1, 2}, Case{2, 4, 19, 23, 5, 3, 0, 2, 2},
        Case{1, 3, 17, 17, 4, 5, 4, 3, 3}})
    for (const int threads : {1, 2}) {
      SCOPED_TRACE(testing::Message() << "B " << c.B << " C " << c.C << " " << c.H << "x" << c.W << " O " << c.O
                                      << " k " << c.k << " pad " << c.pad << " stride " << c.stride << " dilation "
                                      << c.dilation << " threads " << threads);
      const auto x = heed::randn<T>({c.B, c.C, c.H, c.W}, seed++);
      auto w = heed::randn<T>({c.O, c.C, c.k, c.k}, seed++);
      for (index_t i = 0; i < w.numel(); ++i) w.data()[i] /= T(c.k * 4);  // outputs of order 1
      const auto bias = heed::randn<T>({c.O}, seed++);
      const auto got = heed::conv2d(
          x, w, bias.view(), {.padding = c.pad, .stride = c.stride, .dilation = c.dilation, .num_threads = threads});
      const auto expected = heed::reference::conv2d(heed::reference::to_double(x), heed::reference::to_double(w),
                                                    heed::reference::to_double(bias), c.pad, c.stride, c.dilation);
      EXPECT_TRUE(heed::test::all_close(got, expected, tol));
    }
}

// No input channels (PyTorch allows them): every output is its channel's bias, at stride 1 (the
// table's plane kernel) and 2.
TYPED_TEST(Conv2d, NoInputChannelsGiveTheBias) {
  using T = TypeParam;
  const auto bias = heed::randn<T>({3}, 5);
  for (const index_t stride : {index_t{1}, index_t{2}}) {
    const auto got = heed::conv2d(Tensor<T, 4>({2, 0, 5, 6}), Tensor<T, 4>({3, 0, 3, 3}), bias.view(),
                                  {.padding = 1, .stride = stride});
    ASSERT_EQ(got.size(1), 3);
    for (index_t b = 0; b < 2; ++b)
      for (index_t c = 0; c < 3; ++c)
        for (index_t i = 0; i < got.size(2); ++i)
          for (index_t j = 0; j < got.size(3); ++j) ASSERT_EQ(got(b, c, i, j), bias(c)) << "stride " << stride;
  }
}

TEST(Conv2dErrors, NameTheShapes) {
  const auto x = heed::randn<float>({1, 3, 5, 5}, 1);
  try {
    (void)heed::conv2d(x, heed::randn<float>({2, 4, 3, 3}, 2));
    FAIL();
  } catch (const heed::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("w expects 4 input channels, x has 3"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)heed::conv2d(x, heed::randn<float>({2, 3, 7, 7}, 2)), heed::ShapeError);
  EXPECT_THROW((void)heed::conv2d(x, heed::randn<float>({2, 3, 3, 3}, 2), {}, {.stride = 0}), heed::ShapeError);
  EXPECT_THROW((void)heed::conv2d(x, heed::randn<float>({2, 3, 3, 3}, 2), {}, {.dilation = 0}), heed::ShapeError);
  try {  // a 3 × 3 kernel at dilation 3 reaches over 7 × 7: more than the 5 × 5 input
    (void)heed::conv2d(x, heed::randn<float>({2, 3, 3, 3}, 2), {}, {.dilation = 3});
    FAIL();
  } catch (const heed::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("the kernel is larger than the padded input"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("dilation 3"), std::string::npos) << e.what();
  }
  const auto bias = heed::randn<float>({3}, 3);
  EXPECT_THROW((void)heed::conv2d(x, heed::randn<float>({2, 3, 3, 3}, 2), bias.view()), heed::ShapeError);
}

TEST(Pooling, GlobalAveragesAndChannelMeanMax) {
  const auto x = heed::randn<double>({2, 5, 7, 9}, 4);
  const auto avg = heed::global_avg_pool(x);
  const auto mm = heed::channel_mean_max(x.view().slice(1, 1, 5));  // a strided input
  for (index_t b = 0; b < 2; ++b) {
    for (index_t c = 0; c < 5; ++c) {
      double s = 0;
      for (index_t i = 0; i < 7; ++i)
        for (index_t j = 0; j < 9; ++j) s += x(b, c, i, j);
      EXPECT_NEAR(avg(b, c), s / 63, 1e-14);
    }
    for (index_t i = 0; i < 7; ++i)
      for (index_t j = 0; j < 9; ++j) {
        double s = 0, m = -INFINITY;
        for (index_t c = 1; c < 5; ++c) {
          s += x(b, c, i, j);
          m = std::max(m, x(b, c, i, j));
        }
        EXPECT_NEAR(mm(b, 0, i, j), s / 4, 1e-14);
        EXPECT_EQ(mm(b, 1, i, j), m);
      }
  }
}

// CBAM's reduction of channel-scaled planes (through the kernel table in use): whole register
// blocks of columns and the columns past them (plane 7 · 13 = 91), against a double sum and the
// exact max of the same products.
TYPED_TEST(Conv2d, ScaledMeanMaxOverChannelsBlocksAndTail) {
  using T = TypeParam;
  for (const index_t C : {index_t{1}, index_t{5}})
    for (const index_t plane : {index_t{91}, index_t{7}, index_t{128}}) {
      const auto x = heed::randn<T>({C, plane}, 7);
      const auto scale = heed::randn<T>({C}, 8);
      std::vector<T> mean(static_cast<std::size_t>(plane)), max(mean.size());
      heed::simd::vision_kernels<T>().mean_max_over_channels(x.data(), scale.data(), C, plane, mean.data(), max.data());
      for (index_t j = 0; j < plane; ++j) {
        double sum = 0, magnitude = 0;
        T top = -std::numeric_limits<T>::infinity();
        for (index_t c = 0; c < C; ++c) {
          const T v = scale(c) * x(c, j);
          sum += double(v);
          magnitude += std::abs(double(v));
          top = std::max(top, v);
        }
        const double want = sum / double(C);
        ASSERT_NEAR(double(mean[static_cast<std::size_t>(j)]), want,
                    8 * double(std::numeric_limits<T>::epsilon()) * (1 + magnitude))
            << "C " << C << " plane " << plane << " column " << j;
        ASSERT_EQ(max[static_cast<std::size_t>(j)], top) << "C " << C << " plane " << plane << " column " << j;
      }
    }
}

}  // namespace
