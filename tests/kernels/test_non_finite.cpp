// NaN and ±infinity in attention's inputs (docs/formats.md, "Non-finite values"), in every
// storage type and through the driver's three paths: the general tiled loop, the decode loop
// (few queries, many keys) and a sparse block layout. What heed promises:
//   - a NaN in a query poisons that query's row of output and weights, nothing else;
//   - a NaN in a key poisons the rows that see that key, and no row a boolean mask hides it
//     from (the mask replaces the score; an additive float bias adds to NaN and stays NaN);
//   - a NaN in a value poisons the rows that give its key a non-zero weight;
//   - a -inf bias hides a key exactly as a mask does; a +inf or NaN bias makes its row NaN;
//   - a row whose every key is hidden is 0, or NaN under MaskedRows::nan, in every path.
// These are PyTorch's rules (IEEE arithmetic through softmax), except that PyTorch also turns a
// row NaN when a NaN value sits under a key the row masks (0 · NaN); heed does not promise either.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "heed/core/cast.hpp"
#include "heed/core/random.hpp"
#include "heed/kernels/attention.hpp"
#include "heed/kernels/softmax.hpp"
#include "heed/kernels/sparse_masks.hpp"

namespace {

using heed::index_t;
using heed::Tensor;

template <class T>
class NonFinite : public ::testing::Test {};
using Storage = ::testing::Types<float, double, heed::bfloat16, heed::half>;
TYPED_TEST_SUITE(NonFinite, Storage);

constexpr double nan = std::numeric_limits<double>::quiet_NaN();
constexpr double inf = std::numeric_limits<double>::infinity();

template <class T>
Tensor<T, 4> random(index_t b, index_t h, index_t l, index_t d, std::uint64_t seed) {
  return heed::cast<T>(heed::randn<float>({b, h, l, d}, seed));
}

// Whether every element of row (b, h, i) of a [B, H, L, n] tensor is NaN (all = true) or finite.
template <class T>
bool row_is(const Tensor<T, 4>& t, index_t b, index_t h, index_t i, bool all_nan) {
  for (index_t c = 0; c < t.size(3); ++c) {
    const double x = static_cast<double>(static_cast<float>(t(b, h, i, c)));
    if (all_nan ? !std::isnan(x) : !std::isfinite(x)) return false;
  }
  return true;
}

// The driver's paths: {Lq, Lk, block} of the tiled loop (several 16-wide tiles) and of decode.
struct Path {
  const char* name;
  index_t lq, lk;
  heed::AttentionOptions options;
};
std::vector<Path> paths() {
  return {{"tiled", 40, 40, {.need_weights = true, .block_q = 16, .block_k = 16}},
          {"decode (no weights)", 1, 600, {}},
          {"tiled, 2 threads", 40, 40, {.need_weights = true, .num_threads = 2, .block_q = 16, .block_k = 16}}};
}

TYPED_TEST(NonFinite, NaNInAQueryPoisonsItsRowOnly) {
  using T = TypeParam;
  for (const Path& path : paths()) {
    SCOPED_TRACE(path.name);
    auto q = random<T>(1, 2, path.lq, 16, 1);
    const auto k = random<T>(1, 2, path.lk, 16, 2), v = random<T>(1, 2, path.lk, 16, 3);
    const index_t poisoned = path.lq / 2;
    q(0, 1, poisoned, 5) = static_cast<T>(nan);
    const auto r = heed::attention(q, k, v, heed::ScaledDot{}, heed::mask::None{}, path.options);
    for (index_t h = 0; h < 2; ++h)
      for (index_t i = 0; i < path.lq; ++i) {
        const bool hit = h == 1 && i == poisoned;
        EXPECT_TRUE(row_is(r.output, 0, h, i, hit)) << h << "," << i;
        if (path.options.need_weights) {
          EXPECT_TRUE(row_is(r.weights, 0, h, i, hit)) << h << "," << i;
        }
      }
  }
}

TYPED_TEST(NonFinite, NaNInAKeyPoisonsTheRowsThatSeeIt) {
  using T = TypeParam;
  for (const Path& path : paths()) {
    SCOPED_TRACE(path.name);
    const auto q = random<T>(1, 2, path.lq, 16, 4), v = random<T>(1, 2, path.lk, 16, 6);
    auto k = random<T>(1, 2, path.lk, 16, 5);
    const index_t key = path.lk - 10;  // causal: rows before it do not see it
    k(0, 0, key, 3) = static_cast<T>(nan);
    const index_t offset = path.lk - path.lq;  // the queries are the last lq positions
    const auto r = heed::attention(q, k, v, heed::ScaledDot{}, heed::mask::Causal{offset}, path.options);
    for (index_t i = 0; i < path.lq; ++i) {
      const bool sees = i + offset >= key;
      EXPECT_TRUE(row_is(r.output, 0, 0, i, sees)) << i;
      EXPECT_TRUE(row_is(r.output, 0, 1, i, false)) << i;  // the other head's keys are clean
    }
  }
}

TYPED_TEST(NonFinite, NaNInAValuePoisonsTheRowsThatWeighItsKey) {
  using T = TypeParam;
  for (const Path& path : paths()) {
    SCOPED_TRACE(path.name);
    const auto q = random<T>(1, 1, path.lq, 16, 7), k = random<T>(1, 1, path.lk, 16, 8);
    auto v = random<T>(1, 1, path.lk, 16, 9);
    v(0, 0, 0, 2) = static_cast<T>(inf);
    v(0, 0, 1, 4) = static_cast<T>(nan);
    const auto r = heed::attention(q, k, v, heed::ScaledDot{}, heed::mask::None{}, path.options);
    for (index_t i = 0; i < path.lq; ++i) {
      // every row weighs key 1: column 4 is NaN; column 2 is +inf (or NaN with key 1's NaN)
      EXPECT_TRUE(std::isnan(static_cast<float>(r.output(0, 0, i, 4)))) << i;
      EXPECT_FALSE(std::isfinite(static_cast<float>(r.output(0, 0, i, 2)))) << i;
      EXPECT_TRUE(std::isfinite(static_cast<float>(r.output(0, 0, i, 0)))) << i;
      if (path.options.need_weights) {
        EXPECT_TRUE(row_is(r.weights, 0, 0, i, false)) << i;  // the weights do not read v
      }
    }
  }
}

TYPED_TEST(NonFinite, InfiniteAndNaNBiases) {
  using T = TypeParam;
  const index_t L = 24;
  const auto q = random<T>(1, 1, L, 16, 10), k = random<T>(1, 1, L, 16, 11), v = random<T>(1, 1, L, 16, 12);
  // -inf on key 7 for every row is key padding of key 7: the same weights, bit for bit
  Tensor<T, 4> bias({1, 1, L, L});
  Tensor<bool, 2> pad({1, L});
  pad(0, 7) = true;
  for (index_t i = 0; i < L; ++i) bias(0, 0, i, 7) = static_cast<T>(-inf);
  const heed::AttentionOptions options{.need_weights = true, .block_q = 16, .block_k = 16};
  const auto biased = heed::attention(q, k, v, heed::ScaledDot{}, heed::mask::Bias{bias}, options);
  const auto padded = heed::attention(q, k, v, heed::ScaledDot{}, heed::mask::KeyPadding{pad}, options);
  for (index_t i = 0; i < L; ++i) {
    EXPECT_EQ(static_cast<float>(biased.weights(0, 0, i, 7)), 0.0f);
    for (index_t c = 0; c < 16; ++c)
      EXPECT_EQ(static_cast<float>(biased.output(0, 0, i, c)), static_cast<float>(padded.output(0, 0, i, c)));
  }
  // +inf or NaN in a row's bias: that row is NaN, the others are untouched
  bias(0, 0, 3, 1) = static_cast<T>(inf);
  bias(0, 0, 20, 0) = static_cast<T>(nan);
  const auto poisoned = heed::attention(q, k, v, heed::ScaledDot{}, heed::mask::Bias{bias}, options);
  for (index_t i = 0; i < L; ++i) {
    const bool hit = i == 3 || i == 20;
    EXPECT_TRUE(row_is(poisoned.output, 0, 0, i, hit)) << i;
    EXPECT_TRUE(row_is(poisoned.weights, 0, 0, i, hit)) << i;
  }
}

// heed::softmax follows the same rules: a NaN anywhere in a row, even among -inf, makes the row NaN;
// a row of -inf is 0 (or NaN under MaskedRows::nan); a +inf makes its row NaN.
TYPED_TEST(NonFinite, SoftmaxRows) {
  using T = TypeParam;
  Tensor<T, 2> x({4, 40});
  for (index_t i = 0; i < 4; ++i)
    for (index_t j = 0; j < 40; ++j) x(i, j) = static_cast<T>(i == 2 ? -inf : 0.1 * static_cast<double>(j % 7));
  x(0, 33) = static_cast<T>(nan);
  x(1, 5) = static_cast<T>(inf);
  Tensor<T, 2> masked_nan = x;
  masked_nan(3, 0) = static_cast<T>(nan);
  for (index_t j = 1; j < 40; ++j) masked_nan(3, j) = static_cast<T>(-inf);
  for (const auto rows : {heed::MaskedRows::zero, heed::MaskedRows::nan}) {
    const auto y = heed::softmax(masked_nan, {.masked_rows = rows});
    for (index_t j = 0; j < 40; ++j) {
      EXPECT_TRUE(std::isnan(static_cast<float>(y(0, j)))) << j;
      EXPECT_TRUE(std::isnan(static_cast<float>(y(1, j)))) << j;
      EXPECT_TRUE(std::isnan(static_cast<float>(y(3, j)))) << j;
      if (rows == heed::MaskedRows::zero)
        EXPECT_EQ(static_cast<float>(y(2, j)), 0.0f) << j;
      else
        EXPECT_TRUE(std::isnan(static_cast<float>(y(2, j)))) << j;
    }
  }
}

// Every key hidden from a row: 0, or NaN under MaskedRows::nan, through each path, and through
// a block layout whose query block 1 attends no block.
TYPED_TEST(NonFinite, FullyMaskedRowsAreZeroOrNaNInEveryPath) {
  using T = TypeParam;
  for (const auto rows : {heed::MaskedRows::zero, heed::MaskedRows::nan}) {
    for (Path path : paths()) {
      SCOPED_TRACE(path.name);
      path.options.masked_rows = rows;
      const auto q = random<T>(2, 2, path.lq, 16, 13), k = random<T>(2, 2, path.lk, 16, 14),
                 v = random<T>(2, 2, path.lk, 16, 15);
      Tensor<bool, 2> pad({2, path.lk});
      for (index_t j = 0; j < path.lk; ++j) pad(1, j) = true;  // batch 1 sees nothing
      const auto r = heed::attention(q, k, v, heed::ScaledDot{}, heed::mask::KeyPadding{pad}, path.options);
      for (index_t h = 0; h < 2; ++h)
        for (index_t i = 0; i < path.lq; ++i) {
          EXPECT_TRUE(row_is(r.output, 0, h, i, false));
          EXPECT_TRUE(row_is(r.output, 1, h, i, rows == heed::MaskedRows::nan));
          if (rows == heed::MaskedRows::zero) {
            for (index_t c = 0; c < 16; ++c) EXPECT_EQ(static_cast<float>(r.output(1, h, i, c)), 0.0f);
          }
        }
    }
    SCOPED_TRACE("block layout");
    const index_t L = 48, block = 16;
    const auto q = random<T>(1, 1, L, 16, 16), k = random<T>(1, 1, L, 16, 17), v = random<T>(1, 1, L, 16, 18);
    Tensor<bool, 2> layout({3, 3});
    layout(0, 0) = layout(2, 0) = layout(2, 2) = true;  // query block 1: nothing
    const auto r = heed::attention(q, k, v, heed::ScaledDot{}, heed::mask::BlockSparse{layout, block},
                                   {.need_weights = true, .masked_rows = rows});
    for (index_t i = 0; i < L; ++i) {
      const bool empty = i >= block && i < 2 * block;
      EXPECT_TRUE(row_is(r.output, 0, 0, i, empty && rows == heed::MaskedRows::nan)) << i;
      if (empty && rows == heed::MaskedRows::zero) {
        for (index_t c = 0; c < 16; ++c) EXPECT_EQ(static_cast<float>(r.output(0, 0, i, c)), 0.0f);
      }
    }
  }
}

}  // namespace
