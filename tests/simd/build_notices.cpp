// Built at -O0, for the compiler's default target and without HEED_ALLOW_UNOPTIMIZED or
// HEED_ALLOW_BASELINE_ISA, as a new user's first build often is: the ctests of
// tests/CMakeLists.txt expect heed's run-time notices on stderr (simd/cpu.hpp), and none under
// HEED_QUIET=1. Two translation units include heed, and each notice still comes once.
#include <heed/simd/cpu.hpp>

#include <cstdio>
#include <string>

bool second_translation_unit_included_heed();

int main() {
  const heed::CpuInfo cpu = heed::cpu_info();
  std::printf("best level: %s; kernels: %s; second unit: %d\n", std::string(heed::to_string(cpu.best)).c_str(),
              std::string(heed::to_string(cpu.kernels)).c_str(), second_translation_unit_included_heed() ? 1 : 0);
  return 0;
}
