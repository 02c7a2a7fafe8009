// The register-level kernels alone, on operands that sit in L1: what the attention driver and
// the GEMM can reach at best. Compare with heed_bench_simd_peak (same core, same run).
//   OMP_NUM_THREADS=1 taskset -c 0 build/release/benchmarks/heed_bench_simd_micro_kernels
// (add -DHEED_NO_UNROLL to the build to see the kernels without gcc's unrolling, docs/decisions.md)
#include <benchmark/benchmark.h>

#include <vector>

#include "heed/core/random.hpp"
#include "heed/simd/attention_kernel.hpp"
#include "heed/simd/gemm_kernel.hpp"

namespace {

using heed::index_t;
namespace simd = heed::simd;

void flops(benchmark::State& state, double per_iteration) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(per_iteration, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

// One MR × NR block over `depth` (the Q·Kᵀ call has depth d; the P·V call depth = keys per tile).
void BM_attention_micro_kernel(benchmark::State& state) {
  constexpr index_t MR = simd::AttentionTile<float>::mr, NR = simd::AttentionTile<float>::nr;
  const index_t depth = state.range(0);
  const auto a = heed::randn<float>({MR, depth}, 1), b = heed::randn<float>({depth, NR}, 2);
  std::vector<float> c(static_cast<std::size_t>(MR * NR));
  for (auto _ : state) {
    simd::attention_micro_kernel<float>(depth, a.data(), depth, MR, b.data(), NR, NR, c.data(), NR, nullptr, 1.0f);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  flops(state, 2.0 * double(MR * NR * depth));
}
BENCHMARK(BM_attention_micro_kernel)->ArgName("depth")->Arg(64)->Arg(128)->Arg(256);

// The bfloat16 pair micro-kernel (vdpbf16ps where the target has AVX-512 BF16, else its generic
// form): the same MR × NR block over `depth` values (depth / 2 pairs), B pair-packed.
void BM_pair_micro_kernel(benchmark::State& state) {
  constexpr index_t MR = simd::AttentionTile<float>::mr, NR = simd::pair_panel;
  const index_t depth = state.range(0);
  std::vector<heed::bfloat16> a(static_cast<std::size_t>(MR * depth)), b(static_cast<std::size_t>(depth * NR));
  const auto fill = heed::randn<float>({static_cast<index_t>(a.size() + b.size())}, 1);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = heed::bfloat16(fill.data()[i]);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = heed::bfloat16(fill.data()[a.size() + i]);
  std::vector<float> c(static_cast<std::size_t>(MR * NR));
  for (auto _ : state) {
    simd::pair_micro_kernel(depth / 2, a.data(), depth, MR, b.data(), NR, c.data(), NR, nullptr, 1.0f);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  flops(state, 2.0 * double(MR * NR * depth));
  state.SetLabel(simd::bf16_pair_products ? "vdpbf16ps" : "generic");
}
BENCHMARK(BM_pair_micro_kernel)->ArgName("depth")->Arg(64)->Arg(128)->Arg(256);

// The GEMM micro-kernel on packed panels, kc deep.
void BM_gemm_micro_kernel(benchmark::State& state) {
  constexpr index_t MR = simd::GemmTile<float>::mr, NR = simd::GemmTile<float>::nr;
  const index_t kc = state.range(0);
  const auto a = heed::randn<float>({kc * MR}, 1), b = heed::randn<float>({kc * NR}, 2);
  std::vector<float> c(static_cast<std::size_t>(MR * NR));
  for (auto _ : state) {
    simd::gemm_micro_kernel<float>(kc, a.data(), b.data(), c.data(), NR, nullptr, NR, nullptr, false, MR, NR);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  flops(state, 2.0 * double(MR * NR * kc));
}
BENCHMARK(BM_gemm_micro_kernel)->ArgName("kc")->Arg(64)->Arg(192);

// Packing Kᵀ into panels, as the attention driver does once per call for every key (in pieces of
// 1024 keys): with few query rows per key (a sparse mask, a short query) it is a tenth of the
// call. The counter is the bytes of K read per second. Args: d, keys. 1024 keys (256 KiB at
// d = 64) stay in L2 from one iteration to the next; 65536 keys (one head of the long-sequence
// benchmark, 16 MiB) come from L3 and memory, as they do in the driver.
void BM_pack_kt(benchmark::State& state) {
  constexpr index_t piece = 1024, NR = simd::AttentionTile<float>::nr;
  const index_t depth = state.range(0), keys = state.range(1);
  const auto k = heed::randn<float>({keys, depth}, 1);
  heed::Tensor<float, 1> out({(keys + NR - 1) / NR * NR * depth});
  for (auto _ : state) {
    for (index_t j0 = 0; j0 < keys; j0 += piece)  // the driver's pieces
      simd::pack_kt(k.data() + j0 * depth, depth, std::min(piece, keys - j0), depth, out.data() + j0 * depth);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] = benchmark::Counter(
      double(keys * depth) * sizeof(float), benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_pack_kt)
    ->ArgNames({"depth", "keys"})
    ->Args({64, 1024})
    ->Args({80, 1024})
    ->Args({128, 1024})
    ->Args({64, 65536});

// The same for bfloat16 keys, the depth in pairs (pack_kt_pairs).
void BM_pack_kt_pairs(benchmark::State& state) {
  constexpr index_t keys = 1024, NR = simd::pair_panel;
  const index_t depth = state.range(0);
  const auto fill = heed::randn<float>({keys * depth}, 1);
  std::vector<heed::bfloat16> k(static_cast<std::size_t>(keys * depth));
  for (std::size_t i = 0; i < k.size(); ++i) k[i] = heed::bfloat16(fill.data()[i]);
  std::vector<heed::bfloat16> out(static_cast<std::size_t>((keys + NR - 1) / NR * NR * (depth + 1) / 2 * 2));
  for (auto _ : state) {
    simd::pack_kt_pairs(k.data(), depth, keys, depth, out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] =
      benchmark::Counter(double(keys * depth) * sizeof(heed::bfloat16), benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
}
BENCHMARK(BM_pack_kt_pairs)->ArgName("depth")->Arg(64)->Arg(128);

}  // namespace
