// Properties of the driver that hold whatever the numbers: distributions, invariances, the
// fully-masked-row policy, skipped tiles, user-written score policies, and input validation.
#include <atomic>
#include <numeric>
#include <string>

#include "kernels/attention_cases.hpp"

namespace {

using heed::index_t;
using heed::Tensor;
using namespace heed::test;

TEST(AttentionProperties, WeightRowsSumToOne) {
  const Inputs<float> in({2, 3, 37, 53, 16, 16});
  for (MaskKind m :
       {MaskKind::none, MaskKind::causal, MaskKind::sliding_window, MaskKind::bias, MaskKind::causal_and_padding}) {
    in.with_mask(m, [&](const auto& mask, const auto&) {
      const auto r = heed::attention(in.q, in.k, in.v, heed::ScaledDot{}, mask,
                                     {.need_weights = true, .block_q = 8, .block_k = 16});
      for (index_t b = 0; b < 2; ++b)
        for (index_t h = 0; h < 3; ++h)
          for (index_t i = 0; i < 37; ++i) {
            double total = 0;
            for (index_t j = 0; j < 53; ++j) total += r.weights(b, h, i, j);
            EXPECT_NEAR(total, 1.0, 1e-5) << name(m) << " row " << i;
          }
    });
  }
}

TEST(AttentionProperties, PermutingKeysAndValuesTogetherChangesNothing) {
  const Inputs<double> in({2, 2, 19, 41, 8, 8});
  std::vector<index_t> perm(41);
  std::iota(perm.begin(), perm.end(), 0);
  for (std::size_t i = 0; i < perm.size(); ++i) std::swap(perm[i], perm[(i * 17 + 5) % perm.size()]);
  Tensor<double, 4> k(in.k.shape()), v(in.v.shape());
  Tensor<bool, 2> pad(in.padding.shape());
  for (index_t b = 0; b < 2; ++b) {
    for (index_t j = 0; j < 41; ++j) pad(b, j) = in.padding(b, perm[static_cast<std::size_t>(j)]);
    for (index_t h = 0; h < 2; ++h)
      for (index_t j = 0; j < 41; ++j)
        for (index_t c = 0; c < 8; ++c) {
          k(b, h, j, c) = in.k(b, h, perm[static_cast<std::size_t>(j)], c);
          v(b, h, j, c) = in.v(b, h, perm[static_cast<std::size_t>(j)], c);
        }
  }
  const heed::AttentionOptions small{.block_q = 4, .block_k = 8};
  const auto a = heed::attention(in.q, in.k, in.v, heed::ScaledDot{}, heed::mask::KeyPadding{in.padding}, small);
  const auto b = heed::attention(in.q, k, v, heed::ScaledDot{}, heed::mask::KeyPadding{pad}, small);
  EXPECT_TRUE(all_close(a.output, b.output, {1e-12, 1e-13}));
}

TEST(AttentionProperties, FullyMaskedRowsFollowThePolicy) {
  const Inputs<float> in({2, 2, 9, 12, 8, 8});
  Tensor<bool, 2> pad({2, 12});
  for (index_t j = 0; j < 12; ++j) pad(1, j) = true;  // batch 1: every key is padding
  for (auto policy : {heed::MaskedRows::zero, heed::MaskedRows::nan}) {
    const auto r = heed::attention(in.q, in.k, in.v, heed::ScaledDot{}, heed::mask::KeyPadding{pad},
                                   {.need_weights = true, .masked_rows = policy, .block_k = 4});
    for (index_t h = 0; h < 2; ++h)
      for (index_t i = 0; i < 9; ++i) {
        for (index_t c = 0; c < 8; ++c) {
          if (policy == heed::MaskedRows::nan) {
            EXPECT_TRUE(std::isnan(r.output(1, h, i, c)));
          } else {
            EXPECT_EQ(r.output(1, h, i, c), 0.0f);
          }
          EXPECT_FALSE(std::isnan(r.output(0, h, i, c)));  // batch 0 is untouched
        }
        for (index_t j = 0; j < 12; ++j) {
          if (policy == heed::MaskedRows::nan) {
            EXPECT_TRUE(std::isnan(r.weights(1, h, i, j)));
          } else {
            EXPECT_EQ(r.weights(1, h, i, j), 0.0f);
          }
        }
      }
  }
  // No keys at all: every row is fully masked.
  const auto empty_k = heed::randn<float>({1, 1, 0, 8}, 1);
  const auto r = heed::attention(heed::randn<float>({1, 1, 3, 8}, 2), empty_k, empty_k);
  for (index_t i = 0; i < r.output.numel(); ++i) EXPECT_EQ(r.output.data()[i], 0.0f);
}

// A user-written score policy that counts the scores it is asked for, to see that blocked
// tiles never reach the scorer (the driver may ask for several visited tiles in a row at once).
struct CountingDot {
  std::atomic<index_t>* tiles;
  void check(const heed::Shape<4>& q, const heed::Shape<4>& k) const { heed::ScaledDot{}.check(q, k); }
  template <class T>
  auto bind(const heed::TensorView<const T, 4>& q, const heed::TensorView<const T, 4>& k) const {
    struct Scorer {
      decltype(heed::ScaledDot{}.bind<T>(q, k)) dot;
      std::atomic<index_t>* tiles;
      void scores(const heed::TileRef& t, T* s, index_t ld) const {
        *tiles += t.ni * t.nj;
        dot.scores(t, s, ld);
      }
    };
    return Scorer{heed::ScaledDot{}.bind<T>(q, k), tiles};
  }
};
static_assert(heed::ScorePolicy<CountingDot, float>);

TEST(AttentionProperties, BlockedTilesAreSkipped) {
  const auto q = heed::randn<float>({1, 2, 256, 16}, 1), k = heed::randn<float>({1, 2, 256, 16}, 2);
  std::atomic<index_t> computed{0};
  heed::AttentionStats stats;
  const heed::AttentionOptions opts{.block_q = 64, .block_k = 64, .stats = &stats};
  const auto r = heed::attention(q, k, k, CountingDot{&computed}, heed::mask::Causal{}, opts);
  // 4 x 4 tiles per head: 6 above the diagonal blocked, 4 on it partial, 6 below open.
  EXPECT_EQ(stats.blocked, 2 * 6);
  EXPECT_EQ(stats.partial, 2 * 4);
  EXPECT_EQ(stats.open, 2 * 6);
  EXPECT_EQ(computed.load(), (stats.open + stats.partial) * 64 * 64);
  EXPECT_TRUE(all_close(r.output, heed::attention(q, k, k, heed::ScaledDot{}, heed::mask::Causal{}).output));

  // Sliding window of 16 keys over 256: each row of tiles touches at most 2 of 4 key tiles.
  computed = 0;
  (void)heed::attention(q, k, k, CountingDot{&computed}, heed::mask::SlidingWindow{.left = 15}, opts);
  EXPECT_EQ(stats.blocked, 2 * (16 - 7));
  EXPECT_EQ(computed.load(), 2 * 7 * 64 * 64);

  // A batch whose last 128 keys are padding: those two key tiles are skipped for every query tile.
  Tensor<bool, 2> pad({1, 256});
  for (index_t j = 128; j < 256; ++j) pad(0, j) = true;
  (void)heed::attention(q, k, k, heed::ScaledDot{}, heed::mask::KeyPadding{pad}, opts);
  EXPECT_EQ(stats.blocked, 2 * 4 * 2);
  EXPECT_EQ(stats.open, 2 * 4 * 2);

  // A call that computes nothing (no query rows, or no keys) counts no tile: the counts of the
  // previous call do not stay.
  (void)heed::attention(q.view().slice(2, 0, 0), k, k, heed::ScaledDot{}, heed::mask::None{}, opts);
  EXPECT_EQ(stats.open + stats.partial + stats.blocked, 0);
  (void)heed::attention(q, k, k, heed::ScaledDot{}, heed::mask::None{}, opts);
  EXPECT_GT(stats.open, 0);
  (void)heed::attention(q, k.view().slice(2, 0, 0), k.view().slice(2, 0, 0), heed::ScaledDot{}, heed::mask::None{},
                        opts);
  EXPECT_EQ(stats.open + stats.partial + stats.blocked, 0);
}

// A user-written scorer that reads k at the tile's key/value head t.hk, as the driver hands it:
// with grouped heads, every query head must find the key head its group reads.
struct KeyHeadDot {
  std::atomic<index_t>* wrong_heads;
  index_t group;  // query heads per key/value head, to check the driver's hk
  void check(const heed::Shape<4>& q, const heed::Shape<4>& k) const { heed::ScaledDot{}.check(q, k); }
  template <class T>
  auto bind(const heed::TensorView<const T, 4>& q, const heed::TensorView<const T, 4>& k) const {
    struct Scorer {
      heed::TensorView<const T, 4> q, k;
      std::atomic<index_t>* wrong_heads;
      index_t group;
      void scores(const heed::TileRef& t, T* s, index_t ld) const {
        if (t.hk != t.h / group) ++*wrong_heads;
        const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(3)));
        for (index_t i = 0; i < t.ni; ++i)
          for (index_t j = 0; j < t.nj; ++j) {
            double dot = 0;
            for (index_t c = 0; c < q.size(3); ++c) dot += double{q(t.b, t.h, t.i0 + i, c)} * k(t.b, t.hk, t.j0 + j, c);
            s[i * ld + j] = static_cast<T>(dot * scale);
          }
      }
    };
    return Scorer{q, k, wrong_heads, group};
  }
};

