// The demo, part 3: generation. A character-level language model in the Llama layout (RMSNorm,
// attention with rotary positions and 8 query heads over 2 key/value heads, SwiGLU), trained in
// PyTorch on Debian's fortunes (examples/train/train_char_lm.py), run by heed with a KV cache.
//
//   heed_example_demo_generate [data dir] [--quick] [--no-timing]
//
// 1. Greedy continuations of 20 held-out prompts, token for token against PyTorch's (where one
//    diverges, PyTorch's top-2 logits at that step must be a near tie: within 1e-4).
// 2. The held-out loss (perplexity) against PyTorch's, to 1e-5 relative.
// 3. Eight prompts of different lengths generated together (ragged cache rows): the same
//    tokens as generating each alone.
// 4. bfloat16 weights and cache: the perplexity change and the agreement with float.
// 5. Sampling with temperature and top-k from a seeded generator: the same text for a seed.
// 6. Speed: tokens/s with the cache on one core and two, next to PyTorch's (measured by
//    train_char_lm.py --speed), and the step time at 1024 cached tokens against the memory bound.
// 7. Bad input: a character outside the vocabulary, a prompt longer than the context, a
//    generation past the cache's capacity.
// --quick (the sanitizer build's ctest): 4 prompts of 24 characters, 1 loss window, no speed.
// --no-timing: everything but 6 (the ctest of the other builds).
// Exits non-zero on any divergence that is not a near tie, a loss off by more than 1e-5, a
// batch that differs from the single runs, sampling that does not repeat, or bad input that
// is not refused.
#include <heed/heed.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "char_lm.hpp"

namespace fs = std::filesystem;
using char_lm::CharLM;
using heed::index_t;
using Ids = std::vector<std::int32_t>;

