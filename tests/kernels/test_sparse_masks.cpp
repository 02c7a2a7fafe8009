// The sparse patterns of kernels/sparse_masks.hpp: each mask's tiles against its element-wise
// definition, attention through them against the double reference (odd lengths and blocks,
// heads, batch, grouped heads, with and without weights, one and two threads, the decode path,
// 16-bit storage, on AVX-512 BF16 pair products in the @bf16 build), the tile counts that prove
// blocked tiles are skipped, BigBird's layout, and the errors for bad input.
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "heed/core/cast.hpp"
#include "heed/simd/attention_kernel.hpp"
#include "kernels/attention_cases.hpp"

namespace {

using heed::index_t;
using heed::Tensor;
using namespace heed::test;
namespace mask = heed::mask;
namespace reference = heed::reference;
using reference::hidden;

// A layout with a fixed pattern of allowed blocks: diagonal, plus (bi + 2·bj) % 3 == 0.
Tensor<bool, 4> test_layout(index_t B, index_t H, index_t nbq, index_t nbk) {
  Tensor<bool, 4> layout({B, H, nbq, nbk});
  for (index_t b = 0; b < B; ++b)
    for (index_t h = 0; h < H; ++h)
      for (index_t i = 0; i < nbq; ++i)
        for (index_t j = 0; j < nbk; ++j) layout(b, h, i, j) = i == j || (i + 2 * j + b + h) % 3 == 0;
  return layout;
}

// Global tokens: positions 0 and 5 of every row; row 1 also the last position.
Tensor<bool, 2> test_tokens(index_t B, index_t L) {
  Tensor<bool, 2> tokens({B, L});
  for (index_t b = 0; b < B; ++b)
    for (index_t i = 0; i < L; ++i) tokens(b, i) = i == 0 || i == 5 || (b == 1 && i == L - 1);
  return tokens;
}

// The sparse masks under test, each with its element-wise definition, for scores [B, H, L, L].
struct SparseCases {
  index_t B, H, L, block;
  Tensor<bool, 4> layout;   // [B, H, nb, nb]
  Tensor<bool, 2> layout2;  // [nb, nb]
  Tensor<bool, 2> tokens;   // [B, L]
  Tensor<bool, 2> bigbird;  // [nb, nb]

  SparseCases(index_t b, index_t h, index_t l, index_t blk)
      : B(b),
        H(h),
        L(l),
        block(blk),
        layout(test_layout(B, H, (L + block - 1) / block, (L + block - 1) / block)),
        layout2(Tensor<bool, 2>({(L + block - 1) / block, (L + block - 1) / block})),
        tokens(test_tokens(B, L)),
        bigbird(mask::bigbird_layout((L + block - 1) / block, {.window = 3, .global = 2, .random = 1, .seed = 7})) {
    for (index_t i = 0; i < layout2.size(0); ++i)
      for (index_t j = 0; j < layout2.size(1); ++j) layout2(i, j) = j <= i;  // block-causal
  }

  static constexpr const char* names[] = {"block_sparse",  "block_sparse_2d",  "block_sparse_per_head",
                                          "global_tokens", "longformer",       "bigbird",
                                          "sparse_window", "sparse_all_parts", "longformer_and_padding"};

