// SE, spatial attention and CBAM on the seed's [4, 256, 32, 32] float tensor (4 MiB), against a
// plain copy of a tensor of the same size in the same binary. These modules are memory-bound:
// each reads x to reduce it and reads it again to write y, so GB/s counts the bytes of x read
// once and y written once (as the copy does), and the copy's GB/s is the ceiling. And a ViT's
// patch embedding (a strided Conv2d), in GFLOP/s.
//   cmake --workflow --preset release && build/release/benchmarks/heed_bench_nn_vision
#include <benchmark/benchmark.h>

#include <algorithm>
#include <filesystem>
#include <string>

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

// ViT-B/16 (torchvision's vit_b_16 shapes: 224 × 224, 12 blocks of width 768, 12 heads, MLP
// 3072, 1000 classes) with its initial weights, `state.range(1)` images per call; GFLOP/s of its
// multiply-adds (patch GEMM, projections, attention's two products, MLP, head).
double vit_b16_flops() {
  const double L = 197, D = 768, F = 3072, patches = 196;
  const double block = 2 * L * D * 3 * D + 2 * 2 * L * L * D + 2 * L * D * D + 2 * 2 * L * D * F;
  return 2 * patches * 3 * 256 * D + 12 * block + 2 * D * 1000;
}

template <class Scalar>
const heed::nn::VisionTransformer<Scalar>& vit_b16() {
  static const heed::nn::VisionTransformer<Scalar> model(heed::nn::VisionTransformerOptions{});
  return model;
}

template <class Scalar>
void BM_vision_transformer(benchmark::State& state) {
  heed::set_num_threads(static_cast<int>(state.range(0)));
  const auto& model = vit_b16<Scalar>();
  const index_t batch = state.range(1);
  const auto images = heed::cast<Scalar>(heed::randn<float>({batch, 3, 224, 224}, 2));
  for (auto _ : state) {
    auto logits = model(images);
    benchmark::DoNotOptimize(logits.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(vit_b16_flops() * static_cast<double>(batch) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
  state.counters["images/s"] =
      benchmark::Counter(static_cast<double>(batch), benchmark::Counter::kIsIterationInvariantRate);
}

// ViT-B/16's tokens (the patch GEMM, class token and position embedding) beside one Linear GEMM
// of the same size, [196, 768] · [768, 768]ᵀ: the stem's overhead over its GEMM.
void BM_vit_b16_tokens(benchmark::State& state) {
  heed::set_num_threads(static_cast<int>(state.range(0)));
  const auto& model = vit_b16<float>();
  const auto image = heed::randn<float>({1, 3, 224, 224}, 3);
  for (auto _ : state) {
    auto tokens = model.tokens(image);
    benchmark::DoNotOptimize(tokens.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * 196 * 768 * 768 * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_linear_196x768x768(benchmark::State& state) {
  heed::set_num_threads(static_cast<int>(state.range(0)));
  const heed::nn::Linear<float> linear({.in_features = 768, .out_features = 768});
  const auto x = heed::randn<float>({196, 768}, 4);
  for (auto _ : state) {
    auto y = linear(x);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * 196 * 768 * 768 * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// Building ViT-B/16 and loading it from a safetensors file (346 MB, torchvision's names, random
// values; written once to the temporary directory and read from the page cache): the
// constructor then load() (range 0), or nn::load_new, which skips the initialization (range 1).
void BM_vit_b16_build_and_load(benchmark::State& state) {
  heed::set_num_threads(1);
  static const std::filesystem::path path = [] {
    const auto file = std::filesystem::temp_directory_path() / "heed_bench_vit_b16.safetensors";
    heed::io::SafeTensorsWriter w;
    const index_t D = 768, F = 3072;
    std::uint64_t seed = 100;
    const auto add1 = [&](const std::string& name, index_t n) { w.add(name, heed::randn<float>({n}, seed++)); };
    const auto add2 = [&](const std::string& name, index_t n, index_t k) {
      w.add(name, heed::randn<float>({n, k}, seed++));
    };
    w.add("class_token", heed::randn<float>({1, 1, D}, seed++));
    w.add("conv_proj.weight", heed::randn<float>({D, 3, 16, 16}, seed++));
    add1("conv_proj.bias", D);
    w.add("encoder.pos_embedding", heed::randn<float>({1, 197, D}, seed++));
    for (int i = 0; i < 12; ++i) {
      const std::string p = "encoder.layers.encoder_layer_" + std::to_string(i) + ".";
      for (const char* part :
           {"ln_1.weight", "ln_1.bias", "ln_2.weight", "ln_2.bias", "self_attention.out_proj.bias", "mlp.3.bias"})
        add1(p + part, D);
      add2(p + "self_attention.in_proj_weight", 3 * D, D);
      add1(p + "self_attention.in_proj_bias", 3 * D);
      add2(p + "self_attention.out_proj.weight", D, D);
      add2(p + "mlp.0.weight", F, D);
      add1(p + "mlp.0.bias", F);
      add2(p + "mlp.3.weight", D, F);
    }
    add1("encoder.ln.weight", D);
    add1("encoder.ln.bias", D);
    add2("heads.head.weight", 1000, D);
    add1("heads.head.bias", 1000);
    w.write(file);
    return file;
  }();
  const auto file = heed::io::SafeTensors::open(path);
  const heed::nn::VisionTransformerOptions options;
  for (auto _ : state) {
    if (state.range(0) == 0) {
      heed::nn::VisionTransformer<float> model(options);
      model.load(file, "", {.strict = true});
      benchmark::DoNotOptimize(&model);
    } else {
      auto model = heed::nn::load_new<heed::nn::VisionTransformer<float>>(options, file, "", {.strict = true});
      benchmark::DoNotOptimize(&model);
    }
  }
  state.counters["MB/s"] = benchmark::Counter(static_cast<double>(std::filesystem::file_size(path)) * 1e-6,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_conv2d_patch_embedding)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_vit_b16_tokens)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_linear_196x768x768)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_vision_transformer<float>)
    ->ArgNames({"threads", "batch"})
    ->Args({1, 1})
    ->Args({2, 1})
    ->Args({1, 8})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_vision_transformer<heed::bfloat16>)
    ->ArgNames({"threads", "batch"})
    ->Args({1, 1})
    ->Args({2, 1})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_vit_b16_build_and_load)->ArgName("load_new")->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_copy)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_se)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_spatial)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_cbam)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_cbam_16bit<heed::bfloat16>)->UseRealTime();
BENCHMARK(BM_cbam_16bit<heed::half>)->UseRealTime();

}  // namespace
