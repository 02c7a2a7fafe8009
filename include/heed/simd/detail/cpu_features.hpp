#pragma once
#include "heed/core/detail/internal_header_check.hpp"

// The CPUID and XGETBV reads behind heed::cpu_info() (simd/cpu.hpp), and the once-per-process
// build notices it prints.

#include <cstdio>
#include <cstdlib>
#include <string_view>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#define HEED_CPU_X86_GNU 1
#elif defined(_M_X64) && defined(_MSC_VER)
#include <intrin.h>
#define HEED_CPU_X86_MSVC 1
#endif

namespace heed::detail {

/// The x86 feature bits heed reads: the vendor (CPUID leaf 0's EBX, EDX, ECX: "GenuineIntel",
/// "AuthenticAMD"), CPUID leaf 1, leaf 7 sub-leaves 0 and 1, and XCR0 (the register states the
/// operating system saves; 0 where OSXSAVE says XGETBV may not run). All zero on other CPUs.
struct X86Bits {
  char vendor[13] = {};
  unsigned l1_ecx = 0, l1_edx = 0, l7_ebx = 0, l7_edx = 0, l7s1_eax = 0;
  unsigned long long xcr0 = 0;
};

#if defined(HEED_CPU_X86_GNU) || defined(HEED_CPU_X86_MSVC)
/// CPUID leaf / subleaf as {eax, ebx, ecx, edx}; zeros where the leaf is beyond the CPU's highest.
inline void cpuid(unsigned leaf, unsigned subleaf, unsigned (&r)[4]) noexcept {
  r[0] = r[1] = r[2] = r[3] = 0;
#if defined(HEED_CPU_X86_GNU)
  if (!__get_cpuid_count(leaf, subleaf, &r[0], &r[1], &r[2], &r[3])) r[0] = r[1] = r[2] = r[3] = 0;
#else
  int highest[4], out[4];
  __cpuid(highest, 0);
  if (static_cast<unsigned>(highest[0]) < leaf) return;
  __cpuidex(out, static_cast<int>(leaf), static_cast<int>(subleaf));
  for (int i = 0; i < 4; ++i) r[i] = static_cast<unsigned>(out[i]);
#endif
}
#endif

inline X86Bits read_x86_bits() noexcept {
  X86Bits bits;
#if defined(HEED_CPU_X86_GNU) || defined(HEED_CPU_X86_MSVC)
  unsigned r[4];
  cpuid(0, 0, r);
  for (int i = 0; i < 4; ++i) {  // EBX, EDX, ECX: 12 characters
    bits.vendor[i] = static_cast<char>((r[1] >> (8 * i)) & 0xFF);
    bits.vendor[4 + i] = static_cast<char>((r[3] >> (8 * i)) & 0xFF);
    bits.vendor[8 + i] = static_cast<char>((r[2] >> (8 * i)) & 0xFF);
  }
  cpuid(1, 0, r);
  bits.l1_ecx = r[2];
  bits.l1_edx = r[3];
  cpuid(7, 0, r);
  bits.l7_ebx = r[1];
  bits.l7_edx = r[3];
  cpuid(7, 1, r);
  bits.l7s1_eax = r[0];
  if ((bits.l1_ecx >> 27) & 1u) {  // OSXSAVE: XGETBV may run
#if defined(HEED_CPU_X86_GNU)
    unsigned eax = 0, edx = 0;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));  // the instruction: _xgetbv would need -mxsave
    bits.xcr0 = (static_cast<unsigned long long>(edx) << 32) | eax;
#else
    bits.xcr0 = _xgetbv(0);
#endif
  }
#endif
  return bits;
}

/// Bit n of value.
constexpr bool bit(unsigned long long value, int n) noexcept {
  return ((value >> n) & 1u) != 0;
}

/// HEED_QUIET set to anything but "" or "0": no notices.
inline bool notices_silenced() noexcept {
  const char* value = std::getenv("HEED_QUIET");  // NOLINT(concurrency-mt-unsafe): read once, at start-up
  return value != nullptr && value[0] != '\0' && std::string_view(value) != "0";
}

/// Prints, once per process, that heed was compiled without optimization.
inline bool notice_unoptimized() noexcept {
  static const bool printed = [] {
    if (notices_silenced()) return false;
    std::fputs(
        "heed: this program was compiled without optimization (no -O2 or -O3), so heed's kernels run "
        "100-400 times slower; build with -O2 (CMAKE_BUILD_TYPE=Release), or define HEED_ALLOW_UNOPTIMIZED "
        "or set HEED_QUIET=1 to silence this\n",
        stderr);
    return true;
  }();
  return printed;
}

/// Prints, once per process, that heed's kernels were compiled for baseline x86-64 while the CPU
/// has `better` ("AVX2", "AVX-512"; nullptr: it has nothing better, say nothing).
inline bool notice_baseline_isa(const char* better) noexcept {
  static const bool printed = [better] {
    if (better == nullptr || notices_silenced()) return false;
    std::fprintf(stderr,
                 "heed: compiled for baseline x86-64 (SSE2) while this CPU has %s, so heed's kernels run several "
                 "times slower than they could; compile with -march=native or -march=x86-64-v3, or define "
                 "HEED_ALLOW_BASELINE_ISA or set HEED_QUIET=1 to silence this\n",
                 better);
    return true;
  }();
  return printed;
}

}  // namespace heed::detail
