// The generation demo's model (examples/char_lm.hpp: 4 Llama layers, dim 256, 8 query heads
// over 2 key/value heads, SwiGLU 640, examples/data/char_lm.safetensors) generating one token
// with its KV cache, after `cached` tokens: tokens/s, and the bytes a step must read (every
// weight once and the cache's keys and values) per second. BM_copy is the copy bandwidth over
// 64 MiB (STREAM's convention: bytes read + written): the step's bound is bytes / that.
//   OMP_NUM_THREADS=1 taskset -c 1 build/release/benchmarks/heed_bench_nn_generate
// (PyTorch's side: /usr/bin/python3 examples/train/train_char_lm.py --speed.)
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "char_lm.hpp"

namespace {

using heed::index_t;

template <class Scalar>
const char_lm::CharLM<Scalar>& model() {
  static const auto m = char_lm::CharLM<Scalar>::from_file(HEED_EXAMPLES_DATA_DIR "/char_lm.safetensors");
  return m;
}

// args: cached tokens, threads. Each iteration appends one token, then truncates the cache back.
template <class Scalar>
void BM_generate_step(benchmark::State& state) {
  const index_t cached = state.range(0);
  heed::set_num_threads(static_cast<int>(state.range(1)));
  const auto& m = model<Scalar>();
  const auto& c = m.config();
  auto cache = m.make_cache(1, cached + 1);
  heed::Tensor<std::int32_t, 2> prompt({1, cached});
  for (index_t i = 0; i < cached; ++i) prompt(0, i) = static_cast<std::int32_t>(33 + i % 60);
  (void)m(prompt, &cache, true);
  heed::Tensor<std::int32_t, 2> token({1, 1});
  token(0, 0) = 50;
  for (auto _ : state) {
    auto logits = m(token, &cache, true);
    benchmark::DoNotOptimize(logits.data());
    cache.truncate(cached);
  }
  const double cache_bytes = double(c.layers) * 2.0 * double(c.kv_heads) * double(cached + 1) *
                             double(c.dim / c.heads) * double(sizeof(Scalar));
  state.counters["tokens/s"] = benchmark::Counter(1.0, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GB/s"] =
      benchmark::Counter(double(m.weight_bytes()) + cache_bytes, benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
  heed::set_num_threads(0);
}
void step_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"cached", "threads"})->ArgsProduct({{64, 1024}, {1, 2}})->Unit(benchmark::kMicrosecond)->UseRealTime();
}
BENCHMARK(BM_generate_step<float>)->Apply(step_args);
BENCHMARK(BM_generate_step<heed::bfloat16>)->Apply(step_args);

// Prefill: a prompt of 256 tokens in one call. args: threads
void BM_generate_prefill(benchmark::State& state) {
  heed::set_num_threads(static_cast<int>(state.range(0)));
  const auto& m = model<float>();
  auto cache = m.make_cache(1, 256);
  heed::Tensor<std::int32_t, 2> prompt({1, 256});
  for (index_t i = 0; i < 256; ++i) prompt(0, i) = static_cast<std::int32_t>(33 + i % 60);
  for (auto _ : state) {
    cache.truncate(0);
    auto logits = m(prompt, &cache, true);
    benchmark::DoNotOptimize(logits.data());
  }
  state.counters["tokens/s"] = benchmark::Counter(256.0, benchmark::Counter::kIsIterationInvariantRate);
  heed::set_num_threads(0);
}
BENCHMARK(BM_generate_prefill)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_copy(benchmark::State& state) {
  const std::size_t n = std::size_t(64) << 20;
  std::vector<char> a(n, 1), b(n, 0);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), n);
    benchmark::DoNotOptimize(b.data());
  }
  state.counters["GB/s"] =
      benchmark::Counter(2.0 * double(n), benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_copy)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
