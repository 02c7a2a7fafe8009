// Uses heed the way a user's program does: one include, a few calls, a checked answer.
#include <heed/heed.hpp>

#include <cmath>
#include <cstdio>

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
  std::printf("OpenMP: off\n");
#endif
  return std::abs(total - 1.0f) < 1e-5f ? 0 : 1;
}
