// The attention micro-kernel (heed/simd/attention_kernel.hpp) against a double loop: full and
// edge blocks (m_valid < MR, n_valid < NR), with and without the per-row scale of C, A and B
// strided, B in float and in bfloat16 / half (widened as it is read), B in runs of rows; and
// pack_kt's and pack_kt_pairs' layouts; the whole-tile products the driver calls.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "heed/core/cast.hpp"
#include "heed/core/random.hpp"
#include "heed/simd/attention_kernel.hpp"

namespace {

using heed::index_t;
namespace simd = heed::simd;

// C after a micro-kernel call, against before: inside the m_valid × n_valid block
// 0.5 · sum(r, j) (+ scale[r] · before when scale is given), outside it untouched.
template <class Sum>
void expect_block(const heed::Tensor<float, 2>& c, const heed::Tensor<float, 2>& before, const float* scale,
                  index_t m_valid, index_t n_valid, index_t depth, Sum&& sum) {
  for (index_t r = 0; r < c.size(0); ++r)
    for (index_t j = 0; j < c.size(1); ++j) {
      if (r >= m_valid || j >= n_valid) {
        ASSERT_EQ(c(r, j), before(r, j)) << "written outside the block at " << r << "," << j;
        continue;
      }
      const double want = 0.5 * sum(r, j) + (scale ? double(scale[r]) * double(before(r, j)) : 0.0);
      ASSERT_NEAR(double(c(r, j)), want, 1e-5 * (1 + std::abs(want)) * double(depth)) << r << "," << j;
    }
}

template <class TB, int Batches = 2>
void check_block(index_t depth, index_t m_valid, index_t n_valid, bool with_scale) {
  constexpr index_t MR = simd::AttentionTile<float>::mr, NR = simd::AttentionTile<float>::nr;
  SCOPED_TRACE(testing::Message() << "depth " << depth << " m_valid " << m_valid << " n_valid " << n_valid << " scale "
                                  << with_scale << " B " << sizeof(TB) * 8 << "-bit");
  const index_t lda = depth + 3, ldb = NR + 5, ldc = NR + 2;
  const auto a = heed::randn<float>({MR, lda}, 1);
  const auto b = heed::cast<TB>(heed::randn<float>({depth, ldb}, 2));
  const auto scale = heed::randn<float>({MR}, 3);
  auto c = heed::randn<float>({MR, ldc}, 4);
  const auto before = c;
  simd::attention_micro_kernel<float, Batches>(depth, a.data(), lda, m_valid, b.data(), ldb, n_valid, c.data(), ldc,
                                               with_scale ? scale.data() : nullptr, 0.5f);
  expect_block(c, before, with_scale ? scale.data() : nullptr, m_valid, n_valid, depth, [&](index_t r, index_t j) {
    double sum = 0;
    for (index_t kk = 0; kk < depth; ++kk) sum += double(a(r, kk)) * double(float(b(kk, j)));
    return sum;
  });
}

TEST(AttentionMicroKernel, EveryEdgeInFloatAndSixteenBit) {
  constexpr index_t MR = simd::AttentionTile<float>::mr, NR = simd::AttentionTile<float>::nr;
  for (index_t depth : {1, 7, 64})
    for (index_t m_valid : {MR, index_t{1}, MR - 1})
      for (index_t n_valid : {NR, index_t{1}, NR - 3})
        for (bool scale : {false, true}) {
          check_block<float>(depth, m_valid, n_valid, scale);
          check_block<heed::bfloat16>(depth, m_valid, n_valid, scale);
          check_block<heed::half>(depth, m_valid, n_valid, scale);
        }
}

// The half-width block (one vector of columns), which P·V uses for the last columns of d = 80.
TEST(AttentionMicroKernel, HalfWidthBlockForTheLastColumns) {
  constexpr index_t MR = simd::AttentionTile<float>::mr, W = simd::AttentionTile<float>::nr / 2;
  for (index_t depth : {1, 7, 64})
    for (index_t m_valid : {MR, index_t{1}})
      for (index_t n_valid : {W, W - 1 > 0 ? W - 1 : index_t{1}})
        for (bool scale : {false, true}) {
          check_block<float, 1>(depth, m_valid, n_valid, scale);
          check_block<heed::bfloat16, 1>(depth, m_valid, n_valid, scale);
        }
}

// attention_micro_kernel_runs: B's rows in runs taken from anywhere in a longer B (out of order,
// one of them a single row), A's columns side by side, against the same double loop.
template <class TB, int Batches>
void check_runs(index_t m_valid, index_t n_valid, bool with_scale) {
  constexpr index_t MR = simd::AttentionTile<float>::mr, NR = Batches * static_cast<index_t>(simd::width<float>);
  SCOPED_TRACE(testing::Message() << "m_valid " << m_valid << " n_valid " << n_valid << " scale " << with_scale << " B "
                                  << sizeof(TB) * 8 << "-bit, " << Batches << " vectors");
  const index_t first[] = {40, 3, 21, 60}, depths[] = {16, 7, 1, 9}, runs = 4, depth = 33, ldb = NR + 5, ldc = NR + 2;
  const auto a = heed::randn<float>({MR, depth + 2}, 5);
  const auto b = heed::cast<TB>(heed::randn<float>({70, ldb}, 6));
  const TB* starts[runs];
  for (index_t r = 0; r < runs; ++r) starts[r] = b.data() + first[r] * ldb;
  const auto scale = heed::randn<float>({MR}, 7);
  auto c = heed::randn<float>({MR, ldc}, 8);
  const auto before = c;
  simd::attention_micro_kernel_runs<float, Batches>(runs, depths, starts, ldb, a.data(), depth + 2, m_valid, n_valid,
                                                    c.data(), ldc, with_scale ? scale.data() : nullptr, 0.5f);
  expect_block(c, before, with_scale ? scale.data() : nullptr, m_valid, n_valid, depth, [&](index_t r, index_t j) {
    double sum = 0;
    for (index_t run = 0, col = 0; run < runs; col += depths[run++])
      for (index_t kk = 0; kk < depths[run]; ++kk) sum += double(a(r, col + kk)) * double(float(b(first[run] + kk, j)));
    return sum;
  });
}

TEST(AttentionMicroKernel, RunsOfRowsFromAnywhereInB) {
  constexpr index_t MR = simd::AttentionTile<float>::mr, NR = simd::AttentionTile<float>::nr;
  for (index_t m_valid : {MR, index_t{1}, MR - 1})
    for (bool scale : {false, true}) {
      check_runs<float, 2>(m_valid, NR, scale);
      check_runs<float, 2>(m_valid, NR - 3 > 0 ? NR - 3 : index_t{1}, scale);
      check_runs<heed::bfloat16, 2>(m_valid, NR, scale);
      check_runs<float, 1>(m_valid, NR / 2, scale);
    }
}

// The bfloat16 pair products: Kᵀ and V pair-packed, then pair_micro_kernel (vdpbf16ps where the
// target has AVX-512 BF16, and the generic form always) against a double loop over the same
// bfloat16 values, from a panel's first pair and from one inside it, odd depths and key counts.
void check_pairs(index_t depth, index_t m_valid, index_t n_valid, bool with_scale, bool generic) {
  constexpr index_t MR = simd::AttentionTile<float>::mr, NR = simd::pair_panel;
  SCOPED_TRACE(testing::Message() << "depth " << depth << " m_valid " << m_valid << " n_valid " << n_valid << " scale "
                                  << with_scale << (generic ? " generic" : " target"));
  const index_t pairs = (depth + 1) / 2, keys = NR + n_valid, ldk = depth + 3;
  const auto q = heed::cast<heed::bfloat16>(heed::randn<float>({MR, 2 * pairs}, 1));
  auto qz = q;  // an odd depth reads one more value per row: zero, as the scorer pads it
  for (index_t r = 0; r < MR; ++r)
    if (depth % 2 != 0) qz(r, depth) = heed::bfloat16(0.0f);
  const auto k = heed::cast<heed::bfloat16>(heed::randn<float>({keys, ldk}, 2));
  std::vector<heed::bfloat16> kt(static_cast<std::size_t>(2 * pairs * 2 * NR), heed::bfloat16(-7.0f));
  simd::pack_kt_pairs(k.data(), ldk, keys, depth, kt.data());
  const auto scale = heed::randn<float>({MR}, 3);
  const index_t ldc = NR + 2;
  auto c = heed::randn<float>({MR, ldc}, 4);
  const auto before = c;
  const heed::bfloat16* panel = kt.data() + 2 * pairs * NR;  // the second panel: keys NR.. (n_valid of them)
  if (generic)
    simd::pair_micro_kernel(pairs, qz.data(), 2 * pairs, m_valid, panel, n_valid, c.data(), ldc,
                            with_scale ? scale.data() : nullptr, 0.5f, simd::generic_isa{});
  else
    simd::pair_micro_kernel(pairs, qz.data(), 2 * pairs, m_valid, panel, n_valid, c.data(), ldc,
                            with_scale ? scale.data() : nullptr, 0.5f);
  expect_block(c, before, with_scale ? scale.data() : nullptr, m_valid, n_valid, depth, [&](index_t r, index_t j) {
    double sum = 0;
    for (index_t kk = 0; kk < depth; ++kk) sum += double(float(q(r, kk))) * double(float(k(NR + j, kk)));
    return sum;
  });
  // the padding keys of the last panel are zero
  for (index_t p = 0; p < pairs; ++p)
    for (index_t j = n_valid; j < NR; ++j)
      for (index_t e = 0; e < 2; ++e) ASSERT_EQ(float(panel[p * 2 * NR + 2 * j + e]), 0.0f);

  // O = P·V over keys [2, 2 + 2·vpairs) of a pair-packed V (a span that starts inside a panel)
  const index_t cols = NR + n_valid, vkeys = 2 * pairs + 3, ldv = cols + 1;
  const auto v = heed::cast<heed::bfloat16>(heed::randn<float>({vkeys, ldv}, 5));
  const index_t key_pairs = (vkeys + 1) / 2;
  std::vector<heed::bfloat16> vp(static_cast<std::size_t>(2 * key_pairs * 2 * NR));
  simd::pack_v_pairs(v.data(), ldv, vkeys, cols, vp.data());
  auto o = heed::randn<float>({MR, ldc}, 6);
  const auto o_before = o;
  const heed::bfloat16* v_panel = vp.data() + key_pairs * 2 * NR + 1 * 2 * NR;  // columns NR.., from key 2
  if (generic)
    simd::pair_micro_kernel(pairs, qz.data(), 2 * pairs, m_valid, v_panel, n_valid, o.data(), ldc,
                            with_scale ? scale.data() : nullptr, 1.0f, simd::generic_isa{});
  else
    simd::pair_micro_kernel(pairs, qz.data(), 2 * pairs, m_valid, v_panel, n_valid, o.data(), ldc,
                            with_scale ? scale.data() : nullptr, 1.0f);
  for (index_t r = 0; r < m_valid; ++r)
    for (index_t j = 0; j < n_valid; ++j) {
      double sum = 0;
      for (index_t kk = 0; kk < depth; ++kk) sum += double(float(q(r, kk))) * double(float(v(2 + kk, NR + j)));
      const double want = sum + (with_scale ? double(scale(r)) * double(o_before(r, j)) : 0.0);
      ASSERT_NEAR(double(o(r, j)), want, 1e-5 * (1 + std::abs(want)) * double(depth)) << "P·V " << r << "," << j;
    }
}

TEST(PairProducts, PackedKeysAndValuesOnTheTargetAndGeneric) {
  constexpr index_t MR = simd::AttentionTile<float>::mr, NR = simd::pair_panel;
  for (bool generic : {false, true})
    for (index_t depth : {1, 7, 64, 80})
      for (index_t m_valid : {MR, index_t{1}})
        for (index_t n_valid : {NR, std::max<index_t>(1, NR - 3)})
          for (bool scale : {false, true}) check_pairs(depth, m_valid, n_valid, scale, generic);
}

// exp(x - shift) rounded to bfloat16 (within half a bfloat16 ulp: 2^-8 relative at most), the sum of the
// unrounded values.
// Every value of the pair-packed layouts, padding included: odd depths and key counts, a last
// panel of keys or columns that is not full, a leading dimension past the row.
TEST(PairProducts, PackedLayoutsValueByValue) {
  constexpr index_t NR = simd::pair_panel;
  for (const index_t rows : {index_t{1}, index_t{7}, NR, NR + 5})
    for (const index_t depth : {index_t{1}, index_t{6}, index_t{9}, NR + 3}) {
      SCOPED_TRACE(testing::Message() << rows << " rows, depth " << depth);
      const index_t ld = depth + 2, panels = (rows + NR - 1) / NR, pairs = (depth + 1) / 2;
      const auto x = heed::cast<heed::bfloat16>(heed::randn<float>({rows + 1, ld}, 11));
      // Kᵀ: rows are keys, depth their head dim
      std::vector<heed::bfloat16> kt(static_cast<std::size_t>(panels * pairs * 2 * NR), heed::bfloat16(-1.0f));
      simd::pack_kt_pairs(x.data(), ld, rows, depth, kt.data());
      for (index_t p = 0; p < panels; ++p)
        for (index_t kp = 0; kp < pairs; ++kp)
          for (index_t j = 0; j < NR; ++j)
            for (index_t e = 0; e < 2; ++e) {
              const index_t key = p * NR + j, kk = 2 * kp + e;
              const float want = key < rows && kk < depth ? float(x(key, kk)) : 0.0f;
              ASSERT_EQ(float(kt[static_cast<std::size_t>(p * pairs * 2 * NR + kp * 2 * NR + 2 * j + e)]), want)
                  << "Kᵀ key " << key << " depth " << kk;
            }
      // V: rows are keys, depth its columns
      const index_t key_pairs = (rows + 1) / 2, col_panels = (depth + NR - 1) / NR;
      std::vector<heed::bfloat16> vp(static_cast<std::size_t>(col_panels * key_pairs * 2 * NR), heed::bfloat16(-1.0f));
      simd::pack_v_pairs(x.data(), ld, rows, depth, vp.data());
      for (index_t cp = 0; cp < col_panels; ++cp)
        for (index_t jp = 0; jp < key_pairs; ++jp)
          for (index_t c = 0; c < NR; ++c)
            for (index_t e = 0; e < 2; ++e) {
              const index_t key = 2 * jp + e, col = cp * NR + c;
              const float want = key < rows && col < depth ? float(x(key, col)) : 0.0f;
              ASSERT_EQ(float(vp[static_cast<std::size_t>(cp * key_pairs * 2 * NR + jp * 2 * NR + 2 * c + e)]), want)
                  << "V key " << key << " column " << col;
            }
    }
}

TEST(PairProducts, ExpSumRoundedIsTheSoftmaxStepInBfloat16) {
  for (index_t n : {1, 15, 16, 33, 256}) {
    const auto x = heed::randn<float>({n}, 7);
    std::vector<heed::bfloat16> p(static_cast<std::size_t>(n));
    const float total = simd::exp_sum_rounded(x.data(), 0.5f, p.data(), n);
    double want_total = 0;
    for (index_t i = 0; i < n; ++i) {
      const double e = std::exp(double(x(i)) - 0.5);
      want_total += e;
      EXPECT_NEAR(double(float(p[static_cast<std::size_t>(i)])), e, 0x1p-8 * e * (1 + 1e-5)) << n << ": " << i;
    }
    EXPECT_NEAR(double(total), want_total, 1e-6 * want_total) << n;
  }
}

// Full panels (transposed in 16 × 16 blocks on AVX-512, 8 × 8 on AVX2) and a short last one, depths below,
// at and past a block (with a tail), K's rows strided.
TEST(AttentionMicroKernel, PackKtLaysKeysOutInPanelsOfNr) {
  constexpr index_t NR = simd::AttentionTile<float>::nr;
  for (const index_t depth : {5, 16, 37, 64}) {
    SCOPED_TRACE(testing::Message() << "depth " << depth);
    const index_t keys = 2 * NR + 3, ldk = depth + 3, panels = (keys + NR - 1) / NR;
    const auto k = heed::randn<float>({keys, ldk}, 5);
    std::vector<float> out(static_cast<std::size_t>(panels * depth * NR), -1.0f);
    simd::pack_kt(k.data(), ldk, keys, depth, out.data());
    for (index_t p = 0; p < panels; ++p)
      for (index_t kk = 0; kk < depth; ++kk)
        for (index_t j = 0; j < NR; ++j) {
          const index_t key = p * NR + j;
          ASSERT_EQ(out[static_cast<std::size_t>(p * depth * NR + kk * NR + j)], key < keys ? k(key, kk) : 0.0f)
              << "key " << key << " depth " << kk;
        }
  }
}

// The same for bfloat16 keys with the depth in pairs (pack_kt_pairs), odd depths padded with a zero.
TEST(AttentionMicroKernel, PackKtPairsLaysPairsOutInPanels) {
  constexpr index_t NR = simd::pair_panel;
  for (const index_t depth : {5, 32, 37, 64}) {
    SCOPED_TRACE(testing::Message() << "depth " << depth);
    const index_t keys = 2 * NR + 3, ldk = depth + 3, panels = (keys + NR - 1) / NR, pairs = (depth + 1) / 2;
    const auto k = heed::cast<heed::bfloat16>(heed::randn<float>({keys, ldk}, 6));
    std::vector<heed::bfloat16> out(static_cast<std::size_t>(panels * pairs * 2 * NR), heed::bfloat16(-1.0f));
    simd::pack_kt_pairs(k.data(), ldk, keys, depth, out.data());
    for (index_t p = 0; p < panels; ++p)
      for (index_t kk = 0; kk < 2 * pairs; ++kk)
        for (index_t j = 0; j < NR; ++j) {
          const index_t key = p * NR + j;
          const float want = key < keys && kk < depth ? float(k(key, kk)) : 0.0f;
          ASSERT_EQ(float(out[static_cast<std::size_t>(p * pairs * 2 * NR + kk / 2 * 2 * NR + 2 * j + kk % 2)]), want)
              << "key " << key << " depth " << kk;
        }
  }
}

// The one-row kernels of the decode path: scores of one query row against nj keys (whole
// vectors of keys, then four, then one; depths with and without a tail) and one row's P·V
// (chunks of eight, four, two and one vectors, scalar columns), K and V in float and 16-bit.
template <class TK>
void check_row_kernels(index_t depth, index_t nj) {
  SCOPED_TRACE(testing::Message() << "depth " << depth << " keys " << nj << " " << sizeof(TK) * 8 << "-bit");
  const index_t ldk = depth + 3;
  const auto q = heed::randn<float>({depth}, 5);
  const auto k = heed::cast<TK>(heed::randn<float>({nj, ldk}, 6));
  std::vector<float> out(static_cast<std::size_t>(nj + 1), -7.0f);
  simd::attention_row_scores(depth, q.data(), k.data(), ldk, nj, out.data(), 0.25f);
  for (index_t j = 0; j < nj; ++j) {
    double sum = 0;
    for (index_t kk = 0; kk < depth; ++kk) sum += double(q(kk)) * double(float(k(j, kk)));
    ASSERT_NEAR(out[static_cast<std::size_t>(j)], 0.25 * sum, 1e-5 * double(depth)) << j;
  }
  ASSERT_EQ(out[static_cast<std::size_t>(nj)], -7.0f);  // nothing past the last key
  // P·V: dv = depth columns of V's nj rows
  const auto p = heed::randn<float>({nj}, 7);
  const auto v = heed::cast<TK>(heed::randn<float>({nj, ldk}, 8));
  for (const bool scaled : {false, true}) {
    auto o = heed::randn<float>({depth + 1}, 9);
    const auto before = o;
    const float c = 0.75f;
    simd::attention_row_pv(nj, p.data(), v.data(), ldk, depth, o.data(), scaled ? &c : nullptr);
    for (index_t col = 0; col < depth; ++col) {
      double sum = scaled ? double(c) * double(before(col)) : 0.0;
      for (index_t j = 0; j < nj; ++j) sum += double(p(j)) * double(float(v(j, col)));
      ASSERT_NEAR(o(col), sum, 1e-5 * double(nj)) << col;
    }
    ASSERT_EQ(o(depth), before(depth));
  }
}

// Several query rows against the same keys (a grouped head's query heads in a decoding step):
// whole groups of four rows and the rows left over, keys in whole groups and past them; each
// score against the double sum, and nothing written outside the rows' nj scores.
template <class TK>
void check_rows_scores(index_t depth, index_t nq, index_t nj) {
  SCOPED_TRACE(testing::Message() << "depth " << depth << " rows " << nq << " keys " << nj << " " << sizeof(TK) * 8
                                  << "-bit");
  const index_t ldq = depth + 1, ldk = depth + 3, ld = nj + 2;
  const auto q = heed::cast<TK>(heed::randn<float>({nq, ldq}, 11));
  const auto k = heed::cast<TK>(heed::randn<float>({nj, ldk}, 12));
  std::vector<float> out(static_cast<std::size_t>(nq * ld), -7.0f);
  simd::attention_rows_scores(depth, q.data(), ldq, nq, k.data(), ldk, nj, out.data(), ld, 0.25f);
  for (index_t r = 0; r < nq; ++r) {
    for (index_t j = 0; j < nj; ++j) {
      double sum = 0;
      for (index_t kk = 0; kk < depth; ++kk) sum += double(float(q(r, kk))) * double(float(k(j, kk)));
      ASSERT_NEAR(out[static_cast<std::size_t>(r * ld + j)], 0.25 * sum, 1e-5 * double(depth)) << r << "," << j;
    }
    for (index_t j = nj; j < ld; ++j) ASSERT_EQ(out[static_cast<std::size_t>(r * ld + j)], -7.0f) << r << "," << j;
  }
}

TEST(AttentionRowKernels, SeveralRowsShareTheKeys) {
  for (const index_t depth : {1, 7, 16, 64, 80})
    for (const index_t nq : {1, 3, 4, 5, 8, 9})
      for (const index_t nj : {1, 3, 4, 5, 17, 130}) {
        check_rows_scores<float>(depth, nq, nj);
        check_rows_scores<heed::bfloat16>(depth, nq, nj);
      }
}

TEST(AttentionRowKernels, EveryLengthInFloatAndSixteenBit) {
  for (const index_t depth : {1, 7, 8, 16, 48, 64, 80, 96, 129})
    for (const index_t nj : {1, 3, 4, 5, 15, 16, 17, 37, 128}) {
      check_row_kernels<float>(depth, nj);
      check_row_kernels<heed::bfloat16>(depth, nj);
      check_row_kernels<heed::half>(depth, nj);
    }
}

// The whole-tile products against double loops: scores of an ni × nj tile from packed Kᵀ (rows
// and keys past whole micro-kernel blocks), and O = c·O + P·V over two runs of keys with dv
// covering full, half-width and plain columns (and the single-row path).
template <class TK>
void check_tiles(index_t depth, index_t ni, index_t nj) {
  constexpr index_t NR = simd::AttentionTile<float>::nr;
  SCOPED_TRACE(testing::Message() << "depth " << depth << " ni " << ni << " nj " << nj << " " << sizeof(TK) * 8
                                  << "-bit");
  const index_t ldq = depth + 1, ldk = depth + 2, ld = nj + 3;
  const auto q = heed::randn<float>({ni, ldq}, 11);
  const auto k = heed::cast<TK>(heed::randn<float>({nj, ldk}, 12));
  std::vector<TK> kt(static_cast<std::size_t>((nj + NR - 1) / NR * NR * depth));
  simd::pack_kt(k.data(), ldk, nj, depth, kt.data());
  auto s = heed::randn<float>({ni, ld}, 13);
  const auto s_before = s;
  simd::attention_tile_scores(depth, q.data(), ldq, ni, kt.data(), nj, s.data(), ld, 0.5f);
  for (index_t i = 0; i < ni; ++i)
    for (index_t j = 0; j < ld; ++j) {
      if (j >= nj) {
        ASSERT_EQ(s(i, j), s_before(i, j)) << "written past the tile at " << i << "," << j;
        continue;
      }
      double sum = 0;
      for (index_t kk = 0; kk < depth; ++kk) sum += double(q(i, kk)) * double(float(k(j, kk)));
      ASSERT_NEAR(double(s(i, j)), 0.5 * sum, 1e-5 * (1 + std::abs(sum)) * double(depth)) << i << "," << j;
    }

  const index_t dv = depth, ldv = dv + 2, keys[2] = {nj, 5}, ldp = nj + 5 + 1;
  const auto v = heed::cast<TK>(heed::randn<float>({nj + 9, ldv}, 14));
  const TK* runs[2] = {v.data(), v.data() + (nj + 4) * ldv};  // the second run: rows nj + 4 ..
  const auto pr = heed::randn<float>({ni, ldp}, 15);
  const auto c = heed::randn<float>({ni}, 16);
  const std::vector<float> ones(static_cast<std::size_t>(ni), 1.0f);
  for (const index_t rows : {ni, index_t{1}})
    for (const bool scaled : {false, true}) {
      auto o = heed::randn<float>({ni, dv}, 17);
      const auto before = o;
      simd::attention_tile_pv(pr.data(), ldp, rows, 2, keys, runs, ldv, dv, o.data(), scaled ? c.data() : nullptr,
                              ones.data());
      for (index_t i = 0; i < ni; ++i)
        for (index_t col = 0; col < dv; ++col) {
          if (i >= rows) {
            ASSERT_EQ(o(i, col), before(i, col));
            continue;
          }
          double sum = scaled ? double(c(i)) * double(before(i, col)) : 0.0;
          for (index_t r = 0, k0 = 0; r < 2; k0 += keys[r++])
            for (index_t j = 0; j < keys[r]; ++j) sum += double(pr(i, k0 + j)) * double(float(runs[r][j * ldv + col]));
          ASSERT_NEAR(double(o(i, col)), sum, 1e-5 * (1 + std::abs(sum)) * double(nj)) << "P·V " << i << "," << col;
        }
    }
}

TEST(TileProducts, ScoresAndValuesOfWholeTiles) {
  constexpr index_t MR = simd::AttentionTile<float>::mr, NR = simd::AttentionTile<float>::nr;
  for (const index_t depth : {index_t{7}, NR + NR / 2 + 3, index_t{64}})
    for (const index_t ni : {index_t{1}, 2 * MR + 3})
      for (const index_t nj : {index_t{3}, 2 * NR + 5}) {
        check_tiles<float>(depth, ni, nj);
        check_tiles<heed::bfloat16>(depth, ni, nj);
        check_tiles<heed::half>(depth, ni, nj);
      }
}

TEST(TileProducts, PairTilesAreTheSumsOfTheirPairs) {
  constexpr index_t MR = simd::AttentionTile<float>::mr, NR = simd::pair_panel;
  for (const index_t depth : {index_t{7}, index_t{64}}) {
    const index_t ni = 2 * MR + 3, nj = 2 * NR + 5, pairs = (depth + 1) / 2, ld = nj + 3;
    SCOPED_TRACE(testing::Message() << "depth " << depth);
    auto q = heed::cast<heed::bfloat16>(heed::randn<float>({ni, 2 * pairs}, 21));
    for (index_t i = 0; i < ni; ++i)
      if (depth % 2 != 0) q(i, depth) = heed::bfloat16(0.0f);  // an odd depth reads a zero, as the scorer pads it
    const auto k = heed::cast<heed::bfloat16>(heed::randn<float>({nj, depth}, 22));
    std::vector<heed::bfloat16> kt(static_cast<std::size_t>((nj + NR - 1) / NR * 2 * pairs * NR));
    simd::pack_kt_pairs(k.data(), depth, nj, depth, kt.data());
    auto s = heed::randn<float>({ni, ld}, 23);
    simd::pair_tile_scores(pairs, q.data(), 2 * pairs, ni, kt.data(), nj, s.data(), ld, 0.5f);
    for (index_t i = 0; i < ni; ++i)
      for (index_t j = 0; j < nj; ++j) {
        double sum = 0;
        for (index_t kk = 0; kk < depth; ++kk) sum += double(float(q(i, kk))) * double(float(k(j, kk)));
        ASSERT_NEAR(double(s(i, j)), 0.5 * sum, 1e-5 * (1 + std::abs(sum)) * double(depth)) << i << "," << j;
      }
    // O = c·O + P·V over the keys of V from key 2 on (a run that starts inside the panels)
    const index_t dv = NR + 5, vkeys = 2 * pairs + 2, key_pairs = (vkeys + 1) / 2;
    const auto v = heed::cast<heed::bfloat16>(heed::randn<float>({vkeys, dv}, 24));
    std::vector<heed::bfloat16> vp(static_cast<std::size_t>((dv + NR - 1) / NR * key_pairs * 2 * NR));
    simd::pack_v_pairs(v.data(), dv, vkeys, dv, vp.data());
    const auto c = heed::randn<float>({ni}, 25);
    auto o = heed::randn<float>({ni, dv}, 26);
    const auto before = o;
    simd::pair_tile_pv(pairs, q.data(), 2 * pairs, ni, vp.data() + 2 * NR, key_pairs * 2 * NR, dv, o.data(), c.data());
    for (index_t i = 0; i < ni; ++i)
      for (index_t col = 0; col < dv; ++col) {
        double sum = double(c(i)) * double(before(i, col));
        for (index_t kk = 0; kk < depth; ++kk) sum += double(float(q(i, kk))) * double(float(v(2 + kk, col)));
        ASSERT_NEAR(double(o(i, col)), sum, 1e-5 * (1 + std::abs(sum)) * double(depth)) << "P·V " << i << "," << col;
      }
  }
}

}  // namespace