TEST(AttentionProperties, TilesCarryTheirKeyValueHead) {
  // 6 query heads over 2 key/value heads; 40 query rows take the tiled loop, 1 row against 520
  // keys the decode path
  for (const index_t rows : {index_t{40}, index_t{1}}) {
    const auto q = heed::randn<double>({2, 6, rows, 8}, 1), k = heed::randn<double>({2, 2, 520, 8}, 2),
               v = heed::randn<double>({2, 2, 520, 5}, 3);
    std::atomic<index_t> wrong{0};
    const index_t offset = 520 - rows;  // the last query row sees every key
    const auto got = heed::attention(q, k, v, KeyHeadDot{&wrong, 3}, heed::mask::Causal{.offset = offset},
                                     {.block_q = 16, .block_k = 32});
    EXPECT_EQ(wrong.load(), 0) << rows << " query rows";
    const heed::reference::MaskFn causal = [offset](index_t, index_t, index_t i, index_t j) {
      return j <= i + offset ? 0.0 : heed::reference::hidden;
    };
    const auto expected =
        heed::reference::attention(q, k, v, heed::reference::scaled_dot(q, k, 1.0 / std::sqrt(8.0)), causal, false);
    EXPECT_TRUE(all_close(got.output, expected.output, {1e-12, 1e-13})) << rows << " query rows";
  }
}

