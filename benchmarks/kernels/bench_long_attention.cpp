// Sparse attention over long sequences (B = 1, H = 8, d = 64, fp32): dense, Longformer (a
// window of 256 either side and 2 global tokens) and BigBird (64-blocks: 3 window, 2 global, 3
// random) at N = 4096, 16384 and 65536.
//   cmake --workflow --preset release
//   OMP_NUM_THREADS=1 taskset -c 1 build/release/benchmarks/heed_bench_kernels_long_attention
// Counters: GFLOP/s over the tiles the driver visits (4·d per score computed), "visited" = the
// fraction of all tiles computed, "peak_MB" = the process's peak RSS so far. BM_long_bf16 runs
// Longformer at N = 65536 with bfloat16 storage (run it alone for its own peak RSS:
// --benchmark_filter=BM_long_bf16). BM_bigbird_rows splits BigBird's layout by query rows.
// BM_flush_denormals times dense, causal and Longformer with and without FTZ/DAZ set.
// Time ∝ visited tiles means
// time / (visited · (N / 4096)² · dense time at 4096) stays near 1.
#include <benchmark/benchmark.h>

#include <sys/resource.h>

#if defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
#endif

#include "heed/core/random.hpp"
#include "heed/kernels.hpp"

namespace {

using heed::index_t;
constexpr index_t B = 1, H = 8, d = 64;

enum Pattern { dense = 0, longformer = 1, bigbird = 2, causal = 3 };

// What the driver will compute under `mask` (its preferred tiles, as attention_tiles picks
// them): scores in visited tiles, and visited / all tiles.
template <class Mask>
std::pair<double, double> visited(const Mask& mask, index_t n) {
  const heed::TileShape shape = heed::detail::chosen_tiles(mask, {});
  double scores = 0, tiles = 0, all = 0;
  for (index_t h = 0; h < H; ++h)
    for (index_t i0 = 0; i0 < n; i0 += shape.block_q)
      for (index_t j0 = 0; j0 < n; j0 += shape.block_k) {
        const heed::TileRef t{0, h, i0, std::min(shape.block_q, n - i0), j0, std::min(shape.block_k, n - j0), h};
        all += 1;
        if (mask.classify(t) == heed::mask::Tile::blocked) continue;
        tiles += 1;
        scores += double(t.ni * t.nj);
      }
  return {scores, tiles / all};
}

double peak_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB on Linux
}

