// SE, spatial attention and CBAM on the seed's [4, 256, 32, 32] float tensor (4 MiB), against a
// plain copy of a tensor of the same size in the same binary. These modules are memory-bound:
// each reads x to reduce it and reads it again to write y, so GB/s counts the bytes of x read
// once and y written once (as the copy does), and the copy's GB/s is the ceiling. And a ViT's
// patch embedding (a strided Conv2d), in GFLOP/s.
//   cmake --workflow --preset release && build/release/benchmarks/heed_bench_nn_vision
#include <benchmark/benchmark.h>

#include <algorithm>

#include "heed/core/cast.hpp"
#include "heed/core/random.hpp"
#include "heed/nn.hpp"

namespace {

using heed::index_t;
const heed::Shape<4> shape{4, 256, 32, 32};

void set_counters(benchmark::State& state, std::size_t element_size = sizeof(float)) {
  const double bytes = 2.0 * double(heed::numel(shape)) * double(element_size);
  state.counters["GB/s"] =
      benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.counters["images/s"] = benchmark::Counter(double(shape[0]), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_copy(benchmark::State& state) {
  heed::set_num_threads(static_cast<int>(state.range(0)));
  const auto x = heed::randn<float>(shape, 1);
  heed::Tensor<float, 4> y(shape);
  for (auto _ : state) {
    heed::parallel_for(shape[0] * shape[1], 0, [&](index_t bc, int) {
      const index_t plane = shape[2] * shape[3];
      std::copy_n(x.data() + bc * plane, plane, y.data() + bc * plane);
    });
    benchmark::ClobberMemory();
  }
  set_counters(state);
}

template <class Module>
void run(benchmark::State& state, const Module& module) {
  const auto x = heed::randn<float>(shape, 1);
  for (auto _ : state) {
    auto y = module(x);
    benchmark::DoNotOptimize(y.data());
  }
  set_counters(state);
}

void BM_se(benchmark::State& state) {
  heed::set_num_threads(static_cast<int>(state.range(0)));
  run(state, heed::nn::SEBlock<float>({.channels = 256, .reduction = 16}));
}
void BM_spatial(benchmark::State& state) {
  heed::set_num_threads(static_cast<int>(state.range(0)));
  run(state, heed::nn::SpatialAttention<float>({.kernel_size = 7}));
}
void BM_cbam(benchmark::State& state) {
  heed::set_num_threads(static_cast<int>(state.range(0)));
  run(state, heed::nn::CBAM<float>({.channels = 256, .reduction = 16, .kernel_size = 7}));
}

// CBAM on a bfloat16 / half tensor (half the bytes; computed in float), one thread.
template <class T>
void BM_cbam_16bit(benchmark::State& state) {
  heed::set_num_threads(1);
  const heed::nn::CBAM<T> cbam({.channels = 256, .reduction = 16, .kernel_size = 7});
  const auto x = heed::cast<T>(heed::randn<float>(shape, 1));
  for (auto _ : state) {
    auto y = cbam(x);
    benchmark::DoNotOptimize(y.data());
  }
  set_counters(state, sizeof(T));
}

// nn::Conv2d with kernel = stride = 16 on a 224 × 224 image, 3 → 768 channels: ViT-B/16's patch
// embedding (torchvision's conv_proj), one image; GFLOP/s of its 2 · 768 · 196 · 768 flops. Strides
// other than 1 run on the GEMM (kernels/detail/conv2d_gemm.hpp).
void BM_conv2d_patch_embedding(benchmark::State& state) {
  heed::set_num_threads(static_cast<int>(state.range(0)));
  const heed::nn::Conv2d<float> conv({.in_channels = 3, .out_channels = 768, .kernel_size = 16, .stride = 16});
  const auto image = heed::randn<float>({1, 3, 224, 224}, 1);
  for (auto _ : state) {
    auto y = conv(image);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * 768 * 196 * 768 * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["images/s"] = benchmark::Counter(1.0, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_conv2d_patch_embedding)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_copy)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_se)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_spatial)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_cbam)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_cbam_16bit<heed::bfloat16>)->UseRealTime();
BENCHMARK(BM_cbam_16bit<heed::half>)->UseRealTime();

}  // namespace
