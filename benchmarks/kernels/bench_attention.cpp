// The attention driver at the sizes of issue #3: B = 1, H = 8, d = 64, N = Lq = Lk.
//   cmake --workflow --preset release && build/release/benchmarks/heed_bench_kernels_attention
// GFLOP/s counts 4·B·H·N²·d (two GEMMs), halved for causal (half the tiles are skipped), so
// causal and full attention are compared by time, not by the counter.
#include <benchmark/benchmark.h>

#include <cmath>

#include <Eigen/Core>

#include "heed/core/eigen.hpp"
#include "heed/core/random.hpp"
#include "heed/kernels.hpp"
#include "heed/simd/vector_ops.hpp"

namespace {

using heed::index_t;
constexpr index_t B = 1, H = 8, d = 64;

struct Inputs {
  heed::Tensor<float, 4> q, k, v;
  explicit Inputs(index_t n)
      : q(heed::randn<float>({B, H, n, d}, 1)),
        k(heed::randn<float>({B, H, n, d}, 2)),
        v(heed::randn<float>({B, H, n, d}, 3)) {}
};

void set_flops(benchmark::State& state, index_t n, bool causal) {
  const double flops = 4.0 * double(B * H) * double(n) * double(n) * double(d) * (causal ? 0.5 : 1.0);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

// args: N, causal, threads, need_weights
void BM_attention(benchmark::State& state) {
  const index_t n = state.range(0);
  const bool causal = state.range(1) != 0;
  const heed::AttentionOptions options{.need_weights = state.range(3) != 0,
                                       .num_threads = static_cast<int>(state.range(2))};
  const Inputs in(n);
  for (auto _ : state) {
    if (causal) {
      auto r = heed::attention(in.q, in.k, in.v, heed::ScaledDot{}, heed::mask::Causal{}, options);
      benchmark::DoNotOptimize(r.output.data());
    } else {
      auto r = heed::attention(in.q, in.k, in.v, heed::ScaledDot{}, heed::mask::None{}, options);
      benchmark::DoNotOptimize(r.output.data());
    }
  }
  set_flops(state, n, causal);
}

void attention_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"N", "causal", "threads", "weights"});
  for (index_t n : {128, 512, 1024, 4096})
    for (int causal : {0, 1})
      for (int threads : {1, 2}) b->Args({n, causal, threads, 0});
  for (index_t n : {512, 1024}) b->Args({n, 0, 1, 1});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}
BENCHMARK(BM_attention)->Apply(attention_args);

// 16-bit storage (bfloat16, half): Q, K, V and the output 16-bit, scores and accumulation in
// float; against BM_attention's float at the same N. args: N
template <class T>
void BM_attention_16bit(benchmark::State& state) {
  const index_t n = state.range(0);
  const Inputs in(n);
  const auto q = heed::cast<T>(in.q), k = heed::cast<T>(in.k), v = heed::cast<T>(in.v);
  for (auto _ : state) {
    auto r = heed::attention(q, k, v, heed::ScaledDot{}, heed::mask::None{}, {.num_threads = 1});
    benchmark::DoNotOptimize(r.output.data());
  }
  set_flops(state, n, false);
}
BENCHMARK(BM_attention_16bit<heed::bfloat16>)
    ->ArgName("N")
    ->Arg(1024)
    ->Arg(4096)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_attention_16bit<heed::half>)
    ->ArgName("N")
    ->Arg(1024)
    ->Arg(4096)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Head dims 32-256 on the micro-kernel (N = 1024, one thread); the counter scales with d, so
