#pragma once
// What the CPU running the program can do, and which of heed's kernels run on it:
//   heed::cpu_info()          the CPU's vector features (as the CPU and the operating system
//                             allow them), the best instruction-set level heed has kernels
//                             for, and the level heed's kernels were compiled for;
//   heed::to_string(IsaLevel) the level's name;
//   simd::bf16_pair_choices   the per-CPU kernel choice: where bfloat16 products run on AVX-512
//                             BF16 pairs and where they widen to float (HEED_BF16_PAIRS=0 or 1
//                             overrides it, to run either path on any machine).
// Including it also prints two notices, each at most once per process on stderr, for builds
// that would otherwise be slow without saying so (docs/decisions.md, "Build notices"):
//   - a translation unit compiled without optimization (gcc or clang below -O1): heed's
//     kernels then run 100-400 times slower; silenced by defining HEED_ALLOW_UNOPTIMIZED;
//   - kernels compiled for baseline x86-64 (SSE2) on a CPU that has AVX2 or AVX-512: several
//     times slower; silenced by defining HEED_ALLOW_BASELINE_ISA.
// The environment variable HEED_QUIET (any value but "" or "0") silences both at run time. A
// #pragma message alone is not enough: clang drops it from a header reached through -isystem,
// which is how CMake packages, vcpkg and Conan hand heed's include directory to a program.

#include <cstdio>
#include <cstddef>
#include <cstdlib>
#include <string>
#include <string_view>

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/simd/detail/cpu_features.hpp"
#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/simd/detail/level_namespace.hpp"

