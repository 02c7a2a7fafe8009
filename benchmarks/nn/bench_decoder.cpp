// Generation through a torch-style TransformerDecoder (4 layers, d_model 512, 8 heads, F 2048) with
// a KV cache: a prompt of 1024 tokens (prefill), then 256 single-token steps, over a memory of
// 256 positions. tokens/s, and for the steps the bytes each one must read (every weight it uses
// once, the self-attention cache and the projected memory) per second: compare with the copy
// bandwidth (heed_bench_nn_vision's BM_copy) for the bound. The same decoder without a cache
// (PyTorch 1.13 has none: every step recomputes the sequence) is benchmarks/compare's
// BM_decoder_step_libtorch.
//   OMP_NUM_THREADS=1 taskset -c 1 build/release/benchmarks/heed_bench_nn_decoder
#include <benchmark/benchmark.h>

#include "heed/core/random.hpp"
#include "heed/nn.hpp"

namespace {

using heed::index_t;
constexpr index_t E = 512, H = 8, F = 2048, layers = 4, prompt = 1024, steps = 256, memory_len = 256;

heed::nn::TransformerDecoder<float> make_decoder() {
  return heed::nn::TransformerDecoder<float>(
      {.d_model = E, .nhead = H, .dim_feedforward = F, .num_layers = layers, .seed = 1});
}

// args: threads
void BM_decoder_prefill(benchmark::State& state) {
  heed::set_num_threads(static_cast<int>(state.range(0)));
  const auto decoder = make_decoder();
  const auto memory = heed::randn<float>({1, memory_len, E}, 2), x = heed::randn<float>({1, prompt, E}, 3);
  auto cache = decoder.make_cache({.batch = 1, .max_len = prompt + steps});
  for (auto _ : state) {
    cache.reset();
    auto y = decoder(x, memory, {.cache = &cache});
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["tokens/s"] = benchmark::Counter(double(prompt), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_decoder_prefill)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// args: threads. Each iteration: 256 steps after the prompt, then the cache truncated back to it.
void BM_decoder_steps(benchmark::State& state) {
  heed::set_num_threads(static_cast<int>(state.range(0)));
  const auto decoder = make_decoder();
  const auto memory = heed::randn<float>({1, memory_len, E}, 2), x = heed::randn<float>({1, prompt, E}, 3);
  auto cache = decoder.make_cache({.batch = 1, .max_len = prompt + steps});
  (void)decoder(x, memory, {.cache = &cache});
  const auto token = heed::randn<float>({1, 1, E}, 4);
  for (auto _ : state) {
    for (index_t s = 0; s < steps; ++s) {
      auto y = decoder(token, memory, {.cache = &cache});
      benchmark::DoNotOptimize(y.data());
    }
    state.PauseTiming();
    cache.truncate_row(0, prompt);
    state.ResumeTiming();
  }
  // per step and layer: self-attention in/out projections 4E², cross-attention q/out 2E², the
  // feed-forward 2EF (weights, float); the cached keys and values (2 · positions · E) and the memory's
  const double weights = double(layers) * (6.0 * E * E + 2.0 * E * F) * 4;
  const double cache_bytes = double(layers) * 2.0 * E * 4 * (double(prompt) + steps / 2.0 + memory_len);
  state.counters["tokens/s"] = benchmark::Counter(double(steps), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GB/s"] =
      benchmark::Counter(double(steps) * (weights + cache_bytes), benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
}
BENCHMARK(BM_decoder_steps)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
