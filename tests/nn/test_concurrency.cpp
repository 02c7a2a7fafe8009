// A loaded module's operator() is const and may be called from many threads at once (a server
// calling one model from its request threads): each result must equal, bit for bit, the result
// of the same call made alone. The modules keep no state between calls; their scratch is
// thread_local and grown to the largest call a thread made, so memory is bounded by the
// largest shape, not by the number of calls. The preset `tsan` runs this file under
// ThreadSanitizer (scripts/test).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "heed/core/random.hpp"
#include "heed/nn/attention_classifier.hpp"
#include "heed/nn/multihead_attention.hpp"
#include "heed/nn/transformer_encoder.hpp"
#include "heed/nn/vision/cbam.hpp"

namespace {

using heed::index_t;
using heed::Tensor;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool under_sanitizer = true;  // their shadow memory and quarantine make RSS meaningless
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool under_sanitizer = true;
#else
constexpr bool under_sanitizer = false;
#endif
#else
constexpr bool under_sanitizer = false;
#endif

// Every output of one call, one after the other, as the bits to compare.
using Outputs = std::vector<float>;

template <class Tensors>
void append(Outputs& out, const Tensors& t) {
  out.insert(out.end(), t.data(), t.data() + t.numel());
}

// Calls run(i) `calls` times from each of `threads` threads at once, each thread walking the
// inputs from its own starting point, and counts the results that differ from expected[i].
int mismatches_under_load(const std::vector<Outputs>& expected, const std::function<Outputs(std::size_t)>& run,
                          int threads = 8, int calls = 200) {
  std::atomic<int> mismatches{0};
  std::atomic<int> errors{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int c = 0; c < calls; ++c) {
        const std::size_t i = static_cast<std::size_t>(t * 3 + c) % expected.size();
        try {
          const Outputs got = run(i);
          if (got.size() != expected[i].size() ||
              std::memcmp(got.data(), expected[i].data(), got.size() * sizeof(float)) != 0)
            ++mismatches;
        } catch (...) {
          ++errors;
        }
      }
    });
  for (auto& thread : pool) thread.join();
  EXPECT_EQ(errors.load(), 0);
  return mismatches.load();
}

std::vector<Outputs> alone(std::size_t n, const std::function<Outputs(std::size_t)>& run) {
  std::vector<Outputs> expected;
  for (std::size_t i = 0; i < n; ++i) expected.push_back(run(i));
  return expected;
}

TEST(Concurrency, MultiheadAttentionFromEightThreadsIsBitForBit) {
  const heed::nn::MultiheadAttention<float> mha({.embed_dim = 32, .num_heads = 4, .seed = 7});
  std::vector<Tensor<float, 3>> inputs;
  for (const index_t length : {3, 9, 16, 21}) inputs.push_back(heed::randn<float>({2, length, 32}, 100 + length));
  Tensor<bool, 2> padding({2, 21});
  for (index_t t = 15; t < 21; ++t) padding(1, t) = true;
  const auto run = [&](std::size_t i) {
    const auto& x = inputs[i % inputs.size()];
    heed::nn::MultiheadAttentionCall<float> call{.is_causal = i % 2 == 1};
    if (i == inputs.size() - 1) call.key_padding_mask = padding;
    const auto result = mha(x, x, x, call);
    Outputs out;
    append(out, result.output);
    append(out, result.weights);
    return out;
  };
  const auto expected = alone(inputs.size(), run);
  EXPECT_EQ(mismatches_under_load(expected, run), 0);
}

TEST(Concurrency, TransformerEncoderFromEightThreadsIsBitForBit) {
  const heed::nn::TransformerEncoder<float> encoder(
      {.d_model = 32, .nhead = 4, .dim_feedforward = 64, .num_layers = 2, .seed = 3});
  std::vector<Tensor<float, 3>> inputs;
  for (const index_t length : {5, 12, 30}) inputs.push_back(heed::randn<float>({2, length, 32}, 200 + length));
  const auto run = [&](std::size_t i) {
    Outputs out;
    append(out, encoder(inputs[i], {.is_causal = i == 1}));
    return out;
  };
  const auto expected = alone(inputs.size(), run);
  EXPECT_EQ(mismatches_under_load(expected, run), 0);
}

