// heed_cpu_check <variant> <program> [args...]: runs the program when this CPU can execute
// code built for <variant> (x86_64, v3, v4, bf16, scalar); exits 77 (ctest: skipped) otherwise.
#include <cstdio>
#include <cstring>

#include <unistd.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

namespace {

bool supported(const char* variant) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (std::strcmp(variant, "v3") == 0)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2");
  const bool v4 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  if (std::strcmp(variant, "v4") == 0) return v4;
  if (std::strcmp(variant, "bf16") == 0) {  // AVX512_BF16: CPUID leaf 7, sub-leaf 1, EAX bit 5
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return v4 && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 5)) != 0;
  }
  return true;
#else
  return std::strcmp(variant, "scalar") == 0;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: heed_cpu_check <variant> <program> [args...]\n");
    return 2;
  }
  if (!supported(argv[1])) {
    std::printf("this CPU cannot run %s code: skipped\n", argv[1]);
    return 77;
  }
  execv(argv[2], argv + 2);
  std::perror("heed_cpu_check: execv");
  return 2;
}