  // f(heed_mask, definition) for case c.
  template <class F>
  void with(int c, F&& f) const {
    const index_t blk = block;
    const auto& lay = layout;
    const auto& lay2 = layout2;
    const auto& tok = tokens;
    const auto& bb = bigbird;
    const auto in_window = [](index_t i, index_t j) { return j >= i - 4 && j <= i + 4; };
    switch (c) {
      case 0:
        return f(mask::BlockSparse{lay, blk},
                 reference::MaskFn([&lay, blk](index_t b, index_t h, index_t i, index_t j) {
                   return lay(b, h, i / blk, j / blk) ? 0.0 : hidden;
                 }));
      case 1:
        return f(mask::BlockSparse{lay2, blk}, reference::MaskFn([&lay2, blk](index_t, index_t, index_t i, index_t j) {
                   return lay2(i / blk, j / blk) ? 0.0 : hidden;
                 }));
      case 2: {  // [H, nb, nb]: batch 0's layout for every batch row
        Tensor<bool, 3> per_head({H, lay.size(2), lay.size(3)});
        for (index_t h = 0; h < H; ++h)
          for (index_t i = 0; i < lay.size(2); ++i)
            for (index_t j = 0; j < lay.size(3); ++j) per_head(h, i, j) = lay(0, h, i, j);
        return f(mask::BlockSparse{std::move(per_head), blk},
                 reference::MaskFn([&lay, blk](index_t, index_t h, index_t i, index_t j) {
                   return lay(0, h, i / blk, j / blk) ? 0.0 : hidden;
                 }));
      }
      case 3:
        return f(mask::GlobalTokens{tok}, reference::MaskFn([&tok](index_t b, index_t, index_t i, index_t j) {
                   return tok(b, i) || tok(b, j) ? 0.0 : hidden;
                 }));
      case 4:
        return f(mask::any(mask::SlidingWindow{4, 4}, mask::GlobalTokens{tok}),
                 reference::MaskFn([&tok, in_window](index_t b, index_t, index_t i, index_t j) {
                   return in_window(i, j) || tok(b, i) || tok(b, j) ? 0.0 : hidden;
                 }));
      case 5:
        return f(mask::BlockSparse{bb, blk}, reference::MaskFn([&bb, blk](index_t, index_t, index_t i, index_t j) {
                   return bb(i / blk, j / blk) ? 0.0 : hidden;
                 }));
      case 6:
        return f(mask::Sparse{.window = mask::SlidingWindow{4, 4}},
                 reference::MaskFn(
                     [in_window](index_t, index_t, index_t i, index_t j) { return in_window(i, j) ? 0.0 : hidden; }));
      case 7:
        return f(mask::Sparse{.window = mask::SlidingWindow{2, 0},
                              .global = mask::GlobalTokens{tok},
                              .blocks = mask::BlockSparse{lay, blk}},
                 reference::MaskFn([&tok, &lay, blk](index_t b, index_t h, index_t i, index_t j) {
                   const bool shown = (j >= i - 2 && j <= i) || tok(b, i) || tok(b, j) || lay(b, h, i / blk, j / blk);
                   return shown ? 0.0 : hidden;
                 }));
      case 8: {  // Longformer with the last third of batch 0's keys padded: all(any(...), padding)
        Tensor<bool, 2> pad({B, L});
        for (index_t j = L - L / 3; j < L; ++j) pad(0, j) = true;
        const auto def = [tok = Tensor<bool, 2>(tok), pad, in_window](index_t b, index_t, index_t i, index_t j) {
          return (in_window(i, j) || tok(b, i) || tok(b, j)) && !pad(b, j) ? 0.0 : hidden;
        };
        return f(mask::all(mask::any(mask::SlidingWindow{4, 4}, mask::GlobalTokens{tok}), mask::KeyPadding{pad}),
                 reference::MaskFn(def));
      }
      default:
        FAIL() << "no case " << c;
    }
  }
  static constexpr int count = 9;
};

// Only visibility masks may go inside a union (mask::any).
static_assert(mask::adds_bias<mask::ALiBi> && mask::adds_bias<mask::Bias<float>>);
static_assert(mask::adds_bias<mask::AllOf<mask::Causal, mask::Bias<double>>>);
static_assert(!mask::adds_bias<mask::SlidingWindow> && !mask::adds_bias<mask::BlockSparse> &&
              !mask::adds_bias<mask::AllOf<mask::Causal, mask::KeyPadding>>);

TEST(SparseMasks, ClassifyAndApplyAgreeWithTheDefinition) {
  const SparseCases cases(2, 2, 45, 7);
  for (int c = 0; c < SparseCases::count; ++c) {
    cases.with(c, [&](const auto& m, const reference::MaskFn& definition) {
      SCOPED_TRACE(SparseCases::names[c]);
      m.check({2, 2, 45, 45});
      for (index_t bq : {1, 7, 9, 45})
        for (index_t bk : {3, 7, 14, 45})
          for (index_t b = 0; b < 2; ++b)
            for (index_t h = 0; h < 2; ++h)
              for (index_t i0 = 0; i0 < 45; i0 += bq)
                for (index_t j0 = 0; j0 < 45; j0 += bk) {
                  const heed::TileRef t{b, h, i0, std::min(bq, 45 - i0), j0, std::min(bk, 45 - j0), h};
                  std::vector<float> s(static_cast<std::size_t>(t.ni * t.nj), 0.0f);
                  const auto kind = m.classify(t);
                  if (kind != mask::Tile::open) m.apply(t, s.data(), t.nj);
                  bool all_hidden = true, none_hidden = true;
                  for (index_t i = 0; i < t.ni; ++i)
                    for (index_t j = 0; j < t.nj; ++j) {
                      const bool expect_hidden = std::isinf(definition(b, h, i0 + i, j0 + j));
                      all_hidden = all_hidden && expect_hidden;
                      none_hidden = none_hidden && !expect_hidden;
                      if (kind == mask::Tile::partial) {
                        ASSERT_EQ(std::isinf(s[static_cast<std::size_t>(i * t.nj + j)]), expect_hidden)
                            << "tile " << bq << "x" << bk << " at " << i0 + i << "," << j0 + j;
                      }
                    }
                  if (kind == mask::Tile::blocked) {
                    EXPECT_TRUE(all_hidden) << i0 << "," << j0;
                  }
                  if (kind == mask::Tile::open) {
                    EXPECT_TRUE(none_hidden) << i0 << "," << j0;
                  }
                  // block layouts and global tokens classify exactly (unions may call a tile that
                  // their parts cover together partial)
                  if (c <= 3 && kind == mask::Tile::partial) {
                    EXPECT_FALSE(all_hidden || none_hidden);
                  }
                }
    });
  }
}

// After a blocked tile the driver resumes at mask::next_visible_key: every key it jumps over
// must be hidden from every query of the tile, and the masks that know their next visible key
// must let it jump (else the hook is dead code).
template <class M>
index_t expect_skips_hidden_keys(const M& m, const reference::MaskFn& definition, index_t L) {
  index_t skipped = 0;
  for (index_t bq : {1, 7, 16})
    for (index_t bk : {3, 7, 16})
      for (index_t b = 0; b < 2; ++b)
        for (index_t h = 0; h < 2; ++h)
          for (index_t i0 = 0; i0 < L; i0 += bq)
            for (index_t j0 = 0; j0 < L; j0 += bk) {
              const heed::TileRef t{b, h, i0, std::min(bq, L - i0), j0, std::min(bk, L - j0), h};
              if (m.classify(t) != mask::Tile::blocked) continue;
              const index_t next = mask::next_visible_key(m, t);
              EXPECT_GE(next, j0 + t.nj);
              for (index_t j = j0 + t.nj; j < std::min(next, L); ++j) {
                ++skipped;
                for (index_t i = i0; i < i0 + t.ni; ++i)
                  if (!std::isinf(definition(b, h, i, j))) {
                    ADD_FAILURE() << "key " << j << " of query " << i << " skipped after tile " << bq << "x" << bk
                                  << " at " << i0 << "," << j0 << ", resuming at " << next;
                    return skipped;
                  }
              }
            }
  return skipped;
}

TEST(SparseMasks, BlockedTilesResumeAtTheNextVisibleKey) {
  const index_t L = 45;
  const SparseCases cases(2, 2, L, 7);
  for (int c = 0; c < SparseCases::count; ++c)
    cases.with(c, [&](const auto& m, const reference::MaskFn& definition) {
      SCOPED_TRACE(SparseCases::names[c]);
      EXPECT_GT(expect_skips_hidden_keys(m, definition, L), 0);
    });
  const reference::MaskFn causal([](index_t, index_t, index_t i, index_t j) { return j <= i + 3 ? 0.0 : hidden; });
  EXPECT_GT(expect_skips_hidden_keys(mask::Causal{3}, causal, L), 0);
  const auto in_window = [](index_t i, index_t j) { return j >= i - 4 - 5 && j <= i - 4 + 2; };
  EXPECT_GT(
      expect_skips_hidden_keys(
          mask::SlidingWindow{5, 2, -4},
          reference::MaskFn([&](index_t, index_t, index_t i, index_t j) { return in_window(i, j) ? 0.0 : hidden; }), L),
      0);
  const reference::MaskFn causal_window(
      [](index_t, index_t, index_t i, index_t j) { return j <= i && j >= i - 6 ? 0.0 : hidden; });
  EXPECT_GT(expect_skips_hidden_keys(mask::all(mask::Causal{}, mask::SlidingWindow{6, 0}), causal_window, L), 0);
}

// heed against the double reference for every case, options varied across the calls.
template <class T>
void expect_cases_match(const Dims& dims, index_t block, std::uint64_t seed) {
  const Inputs<T> in(dims, seed);
  const SparseCases cases(dims.B, dims.H, dims.Lq, block);
  const auto qd = reference::to_double(in.q), kd = reference::to_double(in.k), vd = reference::to_double(in.v);
  const auto score = reference::scaled_dot(qd, kd, 1.0 / std::sqrt(double(dims.d)));
  for (int c = 0; c < SparseCases::count; ++c)
    cases.with(c, [&](const auto& m, const reference::MaskFn& definition) {
      const auto expected = reference::attention(qd, kd, vd, score, definition, false);  // once per case
      for (int variant = 0; variant < 3; ++variant) {
        const heed::AttentionOptions options{.need_weights = variant == 1,
                                             .num_threads = 1 + variant % 2,
                                             .block_q = variant == 2 ? 16 : 0,
                                             .block_k = variant == 2 ? 32 : 0};
        SCOPED_TRACE(std::string(SparseCases::names[c]) + ", L " + std::to_string(dims.Lq) + ", block " +
                     std::to_string(block) + ", variant " + std::to_string(variant));
        const auto got = heed::attention(in.q, in.k, in.v, heed::ScaledDot{}, m, options);
        EXPECT_TRUE(all_close(got.output, expected.output, attention_tolerance<T>()));
        if (options.need_weights) {
          EXPECT_TRUE(all_close(got.weights, expected.weights, attention_tolerance<T>()));
        }
      }
    });
}

TEST(SparseMasks, AttentionMatchesTheReference) {
  expect_cases_match<float>({.B = 2, .H = 2, .Lq = 75, .Lk = 75, .d = 16, .dv = 12}, 16, 3);
  expect_cases_match<float>({.B = 2, .H = 2, .Lq = 130, .Lk = 130, .d = 64, .dv = 64}, 24, 4);
  expect_cases_match<double>({.B = 2, .H = 2, .Lq = 61, .Lk = 61, .d = 8, .dv = 8}, 9, 5);
  // a last query tile of one row, and value columns past the micro-kernel's blocks, on spans of
  // several runs
  expect_cases_match<float>({.B = 1, .H = 2, .Lq = 65, .Lk = 65, .d = 16, .dv = 20}, 16, 13);
}

TEST(SparseMasks, GroupedHeadsReadTheirGroupsKeys) {
  expect_cases_match<float>({.B = 2, .H = 4, .Lq = 67, .Lk = 67, .d = 32, .dv = 32, .Hkv = 2}, 16, 6);
}

TEST(SparseMasks, SixteenBitStorageStaysWithinItsBound) {
  // the bound of test_attention_16bit.cpp: the output's rounding to bfloat16 plus float's, and
  // where the tiles run on pair products (the @bf16 build), P's rounding: u·Σ_j p_j·|v_j|. The
  // block layouts leave blocked tiles between visited ones, so a span gathers several runs.
  const Inputs<float> in({.B = 2, .H = 2, .Lq = 90, .Lk = 90, .d = 32, .dv = 32}, 8);
  const auto q = heed::cast<heed::bfloat16>(in.q), k = heed::cast<heed::bfloat16>(in.k),
             v = heed::cast<heed::bfloat16>(in.v);
  const auto qd = reference::to_double(q), kd = reference::to_double(k), vd = reference::to_double(v);
  auto vabs = vd;
  for (index_t i = 0; i < vabs.numel(); ++i) vabs.data()[i] = std::abs(vabs.data()[i]);
  const double u = 0x1p-8, pairs = heed::cpu_info().bf16_pairs ? 1.0 : 0.0;
  const SparseCases cases(2, 2, 90, 16);
  for (int c : {0, 4, 5, 7})
    cases.with(c, [&](const auto& m, const reference::MaskFn& definition) {
      SCOPED_TRACE(SparseCases::names[c]);
      const auto score = reference::scaled_dot(qd, kd, 1.0 / std::sqrt(32.0));
      const auto expected = reference::attention(qd, kd, vd, score, definition, false);
      const auto spread = reference::attention(qd, kd, vabs, score, definition, false).output;
      for (int threads : {1, 2}) {
        const auto got = heed::attention(q, k, v, heed::ScaledDot{}, m, {.num_threads = threads});
        index_t worse = 0;
        for (index_t i = 0; i < spread.numel(); ++i) {
          const double want = expected.output.data()[i], have = double(static_cast<float>(got.output.data()[i]));
          const double bound = (u + 1e-4) * std::abs(want) + pairs * u * (1 + 1e-4) * spread.data()[i] + 2e-5;
          if (!(std::abs(have - want) <= bound) && worse++ < 3)
            ADD_FAILURE() << "output " << i << ": " << have << " vs " << want << ", bound " << bound;
        }
        EXPECT_EQ(worse, 0);
      }
    });
}

TEST(SparseMasks, LongKeysArePackedOneHeadAtATime) {
  // Lk 8229, d 128: each key/value head's packed keys (and, for pair products, values) pass
  // 4 MiB, so the driver packs and computes one (batch, key/value head) group at a time, in pieces
  // of keys that end before the last, odd key; each head must still read its own keys. (17
  // queries: the fewest that are not a decoding step.)
  const index_t Lk = 8229, block = 64, nbk = (Lk + block - 1) / block;
  const Inputs<float> in({.B = 1, .H = 2, .Lq = 17, .Lk = Lk, .d = 128, .dv = 128}, 12);
  Tensor<bool, 4> layout({1, 2, 1, nbk});
  for (index_t h = 0; h < 2; ++h)
    for (index_t j = 0; j < nbk; ++j) layout(0, h, 0, j) = (j + h) % 3 != 1 || j == nbk - 1;
  const mask::BlockSparse blocks{layout, block};
  const reference::MaskFn definition(
      [&](index_t, index_t h, index_t, index_t j) { return layout(0, h, 0, j / block) ? 0.0 : hidden; });
  const auto qd = reference::to_double(in.q), kd = reference::to_double(in.k), vd = reference::to_double(in.v);
  const auto score = reference::scaled_dot(qd, kd, 1.0 / std::sqrt(128.0));
  const auto sparse = reference::attention(qd, kd, vd, score, definition, false).output;
  // bfloat16 storage, against the rounded inputs, within the bound of SixteenBitStorageStaysWithinItsBound
  const auto q = heed::cast<heed::bfloat16>(in.q), k = heed::cast<heed::bfloat16>(in.k),
             v = heed::cast<heed::bfloat16>(in.v);
  const auto qr = reference::to_double(q), kr = reference::to_double(k), vr = reference::to_double(v);
  auto vabs = vr;
  for (index_t i = 0; i < vabs.numel(); ++i) vabs.data()[i] = std::abs(vabs.data()[i]);
  const auto score_r = reference::scaled_dot(qr, kr, 1.0 / std::sqrt(128.0));
  const auto rounded = reference::attention(qr, kr, vr, score_r, definition, false).output;
  const auto spread = reference::attention(qr, kr, vabs, score_r, definition, false).output;
  const double u = 0x1p-8, pairs = heed::cpu_info().bf16_pairs ? 1.0 : 0.0;
  for (int threads : {1, 2}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    const heed::AttentionOptions options{.num_threads = threads};
    EXPECT_TRUE(all_close(heed::attention(in.q, in.k, in.v, heed::ScaledDot{}, blocks, options).output, sparse,
                          attention_tolerance<float>()));
    const auto got = heed::attention(q, k, v, heed::ScaledDot{}, blocks, options).output;
    index_t worse = 0;
    for (index_t i = 0; i < spread.numel(); ++i) {
      const double want = rounded.data()[i], have = double(static_cast<float>(got.data()[i]));
      const double bound = (u + 1e-4) * std::abs(want) + pairs * u * (1 + 1e-4) * spread.data()[i] + 2e-5;
      if (!(std::abs(have - want) <= bound) && worse++ < 3)
        ADD_FAILURE() << "output " << i << ": " << have << " vs " << want << ", bound " << bound;
    }
    EXPECT_EQ(worse, 0);
  }
}

TEST(SparseMasks, LongHeadsAskAheadWithoutChangingTheResult) {
  // Lk 8229, d 128: a head's K and V pass 8 MiB, so each query tile asks ahead (into L2) for the
  // key tiles its worker's next query tile adds (LookAhead in kernels/detail/look_ahead.hpp):
  // with one worker tiles 0 and 1 ask for 1 and 2, with two workers tile 0 asks for 2. The block
  // rows differ (a window, a random pick, a global row), so each next tile adds tiles of its own.
  const index_t Lq = 150, Lk = 8229, block = 64, nbq = 3, nbk = (Lk + block - 1) / block;
  const Inputs<float> in({.B = 1, .H = 2, .Lq = Lq, .Lk = Lk, .d = 128, .dv = 128}, 14);
  Tensor<bool, 4> layout({1, 2, nbq, nbk});
  for (index_t h = 0; h < 2; ++h)
    for (index_t i = 0; i < nbq; ++i)
      for (index_t j = 0; j < nbk; ++j)
        layout(0, h, i, j) = (i == 2 && h == 1) || std::abs(i - j) <= 1 || (j * 7 + i * 3 + h) % 41 == 0;
  const mask::BlockSparse blocks{layout, block};
  const reference::MaskFn definition(
      [&](index_t, index_t h, index_t i, index_t j) { return layout(0, h, i / block, j / block) ? 0.0 : hidden; });
  const auto qd = reference::to_double(in.q), kd = reference::to_double(in.k), vd = reference::to_double(in.v);
  const auto expected =
      reference::attention(qd, kd, vd, reference::scaled_dot(qd, kd, 1.0 / std::sqrt(128.0)), definition, false);
  for (int threads : {1, 2}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    heed::AttentionStats stats;
    const auto got =
        heed::attention(in.q, in.k, in.v, heed::ScaledDot{}, blocks, {.num_threads = threads, .stats = &stats});
    EXPECT_TRUE(all_close(got.output, expected.output, attention_tolerance<float>()));
    index_t open = 0;
    for (index_t i = 0; i < layout.numel(); ++i) open += layout.data()[i] ? 1 : 0;
    EXPECT_EQ(stats.open, open);  // asking ahead visits nothing
    EXPECT_EQ(stats.partial, 0);
  }
}

TEST(SparseMasks, FewQueriesAgainstManyKeysTakeTheDecodePath) {
  // Lq 3 against Lk 700: the decode path's key ranges, a block layout [1, 22] per head
  const index_t Lk = 700, block = 32, nbk = (Lk + block - 1) / block;
  const Inputs<float> in({.B = 2, .H = 4, .Lq = 3, .Lk = Lk, .d = 64, .dv = 64, .Hkv = 2}, 9);
  Tensor<bool, 4> layout({1, 4, 1, nbk});
  for (index_t h = 0; h < 4; ++h)
    for (index_t j = 0; j < nbk; ++j) layout(0, h, 0, j) = (j + h) % 4 != 0;
  const auto qd = reference::to_double(in.q), kd = reference::to_double(in.k), vd = reference::to_double(in.v);
  const auto expected = reference::attention(
      qd, kd, vd, reference::scaled_dot(qd, kd, 1.0 / 8.0),
      [&](index_t, index_t h, index_t, index_t j) { return layout(0, h, 0, j / block) ? 0.0 : hidden; }, false);
  index_t shown = 0;
  for (index_t i = 0; i < layout.numel(); ++i) shown += layout.data()[i] ? 1 : 0;
  for (int threads : {1, 2}) {
    heed::AttentionStats stats;
    const auto got = heed::attention(in.q, in.k, in.v, heed::ScaledDot{}, mask::BlockSparse{layout, block},
                                     {.num_threads = threads, .stats = &stats});
    EXPECT_TRUE(all_close(got.output, expected.output, attention_tolerance<float>()));
    EXPECT_EQ(stats.open, 2 * shown) << "one 32-key tile per block";
    EXPECT_EQ(stats.blocked, 2 * (4 * nbk - shown));
    EXPECT_EQ(stats.partial, 0);
  }
}

TEST(SparseMasks, EmptyRowBlocksFollowMaskedRows) {
  // query block 1 attends nothing: its rows are 0, or NaN under MaskedRows::nan (PyTorch 1.13)
  const Inputs<float> in({.B = 1, .H = 2, .Lq = 40, .Lk = 40, .d = 8, .dv = 8}, 10);
  Tensor<bool, 2> layout({3, 3}, true);
  for (index_t j = 0; j < 3; ++j) layout(1, j) = false;
  for (auto rows : {heed::MaskedRows::zero, heed::MaskedRows::nan}) {
    const auto got = heed::attention(in.q, in.k, in.v, heed::ScaledDot{}, mask::BlockSparse{layout, 16},
                                     {.need_weights = true, .masked_rows = rows});
    const auto qd = reference::to_double(in.q), kd = reference::to_double(in.k), vd = reference::to_double(in.v);
    const auto expected = reference::attention(
        qd, kd, vd, reference::scaled_dot(qd, kd, 1.0 / std::sqrt(8.0)),
        [&](index_t, index_t, index_t i, index_t j) { return layout(i / 16, j / 16) ? 0.0 : hidden; },
        rows == heed::MaskedRows::nan);
    EXPECT_TRUE(all_close(got.output, expected.output, attention_tolerance<float>()));
    EXPECT_TRUE(all_close(got.weights, expected.weights, attention_tolerance<float>()));
  }
}

TEST(SparseMasks, BlockedTilesAreSkippedAndTilesFitTheBlocks) {
  // 64-blocks: the driver computes in 64 x 64 tiles, one per block, and skips every block the
  // layout leaves out
  const index_t L = 64 * 9 + 10, nb = 10;
  const Inputs<float> in({.B = 1, .H = 2, .Lq = L, .Lk = L, .d = 32, .dv = 32}, 11);
  const auto layout = mask::bigbird_layout(nb, {.window = 3, .global = 2, .random = 2, .seed = 3});
  index_t shown = 0;
  for (index_t i = 0; i < layout.numel(); ++i) shown += layout.data()[i] ? 1 : 0;
  heed::AttentionStats stats;
  (void)heed::attention(in.q, in.k, in.v, heed::ScaledDot{}, mask::BlockSparse{layout, 64}, {.stats = &stats});
  EXPECT_EQ(stats.open, 2 * shown);
  EXPECT_EQ(stats.blocked, 2 * (nb * nb - shown));
  EXPECT_EQ(stats.partial, 0);

  // Longformer, window 64 either side: tiles no wider than the window, and all but the band and
  // the global rows and columns blocked
  Tensor<bool, 1> global({L});
  global(0) = global(1) = true;
  const auto longformer = mask::any(mask::SlidingWindow{64, 64}, mask::GlobalTokens{global});
  EXPECT_EQ(longformer.preferred_tiles().block_k, 160);
  (void)heed::attention(in.q, in.k, in.v, heed::ScaledDot{}, longformer, {.stats = &stats});
  const index_t q_tiles = (L + 47) / 48, k_tiles = (L + 159) / 160;
  EXPECT_EQ(stats.open + stats.partial + stats.blocked, 2 * q_tiles * k_tiles);
  EXPECT_GT(stats.blocked, (stats.open + stats.partial) / 2);
}

TEST(SparseMasks, BigBirdLayoutIsReproducibleAndHasItsParts) {
  const index_t nb = 20;
  const mask::BigBirdOptions options{.window = 3, .global = 3, .random = 2, .seed = 42};
  const auto layout = mask::bigbird_layout(nb, options);
  ASSERT_EQ(layout.shape(), (heed::Shape<2>{nb, nb}));
  const auto again = mask::bigbird_layout(nb, options);
  EXPECT_TRUE(std::equal(layout.data(), layout.data() + layout.numel(), again.data()));
  auto other = options;
  other.seed = 43;
  const auto reseeded = mask::bigbird_layout(nb, other);
  EXPECT_FALSE(std::equal(layout.data(), layout.data() + layout.numel(), reseeded.data()));
  const auto global = [&](index_t b) { return b < 2 || b == nb - 1; };  // first ⌈3/2⌉, last ⌊3/2⌋
  for (index_t i = 0; i < nb; ++i) {
    index_t random = 0;
    for (index_t j = 0; j < nb; ++j) {
      const bool structural = global(i) || global(j) || std::abs(i - j) <= 1;
      if (structural) {
        EXPECT_TRUE(layout(i, j)) << i << "," << j;
      }
      random += layout(i, j) && !structural ? 1 : 0;
    }
    EXPECT_EQ(random, global(i) ? 0 : 2) << "row " << i;
  }
  // fewer free blocks than asked: every one of them
  const auto small = mask::bigbird_layout(5, {.window = 1, .global = 0, .random = 9});
  for (index_t i = 0; i < small.numel(); ++i) EXPECT_TRUE(small.data()[i]);
}

template <class F>
std::string shape_error_of(F&& f) {
  try {
    f();
  } catch (const heed::ShapeError& e) {
    return e.what();
  }
  return "no ShapeError";
}

TEST(SparseMasks, BadInputNamesTheShapes) {
  const Inputs<float> in({.B = 2, .H = 2, .Lq = 100, .Lk = 100, .d = 8, .dv = 8}, 12);
  const auto run = [&](const auto& m) { (void)heed::attention(in.q, in.k, in.v, heed::ScaledDot{}, m); };
  // 100 keys in 16-blocks are 7 blocks, not 6
  const std::string wrong = shape_error_of([&] { run(mask::BlockSparse{Tensor<bool, 2>({6, 6}), 16}); });
  EXPECT_NE(wrong.find("[6, 6]"), std::string::npos) << wrong;
  EXPECT_NE(wrong.find("[7, 7]"), std::string::npos) << wrong;
  EXPECT_NE(wrong.find("block 16"), std::string::npos) << wrong;
  EXPECT_NE(wrong.find("[2, 2, 100, 100]"), std::string::npos) << wrong;
  const std::string heads = shape_error_of([&] { run(mask::BlockSparse{Tensor<bool, 4>({1, 3, 7, 7}), 16}); });
  EXPECT_NE(heads.find("[1, 3, 7, 7]"), std::string::npos) << heads;
  for (index_t block : {0, -16}) {
    const std::string e = shape_error_of([&] { (void)mask::BlockSparse(Tensor<bool, 2>({7, 7}), block); });
    EXPECT_NE(e.find("block size must be >= 1, got " + std::to_string(block)), std::string::npos) << e;
  }
  const std::string tokens = shape_error_of([&] { run(mask::GlobalTokens{Tensor<bool, 1>({99})}); });
  EXPECT_NE(tokens.find("[99]"), std::string::npos) << tokens;
  EXPECT_NE(tokens.find("[2, 2, 100, 100]"), std::string::npos) << tokens;
  const std::string rows = shape_error_of([&] { run(mask::GlobalTokens{Tensor<bool, 2>({3, 100})}); });
  EXPECT_NE(rows.find("[3, 100]"), std::string::npos) << rows;
  EXPECT_NE(shape_error_of([&] { run(mask::Sparse{}); }).find("no part given"), std::string::npos);
  EXPECT_NE(shape_error_of([&] { (void)mask::bigbird_layout(8, {.window = 2}); }).find("window"), std::string::npos);
  EXPECT_NE(shape_error_of([&] { (void)mask::bigbird_layout(0); }).find("num_blocks"), std::string::npos);
  EXPECT_NE(shape_error_of([&] { (void)mask::bigbird_layout(4, {.global = 5}); }).find("more global"),
            std::string::npos);
  EXPECT_NE(shape_error_of([&] { (void)mask::bigbird_layout(4, {.random = -1}); }).find(">= 0"), std::string::npos);
}

}  // namespace