TEST(AttentionProperties, MasksPreferTheirTileShapesUnlessTheCallerSetsThem) {
  const auto q = heed::randn<float>({1, 2, 256, 16}, 1), k = heed::randn<float>({1, 2, 256, 16}, 2);
  const auto tiles = [&](const auto& mask, heed::AttentionOptions options) {
    heed::AttentionStats stats;
    options.stats = &stats;
    (void)heed::attention(q, k, k, heed::ScaledDot{}, mask, options);
    return stats.open + stats.partial + stats.blocked;
  };
  EXPECT_EQ(heed::mask::Causal{}.preferred_tiles().block_q, 24);
  EXPECT_EQ(tiles(heed::mask::Causal{}, {}), 2 * 11 * 2);  // 24 x 128 tiles: 11 x 2 per head
  EXPECT_EQ(tiles(heed::mask::None{}, {}), 2 * 3 * 1);     // no preference: 96 x 256
  EXPECT_EQ(tiles(heed::mask::Causal{}, {.block_q = 64, .block_k = 64}), 2 * 4 * 4);
  Tensor<bool, 2> pad({1, 256});
  EXPECT_EQ(tiles(heed::mask::all(heed::mask::KeyPadding{pad}, heed::mask::Causal{}), {}), 2 * 11 * 2);
  const heed::TileShape window = heed::mask::SlidingWindow{.left = 15}.preferred_tiles();
  EXPECT_EQ(window.block_k, 32);
  EXPECT_EQ(tiles(heed::mask::SlidingWindow{.left = 15}, {}), 2 * 6 * 8);  // 48 x 32 tiles
}

