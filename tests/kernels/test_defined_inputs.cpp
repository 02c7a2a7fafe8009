// Issue #46's defects of the kernels' public entry points, a test each: inputs a careless or
// adventurous caller may pass get PyTorch's result (checked against the double reference) or a
// heed error, never a wrong answer, a sanitizer report or another exception.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "heed/kernels.hpp"
#include "heed/core/cast.hpp"
#include "heed/core/random.hpp"
#include "reference/attention.hpp"
#include "support/compare.hpp"

namespace {

using heed::index_t;
using heed::Tensor;
using heed::TensorView;
using heed::test::all_close;
constexpr index_t big = std::numeric_limits<index_t>::max();
constexpr heed::test::Tolerance tol{2e-5, 2e-6};

struct Inputs {
  Tensor<float, 4> q, k, v;
};
Inputs inputs(index_t Lq, index_t Lk, std::uint64_t seed = 1) {
  return {heed::randn<float>({1, 2, Lq, 8}, seed), heed::randn<float>({1, 2, Lk, 8}, seed + 1),
          heed::randn<float>({1, 2, Lk, 8}, seed + 2)};
}

// The double reference of scaled-dot attention under `mask` (0 visible, hidden, or a bias).
heed::reference::AttentionReference reference(const Inputs& in, const heed::reference::MaskFn& mask) {
  const auto q = heed::cast<double>(in.q), k = heed::cast<double>(in.k), v = heed::cast<double>(in.v);
  return heed::reference::attention(q, k, v, heed::reference::scaled_dot(q, k, 1.0 / std::sqrt(8.0)), mask, false);
}

TEST(DefinedInputs, WeightsViewOfAnyInnerStrideGetsTheWeights) {  // #46, defect 1
  const Inputs in = inputs(13, 21);
  const auto expected = reference(in, heed::reference::no_mask);
  // a transposed buffer: weights[b, h, i, j] at buffer[b, h, j, i]
  Tensor<float, 4> out({1, 2, 13, 8}), buffer({1, 2, 21, 13});
  heed::attention_into<float>(out.view(), buffer.view().transpose(2, 3), in.q.view(), in.k.view(), in.v.view(),
                              heed::ScaledDot{}, heed::mask::None{});
  EXPECT_TRUE(all_close(Tensor<float, 4>(buffer.view().transpose(2, 3)), expected.weights, tol));
  EXPECT_TRUE(all_close(out, expected.output, tol));
  // a reversed one: stride -1 in the last dimension, and an output of inner stride 2
  Tensor<float, 4> reversed({1, 2, 13, 21}), wide({1, 2, 13, 16});
  const TensorView<float, 4> backwards(&reversed(0, 0, 0, 20), {1, 2, 13, 21}, {2 * 13 * 21, 13 * 21, 21, -1});
  const TensorView<float, 4> every_other(wide.data(), {1, 2, 13, 8}, {2 * 13 * 16, 13 * 16, 16, 2});
  heed::attention_into<float>(every_other, backwards, in.q.view(), in.k.view(), in.v.view(), heed::ScaledDot{},
                              heed::mask::None{});
  EXPECT_TRUE(all_close(Tensor<float, 4>(backwards), expected.weights, tol));
  EXPECT_TRUE(all_close(Tensor<float, 4>(every_other), expected.output, tol));
  EXPECT_EQ(wide(0, 1, 12, 15), 0.0f);  // the columns between stay untouched
}

TEST(DefinedInputs, OutputOverlappingAnInputIsAShapeError) {  // #46, defect 2
  Inputs in = inputs(200, 200);
  const auto attend_into = [&](const TensorView<float, 4>& out, const TensorView<float, 4>& weights) {
    heed::attention_into<float>(out, weights, in.q.view(), in.k.view(), in.v.view(), heed::ScaledDot{},
                                heed::mask::None{});
  };
  EXPECT_THROW(attend_into(in.v.view(), {}), heed::ShapeError);
  EXPECT_THROW(attend_into(in.q.view(), {}), heed::ShapeError);
  Tensor<float, 4> out({1, 2, 200, 8}), weights({1, 2, 200, 200});
  const TensorView<float, 4> inside(weights.data(), {1, 2, 200, 8}, {2 * 200 * 8, 200 * 8, 8, 1});
  EXPECT_THROW(attend_into(inside, weights.view()), heed::ShapeError);
  attend_into(out.view(), weights.view());  // apart: fine
  EXPECT_TRUE(all_close(out, reference(in, heed::reference::no_mask).output, tol));
}

TEST(DefinedInputs, ChannelMeanMaxKeepsNaN) {  // #46, defect 4: torch.amax propagates NaN
  for (const index_t C : {3, 10, 17}) {
    auto x = heed::randn<float>({2, C, 3, 19}, 5);
    x(1, C - 1, 2, 17) = std::numeric_limits<float>::quiet_NaN();  // in the last group, past the last vector
    x(0, C / 2, 1, 2) = std::numeric_limits<float>::quiet_NaN();   // in a middle channel
    x(0, 0, 0, 4) = std::numeric_limits<float>::infinity();        // +inf with -inf: the sum is NaN, the max inf
    x(0, C - 1, 0, 4) = -std::numeric_limits<float>::infinity();
    const auto r = heed::channel_mean_max(x);
    for (index_t b = 0; b < 2; ++b)
      for (index_t i = 0; i < 3; ++i)
        for (index_t j = 0; j < 19; ++j) {
          double sum = 0, top = -std::numeric_limits<double>::infinity();
          bool nan = false;
          for (index_t c = 0; c < C; ++c) {
            const double v = x(b, c, i, j);
            sum += v;
            nan = nan || std::isnan(v);
            top = std::max(top, v);
          }
          if (nan) {
            EXPECT_TRUE(std::isnan(r(b, 1, i, j))) << "C " << C << " at " << b << ", " << i << ", " << j;
          } else {
            EXPECT_EQ(r(b, 1, i, j), static_cast<float>(top)) << "C " << C << " at " << b << ", " << i << ", " << j;
          }
          if (std::isfinite(sum)) {
            EXPECT_NEAR(r(b, 0, i, j), sum / static_cast<double>(C), 1e-5);
          }
        }
  }
}

TEST(DefinedInputs, TileSizesPastTheCallAreTheCallsOwn) {  // #46, defect 11 and the tile part of 15
  const Inputs in = inputs(37, 300);
  const auto expected = reference(in, heed::reference::no_mask);
  for (const heed::AttentionOptions o :
       {heed::AttentionOptions{.block_q = index_t{1} << 40}, heed::AttentionOptions{.block_q = big, .block_k = big},
        heed::AttentionOptions{.need_weights = true, .block_k = index_t{1} << 62},
        heed::AttentionOptions{.num_threads = 1 << 30}}) {
    const auto r = heed::attention(in.q, in.k, in.v, heed::ScaledDot{}, heed::mask::None{}, o);
    EXPECT_TRUE(all_close(r.output, expected.output, tol));
  }
  // the decode path (one query row)
  const Inputs one = inputs(1, 700);
  const auto r = heed::attention(one.q, one.k, one.v, heed::ScaledDot{}, heed::mask::None{}, {.block_k = big});
  EXPECT_TRUE(all_close(r.output, reference(one, heed::reference::no_mask).output, tol));
  heed::set_num_threads(1 << 30);
  EXPECT_EQ(heed::num_threads() <= heed::max_threads, true);
  heed::set_num_threads(0);
}

TEST(DefinedInputs, ExtremeMaskValuesMeanWhatTheySay) {  // #46, defect 15
  const Inputs in = inputs(45, 70);
  const auto everything = reference(in, heed::reference::no_mask);
  const auto run = [&](const auto& mask) { return heed::attention(in.q, in.k, in.v, heed::ScaledDot{}, mask).output; };
  // "unbounded": every key visible
  EXPECT_TRUE(all_close(run(heed::mask::Causal{big}), everything.output, tol));
  EXPECT_TRUE(all_close(run(heed::mask::SlidingWindow{big, big}), everything.output, tol));
  // centred far right with a window reaching as far left: keys i, i + 1, ... (big - big = 0)
  const auto from_diagonal =
      reference(in, [](index_t, index_t, index_t i, index_t j) { return j >= i ? 0.0 : heed::reference::hidden; });
  EXPECT_TRUE(
      all_close(run(heed::mask::SlidingWindow{.left = big, .right = 0, .offset = big}), from_diagonal.output, tol));
  // nothing visible: every row fully masked, zeros (MaskedRows::zero)
  const Tensor<float, 4> zeros({1, 2, 45, 8});
  EXPECT_TRUE(all_close(run(heed::mask::SlidingWindow{1, 1, std::numeric_limits<index_t>::min()}), zeros, {0, 0}));
  EXPECT_TRUE(all_close(run(heed::mask::Causal{std::numeric_limits<index_t>::min()}), zeros, {0, 0}));
  // one block past every length: the layout is [1, 1]
  Tensor<bool, 2> layout({1, 1});
  layout(0, 0) = true;
  EXPECT_TRUE(all_close(run(heed::mask::BlockSparse{layout, big}), everything.output, tol));
  EXPECT_TRUE(all_close(run(heed::mask::BlockSparse{layout, index_t{1} << 62}), everything.output, tol));
  // ALiBi with a far offset: finite weights that sum to one per row
  const auto alibi = heed::attention(in.q, in.k, in.v, heed::ScaledDot{}, heed::mask::ALiBi{heed::alibi_slopes(2), big},
                                     {.need_weights = true});
  for (index_t h = 0; h < 2; ++h)
    for (index_t i = 0; i < 45; ++i) {
      double sum = 0;
      for (index_t j = 0; j < 70; ++j) sum += alibi.weights(0, h, i, j);
      EXPECT_NEAR(sum, 1.0, 1e-5);
    }
}

TEST(DefinedInputs, RotaryPositionsPastTheIndexRangeAreAShapeError) {  // #46, defect 15
  heed::Rotary<float> rope(8, {});
  auto x = heed::randn<float>({1, 2, 5, 8}, 3);
  EXPECT_THROW(rope.apply(x.view(), big), heed::ShapeError);
  EXPECT_THROW(rope.apply(x.view(), big - 4), heed::ShapeError);
  EXPECT_NO_THROW(rope.apply(x.view(), big - 5));
  for (index_t i = 0; i < x.numel(); ++i) EXPECT_TRUE(std::isfinite(x.data()[i]));
}

TEST(DefinedInputs, Conv2dPaddingPastTheIndexRangeAndEmptyPlanesAreShapeErrors) {  // #46, defects 12 and 15
  const auto x = heed::randn<float>({1, 2, 5, 5}, 1), w = heed::randn<float>({3, 2, 3, 3}, 2);
  EXPECT_THROW((void)heed::conv2d(x, w, {}, {.padding = big / 2}), heed::ShapeError);
  EXPECT_THROW((void)heed::conv2d(Tensor<float, 4>({1, 2, 5, 0}), w, {}, {.padding = 3}), heed::ShapeError);
  EXPECT_THROW((void)heed::conv2d(Tensor<float, 4>({1, 2, 0, 5}), w, {}, {.padding = 3}), heed::ShapeError);
  EXPECT_EQ(heed::conv2d(Tensor<float, 4>({0, 2, 5, 5}), w, {}, {.padding = 1}).shape(), (heed::Shape<4>{0, 3, 5, 5}));
}

TEST(DefinedInputs, EmptyDepthsAndLengthsAsPyTorch) {  // #46, defect 12
  // head depth 0: every score is 0 (an empty dot product), each output the mean of the visible values
  const Tensor<float, 4> q0({1, 2, 5, 0}), k0({1, 2, 7, 0});
  const auto v = heed::randn<float>({1, 2, 7, 3}, 1);
  const auto mean_of_visible = [&](const Tensor<float, 4>& out, index_t offset) {
    for (index_t h = 0; h < 2; ++h)
      for (index_t i = 0; i < 5; ++i)
        for (index_t c = 0; c < 3; ++c) {
          const index_t visible = std::min<index_t>(7, i + offset + 1);
          double mean = 0;
          for (index_t j = 0; j < visible; ++j) mean += v(0, h, j, c) / static_cast<double>(visible);
          EXPECT_NEAR(out(0, h, i, c), mean, 1e-6) << h << ", " << i << ", " << c;
        }
  };
  mean_of_visible(heed::scaled_dot_product_attention(q0, k0, v), 7);
  mean_of_visible(heed::attention(q0, k0, v, heed::Dot{}, heed::mask::Causal{.offset = 2}).output, 2);
  // additive scores with no hidden unit: 0 too
  const auto q = heed::randn<float>({1, 2, 5, 4}, 2), k = heed::randn<float>({1, 2, 7, 4}, 3);
  heed::Additive<float> none{
      .w_q = Tensor<float, 2>({0, 4}), .w_k = Tensor<float, 2>({0, 4}), .v = Tensor<float, 1>({0})};
  mean_of_visible(heed::attention(q, k, v, none).output, 7);
  // values of depth 0: an empty output, and the weights all the same
  const auto with_weights = heed::attention(q, k, Tensor<float, 4>({1, 2, 7, 0}), heed::ScaledDot{}, heed::mask::None{},
                                            {.need_weights = true});
  EXPECT_EQ(with_weights.output.shape(), (heed::Shape<4>{1, 2, 5, 0}));
  const auto qd = heed::cast<double>(q), kd = heed::cast<double>(k);
  const auto expected =
      heed::reference::attention(qd, kd, Tensor<double, 4>({1, 2, 7, 1}), heed::reference::scaled_dot(qd, kd, 0.5),
                                 heed::reference::no_mask, false);
  EXPECT_TRUE(all_close(with_weights.weights, expected.weights, tol));
  // no keys: zeros, in either masked-rows mode (PyTorch's softmax(empty) · v); no queries, no heads: empty outputs
  for (const auto rows : {heed::MaskedRows::zero, heed::MaskedRows::nan})
    EXPECT_TRUE(all_close(heed::attention(q, Tensor<float, 4>({1, 2, 0, 4}), Tensor<float, 4>({1, 2, 0, 3}),
                                          heed::ScaledDot{}, heed::mask::None{}, {.masked_rows = rows})
                              .output,
                          Tensor<float, 4>({1, 2, 5, 3}), {0, 0}));
  // PyTorch refuses the empty reductions of AdaptiveAvgPool2d(1) and amax
  EXPECT_THROW((void)heed::global_avg_pool(Tensor<float, 4>({1, 2, 0, 3})), heed::ShapeError);
  EXPECT_THROW((void)heed::channel_mean_max(Tensor<float, 4>({1, 0, 2, 3})), heed::ShapeError);
  EXPECT_EQ(heed::global_avg_pool(Tensor<float, 4>({0, 2, 3, 3})).shape(), (heed::Shape<2>{0, 2}));
  EXPECT_EQ(heed::attention(Tensor<float, 4>({1, 2, 0, 4}), k, v, heed::ScaledDot{}, heed::mask::None{},
                            {.need_weights = true})
                .weights.shape(),
            (heed::Shape<4>{1, 2, 0, 7}));
  EXPECT_EQ(
      heed::attention(Tensor<float, 4>({1, 0, 5, 4}), Tensor<float, 4>({1, 0, 7, 4}), Tensor<float, 4>({1, 0, 7, 3}))
          .output.shape(),
      (heed::Shape<4>{1, 0, 5, 3}));
  // a default Rotary rotates nothing
  Tensor<float, 4> x({1, 1, 3, 0});
  heed::Rotary<float>{}.apply(x.view());
}

}  // namespace
