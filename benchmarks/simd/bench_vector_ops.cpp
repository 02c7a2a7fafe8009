// Throughput of the simd primitives on arrays that fit in L1 (1k floats) and L2 (64k floats).
//   build/release/benchmarks/heed_bench_simd_vector_ops
// Counters: GB/s of the bytes read and written, GFLOP/s where the flop count is clear.
#include <benchmark/benchmark.h>

#include <vector>

#include "heed/core/random.hpp"
#include "heed/simd.hpp"

namespace {

using heed::index_t;

std::vector<float> input(index_t n, std::uint64_t seed) {
  const auto t = heed::randn<float>(heed::Shape<1>{n}, seed);
  return {t.data(), t.data() + n};
}

void set_counters(benchmark::State& state, double bytes, double flops) {
  state.counters["GB/s"] =
      benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  if (flops > 0)
    state.counters["GFLOP/s"] =
        benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

void BM_dot(benchmark::State& state) {
  const index_t n = state.range(0);
  const auto x = input(n, 1), y = input(n, 2);
  for (auto _ : state) benchmark::DoNotOptimize(heed::simd::dot(x.data(), y.data(), n));
  set_counters(state, 8.0 * double(n), 2.0 * double(n));
}

void BM_axpy(benchmark::State& state) {
  const index_t n = state.range(0);
  const auto x = input(n, 1);
  auto y = input(n, 2);
  for (auto _ : state) {
    heed::simd::axpy(1e-6f, x.data(), y.data(), n);
    benchmark::ClobberMemory();
  }
  set_counters(state, 12.0 * double(n), 2.0 * double(n));
}

void BM_max(benchmark::State& state) {
  const index_t n = state.range(0);
  const auto x = input(n, 1);
  for (auto _ : state) benchmark::DoNotOptimize(heed::simd::max(x.data(), n));
  set_counters(state, 4.0 * double(n), double(n));
}

template <void (*Op)(const float*, float*, index_t)>
void BM_unary(benchmark::State& state) {
  const index_t n = state.range(0);
  const auto x = input(n, 1);
  std::vector<float> y(x.size());
  for (auto _ : state) {
    Op(x.data(), y.data(), n);
    benchmark::ClobberMemory();
  }
  set_counters(state, 8.0 * double(n), 0);
  state.counters["Gelem/s"] =
      benchmark::Counter(double(n), benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

void BM_exp_sum(benchmark::State& state) {
  const index_t n = state.range(0);
  const auto x = input(n, 1);
  std::vector<float> y(x.size());
  for (auto _ : state) benchmark::DoNotOptimize(heed::simd::exp_sum(x.data(), 1.0f, y.data(), n));
  set_counters(state, 8.0 * double(n), 0);
  state.counters["Gelem/s"] =
      benchmark::Counter(double(n), benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

BENCHMARK(BM_dot)->Arg(1024)->Arg(65536);
BENCHMARK(BM_axpy)->Arg(1024)->Arg(65536);
BENCHMARK(BM_max)->Arg(1024)->Arg(65536);
BENCHMARK(BM_unary<heed::simd::exp<float>>)->Name("BM_exp")->Arg(1024)->Arg(65536);
BENCHMARK(BM_exp_sum)->Arg(1024)->Arg(65536);
BENCHMARK(BM_unary<heed::simd::tanh<float>>)->Name("BM_tanh")->Arg(1024)->Arg(65536);
BENCHMARK(BM_unary<heed::simd::sigmoid<float>>)->Name("BM_sigmoid")->Arg(1024)->Arg(65536);
BENCHMARK(BM_unary<heed::simd::gelu<float>>)->Name("BM_gelu")->Arg(1024)->Arg(65536);

}  // namespace
