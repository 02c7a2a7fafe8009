// PositionalEncoding against the seed's sinusoidal table (PyTorch 1.13 fixtures), and
// LearnedPositionalEmbedding.
#include <gtest/gtest.h>

#include <cmath>

#include "heed/nn/learned_positional_embedding.hpp"
#include "heed/nn/positional_encoding.hpp"
#include "support/compare.hpp"
#include "support/golden.hpp"

namespace {

using heed::index_t;
using heed::test::all_close;
using namespace heed::nn;

TEST(PositionalEncodingGolden, TheSeedsSinusoidalTable) {
  const auto fx = heed::test::golden("seed_modules");
  for (index_t d : {24, 128}) {
    const PositionalEncoding<float> pe({.d_model = d});
    const auto expected = fx.get<float, 3>("pe" + std::to_string(d));
    EXPECT_EQ(pe.pe().shape(), (heed::Shape<3>{1, 5000, d}));
    const auto ok = all_close(pe.pe().view().slice(1, 0, expected.size(1)), expected, {2e-6, 2e-6});
    std::printf("pe d=%ld: %s\n", static_cast<long>(d), ok.message());
    EXPECT_TRUE(ok);
  }
  const PositionalEncoding<float> pe({.d_model = 24, .max_len = 10});
  EXPECT_THROW((void)pe(heed::randn<float>({1, 11, 24}, 1)), heed::ShapeError);
  EXPECT_THROW((void)pe(heed::randn<float>({1, 5, 20}, 1)), heed::ShapeError);
}

TEST(PositionalEmbedding, LearnedAddsTheTrainedRows) {
  TensorDict d;
  const auto table = heed::randn<float>({10, 4}, 3);
  d.set("pos.weight", table);
  LearnedPositionalEmbedding<float> pos({.max_len = 10, .d_model = 4});
  pos.load(d, "pos.", {.strict = true});
  const auto x = heed::randn<float>({2, 6, 4}, 4);
  const auto y = pos(x);
  for (index_t b = 0; b < 2; ++b)
    for (index_t t = 0; t < 6; ++t)
      for (index_t c = 0; c < 4; ++c) EXPECT_EQ(y(b, t, c), x(b, t, c) + table(t, c));
  EXPECT_THROW((void)pos(heed::randn<float>({1, 11, 4}, 5)), heed::ShapeError);
}

}  // namespace
