// Positions for decoding: heed::Rotary (both conventions, full and partial, two bases, per-row
// starts, a position beyond the table) and mask::ALiBi with heed::alibi_slopes, against the
// reference definitions of tests/golden/generate.py (fixture "positions").
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "heed/core/cast.hpp"
#include "heed/kernels.hpp"
#include "kernels/attention_cases.hpp"
#include "support/compare.hpp"
#include "support/golden.hpp"

namespace {

using heed::index_t;
using heed::RotaryStyle;
using heed::Tensor;
using heed::test::all_close;
using heed::test::golden;

struct Case {
  const char* name;
  heed::RotaryOptions options;
};
const Case cases[] = {
    {"half_full", {.dim = 16, .base = 10000.0, .style = RotaryStyle::halves}},
    {"half_partial", {.dim = 8, .base = 10000.0, .style = RotaryStyle::halves}},
    {"interleaved_full", {.dim = 0, .base = 500.0, .style = RotaryStyle::interleaved}},  // 0: the whole head
    {"interleaved_partial", {.dim = 6, .base = 10000.0, .style = RotaryStyle::interleaved}},
};
const std::pair<const char*, std::vector<index_t>> starts[] = {
    {"zero", {0, 0}}, {"rows", {3, 17}}, {"far", {4094, 9000}}};

TEST(Rotary, BothConventionsFullAndPartialMatchTheReference) {
  const auto fx = golden("positions");
  const auto x = fx.get<double, 4>("x");
  for (const Case& c : cases)
    for (const auto& [starts_name, start] : starts) {
      SCOPED_TRACE(std::string(c.name) + "." + starts_name);
      const auto expected = fx.get<double, 4>(std::string(c.name) + "." + starts_name);
      // a table of 4096 positions: "far" has one row inside it and one beyond
      auto options = c.options;
      options.max_positions = 4096;
      Tensor<double, 4> got(x);
      heed::Rotary<double>(16, options).apply(got.view(), start);
      EXPECT_TRUE(all_close(got, expected, {1e-12, 1e-12}));
      auto f = heed::cast<float>(x);
      heed::Rotary<float>(16, options).apply(f.view(), start);
      EXPECT_TRUE(all_close(f, expected, {1e-6, 1e-6}));
      auto bf = heed::cast<heed::bfloat16>(x);
      const Tensor<double, 4> rounded = heed::cast<double>(bf);
      heed::Rotary<heed::bfloat16>(16, options).apply(bf.view(), start);
      // rounded once: |error| <= 2^-8 |y| (plus the rounding of the input, already in `rounded`)
      Tensor<double, 4> from_rounded(rounded);
      heed::Rotary<double>(16, options).apply(from_rounded.view(), start);
      EXPECT_TRUE(all_close(heed::cast<double>(bf), from_rounded, {0x1p-8 + 1e-6, 1e-7}));
    }
}

TEST(Rotary, StridedViewsAndOneStartForEveryRow) {
  const auto fx = golden("positions");
  const auto x = fx.get<double, 4>("x");
  // the heads laid out [B, L, H, d] (as a projection writes them), seen as [B, H, L, d]
  Tensor<double, 4> bl({2, 5, 3, 16});
  for (index_t b = 0; b < 2; ++b)
    for (index_t h = 0; h < 3; ++h)
      for (index_t i = 0; i < 5; ++i)
        for (index_t c = 0; c < 16; ++c) bl(b, i, h, c) = x(b, h, i, c);
  const heed::TensorView<double, 4> heads(bl.data(), {2, 3, 5, 16}, {5 * 3 * 16, 16, 3 * 16, 1});
  heed::Rotary<double>(16, {.dim = 8}).apply(heads);
  EXPECT_TRUE(all_close(Tensor<double, 4>(heads), fx.get<double, 4>("half_partial.zero"), {1e-12, 1e-12}));
  // a transposed last dimension (stride != 1) takes the general loop
  Tensor<double, 4> dt({2, 3, 16, 5});
  for (index_t b = 0; b < 2; ++b)
    for (index_t h = 0; h < 3; ++h)
      for (index_t i = 0; i < 5; ++i)
        for (index_t c = 0; c < 16; ++c) dt(b, h, c, i) = x(b, h, i, c);
  const heed::TensorView<double, 4> strided(dt.data(), {2, 3, 5, 16}, {3 * 16 * 5, 16 * 5, 1, 5});
  heed::Rotary<double>(16, {.dim = 6, .style = RotaryStyle::interleaved}).apply(strided, std::vector<index_t>{3, 17});
  EXPECT_TRUE(all_close(Tensor<double, 4>(strided), fx.get<double, 4>("interleaved_partial.rows"), {1e-12, 1e-12}));
}

TEST(Rotary, BadOptionsAndShapesAreShapeErrors) {
  EXPECT_THROW(heed::Rotary<float>(16, {.dim = 7}), heed::ShapeError);   // odd
  EXPECT_THROW(heed::Rotary<float>(16, {.dim = 18}), heed::ShapeError);  // larger than the head
  EXPECT_THROW(heed::Rotary<float>(16, {.base = 0.0}), heed::ShapeError);
  EXPECT_THROW(heed::Rotary<float>(15, {}), heed::ShapeError);  // the whole odd head
  const heed::Rotary<float> rope(16, {});
  auto x = heed::randn<float>({2, 1, 3, 16}, 1);
  auto wrong = heed::randn<float>({2, 1, 3, 8}, 1);
  EXPECT_THROW(rope.apply(wrong.view()), heed::ShapeError);
  EXPECT_THROW(rope.apply(x.view(), std::vector<index_t>{0}), heed::ShapeError);
  EXPECT_THROW(rope.apply(x.view(), std::vector<index_t>{0, -1}), heed::ShapeError);
}

TEST(ALiBi, SlopesAreBloomsForEveryHeadCount) {
  const auto fx = golden("positions");
  for (index_t n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 20, 64}) {
    const auto expected = fx.get<double, 1>("alibi." + std::to_string(n));
    const auto got = heed::alibi_slopes(n);
    ASSERT_EQ(static_cast<index_t>(got.size()), n);
    for (index_t h = 0; h < n; ++h) EXPECT_NEAR(got[static_cast<std::size_t>(h)], expected(h), 1e-15) << n;
  }
  EXPECT_THROW((void)heed::alibi_slopes(0), heed::ShapeError);
}

