// MultiheadAttention and TransformerEncoderLayer at the shapes of issue #4: float, and bfloat16 /
// half (weights and activations 16-bit, accumulated in float; one thread).
//   cmake --workflow --preset release && build/release/benchmarks/heed_bench_nn_modules
// GFLOP/s counts every multiply-add of the module: the four E×E projections (2·B·L·E² each),
// attention (4·B·L²·E) and, for the encoder layer, the feed-forward block (2 × 2·B·L·E·F).
#include <benchmark/benchmark.h>

#include <algorithm>

#include "heed/core/cast.hpp"
#include "heed/core/random.hpp"
#include "heed/nn.hpp"
#include "heed/kernels/gemm.hpp"

namespace {

using heed::index_t;
constexpr index_t E = 512, H = 8, F = 2048;

double mha_flops(index_t B, index_t L) {
  return 4 * 2.0 * double(B * L) * E * E + 4.0 * double(B) * double(L * L) * E;
}

void counters(benchmark::State& state, double flops, index_t B, index_t L) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.counters["tokens/s"] = benchmark::Counter(double(B * L), benchmark::Counter::kIsIterationInvariantRate);
}

// args: B, L, threads
template <class T>
void BM_multihead_attention(benchmark::State& state) {
  const index_t B = state.range(0), L = state.range(1);
  heed::set_num_threads(static_cast<int>(state.range(2)));
  const heed::nn::MultiheadAttention<T> mha({.embed_dim = E, .num_heads = H});
  const auto x = heed::cast<T>(heed::randn<float>({B, L, E}, 1));
  for (auto _ : state) {
    auto r = mha(x, x, x, {.need_weights = false});
    benchmark::DoNotOptimize(r.output.data());
  }
  counters(state, mha_flops(B, L), B, L);
}

template <class T>
void BM_transformer_encoder_layer(benchmark::State& state) {
  const index_t B = state.range(0), L = state.range(1);
  heed::set_num_threads(static_cast<int>(state.range(2)));
  const heed::nn::TransformerEncoderLayer<T> layer({.d_model = E, .nhead = H, .dim_feedforward = F});
  const auto x = heed::cast<T>(heed::randn<float>({B, L, E}, 1));
  for (auto _ : state) {
    auto y = layer(x);
    benchmark::DoNotOptimize(y.data());
  }
  counters(state, mha_flops(B, L) + 2 * 2.0 * double(B * L) * E * F, B, L);
}

// The encoder layer's GEMMs alone, one thread, on 1024 rows: through Linear and through
// heed::gemm_nt directly. args: in, out
constexpr index_t gemm_rows = 1024;

void gemm_counter(benchmark::State& state) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * double(gemm_rows) * double(state.range(0) * state.range(1)),
                         benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

void gemm_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"in", "out"})
      ->Args({E, 3 * E})  // the fused QKV projection
      ->Args({E, E})      // out_proj
      ->Args({E, F})      // linear1
      ->Args({F, E})      // linear2
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
}

// Linear in float, and with bfloat16 / half weights and activations (accumulated in float).
template <class T>
void BM_linear(benchmark::State& state) {
  const index_t in = state.range(0), out = state.range(1);
  heed::set_num_threads(1);
  const heed::nn::Linear<T> linear({.in_features = in, .out_features = out});
  const auto x = heed::cast<T>(heed::randn<float>({gemm_rows, in}, 1));
  for (auto _ : state) benchmark::DoNotOptimize(linear(x).data());
  gemm_counter(state);
}
BENCHMARK(BM_linear<float>)->Apply(gemm_shapes);
BENCHMARK(BM_linear<heed::bfloat16>)->Apply(gemm_shapes);
BENCHMARK(BM_linear<heed::half>)->Apply(gemm_shapes);

void BM_gemm_packed(benchmark::State& state) {
  const index_t in = state.range(0), out = state.range(1);
  const auto w = heed::randn<float>({out, in}, 2);
  const heed::PackedMatrix<float> packed(w.data(), out, in);
  const auto x = heed::randn<float>({gemm_rows, in}, 1);
  heed::Tensor<float, 2> y({gemm_rows, out});
  for (auto _ : state) {
    heed::gemm_nt(x.data(), in, gemm_rows, packed, y.data(), out, {.threads = 1});
    benchmark::DoNotOptimize(y.data());
  }
  gemm_counter(state);
}
BENCHMARK(BM_gemm_packed)->Apply(gemm_shapes);

// LayerNorm over rows of E and the GELU of the feed-forward block's hidden rows (F wide), on
// gemm_rows tokens: the modules' row operations (simd::VectorKernels); GB/s counts each value
// read and written once (GELU: the copy's too).
template <class T>
void BM_layer_norm(benchmark::State& state) {
  heed::set_num_threads(1);
  const heed::nn::LayerNorm<T> norm({.normalized_shape = E});
  const auto x = heed::cast<T>(heed::randn<float>({gemm_rows, E}, 3));
  for (auto _ : state) benchmark::DoNotOptimize(norm(x).data());
  state.counters["GB/s"] =
      benchmark::Counter(2.0 * double(gemm_rows * E * index_t(sizeof(T))),
                         benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_layer_norm<float>)->UseRealTime();
BENCHMARK(BM_layer_norm<heed::bfloat16>)->UseRealTime();

// (on a fresh copy of the input each time: GELU applied again and again would shrink the values
// to subnormals)
void BM_gelu(benchmark::State& state) {
  const auto x = heed::randn<float>({gemm_rows, F}, 4);
  heed::Tensor<float, 2> y({gemm_rows, F});
  for (auto _ : state) {
    std::copy(x.data(), x.data() + x.numel(), y.data());
    heed::nn::apply_activation(heed::nn::Activation::gelu, y.data(), y.numel());
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GB/s"] =
      benchmark::Counter(4.0 * double(x.numel() * index_t(sizeof(float))),
                         benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_gelu)->UseRealTime();

void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"B", "L", "threads"});
  for (int threads : {1, 2}) {
    b->Args({8, 128, threads});
    b->Args({1, 1024, threads});
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}
void one_thread_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"B", "L", "threads"})
      ->Args({8, 128, 1})
      ->Args({1, 1024, 1})
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
}
BENCHMARK(BM_multihead_attention<float>)->Apply(shapes);
BENCHMARK(BM_transformer_encoder_layer<float>)->Apply(shapes);
BENCHMARK(BM_multihead_attention<heed::bfloat16>)->Apply(one_thread_shapes);
BENCHMARK(BM_transformer_encoder_layer<heed::bfloat16>)->Apply(one_thread_shapes);
BENCHMARK(BM_multihead_attention<heed::half>)->Apply(one_thread_shapes);
BENCHMARK(BM_transformer_encoder_layer<heed::half>)->Apply(one_thread_shapes);

}  // namespace
