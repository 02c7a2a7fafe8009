// heed::cpu_info() against two other readings of the same CPU: gcc's and clang's
// __builtin_cpu_supports (libgcc's or compiler-rt's own CPUID and XGETBV reads) and, on Linux,
// the kernel's flags in /proc/cpuinfo. The level of the kernels is the one the compiler's
// target macros give. This file is also built at x86-64-v3, x86-64-v4, v4 + BF16 and scalar.

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>

#include "heed/simd.hpp"

namespace {

// The flags of the first processor in /proc/cpuinfo; empty where there is no such file.
std::set<std::string> proc_cpuinfo_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;  // x86's line; AArch64 says "Features"
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
  }
  return {};
}

TEST(CpuInfo, AgreesWithTheKernelsFlags) {
  const heed::CpuInfo cpu = heed::cpu_info();
  std::printf("CPU best level: %s, kernels compiled for: %s\n", std::string(heed::to_string(cpu.best)).c_str(),
              std::string(heed::to_string(cpu.kernels)).c_str());
#if !defined(__x86_64__) && !defined(__i386__)
  // (qemu-user shows the x86 host's /proc/cpuinfo to an AArch64 program)
  GTEST_SKIP() << "the kernel's x86 flags say nothing of this program's CPU";
#endif
  const auto flags = proc_cpuinfo_flags();
  if (flags.empty()) GTEST_SKIP() << "no x86 flags line in /proc/cpuinfo";
  const auto has = [&](const char* f) { return flags.count(f) != 0; };
  // Linux lists a feature only where it saves the feature's registers, as XCR0 says.
  EXPECT_EQ(cpu.sse2, has("sse2"));
  EXPECT_EQ(cpu.avx2, has("avx2"));
  EXPECT_EQ(cpu.fma, has("fma"));
  EXPECT_EQ(cpu.f16c, has("f16c"));
  EXPECT_EQ(cpu.avx512f, has("avx512f"));
  EXPECT_EQ(cpu.avx512bw, has("avx512bw"));
  EXPECT_EQ(cpu.avx512dq, has("avx512dq"));
  EXPECT_EQ(cpu.avx512vl, has("avx512vl"));
  EXPECT_EQ(cpu.avx512_bf16, has("avx512_bf16"));
  EXPECT_EQ(cpu.avx512_fp16, has("avx512_fp16"));
  EXPECT_EQ(cpu.amx_bf16, has("amx_bf16") && has("amx_tile"));
  // the maker, as /proc/cpuinfo's vendor_id line names it
  std::ifstream in("/proc/cpuinfo");
  std::string vendor;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("vendor_id", 0) == 0) {
      vendor = line.substr(line.find(':') + 2);
      break;
    }
  EXPECT_EQ(cpu.vendor, vendor == "GenuineIntel"   ? heed::CpuVendor::intel
                        : vendor == "AuthenticAMD" ? heed::CpuVendor::amd
                                                   : heed::CpuVendor::other)
      << vendor;
}

#if (defined(__x86_64__)) && (defined(__GNUC__) || defined(__clang__))
TEST(CpuInfo, AgreesWithTheCompilersRuntime) {
  __builtin_cpu_init();
  const heed::CpuInfo cpu = heed::cpu_info();
  EXPECT_EQ(cpu.avx2, __builtin_cpu_supports("avx2") != 0);
  EXPECT_EQ(cpu.fma, __builtin_cpu_supports("fma") != 0);
  EXPECT_EQ(cpu.avx512f, __builtin_cpu_supports("avx512f") != 0);
  EXPECT_EQ(cpu.avx512bw, __builtin_cpu_supports("avx512bw") != 0);
  EXPECT_EQ(cpu.avx512dq, __builtin_cpu_supports("avx512dq") != 0);
  EXPECT_EQ(cpu.avx512vl, __builtin_cpu_supports("avx512vl") != 0);
  const bool v4 = cpu.avx512f && cpu.avx512bw && cpu.avx512dq && cpu.avx512vl;
  const heed::IsaLevel expected = v4 && cpu.avx512_bf16             ? heed::IsaLevel::v4_bf16
                                  : v4                              ? heed::IsaLevel::v4
                                  : cpu.avx2 && cpu.fma && cpu.f16c ? heed::IsaLevel::v3
                                                                    : heed::IsaLevel::baseline;
  EXPECT_EQ(cpu.best, expected);
}
#endif

