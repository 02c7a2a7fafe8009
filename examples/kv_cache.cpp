// Generation with and without a KV cache (seed 002: "cache keys and values to speed up
// autoregressive generation"). A 4-layer torch-style TransformerDecoder (d_model 256, 8 heads)
// reads a memory of 32 positions and a prompt of 16, then generates greedily: each step's last
// output row is the next step's input. Without a cache every step runs the whole sequence again
// (what PyTorch 1.13's nn.TransformerDecoder does); with one, the prompt runs once and each step
// runs one row against the cached keys and values, the memory projected once.
//   build/release/examples/heed_example_kv_cache [steps]
#include <heed/heed.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace {

using heed::index_t;
using heed::Tensor;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The last row of y [1, L, E] as a [1, 1, E] tensor.
Tensor<float, 3> last_row(const Tensor<float, 3>& y) {
  return Tensor<float, 3>(y.view().slice(1, y.size(1) - 1, y.size(1)));
}

}  // namespace

int main(int argc, char** argv) {
  const index_t steps = argc > 1 ? std::atol(argv[1]) : 64;
  const index_t E = 256, prompt_len = 16, memory_len = 32;
  const heed::nn::TransformerDecoder<float> decoder(
      {.d_model = E, .nhead = 8, .dim_feedforward = 1024, .num_layers = 4, .seed = 7});
  const auto memory = heed::randn<float>({1, memory_len, E}, 1);
  const auto prompt = heed::randn<float>({1, prompt_len, E}, 2);

  // Without a cache: the whole sequence, causally, at every step.
  Tensor<float, 3> sequence({1, prompt_len + steps, E});
  std::copy_n(prompt.data(), prompt.numel(), sequence.data());
  Tensor<float, 3> plain({1, steps, E});
  auto start = std::chrono::steady_clock::now();
  for (index_t s = 0; s < steps; ++s) {
    const Tensor<float, 3> so_far(sequence.view().slice(1, 0, prompt_len + s));
    const auto next = last_row(decoder(so_far, memory, {.tgt_is_causal = true}));
    std::copy_n(next.data(), E, &sequence(0, prompt_len + s, 0));
    std::copy_n(next.data(), E, &plain(0, s, 0));
  }
  const double without = seconds_since(start);

  // With a cache: the prompt once, then one row per step.
  auto cache = decoder.make_cache({.batch = 1, .max_len = prompt_len + steps});
  Tensor<float, 3> cached({1, steps, E});
  start = std::chrono::steady_clock::now();
  auto next = last_row(decoder(prompt, memory, {.cache = &cache}));
  for (index_t s = 0; s < steps; ++s) {
    std::copy_n(next.data(), E, &cached(0, s, 0));
    if (s + 1 < steps) next = decoder(next, memory, {.cache = &cache});
  }
  const double with = seconds_since(start);

  double worst = 0;
  for (index_t i = 0; i < plain.numel(); ++i)
    worst = std::max(worst, std::abs(double(plain.data()[i]) - double(cached.data()[i])));
  const bool same = worst <= 1e-4;
  std::printf("%ld steps after a prompt of %ld, memory of %ld, 4 layers, d_model %ld:\n", static_cast<long>(steps),
              static_cast<long>(prompt_len), static_cast<long>(memory_len), static_cast<long>(E));
  std::printf("  without a cache: %.1f ms (%.0f steps/s)\n", without * 1e3, double(steps) / without);
  std::printf("  with a cache:    %.1f ms (%.0f steps/s), %ld positions cached\n", with * 1e3, double(steps) / with,
              static_cast<long>(cache.max_length()));
  std::printf("Outputs %s: max |difference| %.2e; the cache is %.1fx faster\n", same ? "identical" : "DIFFER", worst,
              without / with);
  return same ? 0 : 1;
}
