// Attention over a long sequence without the score matrix: N = 16384 tokens, 8 heads, d = 64.
// The full [8, N, N] float score matrix would take 8 GiB; the tiled driver keeps one tile per
// worker, so the process stays near the size of Q, K, V and the output (4 × 32 MiB).
//   build/release/examples/heed_example_long_context [N]
#include <heed/heed.hpp>

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  const heed::index_t n = argc > 1 ? std::atol(argv[1]) : 16384;
  const heed::index_t heads = 8, d = 64;
  const auto q = heed::randn<float>({1, heads, n, d}, 1);
  const auto k = heed::randn<float>({1, heads, n, d}, 2);
  const auto v = heed::randn<float>({1, heads, n, d}, 3);

  const auto start = std::chrono::steady_clock::now();
  const auto out = heed::scaled_dot_product_attention(q, k, v);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const double peak_mb = static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
  const double score_matrix_gib = double(heads) * double(n) * double(n) * 4.0 / (1024.0 * 1024.0 * 1024.0);
  const double gflops = 4.0 * double(heads) * double(n) * double(n) * double(d) / seconds * 1e-9;
  std::printf("N = %ld, H = %ld, d = %ld: %.2f s, %.1f GFLOP/s on %d threads; out[0,0,0,0] = %.5f\n",
              static_cast<long>(n), static_cast<long>(heads), static_cast<long>(d), seconds, gflops,
              heed::num_threads(), static_cast<double>(out(0, 0, 0, 0)));
  std::printf("the score matrix alone would be %.1f GiB; peak RSS %.1f MB: %s 300 MB\n", score_matrix_gib, peak_mb,
              peak_mb < 300 ? "under" : "OVER");
  return peak_mb < 300 ? 0 : 1;
}
