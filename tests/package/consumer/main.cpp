// Uses heed the way a user's program does: one include, a few calls, a checked answer.
#include <heed/heed.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>

int main() {
  const auto x = heed::randn<float>({2, 5}, 1);
  const auto p = heed::softmax(x);
  float total = 0;
  for (heed::index_t j = 0; j < 5; ++j) total += p(1, j);
  std::printf("heed %d.%d.%d: softmax row sum %.6f\n", HEED_VERSION_MAJOR, HEED_VERSION_MINOR, HEED_VERSION_PATCH,
              static_cast<double>(total));
#ifdef _OPENMP
  std::printf("OpenMP: on (heed::heed carries it)\n");
#else
  std::printf("OpenMP: off (heed's own threads)\n");
#endif
  // with or without OpenMP, the two shares of a parallel loop run at once: each waits (5 s at
  // most) for the other
  std::atomic<int> arrived{0};
  std::atomic<bool> met{true};
  heed::parallel_for(2, 2, [&](heed::index_t, int) {
    arrived.fetch_add(1);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (arrived.load() < 2 && met.load())
      if (std::chrono::steady_clock::now() > until) met = false;
  });
  std::printf("threads: %d by default, two workers %s\n", heed::num_threads(), met ? "met" : "never met");
  if (!met) return 1;
#ifdef HEED_DISPATCH
  // built with heed_dispatch: the attention kernels run at the CPU's best level, whatever -march
  const heed::CpuInfo cpu = heed::cpu_info();
  std::printf("dispatch: kernels at %s, the CPU's best %s\n", std::string(heed::to_string(cpu.kernels)).c_str(),
              std::string(heed::to_string(cpu.best)).c_str());
  if (cpu.kernels != cpu.best) return 1;
  const auto q = heed::randn<float>({1, 2, 40, 64}, 2);
  const auto out = heed::scaled_dot_product_attention(q, q, q);
  if (!std::isfinite(out(0, 1, 39, 63))) return 1;
  std::printf("dispatch ok\n");  // what ctest looks for: it reads the output, not the exit code
#endif
  return std::abs(total - 1.0f) < 1e-5f ? 0 : 1;
}