// Attention with ALiBi (and causal) against the reference with BLOOM's form of the bias,
// slope_h · j: the softmax cancels the per-row difference. Full tiles, the decode path.
TEST(ALiBi, AttentionMatchesBloomsBiasOnBothPaths) {
  using namespace heed::test;
  for (const Dims dims : {Dims{2, 6, 33, 70, 16, 16}, Dims{1, 6, 3, 700, 16, 16, 2}}) {
    const Inputs<double> in(dims, 5);
    const auto slopes = heed::alibi_slopes(dims.H);
    const index_t offset = dims.Lk - dims.Lq;
    const auto bloom = [&](index_t, index_t h, index_t i, index_t j) {
      return j <= i + offset ? slopes[static_cast<std::size_t>(h)] * double(j) : heed::reference::hidden;
    };
    const auto expected = heed::reference::attention(
        in.q, in.k, in.v, heed::reference::scaled_dot(in.q, in.k, 1 / std::sqrt(16.0)), bloom, false);
    for (int threads : {1, 2}) {
      const auto got = heed::attention(in.q, in.k, in.v, heed::ScaledDot{},
                                       heed::mask::all(heed::mask::Causal{offset}, heed::mask::ALiBi{slopes, offset}),
                                       {.num_threads = threads});
      EXPECT_TRUE(all_close(got.output, expected.output, {1e-10, 1e-11}));
    }
  }
  const auto q = heed::randn<float>({1, 4, 2, 8}, 1);
  EXPECT_THROW((void)heed::attention(q, q, q, heed::ScaledDot{}, heed::mask::ALiBi{heed::alibi_slopes(3)}),
               heed::ShapeError);
}

}  // namespace