namespace {

constexpr double tie_margin = 1e-4;

std::int32_t argmax(const heed::Tensor<float, 3>& logits, index_t b) {
  const float* row = &logits(b, logits.size(1) - 1, 0);
  return static_cast<std::int32_t>(std::max_element(row, row + logits.size(2)) - row);  // the first maximum, as torch
}

heed::Tensor<std::int32_t, 2> as_batch(const Ids& ids) {
  heed::Tensor<std::int32_t, 2> t({1, static_cast<index_t>(ids.size())}, heed::uninitialized);
  std::copy(ids.begin(), ids.end(), t.data());
  return t;
}

// Greedy generation of `steps` tokens after `prompt`, with a cache: the prompt in one call,
// then one call per token.
template <class Scalar>
Ids greedy(const CharLM<Scalar>& model, const Ids& prompt, index_t steps) {
  auto cache = model.make_cache(1, static_cast<index_t>(prompt.size()) + steps);
  auto logits = model(as_batch(prompt), &cache, true);
  Ids out;
  for (index_t s = 0; s < steps; ++s) {
    out.push_back(argmax(logits, 0));
    if (s + 1 < steps) logits = model(as_batch({out.back()}), &cache, true);
  }
  return out;
}

// Every prompt at once: right-padded into one prefill, each cache row cut back to its prompt,
// then one call per step for all rows (rows of different lengths).
template <class Scalar>
std::vector<Ids> greedy_batch(const CharLM<Scalar>& model, const std::vector<Ids>& prompts, index_t steps) {
  const auto B = static_cast<index_t>(prompts.size());
  index_t longest = 0;
  for (const Ids& p : prompts) longest = std::max(longest, static_cast<index_t>(p.size()));
  heed::Tensor<std::int32_t, 2> ids({B, longest});  // padding: id 0
  for (index_t b = 0; b < B; ++b) std::copy(prompts[std::size_t(b)].begin(), prompts[std::size_t(b)].end(), &ids(b, 0));
  auto cache = model.make_cache(B, longest + steps);
  const auto prefill = model(ids, &cache);
  std::vector<Ids> out(static_cast<std::size_t>(B));
  heed::Tensor<std::int32_t, 2> next({B, 1});
  for (index_t b = 0; b < B; ++b) {
    const auto length = static_cast<index_t>(prompts[std::size_t(b)].size());
    cache.truncate_row(b, length);
    const float* row = &prefill(b, length - 1, 0);
    next(b, 0) = static_cast<std::int32_t>(std::max_element(row, row + prefill.size(2)) - row);
  }
  for (index_t s = 0; s < steps; ++s) {
    for (index_t b = 0; b < B; ++b) out[std::size_t(b)].push_back(next(b, 0));
    if (s + 1 == steps) break;
    const auto logits = model(next, &cache, true);
    for (index_t b = 0; b < B; ++b) next(b, 0) = argmax(logits, b);
  }
  return out;
}

// Sampling (not library API): logits / temperature, the top k kept, softmax, one draw from a
// 64-bit Mersenne Twister turned into [0, 1) by hand, so a seed gives the same text everywhere.
template <class Scalar>
Ids sample(const CharLM<Scalar>& model, const Ids& prompt, index_t steps, double temperature, index_t top_k,
           std::uint64_t seed) {
  std::mt19937_64 generator(seed);
  auto cache = model.make_cache(1, static_cast<index_t>(prompt.size()) + steps);
  auto logits = model(as_batch(prompt), &cache, true);
  Ids out;
  std::vector<std::pair<double, std::int32_t>> top;
  for (index_t s = 0; s < steps; ++s) {
    top.clear();
    for (index_t v = 0; v < logits.size(2); ++v)
      top.emplace_back(static_cast<double>(logits(0, 0, v)) / temperature, static_cast<std::int32_t>(v));
    std::partial_sort(top.begin(), top.begin() + top_k, top.end(), [](const auto& a, const auto& b) {
      return a.first > b.first || (a.first == b.first && a.second < b.second);
    });
    double total = 0;
    for (index_t i = 0; i < top_k; ++i) total += std::exp(top[std::size_t(i)].first - top[0].first);
    const double u = static_cast<double>(generator() >> 11) * 0x1p-53 * total;
    double acc = 0;
    std::int32_t token = top[std::size_t(top_k - 1)].second;
    for (index_t i = 0; i < top_k; ++i) {
      acc += std::exp(top[std::size_t(i)].first - top[0].first);
      if (u < acc) {
        token = top[std::size_t(i)].second;
        break;
      }
    }
    out.push_back(token);
    if (s + 1 < steps) logits = model(as_batch({token}), &cache, true);
  }
  return out;
}

// Per window, the summed -log p(target) over its positions, in double from the float logits.
template <class Scalar>
std::vector<double> window_losses(const CharLM<Scalar>& model, const heed::Tensor<std::int64_t, 2>& windows,
                                  index_t count, heed::Tensor<float, 3>* first_logits = nullptr) {
  const index_t width = windows.size(1) - 1;
  heed::Tensor<std::int32_t, 2> inputs({count, width}, heed::uninitialized);
  for (index_t w = 0; w < count; ++w)
    for (index_t i = 0; i < width; ++i) inputs(w, i) = static_cast<std::int32_t>(windows(w, i));
  const auto logits = model(inputs);
  if (first_logits) *first_logits = logits;
  std::vector<double> losses;
  for (index_t w = 0; w < count; ++w) {
    double sum = 0;
    for (index_t i = 0; i < width; ++i) {
      const float* row = &logits(w, i, 0);
      const double top = *std::max_element(row, row + logits.size(2));
      double z = 0;
      for (index_t v = 0; v < logits.size(2); ++v) z += std::exp(double(row[v]) - top);
      sum += top + std::log(z) - double(row[windows(w, i + 1)]);
    }
    losses.push_back(sum);
  }
  return losses;
}

double mean_loss(const std::vector<double>& sums, index_t width) {
  double total = 0;
  for (const double s : sums) total += s;
  return total / (double(sums.size()) * double(width));
}

std::string printable(const std::string& s) {
  std::string out;
  for (const char c : s) out += c == '\n' ? std::string("\\n") : std::string(1, c);
  return out;
}

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Greedy steps per second after a prefill of `cached` tokens (best of 3 runs of `steps`).
template <class Scalar>
double tokens_per_second(const CharLM<Scalar>& model, const Ids& prompt, index_t cached, index_t steps) {
  Ids ids;
  while (static_cast<index_t>(ids.size()) < cached) ids.insert(ids.end(), prompt.begin(), prompt.end());
  ids.resize(static_cast<std::size_t>(cached));
  double best = 1e30;
  for (int run = 0; run < 3; ++run) {
    auto cache = model.make_cache(1, cached + steps);
    auto logits = model(as_batch(ids), &cache, true);
    const auto began = Clock::now();
    for (index_t s = 0; s < steps; ++s) logits = model(as_batch({argmax(logits, 0)}), &cache, true);
    best = std::min(best, seconds_since(began));
  }
  return double(steps) / best;
}

// Copy bandwidth, STREAM's convention (bytes read + bytes written per second), over 64 MiB
// arrays: far beyond the caches. Best of 5.
double copy_bandwidth() {
  const std::size_t n = std::size_t(64) << 20;
  std::vector<char> a(n, 1), b(n, 0);
  double best = 1e30;
  for (int run = 0; run < 5; ++run) {
    const auto began = Clock::now();
    std::memcpy(b.data(), a.data(), n);
    best = std::min(best, seconds_since(began));
    a[std::size_t(run)] = b[n - 1 - std::size_t(run)];
  }
  return 2.0 * double(n) / best;
}

// Read bandwidth over `bytes` (the footprint of a step): a dot product of two arrays of half of
// it, best of 20 after a warm-up pass, so that data that fits a cache level is read from there.
double read_bandwidth(std::size_t bytes) {
  const auto n = static_cast<index_t>(bytes / 8);
  const auto a = heed::randn<float>({n}, 1), b = heed::randn<float>({n}, 2);
  double best = 1e30, sink = 0;
  for (int run = 0; run < 21; ++run) {
    const auto began = Clock::now();
    sink += static_cast<double>(heed::simd::dot(a.data(), b.data(), n));
    if (run > 0) best = std::min(best, seconds_since(began));
  }
  return std::isfinite(sink) ? double(2 * n) * sizeof(float) / best : 0.0;
}

// PyTorch's tokens/s from train_char_lm.py --speed: (threads, cached) → tokens/s; 0 if absent.
double pytorch_speed(const fs::path& file, int threads, index_t cached) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    int t = 0;
    index_t c = 0;
    double rate = 0;
    if (fields >> t >> c >> rate && t == threads && c == cached) return rate;
  }
  return 0;
}