// the figures compare directly with BM_attention's d = 64. args: d
void BM_head_dim(benchmark::State& state) {
  const index_t n = 1024, dim = state.range(0);
  const auto q = heed::randn<float>({B, H, n, dim}, 1), k = heed::randn<float>({B, H, n, dim}, 2),
             v = heed::randn<float>({B, H, n, dim}, 3);
  for (auto _ : state) {
    auto r = heed::attention(q, k, v, heed::ScaledDot{}, heed::mask::None{}, {.num_threads = 1});
    benchmark::DoNotOptimize(r.output.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(4.0 * double(B * H) * double(n) * double(n) * double(dim),
                         benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_head_dim)
    ->ArgName("d")
    ->Arg(32)
    ->Arg(64)
    ->Arg(80)
    ->Arg(96)
    ->Arg(128)
    ->Arg(256)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// One decode step: Lq = 1 query row per head against a long cache, Hq = 8 query heads over Hkv
// key/value heads. Memory-bound: the counter is the bytes of K and V read per second (compare
// with the copy bandwidth of heed_bench_nn_vision's BM_copy). args: Lk, Hkv, threads
template <class T>
void BM_decode(benchmark::State& state) {
  const index_t lk = state.range(0), hkv = state.range(1);
  const auto q = heed::cast<T>(heed::randn<float>({B, H, 1, d}, 1));
  const auto k = heed::cast<T>(heed::randn<float>({B, hkv, lk, d}, 2));
  const auto v = heed::cast<T>(heed::randn<float>({B, hkv, lk, d}, 3));
  const heed::AttentionOptions options{.num_threads = static_cast<int>(state.range(2))};
  for (auto _ : state) {
    auto r = heed::attention(q, k, v, heed::ScaledDot{}, heed::mask::None{}, options);
    benchmark::DoNotOptimize(r.output.data());
  }
  state.counters["GB/s"] =
      benchmark::Counter(double(2 * B * hkv * lk * d) * double(sizeof(T)),
                         benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
// The bound for BM_decode: one pass reading K and V of the same size (a dot product of the two,
// so the loads, not the arithmetic, set the time). args: Lk, Hkv, threads (1 only)
void BM_decode_read_bound(benchmark::State& state) {
  const index_t n = B * state.range(1) * state.range(0) * d;
  const auto k = heed::randn<float>({n}, 2), v = heed::randn<float>({n}, 3);
  for (auto _ : state) benchmark::DoNotOptimize(heed::simd::dot(k.data(), v.data(), n));
  state.counters["GB/s"] = benchmark::Counter(
      double(2 * n) * sizeof(float), benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_decode_read_bound)
    ->ArgNames({"Lk", "Hkv", "threads"})
    ->Args({512, 8, 1})
    ->Args({4096, 8, 1})
    ->Args({16384, 8, 1})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

void decode_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"Lk", "Hkv", "threads"});
  for (index_t lk : {512, 4096, 16384})
    for (index_t hkv : {8, 2, 1})
      for (int threads : {1, 2}) b->Args({lk, hkv, threads});
  b->Unit(benchmark::kMicrosecond)->UseRealTime();
}
BENCHMARK(BM_decode<float>)->Apply(decode_args);
BENCHMARK(BM_decode<heed::bfloat16>)->Apply(decode_args);

// Tile sizes, for tuning the defaults (N = 1024, one thread).
void BM_tiles(benchmark::State& state) {
  const index_t n = 1024;
  const Inputs in(n);
  const heed::AttentionOptions options{.num_threads = 1, .block_q = state.range(0), .block_k = state.range(1)};
  for (auto _ : state) {
    auto r = heed::attention(in.q, in.k, in.v, heed::ScaledDot{}, heed::mask::None{}, options);
    benchmark::DoNotOptimize(r.output.data());
  }
  set_flops(state, n, false);
}
BENCHMARK(BM_tiles)
    ->ArgNames({"block_q", "block_k"})
    ->ArgsProduct({{48, 96, 192, 384}, {64, 128, 256, 512}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Bahdanau scores: hidden = 64; the tanh per (query, key, hidden unit) dominates, so the
// counter is score evaluations (N²·H·hidden tanh-and-FMA) per second.
void BM_additive(benchmark::State& state) {
  const index_t n = state.range(0), hidden = 64;
  const Inputs in(n);
  const auto wq = heed::randn<float>({hidden, d}, 4), wk = heed::randn<float>({hidden, d}, 5);
  const auto v = heed::randn<float>({hidden}, 6);
  const heed::Additive<float> score{.w_q = wq, .w_k = wk, .v = v};
  for (auto _ : state) {
    auto r = heed::attention(in.q, in.k, in.v, score, heed::mask::None{}, {.num_threads = 1});
    benchmark::DoNotOptimize(r.output.data());
  }
  set_flops(state, n, false);
  state.counters["Gtanh/s"] =
      benchmark::Counter(double(B * H) * double(n * n) * double(hidden), benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
}
BENCHMARK(BM_additive)->ArgName("N")->Arg(128)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();

// For contrast: materialize the whole [N, N] score matrix per head, softmax it, multiply.
void BM_naive_materialized(benchmark::State& state) {
  const index_t n = state.range(0);
  const Inputs in(n);
  using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Mat scores(n, n), out(n, d);
  for (auto _ : state) {
    for (index_t h = 0; h < H; ++h) {
      const auto q = heed::as_matrix(in.q.view()[0][h]), k = heed::as_matrix(in.k.view()[0][h]),
                 v = heed::as_matrix(in.v.view()[0][h]);
      scores.noalias() = (q * k.transpose()) / std::sqrt(float(d));
      for (index_t i = 0; i < n; ++i)
        heed::detail::softmax_row(&scores(i, 0), &scores(i, 0), n, heed::MaskedRows::zero);
      out.noalias() = scores * v;
      benchmark::DoNotOptimize(out.data());
    }
  }
  set_flops(state, n, false);
}
BENCHMARK(BM_naive_materialized)
    ->ArgName("N")
    ->Arg(512)
    ->Arg(1024)
    ->Arg(4096)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
