// heed against libtorch 1.13 (Debian's libtorch-dev) in one process, on the same shapes and
// thread counts: MultiheadAttention and TransformerEncoderLayer, E = 512, H = 8, F = 2048, fp32,
// at B = 8, L = 128 and B = 1, L = 1024. libtorch runs its fused inference kernels
// (at::_native_multi_head_attention, at::_transformer_encoder_layer_fwd: what PyTorch's
// nn.MultiheadAttention / nn.TransformerEncoderLayer fast path calls in eval mode).
//   cmake --workflow --preset release && build/release/benchmarks/heed_bench_compare_vs_libtorch
// Prints GFLOP/s per run and, at the end, heed's speed over libtorch's for each shape.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>

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

void BM_heed_mha(benchmark::State& state) {
  threads(state);
  const index_t B = state.range(0), L = state.range(1);
  const heed::nn::MultiheadAttention<float> mha({.embed_dim = E, .num_heads = H});
  const auto x = heed::randn<float>({B, L, E}, 1);
  for (auto _ : state) benchmark::DoNotOptimize(mha(x, x, x, {.need_weights = false}).output.data());
  counters(state, mha_flops(B, L));
}

void BM_torch_mha(benchmark::State& state) {
  threads(state);
  torch::NoGradGuard no_grad;
  const int64_t B = state.range(0), L = state.range(1);
  const auto x = torch::randn({B, L, E});
  const auto qkv_w = torch::randn({3 * E, E}) * 0.04, qkv_b = torch::zeros({3 * E});
  const auto out_w = torch::randn({E, E}) * 0.04, out_b = torch::zeros({E});
  for (auto _ : state) {
    auto r = at::_native_multi_head_attention(x, x, x, E, H, qkv_w, qkv_b, out_w, out_b, {}, false, true, {});
    benchmark::DoNotOptimize(std::get<0>(r).data_ptr());
  }
  counters(state, mha_flops(B, L));
}

void BM_heed_layer(benchmark::State& state) {
  threads(state);
  const index_t B = state.range(0), L = state.range(1);
  const heed::nn::TransformerEncoderLayer<float> layer({.d_model = E, .nhead = H, .dim_feedforward = F});
  const auto x = heed::randn<float>({B, L, E}, 1);
  for (auto _ : state) benchmark::DoNotOptimize(layer(x).data());
  counters(state, layer_flops(B, L));
}

void BM_torch_layer(benchmark::State& state) {
  threads(state);
  torch::NoGradGuard no_grad;
  const int64_t B = state.range(0), L = state.range(1);
  const auto x = torch::randn({B, L, E});
  const auto w = [](int64_t r, int64_t c) { return torch::randn({r, c}) * 0.04; };
  const auto qkv_w = w(3 * E, E), qkv_b = torch::zeros({3 * E}), out_w = w(E, E), out_b = torch::zeros({E});
  const auto l1_w = w(F, E), l1_b = torch::zeros({F}), l2_w = w(E, F), l2_b = torch::zeros({E});
  const auto n_w = torch::ones({E}), n_b = torch::zeros({E});
  for (auto _ : state) {
    auto y = at::_transformer_encoder_layer_fwd(x, E, H, qkv_w, qkv_b, out_w, out_b, /*use_gelu=*/false,
                                                /*norm_first=*/false, 1e-5, n_w, n_b, n_w, n_b, l1_w, l1_b, l2_w, l2_b,
                                                {}, {});
    benchmark::DoNotOptimize(y.data_ptr());
  }
  counters(state, layer_flops(B, L));
}

// heed and libtorch alternately, iteration by iteration, so both see the same machine noise
// (this VM's speed drifts by ±15% over seconds). Reports each side's GFLOP/s and the ratio.
template <class Heed, class Torch>
void interleaved(benchmark::State& state, double flops, Heed&& heed_run, Torch&& torch_run) {
  using clock = std::chrono::steady_clock;
  double heed_seconds = 0, torch_seconds = 0;
  for (auto _ : state) {
    const auto t0 = clock::now();
    heed_run();
    const auto t1 = clock::now();
    torch_run();
    const auto t2 = clock::now();
    heed_seconds += std::chrono::duration<double>(t1 - t0).count();
    torch_seconds += std::chrono::duration<double>(t2 - t1).count();
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["heed_GFLOP/s"] = flops * n / heed_seconds * 1e-9;
  state.counters["torch_GFLOP/s"] = flops * n / torch_seconds * 1e-9;
  state.counters["heed/torch"] = torch_seconds / heed_seconds;
}

void BM_interleaved_layer(benchmark::State& state) {
  threads(state);
  torch::NoGradGuard no_grad;
  const index_t B = state.range(0), L = state.range(1);
  const heed::nn::TransformerEncoderLayer<float> layer({.d_model = E, .nhead = H, .dim_feedforward = F});
  const auto x = heed::randn<float>({B, L, E}, 1);
  const auto tx = torch::randn({B, L, E});
  const auto w = [](int64_t r, int64_t c) { return torch::randn({r, c}) * 0.04; };
  const auto qkv_w = w(3 * E, E), qkv_b = torch::zeros({3 * E}), out_w = w(E, E), out_b = torch::zeros({E});
  const auto l1_w = w(F, E), l1_b = torch::zeros({F}), l2_w = w(E, F), l2_b = torch::zeros({E});
  const auto n_w = torch::ones({E}), n_b = torch::zeros({E});
  interleaved(
      state, layer_flops(B, L), [&] { benchmark::DoNotOptimize(layer(x).data()); },
      [&] {
        auto y = at::_transformer_encoder_layer_fwd(tx, E, H, qkv_w, qkv_b, out_w, out_b, false, false, 1e-5, n_w, n_b,
                                                    n_w, n_b, l1_w, l1_b, l2_w, l2_b, {}, {});
        benchmark::DoNotOptimize(y.data_ptr());
      });
}

void BM_interleaved_mha(benchmark::State& state) {
  threads(state);
  torch::NoGradGuard no_grad;
  const index_t B = state.range(0), L = state.range(1);
  const heed::nn::MultiheadAttention<float> mha({.embed_dim = E, .num_heads = H});
  const auto x = heed::randn<float>({B, L, E}, 1);
  const auto tx = torch::randn({B, L, E});
  const auto qkv_w = torch::randn({3 * E, E}) * 0.04, qkv_b = torch::zeros({3 * E});
  const auto out_w = torch::randn({E, E}) * 0.04, out_b = torch::zeros({E});
  interleaved(
      state, mha_flops(B, L), [&] { benchmark::DoNotOptimize(mha(x, x, x, {.need_weights = false}).output.data()); },
      [&] {
        auto r = at::_native_multi_head_attention(tx, tx, tx, E, H, qkv_w, qkv_b, out_w, out_b, {}, false, true, {});
        benchmark::DoNotOptimize(std::get<0>(r).data_ptr());
      });
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