// Runs f, which must throw a ShapeError; prints it. False when nothing was thrown.
template <class F>
bool expect_error(const char* what, F f) {
  try {
    f();
    std::printf("  %s: NO ERROR\n", what);
    return false;
  } catch (const heed::ShapeError& e) {
    std::printf("  %s: ShapeError: %s\n", what, e.what());
    return true;
  }
}

}  // namespace

int main(int argc, char** argv) try {
  fs::path data = HEED_EXAMPLES_DATA_DIR;
  bool quick = false, timing = true;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0)
      quick = true;
    else if (std::strcmp(argv[i], "--no-timing") == 0)
      timing = false;
    else
      data = argv[i];
  }
  timing = timing && !quick;
  const auto model = CharLM<float>::from_file(data / "char_lm.safetensors");
  const auto& c = model.config();
  const auto ref = heed::io::SafeTensors::open(data / "char_lm_reference.safetensors");
  const auto prompt_ids = ref.get<std::int64_t, 2>("prompt_ids");
  const auto expected = ref.get<std::int64_t, 2>("generated");
  const auto margins = ref.get<float, 2>("margins");
  const auto windows = ref.get<std::int64_t, 2>("eval_ids");
  const auto torch_window_loss = ref.get<double, 1>("eval_window_loss");
  const index_t prompts = quick ? std::min<index_t>(4, prompt_ids.size(0)) : prompt_ids.size(0);
  const index_t steps = quick ? std::min<index_t>(24, expected.size(1)) : expected.size(1);
  const index_t width = windows.size(1) - 1;
  const index_t eval_windows = quick ? std::min<index_t>(1, windows.size(0)) : windows.size(0);
  std::printf(
      "Model: %s (%lld layers, dim %lld, %lld query heads over %lld key/value heads, SwiGLU %lld, "
      "vocabulary %lld characters, context %lld), %.2f MB as float\n",
      (data / "char_lm.safetensors").filename().string().c_str(), (long long)c.layers, (long long)c.dim,
      (long long)c.heads, (long long)c.kv_heads, (long long)c.ffn_hidden, (long long)c.vocab_size,
      (long long)c.context_length, double(model.weight_bytes()) / 1e6);
  bool ok = true;

  // 1. greedy, token for token against PyTorch
  std::printf("\n1. Greedy continuations of %lld held-out prompts, %lld characters each, against PyTorch's:\n",
              (long long)prompts, (long long)steps);
  std::vector<Ids> prompt_list, heed_tokens;
  index_t full_matches = 0;
  for (index_t p = 0; p < prompts; ++p) {
    Ids prompt;
    for (index_t i = 0; i < prompt_ids.size(1) && prompt_ids(p, i) >= 0; ++i)
      prompt.push_back(static_cast<std::int32_t>(prompt_ids(p, i)));
    prompt_list.push_back(prompt);
    heed_tokens.push_back(greedy(model, prompt, steps));
    const Ids& got = heed_tokens.back();
    index_t first = steps;
    for (index_t s = 0; s < steps && first == steps; ++s)
      if (got[std::size_t(s)] != expected(p, s)) first = s;
    if (first == steps) {
      ++full_matches;
    } else {
      const double margin = margins(p, first);
      const bool tie = margin <= tie_margin;
      ok = ok && tie;
      std::printf("  prompt %lld diverges at step %lld: PyTorch's top-2 margin there %.2e (%s)\n", (long long)p,
                  (long long)first, margin, tie ? "a near tie: allowed" : "NOT a tie");
    }
    if (p < 3)
      std::printf("  \"%s\" -> \"%s\"\n", printable(model.decode(prompt)).c_str(),
                  printable(model.decode(got)).c_str());
  }
  std::printf("Prompts generated exactly as PyTorch did: %lld of %lld\n", (long long)full_matches, (long long)prompts);

  // 2. perplexity
  heed::Tensor<float, 3> logits0;
  const auto losses = window_losses(model, windows, eval_windows, &logits0);
  std::vector<double> torch_losses(torch_window_loss.data(), torch_window_loss.data() + eval_windows);
  const double heed_loss = mean_loss(losses, width), torch_loss = mean_loss(torch_losses, width);
  const double relative = std::abs(heed_loss - torch_loss) / torch_loss;
  const auto torch_logits0 = ref.get<float, 2>("eval_logits_0");
  double logit_diff = 0;
  for (index_t i = 0; i < width; ++i)
    for (index_t v = 0; v < c.vocab_size; ++v)
      logit_diff = std::max(logit_diff, double(std::abs(logits0(0, i, v) - torch_logits0(i, v))));
  std::printf(
      "\n2. Held-out loss over %lld x %lld characters: heed %.7f, PyTorch %.7f nats/char (perplexity %.4f); "
      "relative difference %.1e (%s 1e-5); largest logit difference in window 0: %.1e\n",
      (long long)eval_windows, (long long)width, heed_loss, torch_loss, std::exp(heed_loss), relative,
      relative <= 1e-5 ? "within" : "NOT within", logit_diff);
  ok = ok && relative <= 1e-5;

  // 3. a ragged batch
  const index_t batch = std::min<index_t>(8, prompts);
  const std::vector<Ids> batch_prompts(prompt_list.begin(), prompt_list.begin() + batch);
  const auto together = greedy_batch(model, batch_prompts, steps);
  index_t same = 0;
  for (index_t b = 0; b < batch; ++b) same += together[std::size_t(b)] == heed_tokens[std::size_t(b)];
  std::printf(
      "\n3. %lld prompts of %zu to %zu characters generated together: %lld of %lld the same as alone\n",
      (long long)batch,
      std::min_element(batch_prompts.begin(), batch_prompts.end(), [](auto& a, auto& b) { return a.size() < b.size(); })
          ->size(),
      std::max_element(batch_prompts.begin(), batch_prompts.end(), [](auto& a, auto& b) { return a.size() < b.size(); })
          ->size(),
      (long long)same, (long long)batch);
  ok = ok && same == batch;

  // 4. bfloat16
  const auto model16 = CharLM<heed::bfloat16>::from_file(data / "char_lm.safetensors");
  index_t agree_full = 0, agree_tokens = 0;
  for (index_t p = 0; p < prompts; ++p) {
    const Ids got = greedy(model16, prompt_list[std::size_t(p)], steps);
    index_t s = 0;
    while (s < steps && got[std::size_t(s)] == heed_tokens[std::size_t(p)][std::size_t(s)]) ++s;
    agree_tokens += s;
    agree_full += s == steps;
  }
  const double loss16 = mean_loss(window_losses(model16, windows, eval_windows), width);
  std::printf(
      "\n4. bfloat16 weights, activations and cache (%.2f MB): held-out loss %.6f (%+.3f%% perplexity against "
      "float); %lld of %lld prompts as in float, %.1f%% of the characters before the first difference\n",
      double(model16.weight_bytes()) / 1e6, loss16, 100.0 * (std::exp(loss16 - heed_loss) - 1.0), (long long)agree_full,
      (long long)prompts, 100.0 * double(agree_tokens) / double(prompts * steps));

  // 5. sampling
  const Ids sampled = sample(model, prompt_list[0], steps, 0.8, 8, 42);
  const bool repeats = sample(model, prompt_list[0], steps, 0.8, 8, 42) == sampled;
  std::printf("\n5. Sampled (temperature 0.8, top-k 8, seed 42): \"%s\" -> \"%s\"\n   the same seed again: %s\n",
              printable(model.decode(prompt_list[0])).c_str(), printable(model.decode(sampled)).c_str(),
              repeats ? "the same text" : "A DIFFERENT TEXT");
  ok = ok && repeats;

  // 6. speed
  if (timing) {
    const Ids prompt = model.encode("The best way to predict the future is ");  // train_char_lm.py --speed's
    const fs::path torch_file = data / "char_lm_pytorch_speed.txt";
    std::printf("\n6. Greedy generation with the cache, tokens/s (after the prompt; best of 3 x 128 steps):\n");
    for (const int threads : {1, 2}) {
      heed::set_num_threads(threads);
      for (const index_t cached : {static_cast<index_t>(prompt.size()), index_t(1024)}) {
        const double rate = tokens_per_second(model, prompt, cached, 128),
                     torch = pytorch_speed(torch_file, threads, cached);
        std::printf("  %d core%s, %4lld cached: heed %7.1f", threads, threads > 1 ? "s" : " ", (long long)cached, rate);
        if (torch > 0)
          std::printf(", PyTorch %s %6.1f: %.1fx\n", "1.13", torch, rate / torch);
        else
          std::printf(" (no PyTorch figure in %s)\n", torch_file.filename().string().c_str());
      }
    }
    heed::set_num_threads(1);
    const double step = 1.0 / tokens_per_second(model, prompt, 1024, 128);
    const double cache_bytes = double(c.layers) * 2.0 * double(c.kv_heads) * 1024.0 * double(c.dim / c.heads) * 4.0;
    const double bytes = double(model.weight_bytes()) + cache_bytes;
    const double copy = copy_bandwidth(), read = read_bandwidth(static_cast<std::size_t>(bytes));
    std::printf(
        "  one core at 1024 cached: %.3f ms a step, which reads the weights (%.1f MB) and the cache (%.1f MB).\n"
        "  At the copy bandwidth (64 MiB, %.1f GB/s) that takes %.3f ms: the step is %.2fx that bound;\n"
        "  reading %.1f MB in one pass (it fits the L3 cache: %.1f GB/s) takes %.3f ms: %.2fx\n",
        1e3 * step, double(model.weight_bytes()) / 1e6, cache_bytes / 1e6, copy / 1e9, 1e3 * bytes / copy,
        step * copy / bytes, bytes / 1e6, read / 1e9, 1e3 * bytes / read, step * read / bytes);
    heed::set_num_threads(0);
  }

  // 7. bad input
  std::printf("\n7. Bad input:\n");
  ok = expect_error("a prompt with a tab", [&] { (void)model.encode("tab\there"); }) && ok;
  ok = expect_error("a prompt longer than the context",
                    [&] {
                      (void)model(heed::Tensor<std::int32_t, 2>({1, c.context_length + 1}));
                    }) &&
       ok;
  ok = expect_error("a generation past the cache's capacity",
                    [&] {
                      auto cache = model.make_cache(1, 4);
                      (void)model(as_batch({1, 2, 3}), &cache, true);
                      (void)model(as_batch({4, 5}), &cache, true);
                    }) &&
       ok;

  if (!ok) {
    std::printf("\nVerdict: FAILED (a check above did not hold)\n");
    return 1;
  }
  if (full_matches == prompts)
    std::printf(
        "\nVerdict: heed generates what PyTorch generates (every prompt token for token; the same held-out "
        "loss)\n");
  else
    std::printf(
        "\nVerdict: heed generates what PyTorch generates (%lld of %lld prompts token for token, every other "
        "divergence a near tie; the same held-out loss)\n",
        (long long)full_matches, (long long)prompts);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "demo_generate: %s\n", e.what());
  return 1;
}
