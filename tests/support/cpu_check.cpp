// heed_cpu_check <variant> <program> [args...]: runs the program when this CPU can execute
// code built for <variant> (x86_64, v3, v4, scalar); exits 77 (ctest: skipped) otherwise.
#include <cstdio>
#include <cstring>

#include <unistd.h>

namespace {

bool supported(const char* variant) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (std::strcmp(variant, "v3") == 0)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2");
  if (std::strcmp(variant, "v4") == 0)
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
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
