// heed against libtorch 1.13 (Debian's libtorch-dev) in one process, on the same shapes and
// thread counts: MultiheadAttention and TransformerEncoderLayer, E = 512, H = 8, F = 2048, fp32,
// at B = 8, L = 128 and B = 1, L = 1024. libtorch runs its fused inference kernels
// (at::_native_multi_head_attention, at::_transformer_encoder_layer_fwd: what PyTorch's
// nn.MultiheadAttention / nn.TransformerEncoderLayer fast path calls in eval mode).
//   cmake --workflow --preset release && build/release/benchmarks/heed_bench_compare_vs_libtorch
// Prints GFLOP/s per run and, at the end, heed's speed over libtorch's for each shape.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "heed/core/random.hpp"
#include "heed/nn.hpp"

namespace {

using heed::index_t;
constexpr index_t E = 512, H = 8, F = 2048;

double mha_flops(index_t B, index_t L) {
  return 4 * 2.0 * double(B * L) * E * E + 4.0 * double(B) * double(L * L) * E;
}
double layer_flops(index_t B, index_t L) {
  return mha_flops(B, L) + 2 * 2.0 * double(B * L) * E * F;
}

void counters(benchmark::State& state, double flops) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

void threads(benchmark::State& state) {
  const int n = static_cast<int>(state.range(2));
  heed::set_num_threads(n);
  torch::set_num_threads(n);
}

// libtorch's fused inference kernels, with random weights of the benchmark's shapes.
struct TorchMha {
  torch::Tensor qkv_w = torch::randn({3 * E, E}) * 0.04, qkv_b = torch::zeros({3 * E});
  torch::Tensor out_w = torch::randn({E, E}) * 0.04, out_b = torch::zeros({E});

  void operator()(const torch::Tensor& x) const {
    auto r = at::_native_multi_head_attention(x, x, x, E, H, qkv_w, qkv_b, out_w, out_b, {}, false, true, {});
    benchmark::DoNotOptimize(std::get<0>(r).data_ptr());
  }
};

struct TorchLayer {
  TorchMha attn;
  torch::Tensor l1_w = torch::randn({F, E}) * 0.04, l1_b = torch::zeros({F});
  torch::Tensor l2_w = torch::randn({E, F}) * 0.04, l2_b = torch::zeros({E});
  torch::Tensor n_w = torch::ones({E}), n_b = torch::zeros({E});

  void operator()(const torch::Tensor& x) const {
    auto y = at::_transformer_encoder_layer_fwd(x, E, H, attn.qkv_w, attn.qkv_b, attn.out_w, attn.out_b,
                                                /*use_gelu=*/false, /*norm_first=*/false, 1e-5, n_w, n_b, n_w, n_b,
                                                l1_w, l1_b, l2_w, l2_b, {}, {});
    benchmark::DoNotOptimize(y.data_ptr());
  }
};

// heed's modules at the same shapes (PyTorch-style random init).
struct HeedMha {
  heed::nn::MultiheadAttention<float> mha{{.embed_dim = E, .num_heads = H}};
  void operator()(const heed::Tensor<float, 3>& x) const {
    benchmark::DoNotOptimize(mha(x, x, x, {.need_weights = false}).output.data());
  }
};

struct HeedLayer {
  heed::nn::TransformerEncoderLayer<float> layer{{.d_model = E, .nhead = H, .dim_feedforward = F}};
  void operator()(const heed::Tensor<float, 3>& x) const { benchmark::DoNotOptimize(layer(x).data()); }
};

template <class Module>
void heed_run(benchmark::State& state, double flops) {
  threads(state);
  const Module module;
  const auto x = heed::randn<float>({state.range(0), state.range(1), E}, 1);
  for (auto _ : state) module(x);
  counters(state, flops);
}

template <class Module>
void torch_run(benchmark::State& state, double flops) {
  threads(state);
  torch::NoGradGuard no_grad;
  const Module module;
  const auto x = torch::randn({state.range(0), state.range(1), E});
  for (auto _ : state) module(x);
  counters(state, flops);
}

// heed and libtorch alternately, iteration by iteration, so both see the same machine noise
// (this VM's speed drifts by ±15% over seconds). Reports each side's GFLOP/s from its median
// iteration and the median over iterations of the pair's ratio (libtorch time / heed time), so
// that a burst of noise hitting one iteration cannot tip the result.
template <class HeedModule, class TorchModule>
void interleaved(benchmark::State& state, double flops) {
  using clock = std::chrono::steady_clock;
  threads(state);
  torch::NoGradGuard no_grad;
  const HeedModule heed_module;
  const TorchModule torch_module;
  const auto x = heed::randn<float>({state.range(0), state.range(1), E}, 1);
  const auto tx = torch::randn({state.range(0), state.range(1), E});
  std::vector<double> heed_seconds, torch_seconds, ratios;
  for (auto _ : state) {
    const auto t0 = clock::now();
    heed_module(x);
    const auto t1 = clock::now();
    torch_module(tx);
    const auto t2 = clock::now();
    heed_seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
    torch_seconds.push_back(std::chrono::duration<double>(t2 - t1).count());
    ratios.push_back(torch_seconds.back() / heed_seconds.back());
  }
  const auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  state.counters["heed_GFLOP/s"] = flops / median(heed_seconds) * 1e-9;
  state.counters["torch_GFLOP/s"] = flops / median(torch_seconds) * 1e-9;
  state.counters["heed/torch"] = median(ratios);
}

void BM_heed_mha(benchmark::State& state) {
  heed_run<HeedMha>(state, mha_flops(state.range(0), state.range(1)));
}
void BM_torch_mha(benchmark::State& state) {
  torch_run<TorchMha>(state, mha_flops(state.range(0), state.range(1)));
}
void BM_heed_layer(benchmark::State& state) {
  heed_run<HeedLayer>(state, layer_flops(state.range(0), state.range(1)));
}
void BM_torch_layer(benchmark::State& state) {
  torch_run<TorchLayer>(state, layer_flops(state.range(0), state.range(1)));
}
void BM_interleaved_mha(benchmark::State& state) {
  interleaved<HeedMha, TorchMha>(state, mha_flops(state.range(0), state.range(1)));
}
void BM_interleaved_layer(benchmark::State& state) {
  interleaved<HeedLayer, TorchLayer>(state, layer_flops(state.range(0), state.range(1)));
}

void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"B", "L", "threads"});
  for (int t : {1, 2}) {
    b->Args({8, 128, t});
    b->Args({1, 1024, t});
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
}
BENCHMARK(BM_heed_mha)->Apply(shapes);
BENCHMARK(BM_torch_mha)->Apply(shapes);
BENCHMARK(BM_heed_layer)->Apply(shapes);
BENCHMARK(BM_torch_layer)->Apply(shapes);
BENCHMARK(BM_interleaved_mha)->Apply(shapes);
BENCHMARK(BM_interleaved_layer)->Apply(shapes);