TEST(CpuInfo, KernelsAreTheCompiledLevel) {
  const heed::CpuInfo cpu = heed::cpu_info();
#if defined(HEED_SIMD_SCALAR)
  EXPECT_EQ(cpu.kernels, heed::IsaLevel::scalar);
  EXPECT_STREQ(heed::simd::arch_name, "scalar");
#elif defined(__AVX512BF16__)
  EXPECT_EQ(cpu.kernels, heed::IsaLevel::v4_bf16);
  EXPECT_TRUE(heed::simd::bf16_pair_products);
#elif defined(__AVX512BW__)
  EXPECT_EQ(cpu.kernels, heed::IsaLevel::v4);
#elif defined(__AVX2__)
  EXPECT_EQ(cpu.kernels, heed::IsaLevel::v3);
#elif defined(__aarch64__)
  EXPECT_EQ(cpu.kernels, heed::IsaLevel::neon);
  EXPECT_EQ(cpu.best, heed::IsaLevel::neon);
#elif defined(__x86_64__)
  EXPECT_EQ(cpu.kernels, heed::IsaLevel::baseline);
#endif
  // heed_cpu_check runs a variant only where the CPU can: the kernels never exceed the CPU.
  if (cpu.kernels != heed::IsaLevel::scalar) {
    EXPECT_LE(cpu.kernels, cpu.best);
  }
}

// The per-CPU choice of the bfloat16 products: the table, and HEED_BF16_PAIRS over it.
TEST(CpuInfo, Bf16PairsFollowTheTableUnlessTheEnvironmentSaysOtherwise) {
  using heed::CpuVendor;
  std::string_view complaint;
  const auto choice = [&](bool has, CpuVendor vendor, const char* env) {
    return heed::simd::bf16_pairs_choice(has, vendor, env, complaint);
  };
  EXPECT_TRUE(choice(true, CpuVendor::amd, nullptr));
  EXPECT_FALSE(choice(true, CpuVendor::intel, nullptr));
  EXPECT_TRUE(choice(true, CpuVendor::other, ""));  // a maker without a row: pairs
  EXPECT_TRUE(complaint.empty());
  EXPECT_FALSE(choice(false, CpuVendor::amd, nullptr));  // no AVX-512 BF16: never pairs
  EXPECT_TRUE(choice(true, CpuVendor::intel, "1"));
  EXPECT_FALSE(choice(true, CpuVendor::amd, "0"));
  EXPECT_TRUE(complaint.empty());
  EXPECT_FALSE(choice(false, CpuVendor::amd, "1"));  // asked for, but the CPU lacks them: said once
  EXPECT_NE(complaint.find("does not have"), std::string_view::npos) << complaint;
  EXPECT_FALSE(choice(true, CpuVendor::intel, "yes"));  // not understood: said, and the table's choice
  EXPECT_NE(complaint.find("must be 0"), std::string_view::npos) << complaint;
  EXPECT_TRUE(choice(true, CpuVendor::amd, "yes"));

  // this process: the environment ctest gave it (HEED_BF16_PAIRS=0 or 1 for the @bf16 builds)
  const heed::CpuInfo cpu = heed::cpu_info();
  const char* env = std::getenv("HEED_BF16_PAIRS");
  EXPECT_EQ(heed::simd::bf16_pairs_chosen(), choice(cpu.avx512_bf16, cpu.vendor, env));
  EXPECT_EQ(cpu.bf16_pairs, cpu.kernels == heed::IsaLevel::v4_bf16 && heed::simd::bf16_pairs_chosen());
  if (env != nullptr && std::string_view(env) == "0") {
    EXPECT_FALSE(cpu.bf16_pairs);
  }
  if (env != nullptr && std::string_view(env) == "1" && cpu.avx512_bf16) {
    EXPECT_EQ(cpu.bf16_pairs, heed::simd::bf16_pair_products);
  }
  // what the kernels read: the same choice, for bfloat16 only
  static_assert(!heed::simd::pairs_compiled_for<float> && !heed::simd::pairs_compiled_for<heed::half>);
  static_assert(heed::simd::pairs_compiled_for<heed::bfloat16> == heed::simd::bf16_pair_products);
  EXPECT_EQ(heed::simd::pairs_in_use<heed::bfloat16>(), cpu.bf16_pairs);
  EXPECT_FALSE(heed::simd::pairs_in_use<float>());
}

TEST(CpuInfo, LevelNames) {
  EXPECT_EQ(heed::to_string(heed::IsaLevel::scalar), "scalar");
  EXPECT_EQ(heed::to_string(heed::IsaLevel::baseline), "baseline");
  EXPECT_EQ(heed::to_string(heed::IsaLevel::v3), "v3");
  EXPECT_EQ(heed::to_string(heed::IsaLevel::v4), "v4");
  EXPECT_EQ(heed::to_string(heed::IsaLevel::v4_bf16), "v4-bf16");
  EXPECT_EQ(heed::to_string(heed::IsaLevel::neon), "neon");
}

}  // namespace