TEST(Concurrency, TrainedAttentionClassifierFromEightThreadsIsBitForBit) {
  const auto model = heed::nn::seed::AttentionClassifier<float>::from_file(
      std::filesystem::path(HEED_EXAMPLES_DATA_DIR) / "fortunes_classifier.safetensors");
  std::vector<Tensor<std::int64_t, 2>> inputs;
  for (const index_t length : {4, 17, 40}) {
    Tensor<std::int64_t, 2> ids({2, length});
    for (index_t t = 0; t < length; ++t) {
      ids(0, t) = 1 + (t * 7) % (model.options().vocab_size - 1);
      ids(1, t) = t < length / 2 ? 1 + (t * 13) % (model.options().vocab_size - 1) : 0;  // padded
    }
    inputs.push_back(ids);
  }
  const auto run = [&](std::size_t i) {
    const auto result = model(inputs[i]);
    Outputs out;
    append(out, result.logits);
    append(out, result.weights);
    return out;
  };
  const auto expected = alone(inputs.size(), run);
  EXPECT_EQ(mismatches_under_load(expected, run, 8, under_sanitizer ? 25 : 200), 0);
}

TEST(Concurrency, CbamFromEightThreadsIsBitForBit) {
  const heed::nn::CBAM<float> cbam({.channels = 32, .reduction = 8, .seed = 5});
  std::vector<Tensor<float, 4>> inputs;
  for (const index_t side : {4, 7, 12}) inputs.push_back(heed::randn<float>({2, 32, side, side}, 300 + side));
  const auto run = [&](std::size_t i) {
    Outputs out;
    append(out, cbam(inputs[i]));
    return out;
  };
  const auto expected = alone(inputs.size(), run);
  EXPECT_EQ(mismatches_under_load(expected, run), 0);
}

// Resident memory in bytes (Linux), or -1.
long long resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  long long pages = 0, resident = -1;
  if (!(statm >> pages >> resident)) return -1;
  return resident * 4096;
}

// 10,000 calls of varying shapes, from threads that come and go as a server's pool does: the
// memory after them is the memory after the first round, give or take a few MB.
TEST(Concurrency, MemoryStaysBoundedOverTenThousandCallsOfVaryingShapes) {
  if (under_sanitizer) GTEST_SKIP() << "a sanitizer's shadow memory makes RSS meaningless";
  if (resident_bytes() < 0) GTEST_SKIP() << "no /proc/self/statm";
  const heed::nn::MultiheadAttention<float> mha({.embed_dim = 32, .num_heads = 4, .seed = 11});
  const heed::nn::TransformerEncoder<float> encoder({.d_model = 32, .nhead = 4, .dim_feedforward = 64, .seed = 12});
  std::vector<Tensor<float, 3>> inputs;
  for (index_t length = 1; length <= 64; ++length) inputs.push_back(heed::randn<float>({1, length, 32}, 400 + length));
  const auto round = [&](int first_call, int calls) {
    std::vector<std::thread> pool;
    for (int t = 0; t < 4; ++t)
      pool.emplace_back([&, t] {
        for (int c = 0; c < calls / 4; ++c) {
          const auto& x = inputs[static_cast<std::size_t>(first_call + t * 17 + c * 5) % inputs.size()];
          if (c % 2 == 0) {
            (void)mha(x, x, x, {.need_weights = c % 4 == 0});
          } else {
            (void)encoder(x);
          }
        }
      });
    for (auto& thread : pool) thread.join();
  };
  round(0, 1000);  // every shape seen: the thread-local scratch and the allocator's pools warm
  const long long warm = resident_bytes();
  for (int r = 1; r <= 9; ++r) round(r * 1000, 1000);
  const long long after = resident_bytes();
  std::printf("resident after 1,000 calls %.1f MB, after 10,000 calls %.1f MB\n", static_cast<double>(warm) / 1e6,
              static_cast<double>(after) / 1e6);
  EXPECT_LT(after - warm, 8'000'000) << "memory grew by " << (after - warm) << " bytes over 9,000 calls";
}

}  // namespace
