// A long document (N = 16384 tokens, 8 heads, d = 64) through the two sparse patterns of
// seed 000's table, next to dense attention:
//   Longformer: a window of 256 tokens either side, plus global tokens (a [CLS] at 0 and a
//               question marker at N/2) that attend to and are attended by every token
//               mask::any(mask::SlidingWindow{256, 256}, mask::GlobalTokens{global})
//   BigBird:    64-token blocks: 3 window blocks, 2 global blocks, 3 random blocks per row
//               mask::BlockSparse{mask::bigbird_layout(N / 64, {...}), 64}
// Each pattern's output is checked on sampled query rows against a naive double-precision
// computation under the same pattern; the block layouts are drawn as a heatmap (what fraction
// of each 64 x 64 block of scores a pattern computes).
//   build/release/examples/heed_example_long_document [output dir] [N]
#include <heed/heed.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>

namespace {

using heed::index_t;
using Visible = std::function<bool(index_t h, index_t i, index_t j)>;

template <class F>
double seconds_of(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// max |out - naive| over `rows` query rows of every head, the naive softmax in double over the
// keys `visible` shows.
double max_error(const heed::Tensor<float, 4>& q, const heed::Tensor<float, 4>& k, const heed::Tensor<float, 4>& v,
                 const heed::Tensor<float, 4>& out, const Visible& visible, index_t rows) {
  const index_t H = q.size(1), N = q.size(2), d = q.size(3);
  double worst = 0;
  std::vector<double> s(static_cast<std::size_t>(N));
  for (index_t h = 0; h < H; ++h)
    for (index_t r = 0; r < rows; ++r) {
      const index_t i = (r * 7919 + h * 131) % N;  // spread over the sequence, the global rows among them
      double m = -INFINITY;
      for (index_t j = 0; j < N; ++j) {
        double dot = 0;
        for (index_t c = 0; c < d; ++c) dot += double(q(0, h, i, c)) * double(k(0, h, j, c));
        s[static_cast<std::size_t>(j)] = visible(h, i, j) ? dot / std::sqrt(double(d)) : -INFINITY;
        m = std::max(m, s[static_cast<std::size_t>(j)]);
      }
      double total = 0;
      for (double& x : s) total += x = std::exp(x - m);
      for (index_t c = 0; c < d; ++c) {
        double o = 0;
        for (index_t j = 0; j < N; ++j) o += s[static_cast<std::size_t>(j)] * double(v(0, h, j, c));
        worst = std::max(worst, std::abs(o / total - double(out(0, h, i, c))));
      }
    }
  return worst;
}

// The fraction of each block x block square of scores that `visible` shows (head 0).
heed::Tensor<float, 2> block_density(index_t N, index_t block, const Visible& visible) {
  const index_t nb = N / block;
  heed::Tensor<float, 2> density({nb, nb});
  for (index_t bi = 0; bi < nb; ++bi)
    for (index_t bj = 0; bj < nb; ++bj) {
      index_t shown = 0;
      for (index_t i = bi * block; i < (bi + 1) * block; i += 4)  // every 4th row and column
        for (index_t j = bj * block; j < (bj + 1) * block; j += 4) shown += visible(0, i, j) ? 1 : 0;
      density(bi, bj) = float(shown) / float((block / 4) * (block / 4));
    }
  return density;
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path out_dir = argc > 1 ? argv[1] : ".";
  const index_t N = argc > 2 ? std::atol(argv[2]) : 16384, H = 8, d = 64, block = 64, window = 256;
  if (N < 4 * block || N % block != 0) {
    std::fprintf(stderr, "N must be a multiple of %ld, at least %ld\n", long(block), long(4 * block));
    return 2;
  }
  std::filesystem::create_directories(out_dir);
  const auto q = heed::randn<float>({1, H, N, d}, 1), k = heed::randn<float>({1, H, N, d}, 2),
             v = heed::randn<float>({1, H, N, d}, 3);
  std::printf("A document of N = %ld tokens, %ld heads, d = %ld, %d threads\n", long(N), long(H), long(d),
              heed::num_threads());

  heed::Tensor<bool, 1> global({N});
  global(0) = global(N / 2) = true;
  const auto longformer = heed::mask::any(heed::mask::SlidingWindow{window, window}, heed::mask::GlobalTokens{global});
  const auto layout = heed::mask::bigbird_layout(N / block, {.window = 3, .global = 2, .random = 3, .seed = 0});
  const heed::mask::BlockSparse bigbird{layout, block};
  const Visible longformer_shows = [&](index_t, index_t i, index_t j) {
    return std::abs(i - j) <= window || global(i) || global(j);
  };
  const Visible bigbird_shows = [&](index_t, index_t i, index_t j) { return layout(i / block, j / block); };

  heed::Tensor<float, 4> dense_out;
  const double dense_s = seconds_of([&] { dense_out = heed::scaled_dot_product_attention(q, k, v); });
  std::printf("  dense       %8.3f s   every one of the %ld x %ld scores per head\n", dense_s, long(N), long(N));

  bool all_match = true;
  const auto run = [&](const char* name, const auto& mask, const Visible& shows) {
    heed::AttentionStats stats;
    heed::Tensor<float, 4> out;
    const double s =
        seconds_of([&] { out = heed::attention(q, k, v, heed::ScaledDot{}, mask, {.stats = &stats}).output; });
    const index_t tiles = stats.open + stats.partial + stats.blocked;
    const double error = max_error(q, k, v, out, shows, 16);
    const bool ok = error < 1e-4;
    all_match = all_match && ok;
    std::printf(
        "  %-10s  %8.3f s   %5.2f%% of the tiles computed (%ld of %ld), %5.1fx faster than dense; "
        "max |error| on 128 sampled rows %.1e: %s\n",
        name, s, 100.0 * double(stats.open + stats.partial) / double(tiles), long(stats.open + stats.partial),
        long(tiles), dense_s / s, error, ok ? "matches" : "DIFFERS");
  };
  run("Longformer", longformer, longformer_shows);
  run("BigBird", bigbird, bigbird_shows);

  // what each pattern computes, block by block (the first 64 blocks: 4096 tokens)
  const index_t shown_blocks = std::min<index_t>(64, N / block);
  const auto lf = block_density(shown_blocks * block, block, longformer_shows);
  const auto bb = block_density(shown_blocks * block, block, bigbird_shows);
  heed::Tensor<float, 3> panels({2, shown_blocks, shown_blocks});
  std::copy_n(lf.data(), lf.numel(), panels.data());
  std::copy_n(bb.data(), bb.numel(), panels.data() + lf.numel());
  const auto png = out_dir / "long_document_layouts.png";
  heed::io::write_heatmap_png(png, panels,
                              {.title = "Scores computed per 64 x 64 block (first 4096 tokens)",
                               .panel_titles = {"Longformer", "BigBird"},
                               .cell = 6});
  std::printf("Wrote %s: the first %ld x %ld blocks of both layouts\n", png.string().c_str(), long(shown_blocks),
              long(shown_blocks));
  // No [N, N] matrix anywhere: the process holds Q, K, V, three outputs and the packed Kᵀ
  // (7 x 32 MiB at N = 16384), where dense scores alone would take 8 GiB.
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const double peak_mb = static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB on Linux
  const bool small = peak_mb < 300;
  std::printf("Peak RSS %.1f MB: %s 300 MB\n", peak_mb, small ? "under" : "OVER");
  std::printf("Verdict: %s\n", all_match && small ? "both patterns match the naive computation" : "MISMATCH");
  return all_match && small ? 0 : 1;
}