// The timed loop: attention into `out` under `mask`, with the counters GFLOP/s (over the
// visited tiles) and visited.
template <class T, class Mask>
void time_attention(benchmark::State& state, const heed::Tensor<T, 4>& q, const heed::Tensor<T, 4>& k,
                    const heed::Tensor<T, 4>& v, heed::Tensor<T, 4>& out, const Mask& mask,
                    const heed::AttentionOptions& options) {
  const auto [scores, fraction] = visited(mask, q.size(2));
  for (auto _ : state) {
    heed::attention_into(out.view(), heed::TensorView<T, 4>{}, q.view(), k.view(), v.view(), heed::ScaledDot{}, mask,
                         options);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(4.0 * d * scores, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.counters["visited"] = fraction;
}

// One pattern at one length (args 0 and 1), Q, K, V (and the output) stored as T, on `threads`
// workers (0: the third arg).
template <class T>
void run_long(benchmark::State& state, int threads = 0) {
  const auto pattern = static_cast<Pattern>(state.range(0));
  const index_t n = state.range(1);
  const heed::AttentionOptions options{.num_threads = threads > 0 ? threads : static_cast<int>(state.range(2))};
  // drawn in T: no float copy lingers in the peak RSS
  const auto q = heed::randn<T>({B, H, n, d}, 1), k = heed::randn<T>({B, H, n, d}, 2),
             v = heed::randn<T>({B, H, n, d}, 3);
  heed::Tensor<bool, 1> global({n});
  global(0) = global(n / 2) = true;  // e.g. a [CLS] token and a question marker
  const auto window = heed::mask::any(heed::mask::SlidingWindow{256, 256}, heed::mask::GlobalTokens{global});
  const heed::mask::BlockSparse blocks{
      heed::mask::bigbird_layout(n / 64, {.window = 3, .global = 2, .random = 3, .seed = 0}), 64};
  // The output is allocated once, as a server answering long documents would keep it: a fresh
  // 128 MiB output per call (what attention() returns) adds its first-touch page faults, 10 to
  // 330 ms on the development VM depending on whether the kernel hands out huge pages.
  heed::Tensor<T, 4> out({B, H, n, d});
  const auto run = [&](const auto& mask) { time_attention(state, q, k, v, out, mask, options); };
  switch (pattern) {
    case dense:
      run(heed::mask::None{});
      break;
    case longformer:
      run(window);
      break;
    case bigbird:
      run(blocks);
      break;
    case causal:
      run(heed::mask::Causal{});
      break;
  }
  state.counters["peak_MB"] = peak_mb();
}

// args: pattern, N, threads
void BM_long(benchmark::State& state) {
  run_long<float>(state);
}
BENCHMARK(BM_long)
    ->ArgNames({"pattern", "N", "threads"})
    ->Args({dense, 4096, 1})
    ->Args({longformer, 4096, 1})
    ->Args({bigbird, 4096, 1})
    ->Args({longformer, 16384, 1})
    ->Args({bigbird, 16384, 1})
    ->Args({longformer, 65536, 1})
    ->Args({bigbird, 65536, 1})
    ->Args({dense, 4096, 2})
    ->Args({longformer, 16384, 2})
    ->Args({bigbird, 16384, 2})
    ->Args({longformer, 65536, 2})
    ->Args({bigbird, 65536, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Dense attention at the long lengths, for "GFLOP/s at the same N": N = 16384 takes about 3 s a
// call on one core, N = 65536 about 50 s (run them by name: --benchmark_filter=BM_dense_long).
// args: pattern (dense), N, threads
void BM_dense_long(benchmark::State& state) {
  run_long<float>(state);
}
BENCHMARK(BM_dense_long)
    ->ArgNames({"pattern", "N", "threads"})
    ->Args({dense, 16384, 1})
    ->Args({dense, 65536, 1})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// BigBird's layout split by query rows, to see where its time goes (docs/decisions.md, "Long
// sequences, seventh part"): part 0 an empty layout (what every call pays: packing Kᵀ, writing
// the output), 1 the global query blocks' rows alone, 2 all the other rows, 3 the whole layout.
// A part's time less part 0's, over its visited tiles, is its cost per tile.
void BM_bigbird_rows(benchmark::State& state) {
  const index_t part = state.range(0), n = state.range(1), nb = n / 64;
  const auto q = heed::randn<float>({B, H, n, d}, 1), k = heed::randn<float>({B, H, n, d}, 2),
             v = heed::randn<float>({B, H, n, d}, 3);
  const auto full = heed::mask::bigbird_layout(nb, {.window = 3, .global = 2, .random = 3, .seed = 0});
  heed::Tensor<bool, 2> layout({nb, nb});
  for (index_t i = 0; i < nb; ++i) {
    bool global_row = true;  // a global query block attends every key block
    for (index_t j = 0; j < nb; ++j) global_row = global_row && full(i, j);
    for (index_t j = 0; j < nb; ++j)
      layout(i, j) = full(i, j) && (part == 3 || (part == 1 && global_row) || (part == 2 && !global_row));
  }
  heed::Tensor<float, 4> out({B, H, n, d});
  time_attention(state, q, k, v, out, heed::mask::BlockSparse{layout, 64}, {.num_threads = 1});
  state.counters["tiles_per_head"] = state.counters["visited"] * double(nb * nb);  // 64 × 64 tiles: the blocks
}
BENCHMARK(BM_bigbird_rows)
    ->ArgNames({"part", "N"})
    ->ArgsProduct({{0, 1, 2, 3}, {4096, 65536}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The same calls with the calling thread's flush-to-zero and denormals-are-zero bits set (x86's
// MXCSR; elsewhere the two runs are the same). heed's softmax makes no subnormal (issue #41), so
// the two should time the same on every CPU; before it, a partially masked tile cost Intel
// cores a microcode assist per subnormal exp, and FTZ/DAZ made causal attention 1.5x faster
// there. One thread: the bits are per thread. args: pattern, N, ftz
void BM_flush_denormals(benchmark::State& state) {
#if defined(__x86_64__) || defined(_M_X64)
  const unsigned saved = _mm_getcsr();
  if (state.range(2) != 0) _mm_setcsr(saved | 0x8040u);  // FTZ (bit 15) and DAZ (bit 6)
#endif
  run_long<float>(state, 1);
#if defined(__x86_64__) || defined(_M_X64)
  _mm_setcsr(saved);
#endif
}
BENCHMARK(BM_flush_denormals)
    ->ArgNames({"pattern", "N", "ftz"})
    ->ArgsProduct({{dense, causal, longformer}, {1024, 4096}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// bfloat16 storage (scores and accumulation in float): half the memory of every tensor. Run it
// alone (--benchmark_filter=BM_long_bf16) for its own peak_MB: the counter is the process's.
void BM_long_bf16(benchmark::State& state) {
  run_long<heed::bfloat16>(state);
}
BENCHMARK(BM_long_bf16)
    ->ArgNames({"pattern", "N", "threads"})
    ->Args({longformer, 65536, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
