// heed's GEMM beside a CBLAS sgemm (OpenBLAS, BLIS, MKL: whatever HEED_COMPARE_BLAS names) in one
// binary, on ViT-B/16's Linear shapes (issue #44): M = 197·batch rows, K = 768 or 3072 deep,
// N = 768 (out_proj, mlp.3), 2304 (the stacked q/k/v) or 3072 (mlp.0) outputs; y = x Wᵀ + b
// with W [N, K] as torch's Linear holds it.
//   heed: nn::Linear, W packed once when the module is made (as a loaded model holds it);
//   BLAS: the bias copied into y, then cblas_sgemm(RowMajor, NoTrans, Trans, ..., beta = 1),
//         which packs W inside every call (as PyTorch's addmm does).
// One core: run with OMP_NUM_THREADS=1 (OpenBLAS's OpenMP build reads it; heed runs one thread
// here) under taskset, e.g.
//   OMP_NUM_THREADS=1 taskset -c 1 build/release/benchmarks/heed_bench_compare_gemm_vs_blas
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>

#include "heed/core/parallel.hpp"
#include "heed/core/random.hpp"
#include "heed/nn/linear.hpp"

namespace {

using heed::index_t;
using heed::Tensor;

struct Problem {
  index_t M, K, N;
  Tensor<float, 2> x, w;
  Tensor<float, 1> bias;
  explicit Problem(const benchmark::State& state)
      : M(197 * state.range(0)),
        K(state.range(1)),
        N(state.range(2)),
        x(heed::randn<float>({M, K}, 1)),
        w(heed::randn<float>({N, K}, 2)),
        bias(heed::randn<float>({N}, 3)) {}
  void count(benchmark::State& state) const {
    state.counters["GFLOP/s"] =
        benchmark::Counter(2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K) * 1e-9,
                           benchmark::Counter::kIsIterationInvariantRate);
  }
};

void BM_heed_linear(benchmark::State& state) {
  heed::set_num_threads(1);
  const Problem p(state);
  const heed::nn::Linear<float> linear({.in_features = p.K, .out_features = p.N}, p.w, p.bias);
  for (auto _ : state) {
    auto y = linear(p.x);
    benchmark::DoNotOptimize(y.data());
  }
  p.count(state);
}

void BM_blas_sgemm(benchmark::State& state) {
  const Problem p(state);
  Tensor<float, 2> y({p.M, p.N});
  for (auto _ : state) {
    for (index_t i = 0; i < p.M; ++i) std::copy_n(p.bias.data(), p.N, &y(i, 0));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(p.M), static_cast<int>(p.N),
                static_cast<int>(p.K), 1.0f, p.x.data(), static_cast<int>(p.K), p.w.data(), static_cast<int>(p.K), 1.0f,
                y.data(), static_cast<int>(p.N));
    benchmark::DoNotOptimize(y.data());
  }
  p.count(state);
}

// batch, K, N: out_proj, qkv, mlp.0, mlp.3 at batch 1 and 8
void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"batch", "K", "N"});
  for (const int batch : {1, 8})
    for (const auto& [K, N] : {std::pair{768, 768}, {768, 2304}, {768, 3072}, {3072, 768}}) b->Args({batch, K, N});
  b->UseRealTime();
}

BENCHMARK(BM_heed_linear)->Apply(shapes);
BENCHMARK(BM_blas_sgemm)->Apply(shapes);

}  // namespace

BENCHMARK_MAIN();