// Generation through a 4-layer torch-style decoder (d_model 512, 8 heads, F 2048) over a memory
// of 256 positions, one token per step after a prompt of 1024. libtorch 1.13 has no KV cache:
// nn.TransformerDecoder recomputes the whole causal sequence at each step, here at 1152 tokens
// (the middle of 256 steps). heed does the same (BM_decoder_recompute_heed) and with its cache
// (BM_decoder_cached_heed: the mean over 256 steps). Counter: generated tokens per second.
// args: threads
constexpr index_t dec_layers = 4, dec_prompt = 1024, dec_steps = 256, dec_memory = 256;
constexpr index_t dec_mid = dec_prompt + dec_steps / 2;

void decoder_threads(benchmark::State& state) {
  heed::set_num_threads(static_cast<int>(state.range(0)));
  torch::set_num_threads(static_cast<int>(state.range(0)));
}

void BM_decoder_recompute_torch(benchmark::State& state) {
  decoder_threads(state);
  torch::NoGradGuard no_grad;
  torch::nn::TransformerDecoder decoder(torch::nn::TransformerDecoderOptions(
      torch::nn::TransformerDecoderLayerOptions(E, H).dim_feedforward(F).dropout(0.0), dec_layers));
  decoder->eval();
  const auto tgt = torch::randn({dec_mid, 1, E}), memory = torch::randn({dec_memory, 1, E});
  const auto mask = torch::triu(torch::full({dec_mid, dec_mid}, -std::numeric_limits<float>::infinity()), 1);
  for (auto _ : state) benchmark::DoNotOptimize(decoder->forward(tgt, memory, mask).data_ptr());
  state.counters["tokens/s"] = benchmark::Counter(1.0, benchmark::Counter::kIsIterationInvariantRate);
}

heed::nn::TransformerDecoder<float> heed_decoder() {
  return heed::nn::TransformerDecoder<float>(
      {.d_model = E, .nhead = H, .dim_feedforward = F, .num_layers = dec_layers, .seed = 1});
}

void BM_decoder_recompute_heed(benchmark::State& state) {
  decoder_threads(state);
  const auto decoder = heed_decoder();
  const auto tgt = heed::randn<float>({1, dec_mid, E}, 1), memory = heed::randn<float>({1, dec_memory, E}, 2);
  for (auto _ : state) benchmark::DoNotOptimize(decoder(tgt, memory, {.tgt_is_causal = true}).data());
  state.counters["tokens/s"] = benchmark::Counter(1.0, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_decoder_cached_heed(benchmark::State& state) {
  decoder_threads(state);
  const auto decoder = heed_decoder();
  const auto prompt = heed::randn<float>({1, dec_prompt, E}, 1), memory = heed::randn<float>({1, dec_memory, E}, 2);
  const auto token = heed::randn<float>({1, 1, E}, 3);
  auto cache = decoder.make_cache({.batch = 1, .max_len = dec_prompt + dec_steps});
  (void)decoder(prompt, memory, {.cache = &cache});
  for (auto _ : state) {
    for (index_t s = 0; s < dec_steps; ++s) benchmark::DoNotOptimize(decoder(token, memory, {.cache = &cache}).data());
    state.PauseTiming();
    cache.truncate_row(0, dec_prompt);
    state.ResumeTiming();
  }
  state.counters["tokens/s"] = benchmark::Counter(double(dec_steps), benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_decoder_recompute_torch)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_decoder_recompute_heed)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_decoder_cached_heed)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// Collects each run's time and prints heed / libtorch speed ratios at the end.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs)
      if (r.run_type == Run::RT_Iteration || r.aggregate_name == "median")
        times_[r.benchmark_name()] = r.GetAdjustedRealTime();
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\nheed speed / libtorch speed (same shape, same threads):\n");
    for (const auto& [name, heed_time] : times_) {
      if (name.rfind("BM_heed_", 0) != 0) continue;
      std::string torch_name = name;
      torch_name.replace(0, 8, "BM_torch_");
      const auto it = times_.find(torch_name);
      if (it != times_.end()) std::printf("  %-60s %.2fx\n", name.substr(8).c_str(), it->second / heed_time);
    }
  }

 private:
  std::map<std::string, double> times_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
