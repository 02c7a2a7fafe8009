// A program built with heed_dispatch (HEED_DISPATCH): its attention runs on the kernel tables of
// the level chosen at run time, the best this CPU has or the one HEED_ISA asks for. ctest runs
// this one executable at every level the machine has (simd/test_dispatch@baseline, @v3, @v4,
// @v4-bf16), and the level rule case by case.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "heed/core/cast.hpp"
#include "heed/core/random.hpp"
#include "heed/kernels/attention.hpp"
#include "heed/kernels/gemm.hpp"
#include "heed/simd/kernel_table.hpp"
#include "reference/attention.hpp"
#include "support/compare.hpp"

namespace {

using heed::index_t;
using heed::IsaLevel;
namespace simd = heed::simd;

TEST(Dispatch, TheLevelIsTheCpusBestOrTheOneAskedFor) {
  std::string complaint;
  const IsaLevel want = simd::isa_choice(simd::cpu_features().best, simd::dispatch_levels,
                                         std::size(simd::dispatch_levels), std::getenv("HEED_ISA"), complaint);
  EXPECT_EQ(simd::dispatch_level(), want);
  EXPECT_EQ(heed::cpu_info().kernels, want);
  EXPECT_EQ(simd::attention_kernels<float>().level, want);
  EXPECT_EQ(simd::attention_kernels<double>().level, want);
  EXPECT_EQ(simd::attention_kernels<heed::half>().level, want);
  EXPECT_EQ(simd::attention_kernels<heed::bfloat16>().level, want);
  EXPECT_EQ(simd::attention_kernels<heed::bfloat16>().pairs, heed::cpu_info().bf16_pairs);
  EXPECT_EQ(simd::gemm_kernels<float>().level, want);
  EXPECT_EQ(simd::gemm_kernels<double>().level, want);
  EXPECT_EQ(simd::gemm_kernels<heed::half>().level, want);
  EXPECT_EQ(simd::gemm_kernels<heed::bfloat16>().level, want);
  EXPECT_EQ(simd::gemm_kernels<heed::bfloat16>().pairs, heed::cpu_info().bf16_pairs);
  EXPECT_EQ(simd::vector_kernels<float>().level, want);
  EXPECT_EQ(simd::vector_kernels<double>().level, want);
  EXPECT_EQ(simd::convert_kernels<heed::half>().level, want);
  EXPECT_EQ(simd::convert_kernels<heed::bfloat16>().level, want);
  EXPECT_EQ(simd::vision_kernels<float>().level, want);
  EXPECT_EQ(simd::vision_kernels<double>().level, want);
  EXPECT_EQ(simd::vision_kernels<heed::half>().level, want);
  EXPECT_EQ(simd::vision_kernels<heed::bfloat16>().level, want);
  if (const char* asked = std::getenv("HEED_ISA"); asked && complaint.empty()) {
    EXPECT_EQ(heed::to_string(want), asked) << "ctest asked for a level this CPU has";
  }
  // the blocking of the level in use: 12 × 32 on AVX-512, 6 × 16 on AVX2, 4 × 8 on SSE2
  const index_t nr = simd::attention_kernels<float>().nr;
  EXPECT_EQ(nr, want >= IsaLevel::v4 ? 32 : want == IsaLevel::v3 ? 16 : 8);
  // the GEMM's panels: two vectors of C's columns, 12 rows on AVX-512, 6 below
  EXPECT_EQ(simd::gemm_kernels<float>().nr, nr);
  EXPECT_EQ(simd::gemm_kernels<float>().mr, want >= IsaLevel::v4 ? 12 : 6);
  // the convolution's step: four rows × one vector of columns
  EXPECT_EQ(simd::vision_kernels<float>().conv_columns, nr / 2);
  EXPECT_EQ(simd::vision_kernels<float>().conv_rows, 4);
  const heed::PackedMatrix<float> w(std::vector<float>(5 * 3, 1.0f).data(), 5, 3);
  EXPECT_EQ(&w.kernels(), &simd::gemm_kernels<float>()) << "W packed for the GEMM in use";
}

TEST(Dispatch, TheRuleCaseByCase) {
  const IsaLevel x86[] = {IsaLevel::baseline, IsaLevel::v3, IsaLevel::v4, IsaLevel::v4_bf16};
  std::string complaint;
  const auto choose = [&](IsaLevel best, const char* env) { return simd::isa_choice(best, x86, 4, env, complaint); };
  EXPECT_EQ(choose(IsaLevel::v4_bf16, nullptr), IsaLevel::v4_bf16);
  EXPECT_TRUE(complaint.empty());
  EXPECT_EQ(choose(IsaLevel::v4, ""), IsaLevel::v4);
  EXPECT_EQ(choose(IsaLevel::v3, nullptr), IsaLevel::v3);
  EXPECT_EQ(choose(IsaLevel::baseline, nullptr), IsaLevel::baseline);
  EXPECT_EQ(choose(IsaLevel::v4_bf16, "v3"), IsaLevel::v3);
  EXPECT_TRUE(complaint.empty());
  EXPECT_EQ(choose(IsaLevel::v4_bf16, "baseline"), IsaLevel::baseline);
  EXPECT_EQ(choose(IsaLevel::v4_bf16, "v4-bf16"), IsaLevel::v4_bf16);
  EXPECT_TRUE(complaint.empty());
  // a level the CPU lacks: the best it has, and one line naming what it has
  EXPECT_EQ(choose(IsaLevel::v3, "v4"), IsaLevel::v3);
  EXPECT_EQ(complaint, "heed: HEED_ISA=v4 is not a level this CPU and program have (baseline, v3); running v3\n");
  // not a level at all, or one of another architecture
  EXPECT_EQ(choose(IsaLevel::v4, "avx9"), IsaLevel::v4);
  EXPECT_EQ(complaint, "heed: HEED_ISA=avx9 is not a level this CPU and program have (baseline, v3, v4); running v4\n");
  EXPECT_EQ(choose(IsaLevel::v4, "neon"), IsaLevel::v4);
  EXPECT_FALSE(complaint.empty());
  // a level the program does not carry
  const IsaLevel two[] = {IsaLevel::baseline, IsaLevel::v3};
  EXPECT_EQ(simd::isa_choice(IsaLevel::v4_bf16, two, 2, "v4", complaint), IsaLevel::v3);
  EXPECT_FALSE(complaint.empty());
  const IsaLevel arm[] = {IsaLevel::neon};
  EXPECT_EQ(simd::isa_choice(IsaLevel::neon, arm, 1, "neon", complaint), IsaLevel::neon);
  EXPECT_TRUE(complaint.empty());
  // the scalar kernels (heed_dispatch(<target> SCALAR)): only when asked for, never the default
  const IsaLevel with_scalar[] = {IsaLevel::scalar, IsaLevel::baseline, IsaLevel::v3};
  EXPECT_EQ(simd::isa_choice(IsaLevel::v4, with_scalar, 3, nullptr, complaint), IsaLevel::v3);
  EXPECT_EQ(simd::isa_choice(IsaLevel::baseline, with_scalar, 3, nullptr, complaint), IsaLevel::baseline);
  EXPECT_EQ(simd::isa_choice(IsaLevel::v4, with_scalar, 3, "scalar", complaint), IsaLevel::scalar);
  EXPECT_TRUE(complaint.empty());
  EXPECT_EQ(choose(IsaLevel::v4, "scalar"), IsaLevel::v4);
  EXPECT_EQ(complaint,
            "heed: HEED_ISA=scalar is not a level this CPU and program have (baseline, v3, v4); running v4\n");
}

// Attention at the level in use against the double reference: causal, grouped heads, d = 80
// (half-width column blocks), enough rows to pack Kᵀ, and a single row (the decode path).
template <class Storage>
void check_attention(double rtol, double atol) {
  SCOPED_TRACE(testing::Message() << sizeof(Storage) * 8 << "-bit storage at "
                                  << heed::to_string(heed::cpu_info().kernels));
  for (const index_t Lq : {index_t{70}, index_t{1}}) {
    const index_t Lk = 300, d = 80;
    const auto q = heed::cast<Storage>(heed::randn<float>({2, 4, Lq, d}, 51));
    const auto k = heed::cast<Storage>(heed::randn<float>({2, 2, Lk, d}, 52));
    const auto v = heed::cast<Storage>(heed::randn<float>({2, 2, Lk, d}, 53));
    const index_t offset = Lk - Lq;
    const auto r = heed::attention(q, k, v, heed::ScaledDot{}, heed::mask::Causal{.offset = offset});
    const auto qd = heed::reference::to_double(q), kd = heed::reference::to_double(k);
    const auto vd = heed::reference::to_double(v);
    const auto expected = heed::reference::attention(
        qd, kd, vd, heed::reference::scaled_dot(qd, kd, 1.0 / std::sqrt(double(d))),
        [&](index_t, index_t, index_t i, index_t j) { return j <= i + offset ? 0.0 : heed::reference::hidden; }, false);
    EXPECT_TRUE(heed::test::all_close(r.output, expected.output, {rtol, atol})) << "Lq " << Lq;
  }
}

TEST(Dispatch, AttentionAtTheLevelInUse) {
  check_attention<float>(2e-5, 2e-6);
  check_attention<double>(1e-10, 1e-12);
  check_attention<heed::half>(2e-3, 2e-4);      // P rounded to 11 bits nowhere: float sums of half values
  check_attention<heed::bfloat16>(1e-2, 2e-3);  // P rounded to bfloat16 on pair products
}

}  // namespace