template <class F>
void expect_shape_error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no ShapeError; expected one mentioning " << needle;
  } catch (const heed::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(AttentionProperties, BadShapesAreShapeErrorsNamingBothShapes) {
  const auto q = heed::randn<float>({2, 3, 5, 8}, 1);
  expect_shape_error(
      [&] {
        (void)heed::attention(q, heed::randn<float>({1, 3, 6, 8}, 2), heed::randn<float>({1, 3, 6, 8}, 3));
      },
      "k [1, 3, 6, 8]");
  expect_shape_error(
      [&] {
        (void)heed::attention(q, heed::randn<float>({2, 4, 6, 8}, 2), heed::randn<float>({2, 4, 6, 8}, 3));
      },
      "q [2, 3, 5, 8]");
  expect_shape_error(
      [&] {
        (void)heed::attention(q, heed::randn<float>({2, 3, 6, 8}, 2), heed::randn<float>({2, 3, 7, 8}, 3));
      },
      "v [2, 3, 7, 8]");
  const auto q6 = heed::randn<float>({2, 6, 5, 8}, 1);
  expect_shape_error(
      [&] {
        (void)heed::attention(q6, heed::randn<float>({2, 4, 6, 8}, 2), heed::randn<float>({2, 4, 6, 8}, 3));
      },
      "the key/value heads (4) do not divide the query heads (6) (q [2, 6, 5, 8], k [2, 4, 6, 8]");
  expect_shape_error(
      [&] {
        (void)heed::attention(q6, heed::randn<float>({2, 3, 6, 8}, 2), heed::randn<float>({2, 2, 6, 8}, 3));
      },
      "k and v have different head counts");
  expect_shape_error(
      [&] {
        (void)heed::attention(q, heed::randn<float>({2, 3, 6, 4}, 2), heed::randn<float>({2, 3, 6, 8}, 3));
      },
      "key depth 4");
  const auto k = heed::randn<float>({2, 3, 6, 8}, 2);
  expect_shape_error(
      [&] {
        (void)heed::attention(q, k, k, heed::ScaledDot{}, heed::mask::Allowed{Tensor<bool, 2>({5, 7})});
      },
      "[5, 7] does not broadcast to the scores [B, H, Lq, Lk] = [2, 3, 5, 6]");
  expect_shape_error(
      [&] {
        (void)heed::attention(q, k, k, heed::ScaledDot{}, heed::mask::Bias{Tensor<float, 4>({2, 2, 5, 6})});
      },
      "[2, 2, 5, 6]");
  expect_shape_error(
      [&] {
        (void)heed::attention(q, k, k, heed::ScaledDot{}, heed::mask::KeyPadding{Tensor<bool, 2>({3, 6})});
      },
      "[3, 6] does not match [B, Lk] = [2, 6]");
  expect_shape_error([&] { (void)heed::attention(q, k, k, heed::ScaledDot{}, heed::mask::SlidingWindow{.left = -1}); },
                     "left = -1");
  const auto w = heed::randn<float>({4, 8}, 5), wbad = heed::randn<float>({4, 7}, 6);
  const auto v = heed::randn<float>({4}, 7);
  expect_shape_error([&] { (void)heed::attention(q, k, k, heed::Additive<float>{.w_q = w, .w_k = wbad, .v = v}); },
                     "w_k has 7 columns, the key depth is 8");
  heed::Tensor<float, 4> out({2, 3, 5, 7});
  expect_shape_error(
      [&] { heed::attention_into<float>(out.view(), {}, q, k, k, heed::ScaledDot{}, heed::mask::None{}); },
      "expected [2, 3, 5, 8]");
}

TEST(AttentionProperties, MasksOwnTemporariesAndViewLvalues) {
  const auto q = heed::randn<float>({1, 1, 4, 8}, 1), k = heed::randn<float>({1, 1, 6, 8}, 2);
  auto make = [] {
    Tensor<bool, 2> allowed({4, 6});
    for (index_t i = 0; i < 4; ++i) allowed(i, i) = true;
    return allowed;
  };
  const heed::mask::Allowed owned{make()};  // the temporary lives inside the mask
  const auto r = heed::attention(q, k, k, heed::ScaledDot{}, owned, {.need_weights = true});
  for (index_t i = 0; i < 4; ++i) EXPECT_EQ(r.weights(0, 0, i, i), 1.0f);
}

}  // namespace
