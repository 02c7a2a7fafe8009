// A consumer of the Conan package: one include, a scaled dot-product attention, a checked answer.
#include <heed/heed.hpp>

#include <cmath>
#include <cstdio>

int main() {
  const auto q = heed::randn<float>({1, 2, 5, 8}, 1), k = heed::randn<float>({1, 2, 7, 8}, 2);
  const auto r = heed::attention(q, k, k, heed::ScaledDot{}, heed::mask::None{}, {.need_weights = true});
  float total = 0;
  for (heed::index_t j = 0; j < 7; ++j) total += r.weights(0, 1, 3, j);
  const heed::CpuInfo cpu = heed::cpu_info();
  std::printf("heed %d.%d.%d from Conan (kernels %s, this CPU's best %s): attention weights row sum %.6f\n",
              HEED_VERSION_MAJOR, HEED_VERSION_MINOR, HEED_VERSION_PATCH, heed::to_string(cpu.kernels).data(),
              heed::to_string(cpu.best).data(), static_cast<double>(total));
  // heed_dispatch(test_package): the kernels run at the CPU's best level, whatever -march
  return std::abs(total - 1.0f) < 1e-5f && cpu.kernels == cpu.best ? 0 : 1;
}
