// mask::Dynamic and mask::CausalPerRow (kernels/dynamic_mask.hpp): every combination of parts
// gives what mask::all of the same parts gives, bit for bit, with the same tile counts; a blocked
// run is jumped over as by the parts alone (next_visible_key); an empty Dynamic is None; the
// checks name the shapes.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>

#include "heed/core/random.hpp"
#include "heed/kernels/attention.hpp"
#include "heed/kernels/dynamic_mask.hpp"
#include "support/compare.hpp"

namespace {

using heed::index_t;
using heed::Tensor;
namespace mask = heed::mask;

constexpr index_t B = 2, H = 2, L = 300, d = 16;

struct Inputs {
  Tensor<float, 4> q = heed::randn<float>({B, H, L, d}, 1), k = heed::randn<float>({B, H, L, d}, 2),
                   v = heed::randn<float>({B, H, L, d}, 3);
  Tensor<bool, 2> padding{{B, L}};
  Tensor<bool, 4> allowed{{B, 1, L, L}};
  Tensor<float, 4> bias = heed::randn<float>({1, H, L, L}, 4);
  Tensor<bool, 2> layout{{(L + 31) / 32, (L + 31) / 32}};
  Inputs() {
    for (index_t b = 0; b < B; ++b)
      for (index_t j = 0; j < L; ++j) padding(b, j) = j % 7 == 3 || (b == 1 && j >= 250);
    const auto coin = heed::uniform<double>({B, 1, L, L}, 0.0, 1.0, 5);
    for (index_t i = 0; i < allowed.numel(); ++i) allowed.data()[i] = coin.data()[i] < 0.8;
    for (index_t i = 0; i < layout.size(0); ++i)
      for (index_t j = 0; j < layout.size(1); ++j) layout(i, j) = i == j || j == 0 || (i * 3 + j) % 5 == 0;
  }
};

bool same_bits(const Tensor<float, 4>& a, const Tensor<float, 4>& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), sizeof(float) * std::size_t(a.numel())) == 0;
}

// heed::attention under `dynamic` and under `fixed` (the same parts as mask::all): the same
// output and weights bit for bit, and the same tile counts.
template <class Fixed>
void expect_same(const Inputs& in, const mask::Dynamic<float>& dynamic, const Fixed& fixed, const char* what) {
  SCOPED_TRACE(what);
  heed::AttentionStats a, b;
  const auto x = heed::attention(in.q, in.k, in.v, heed::ScaledDot{}, dynamic, {.need_weights = true, .stats = &a});
  const auto y = heed::attention(in.q, in.k, in.v, heed::ScaledDot{}, fixed, {.need_weights = true, .stats = &b});
  EXPECT_TRUE(same_bits(x.output, y.output));
  EXPECT_TRUE(same_bits(x.weights, y.weights));
  EXPECT_EQ(a.open, b.open);
  EXPECT_EQ(a.partial, b.partial);
  EXPECT_EQ(a.blocked, b.blocked);
}

TEST(DynamicMask, EachCombinationIsTheIntersectionOfItsParts) {
  const Inputs in;
  const mask::BlockSparse blocks{in.layout, 32};
  {
    mask::Dynamic<float> m;
    expect_same(in, m, mask::None{}, "none");
  }
  {
    mask::Dynamic<float> m;
    m.causal = mask::Causal{};
    m.padding.emplace(in.padding);
    expect_same(in, m, mask::all(mask::Causal{}, mask::KeyPadding{in.padding}), "causal, padding");
  }
  {
    mask::Dynamic<float> m;
    m.causal_per_row = mask::CausalPerRow{{0, -40}};
    m.allowed.emplace(in.allowed);
    m.bias.emplace(in.bias);
    // batch row 0 as Causal{0}, row 1 as Causal{-40} (its first 40 queries see nothing: zeros)
    const auto x = heed::attention(in.q, in.k, in.v, heed::ScaledDot{}, m, {.need_weights = true});
    const auto y0 = heed::attention(in.q, in.k, in.v, heed::ScaledDot{},
                                    mask::all(mask::Causal{0}, mask::Allowed{in.allowed}, mask::Bias{in.bias}));
    const auto y1 = heed::attention(in.q, in.k, in.v, heed::ScaledDot{},
                                    mask::all(mask::Causal{-40}, mask::Allowed{in.allowed}, mask::Bias{in.bias}));
    for (index_t h = 0; h < H; ++h)
      for (index_t i = 0; i < L; ++i)
        for (index_t c = 0; c < d; ++c) {
          EXPECT_EQ(x.output(0, h, i, c), y0.output(0, h, i, c));
          EXPECT_EQ(x.output(1, h, i, c), y1.output(1, h, i, c));
        }
  }
  {
    mask::Dynamic<float> m;
    m.sparse = mask::Sparse{.window = mask::SlidingWindow{20, 20}, .blocks = blocks};
    m.padding.emplace(in.padding);
    expect_same(in, m, mask::all(mask::any(mask::SlidingWindow{20, 20}, blocks), mask::KeyPadding{in.padding}),
                "sparse, padding");
  }
}

TEST(DynamicMask, JumpsOverABlockedRunAsItsPartsDo) {
  const Inputs in;
  const mask::BlockSparse blocks{in.layout, 32};
  mask::Dynamic<float> m;
  m.sparse = mask::Sparse{.blocks = blocks};
  m.causal = mask::Causal{};
  // the key tiles of query rows [96, 128): where one is blocked, the Dynamic resumes where the part
  // that blocks it does (the furthest of them)
  index_t blocked = 0;
  for (index_t j0 = 0; j0 < L; j0 += 32) {
    const heed::TileRef t{0, 0, 96, 32, j0, std::min<index_t>(32, L - j0), 0};
    if (m.classify(t) != mask::Tile::blocked) continue;
    ++blocked;
    // blocked by the layout: resume where the layout resumes; by causality: nothing further
    const index_t expected = mask::Causal{}.classify(t) == mask::Tile::blocked
                                 ? mask::no_visible_key
                                 : mask::next_visible_key(mask::Sparse{.blocks = blocks}, t);
    EXPECT_EQ(m.next_visible_key(t), expected) << "tile at key " << j0;
    EXPECT_GT(m.next_visible_key(t), t.j0 + t.nj - 1);
  }
  EXPECT_GE(blocked, 3);  // blocks 1 and 2 by the layout, 4 and on by causality
}

TEST(DynamicMask, ChecksNameTheShapes) {
  mask::Dynamic<float> m;
  m.causal_per_row = mask::CausalPerRow{{0, 1, 2}};
  try {
    m.check({2, 1, 4, 4});
    FAIL() << "three offsets for two batch rows passed";
  } catch (const heed::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("3 offsets for the scores [2, 1, 4, 4]"), std::string::npos) << e.what();
  }
  const Inputs in;
  mask::Dynamic<float> padded;
  padded.padding.emplace(in.padding);
  EXPECT_THROW(padded.check({3, 1, L, L}), heed::ShapeError);
}

}  // namespace
