// The machine's limit for heed's kernels: a register-blocked loop of independent FMAs on
// simd::batch, as many chains as it takes to hide the FMA latency on every FMA port. Its
// GFLOP/s on one core is what the kernel benchmarks are a fraction of (README, docs).
//   OMP_NUM_THREADS=1 taskset -c 0 build/release/benchmarks/heed_bench_simd_peak
#include <benchmark/benchmark.h>

#include <cstddef>

#include "heed/simd/arch.hpp"

namespace {

namespace simd = heed::simd;

// `chains` accumulators, each updated by one FMA per step: 2·width flops per FMA.
template <class T, int chains>
void BM_fma_peak(benchmark::State& state) {
  constexpr int steps = 1024;
  simd::batch<T> acc[chains];
  for (int c = 0; c < chains; ++c) acc[c] = simd::broadcast(T(1) + T(c) * T(1e-3));
  const simd::batch<T> a = simd::broadcast(T(0.999999)), b = simd::broadcast(T(1e-7));
  for (auto _ : state) {
    for (int s = 0; s < steps; ++s)
      for (int c = 0; c < chains; ++c) acc[c] = simd::fma(acc[c], a, b);
    for (int c = 0; c < chains; ++c) benchmark::DoNotOptimize(acc[c]);
  }
  const double flops = 2.0 * double(simd::width<T>) * chains * steps;
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_fma_peak<float, 8>);
BENCHMARK(BM_fma_peak<float, 12>);
BENCHMARK(BM_fma_peak<double, 12>);

}  // namespace