namespace heed {

/// The instruction-set levels heed has kernels for, lowest first.
enum class IsaLevel {
  scalar,    ///< one lane: the portable fallback (HEED_SIMD_SCALAR, or a target xsimd does not know)
  baseline,  ///< x86-64 baseline: SSE2
  v3,        ///< x86-64-v3: AVX2, FMA, F16C
  v4,        ///< x86-64-v4: AVX-512 F, BW, DQ, VL
  v4_bf16,   ///< x86-64-v4 with AVX-512 BF16 (vdpbf16ps pair products)
  neon,      ///< AArch64 with NEON
};

/// The level's name: "scalar", "baseline", "v3", "v4", "v4-bf16" or "neon".
[[nodiscard]] constexpr std::string_view to_string(IsaLevel level) noexcept {
  switch (level) {
    case IsaLevel::scalar:
      return "scalar";
    case IsaLevel::baseline:
      return "baseline";
    case IsaLevel::v3:
      return "v3";
    case IsaLevel::v4:
      return "v4";
    case IsaLevel::v4_bf16:
      return "v4-bf16";
    case IsaLevel::neon:
      return "neon";
  }
  return "unknown";
}

/// The CPU's maker, as CPUID names it.
enum class CpuVendor {
  other,  ///< not x86, or a maker heed has no row for
  intel,  ///< "GenuineIntel"
  amd,    ///< "AuthenticAMD"
};

/// The CPU's vector features, each true only where the CPU has it and the operating system
/// saves its registers (XCR0 on x86: the AVX state for AVX2, FMA and F16C, the AVX-512 state for
/// the AVX-512 features, the tile state for AMX), and the kernels heed runs on it.
struct CpuInfo {
  bool sse2 = false;                    ///< x86-64's baseline
  bool avx2 = false;                    ///< AVX2
  bool fma = false;                     ///< FMA3
  bool f16c = false;                    ///< half <-> float conversions
  bool avx512f = false;                 ///< AVX-512 Foundation
  bool avx512bw = false;                ///< AVX-512 byte and word
  bool avx512dq = false;                ///< AVX-512 doubleword and quadword
  bool avx512vl = false;                ///< AVX-512 at 128 and 256 bits
  bool avx512_bf16 = false;             ///< vdpbf16ps: bfloat16 pair products into float
  bool avx512_fp16 = false;             ///< AVX-512 FP16 (no heed kernel uses it)
  bool amx_bf16 = false;                ///< AMX tiles with BF16 (no heed kernel uses them)
  bool neon = false;                    ///< AArch64's Advanced SIMD
  CpuVendor vendor = CpuVendor::other;  ///< the CPU's maker
  /// The best level heed has kernels for that this CPU runs.
  IsaLevel best = IsaLevel::scalar;
  /// The level heed's attention kernels run at: in a program built with heed_dispatch
  /// (HEED_DISPATCH), the best level this CPU has (or the one HEED_ISA asks for); otherwise the
  /// one the compiler's target (-march) of the translation unit that calls cpu_info() gives.
  /// Below `best`, the kernels leave speed unused.
  IsaLevel kernels = IsaLevel::scalar;
  /// True when heed's bfloat16 attention and GEMMs multiply on AVX-512 BF16 pairs (vdpbf16ps):
  /// the kernels are compiled for v4-bf16 and simd::bf16_pair_choices (or HEED_BF16_PAIRS)
  /// picks pairs for this CPU. Otherwise bfloat16 is widened to float in registers.
  bool bf16_pairs = false;
};

namespace simd {

/// One row of the per-CPU kernel choices: on a CPU of this maker with AVX-512 BF16, whether
/// bfloat16 products run on vdpbf16ps pairs (true) or on float FMAs after widening (false).
struct Bf16PairChoice {
  CpuVendor vendor;  ///< the CPU's maker
  bool pairs;        ///< pair products (true) or widening (false)
};

/// Where pair products beat widening, by the CPU's maker; a maker not listed uses pairs.
/// docs/decisions.md ("Per-CPU kernel choices") has the measurement behind each row.
inline constexpr Bf16PairChoice bf16_pair_choices[] = {
    {CpuVendor::amd, true},     // Zen 4, Zen 5: the pair kernel is the faster
    {CpuVendor::intel, false},  // Sapphire Rapids: vdpbf16ps is slower than two float FMAs
};

/// The choice for a CPU with AVX-512 BF16 (`has_pairs`) of maker `vendor`, given the value of
/// HEED_BF16_PAIRS (`env`, nullptr when unset): "1" pairs, "0" widening, unset or "" the table.
/// Another value, or "1" on a CPU without the instructions, sets `complaint` to the line to print.
/// The rule bf16_pairs_chosen() applies, apart so that a test can try every case.
[[nodiscard]] inline bool bf16_pairs_choice(bool has_pairs, CpuVendor vendor, const char* env,
                                            std::string_view& complaint) noexcept {
  complaint = {};
  const std::string_view value = env ? env : "";
  if (value == "0") return false;
  if (value == "1") {
    if (!has_pairs)
      complaint =
          "heed: HEED_BF16_PAIRS=1 asks for AVX-512 BF16 pair products, which this CPU does not have; "
          "bfloat16 is widened to float\n";
    return has_pairs;
  }
  if (!value.empty())
    complaint =
        "heed: HEED_BF16_PAIRS must be 0 (widen bfloat16 to float) or 1 (AVX-512 BF16 pair products); "
        "the choice for this CPU is used\n";
  if (!has_pairs) return false;
  for (const Bf16PairChoice& row : bf16_pair_choices)
    if (row.vendor == vendor) return row.pairs;
  return true;
}

// A namespace of this translation unit's level (simd/detail/level_namespace.hpp): another
// translation unit of the same program may be compiled for another.
inline namespace HEED_SIMD_LEVEL_NAMESPACE {
/// The level the kernels of this translation unit are compiled for (simd/arch.hpp picks the
/// code of the same level).
inline constexpr IsaLevel compiled_level = IsaLevel::HEED_SIMD_LEVEL;
}  // namespace HEED_SIMD_LEVEL_NAMESPACE

/// What the CPU has: cpu_info() without the fields about heed's kernels (`kernels`, `bf16_pairs`).
/// The CPU is read once per process.
[[nodiscard]] inline CpuInfo cpu_features() noexcept {
  static const detail::X86Bits x86 = detail::read_x86_bits();
  using detail::bit;
  CpuInfo info;
  const bool avx_state = (x86.xcr0 & 0x6) == 0x6;                    // XMM and YMM registers saved
  const bool avx512_state = avx_state && (x86.xcr0 & 0xE0) == 0xE0;  // opmask, upper ZMM 0-15, ZMM 16-31
  const bool amx_state = (x86.xcr0 & 0x60000) == 0x60000;            // XTILECFG, XTILEDATA
  const bool avx = avx_state && bit(x86.l1_ecx, 28);
  info.sse2 = bit(x86.l1_edx, 26);
  info.fma = avx && bit(x86.l1_ecx, 12);
  info.f16c = avx && bit(x86.l1_ecx, 29);
  info.avx2 = avx && bit(x86.l7_ebx, 5);
  info.avx512f = avx512_state && bit(x86.l7_ebx, 16);
  info.avx512dq = avx512_state && bit(x86.l7_ebx, 17);
  info.avx512bw = avx512_state && bit(x86.l7_ebx, 30);
  info.avx512vl = avx512_state && bit(x86.l7_ebx, 31);
  info.avx512_fp16 = avx512_state && bit(x86.l7_edx, 23);
  info.avx512_bf16 = avx512_state && bit(x86.l7s1_eax, 5);
  info.amx_bf16 = amx_state && bit(x86.l7_edx, 22) && bit(x86.l7_edx, 24);
  const bool v4 = info.avx512f && info.avx512bw && info.avx512dq && info.avx512vl;
  if (v4 && info.avx512_bf16) {
    info.best = IsaLevel::v4_bf16;
  } else if (v4) {
    info.best = IsaLevel::v4;
  } else if (info.avx2 && info.fma && info.f16c) {
    info.best = IsaLevel::v3;
  } else if (info.sse2) {
    info.best = IsaLevel::baseline;
  }
#if defined(__aarch64__) || defined(_M_ARM64)
  info.neon = true;  // every AArch64 CPU has it
  info.best = IsaLevel::neon;
#endif
  const std::string_view maker(x86.vendor);
  info.vendor = maker == "GenuineIntel"   ? CpuVendor::intel
                : maker == "AuthenticAMD" ? CpuVendor::amd
                                          : CpuVendor::other;
  return info;
}

/// True where this CPU should run bfloat16 products on AVX-512 BF16 pairs, by
/// bf16_pair_choices or HEED_BF16_PAIRS: decided once per process (with one line on stderr for
/// a HEED_BF16_PAIRS it cannot follow). The kernels use pairs where this holds and they were
/// compiled for them (bf16_pair_products).
[[nodiscard]] inline bool bf16_pairs_chosen() noexcept {
  static const bool chosen = [] {
    const CpuInfo cpu = cpu_features();
    std::string_view complaint;
    const char* env = std::getenv("HEED_BF16_PAIRS");  // NOLINT(concurrency-mt-unsafe): read once
    const bool on = bf16_pairs_choice(cpu.avx512_bf16, cpu.vendor, env, complaint);
    if (!complaint.empty()) std::fwrite(complaint.data(), 1, complaint.size(), stderr);
    return on;
  }();
  return chosen;
}

/// The levels a program built with heed_dispatch (HEED_DISPATCH) carries, lowest first; the
/// portable scalar kernels too with heed_dispatch(<target> SCALAR) (HEED_DISPATCH_SCALAR, x86-64).
inline constexpr IsaLevel dispatch_levels[] = {
#if defined(HEED_DISPATCH_SCALAR)
    IsaLevel::scalar,
#endif
#if defined(__aarch64__) || defined(_M_ARM64)
    IsaLevel::neon,
#else
    IsaLevel::baseline,
    IsaLevel::v3,
    IsaLevel::v4,
    IsaLevel::v4_bf16,
#endif
};

/// The level a program that carries `levels` (lowest first) runs on a CPU whose best level is
/// `best`, given HEED_ISA (`env`, nullptr when unset): the highest level carried that the CPU
/// has, or the one HEED_ISA names ("scalar", "baseline", "v3", "v4", "v4-bf16", "neon") where it is one of
/// those. A name that is not a level, or a level the CPU or the program lacks, sets `complaint`
/// to the line to print (naming the levels available). The rule dispatch_level() applies,
/// apart so that a test can try every case.
[[nodiscard]] inline IsaLevel isa_choice(IsaLevel best, const IsaLevel* levels, std::size_t count, const char* env,
                                         std::string& complaint) {
  complaint.clear();
  const auto runs_on = [best](IsaLevel level) {
    const bool arm = level == IsaLevel::neon, arm_cpu = best == IsaLevel::neon;
    return arm == arm_cpu && static_cast<int>(level) <= static_cast<int>(best);
  };
  IsaLevel chosen = IsaLevel::scalar;
  std::string available;
  for (std::size_t i = 0; i < count; ++i)
    if (runs_on(levels[i])) {
      chosen = levels[i];
      available += (available.empty() ? "" : ", ") + std::string(to_string(levels[i]));
    }
  const std::string_view asked = env ? env : "";
  if (asked.empty()) return chosen;
  for (std::size_t i = 0; i < count; ++i)
    if (asked == to_string(levels[i]) && runs_on(levels[i])) return levels[i];
  complaint = "heed: HEED_ISA=" + std::string(asked) + " is not a level this CPU and program have (" +
              (available.empty() ? std::string("none") : available) + "); running " + std::string(to_string(chosen)) +
              "\n";
  return chosen;
}

#if defined(HEED_DISPATCH)
/// The level heed's kernels run at in a program built with heed_dispatch: chosen once per
/// process by isa_choice from the CPU and HEED_ISA (one line on stderr for a HEED_ISA it cannot
/// follow).
[[nodiscard]] inline IsaLevel dispatch_level() noexcept {
  static const IsaLevel level = [] {
    std::string complaint;
    const char* env = std::getenv("HEED_ISA");  // NOLINT(concurrency-mt-unsafe): read once
    const IsaLevel chosen = isa_choice(cpu_features().best, dispatch_levels,
                                       sizeof dispatch_levels / sizeof dispatch_levels[0], env, complaint);
    if (!complaint.empty()) std::fwrite(complaint.data(), 1, complaint.size(), stderr);
    return chosen;
  }();
  return level;
}
#endif

}  // namespace simd

/// The CPU's features and the kernels heed runs on it (the CPU is read once per process).
[[nodiscard]] inline CpuInfo cpu_info() noexcept {
  CpuInfo info = simd::cpu_features();
#if defined(HEED_DISPATCH)
  info.kernels = simd::dispatch_level();
#else
  info.kernels = simd::compiled_level;
#endif
  info.bf16_pairs = info.kernels == IsaLevel::v4_bf16 && simd::bf16_pairs_chosen();
  return info;
}

// Each translation unit that includes heed asks for the notices its own flags call for (internal
// linkage: a translation unit compiled with other flags asks for its own); each is printed at
// most once per process.
// (Not in heed_dispatch's translation units, which compile one level each on purpose, and not
// for the baseline notice in a program built with heed_dispatch, whose kernels run at the CPU's
// best level.)
#if (defined(__GNUC__) || defined(__clang__)) && !defined(__OPTIMIZE__) && !defined(HEED_ALLOW_UNOPTIMIZED) && \
    !defined(HEED_DISPATCH_LEVEL_UNIT)
[[maybe_unused]] static const bool unoptimized_notice = detail::notice_unoptimized();
#endif
#if (defined(__x86_64__) || defined(_M_X64)) && !defined(__AVX2__) && !defined(HEED_SIMD_SCALAR) && \
    !defined(HEED_ALLOW_BASELINE_ISA) && !defined(HEED_DISPATCH_LEVEL_UNIT) && !defined(HEED_DISPATCH)
[[maybe_unused]] static const bool baseline_isa_notice =
    detail::notice_baseline_isa(cpu_info().avx512f ? "AVX-512" : (cpu_info().best >= IsaLevel::v3 ? "AVX2" : nullptr));
#endif

}  // namespace heed
