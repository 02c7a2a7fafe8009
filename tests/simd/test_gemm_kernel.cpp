// The register level of heed's GEMM (heed/simd/gemm_kernel.hpp): pack_a on the compile-time
// target (the AVX-512 overload for float where it is compiled) against the generic loop, for
// full and partial micro-panels and depths with a tail; gemm_micro_kernel against a double
// loop for full and edge tiles, with and without an addend, bias and ReLU; the shares of the next
// panel that the micro-tiles ask for, and the same bits whether they ask or not.
#include <gtest/gtest.h>

#include <vector>

#include "heed/core/random.hpp"
#include "heed/simd/gemm_kernel.hpp"

namespace {

using heed::index_t;
namespace simd = heed::simd;

template <class T>
class GemmKernel : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(GemmKernel, Scalars);

TYPED_TEST(GemmKernel, PackOnTheTargetEqualsTheGenericLoop) {
  using T = TypeParam;
  constexpr index_t MR = simd::GemmTile<T>::mr;
  for (index_t rows : {index_t{1}, MR - 1, MR, 2 * MR + 3})
    for (index_t kc : {1, 15, 16, 33, 192}) {
      const index_t lda = kc + 5;
      const auto a = heed::randn<T>({rows, lda}, static_cast<std::uint64_t>(rows * 1000 + kc));
      const index_t panels = (rows + MR - 1) / MR;
      std::vector<T> got(static_cast<std::size_t>(panels * MR * kc + simd::pack_a_slack), T(-1));
      std::vector<T> want(got.size(), T(-1));
      simd::pack_a(a.data(), lda, rows, kc, got.data());
      for (index_t p = 0; p < panels; ++p)
        simd::pack_a_panel(a.data() + p * MR * lda, lda, std::min(MR, rows - p * MR), kc, want.data() + p * MR * kc,
                           simd::generic_isa{});
      for (index_t i = 0; i < panels * MR * kc; ++i)
        ASSERT_EQ(got[static_cast<std::size_t>(i)], want[static_cast<std::size_t>(i)])
            << "rows " << rows << " kc " << kc << " at " << i;
      // and the layout is the definition: out[p][kk · MR + r] = a[p·MR + r, kk], zero past `rows`
      for (index_t p = 0; p < panels; ++p)
        for (index_t kk = 0; kk < kc; ++kk)
          for (index_t r = 0; r < MR; ++r) {
            const index_t row = p * MR + r;
            ASSERT_EQ(got[static_cast<std::size_t>(p * MR * kc + kk * MR + r)], row < rows ? a(row, kk) : T(0));
          }
    }
}

TYPED_TEST(GemmKernel, MicroKernelTileEqualsTheDoubleLoop) {
  using T = TypeParam;
  constexpr index_t MR = simd::GemmTile<T>::mr, NR = simd::GemmTile<T>::nr;
  const index_t kc = 37, ldc = NR + 3;
  const auto a = heed::randn<T>({kc * MR}, 1), b = heed::randn<T>({kc * NR}, 2), bias = heed::randn<T>({NR}, 3);
  const auto src = heed::randn<T>({MR, ldc}, 4);
  for (index_t m_valid : {MR, index_t{1}, MR - 1})
    for (index_t n_valid : {NR, index_t{1}, NR - 3})
      for (int variant = 0; variant < 4; ++variant) {
        const bool with_src = variant & 1, with_bias_relu = variant & 2;
        auto c = heed::randn<T>({MR, ldc}, 5);
        const auto before = c;
        simd::gemm_micro_kernel(kc, a.data(), b.data(), c.data(), ldc, with_src ? src.data() : nullptr, ldc,
                                with_bias_relu ? bias.data() : nullptr, with_bias_relu, m_valid, n_valid);
        for (index_t r = 0; r < MR; ++r)
          for (index_t j = 0; j < ldc; ++j) {
            if (r >= m_valid || j >= n_valid) {
              ASSERT_EQ(c(r, j), before(r, j)) << "written outside the valid tile at " << r << "," << j;
              continue;
            }
            double sum = with_src ? double(src(r, j)) : 0.0;
            double product = with_bias_relu ? double(bias(j)) : 0.0;
            for (index_t kk = 0; kk < kc; ++kk) product += double(a(kk * MR + r)) * double(b(kk * NR + j));
            sum += product;
            if (with_bias_relu && sum < 0) sum = 0;
            const double tol = sizeof(T) == 4 ? 1e-4 : 1e-12;
            ASSERT_NEAR(double(c(r, j)), sum, tol * (1 + std::abs(sum)))
                << "m_valid " << m_valid << " n_valid " << n_valid << " variant " << variant;
          }
      }
}

TEST(PanelShare, TheTilesSharesCoverTheNextPanelInWholeLines) {
  std::vector<float> panel(192 * 32 + 16);
  EXPECT_EQ(simd::panel_share(static_cast<const float*>(nullptr), 100, 0, 4).begin, nullptr);
  for (index_t n : {index_t{1}, index_t{15}, index_t{16}, index_t{1000}, index_t{192 * 32}})
    for (index_t parts : {1, 2, 3, 16, 17}) {
      const char* begin = reinterpret_cast<const char*>(panel.data());
      const char* end = begin + n * static_cast<index_t>(sizeof(float));
      const char* at = begin;  // where the next share must start, up to the line its first byte is in
      for (index_t part = 0; part < parts; ++part) {
        const simd::PanelShare share = simd::panel_share(panel.data(), n, part, parts);
        ASSERT_EQ((share.begin - begin) % 64, 0) << "n " << n << " part " << part << " of " << parts;
        ASSERT_LE(share.begin, at) << "a gap before part " << part << " of " << parts << ", n " << n;
        ASSERT_GE(share.end, share.begin);
        at = std::max(at, share.end);
      }
      EXPECT_EQ(at, end) << "n " << n << " parts " << parts;
    }
}

TYPED_TEST(GemmKernel, AskingForTheNextPanelChangesNoBit) {
  using T = TypeParam;
  constexpr index_t MR = simd::GemmTile<T>::mr, NR = simd::GemmTile<T>::nr;
  const auto next = heed::randn<T>({192 * NR}, 6);
  const T* no_bias = nullptr;
  for (index_t kc : {1, 7, 8, 37, 192}) {
    const auto a = heed::randn<T>({kc * MR}, 1), b = heed::randn<T>({kc * NR}, 2);
    const auto src = heed::randn<T>({MR, NR}, 4);
    for (index_t m_valid : {MR, index_t{5}}) {
      auto plain = heed::randn<T>({MR, NR}, 5), asking = plain;
      simd::gemm_micro_kernel(kc, a.data(), b.data(), plain.data(), NR, src.data(), NR, no_bias, false, m_valid, NR);
      simd::gemm_micro_kernel(kc, a.data(), b.data(), asking.data(), NR, src.data(), NR, no_bias, false, m_valid, NR,
                              simd::panel_share(next.data(), kc * NR, 1, 3));
      for (index_t i = 0; i < MR * NR; ++i) ASSERT_EQ(asking(i / NR, i % NR), plain(i / NR, i % NR)) << "kc " << kc;
    }
  }
}

}  // namespace
