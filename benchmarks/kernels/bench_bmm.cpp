// Seed 002's first tip, "torch.baddbmm instead of a loop of per-matrix products", in heed: one
// heed::bmm call over a batch against a loop of one bmm call per matrix, on attention-sized
// products (B·H score matrices Q·Kᵀ, and a few large ones), one and two threads.
//   HEED_QUIET=1 taskset -c 0,1 ./heed_bench_kernels_bmm --benchmark_repetitions=5
//   --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include "heed/core/parallel.hpp"
#include "heed/core/random.hpp"
#include "heed/kernels/bmm.hpp"

namespace {

using heed::index_t;

// args: B, n, m, p, threads
void setup(benchmark::State& state, index_t& B, index_t& n, index_t& m, index_t& p) {
  B = state.range(0), n = state.range(1), m = state.range(2), p = state.range(3);
  heed::set_num_threads(static_cast<int>(state.range(4)));
}

void counters(benchmark::State& state, index_t B, index_t n, index_t m, index_t p) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * double(B * n * m * p) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_bmm_batched(benchmark::State& state) {
  index_t B, n, m, p;
  setup(state, B, n, m, p);
  const auto a = heed::randn<float>({B, n, m}, 1);
  const auto b = heed::randn<float>({B, m, p}, 2);
  for (auto _ : state) benchmark::DoNotOptimize(heed::bmm(a, b));
  counters(state, B, n, m, p);
  heed::set_num_threads(0);
}

void BM_bmm_loop(benchmark::State& state) {
  index_t B, n, m, p;
  setup(state, B, n, m, p);
  const auto a = heed::randn<float>({B, n, m}, 1);
  const auto b = heed::randn<float>({B, m, p}, 2);
  for (auto _ : state)
    for (index_t i = 0; i < B; ++i)
      benchmark::DoNotOptimize(heed::bmm(a.view().narrow(0, i, 1), b.view().narrow(0, i, 1)));
  counters(state, B, n, m, p);
  heed::set_num_threads(0);
}

void shapes(benchmark::internal::Benchmark* bench) {
  bench->ArgNames({"B", "n", "m", "p", "threads"});
  for (const int threads : {1, 2}) {
    bench->Args({32, 128, 64, 128, threads});  // Q·Kᵀ of 4 sequences × 8 heads, L 128, d 64
    bench->Args({96, 64, 32, 64, threads});    // small heads
    bench->Args({4, 512, 512, 512, threads});  // a few large products
  }
  bench->UseRealTime();
}

BENCHMARK(BM_bmm_batched)->Apply(shapes);
BENCHMARK(BM_bmm_loop)->Apply(shapes);

}  // namespace
