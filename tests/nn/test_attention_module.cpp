// nn::Attention (Llama-style decoder self-attention: grouped heads, rotary positions, a KV cache)
// against PyTorch: the fixture "llama_attention" (tests/golden/generate.py's LlamaAttention, the
// Hugging Face computation written out) with 8 query heads over 2 and over 1 key/value heads;
// the cache fed a prompt and then token by token gives the same rows; rows of one batch with
// different lengths rotate at their own positions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <utility>

#include "heed/core/cast.hpp"
#include "heed/core/random.hpp"
#include "heed/nn/attention.hpp"
#include "support/compare.hpp"
#include "support/golden.hpp"

namespace {

using heed::index_t;
using heed::Tensor;
using heed::nn::Attention;
using heed::nn::AttentionModuleOptions;

constexpr heed::test::Tolerance float_tol{1e-5, 1e-6};

AttentionModuleOptions config_of(const std::string& name) {
  if (name == "gqa") return {.embed_dim = 64, .num_heads = 8, .num_kv_heads = 2};
  return {.embed_dim = 64, .num_heads = 8, .num_kv_heads = 1, .qkv_bias = true, .rotary = {{.base = 500000.0}}};
}

Tensor<float, 3> rows(const Tensor<float, 3>& x, index_t begin, index_t end) {
  return Tensor<float, 3>(x.view().slice(1, begin, end));
}

TEST(AttentionModule, MatchesLlamaAttentionWithGroupedAndSingleKeyValueHeads) {
  const auto fx = heed::test::golden("llama_attention");
  for (const std::string name : {"gqa", "mqa"}) {
    SCOPED_TRACE(name);
    Attention<float> layer(config_of(name));
    layer.load(fx, name + ".module.", {.strict = true});
    const auto x = fx.get<float, 3>(name + ".x");
    const auto expected = fx.get<float, 3>(name + ".output");
    EXPECT_TRUE(heed::test::all_close(layer(x), expected, float_tol));

    // a prompt of 4, then one token at a time, through the cache
    auto cache = layer.make_cache({.batch = 2, .max_len = 11});
    EXPECT_EQ(cache.kv_heads(), config_of(name).num_kv_heads);
    Tensor<float, 3> stepped({2, 11, 64});
    for (index_t begin = 0; begin < 11;) {
      const index_t end = begin == 0 ? 4 : begin + 1;
      const auto y = layer(rows(x, begin, end), {.cache = &cache});
      for (index_t b = 0; b < 2; ++b)
        for (index_t i = begin; i < end; ++i)
          for (index_t c = 0; c < 64; ++c) stepped(b, i, c) = y(b, i - begin, c);
      begin = end;
    }
    EXPECT_TRUE(heed::test::all_close(stepped, expected, float_tol));
  }
}

// Row 1's prompt is 3 tokens shorter: truncated after the prefill, its next tokens rotate at
// positions 5, 6, ... (row 0's at 8, 9, ...), and each row equals its own sequence alone.
TEST(AttentionModule, RowsOfACacheRotateAtTheirOwnPositions) {
  const Attention<float> layer({.embed_dim = 32, .num_heads = 4, .num_kv_heads = 2, .seed = 3});
  const index_t lengths[] = {8, 5}, steps = 4;
  const auto prompts = heed::randn<float>({2, 8, 32}, 1), tokens = heed::randn<float>({2, steps, 32}, 2);
  auto cache = layer.make_cache({.batch = 2, .max_len = 12});
  (void)layer(prompts, {.cache = &cache});
  cache.truncate_row(1, lengths[1]);
  Tensor<float, 3> stepped({2, steps, 32});
  for (index_t s = 0; s < steps; ++s) {
    const auto y = layer(Tensor<float, 3>(tokens.view().slice(1, s, s + 1)), {.cache = &cache});
    for (index_t b = 0; b < 2; ++b)
      for (index_t c = 0; c < 32; ++c) stepped(b, s, c) = y(b, 0, c);
  }
  for (index_t b = 0; b < 2; ++b) {
    Tensor<float, 3> alone({1, lengths[b] + steps, 32});
    for (index_t i = 0; i < lengths[b]; ++i)
      for (index_t c = 0; c < 32; ++c) alone(0, i, c) = prompts(b, i, c);
    for (index_t s = 0; s < steps; ++s)
      for (index_t c = 0; c < 32; ++c) alone(0, lengths[b] + s, c) = tokens(b, s, c);
    const auto expected = layer(alone);
    for (index_t s = 0; s < steps; ++s)
      for (index_t c = 0; c < 32; ++c) EXPECT_NEAR(stepped(b, s, c), expected(0, lengths[b] + s, c), 1e-5) << b;
  }
}

TEST(AttentionModule, WithoutRotaryAndInBfloat16) {
  const auto fx = heed::test::golden("llama_attention");
  Attention<float> plain({.embed_dim = 64, .num_heads = 8, .num_kv_heads = 2, .rotary = std::nullopt});
  plain.load(fx, "gqa.module.");
  const auto x = fx.get<float, 3>("gqa.x");
  EXPECT_GT(heed::test::max_abs_diff(plain(x), fx.get<float, 3>("gqa.output")), 1e-3);  // positions matter
  // bfloat16 weights and activations against float with the same rounded weights: within 4u of max|y|
  Attention<float> rounded(config_of("gqa"));
  Attention<heed::bfloat16> half_width(config_of("gqa"));
  half_width.load(fx, "gqa.module.");
  rounded.load(fx, "gqa.module.");
  const auto xb = heed::cast<heed::bfloat16>(x);
  const auto want = rounded(heed::cast<float>(xb));
  const auto got = heed::cast<float>(half_width(xb));
  float top = 0;
  for (index_t i = 0; i < want.numel(); ++i) top = std::max(top, std::abs(want.data()[i]));
  EXPECT_LE(heed::test::max_abs_diff(got, want), 4 * 0x1p-8 * top) << top;
}

TEST(AttentionModule, BadConfigurationsAndCachesAreShapeErrors) {
  EXPECT_THROW(Attention<float>({.embed_dim = 64, .num_heads = 8, .num_kv_heads = 3}), heed::ShapeError);
  EXPECT_THROW(Attention<float>({.embed_dim = 64, .num_heads = 8, .rotary = {{.dim = 7}}}), heed::ShapeError);
  EXPECT_THROW(Attention<float>({.embed_dim = 64, .num_heads = 8, .rotary = {{.dim = 10}}}), heed::ShapeError);
  const Attention<float> layer({.embed_dim = 32, .num_heads = 4, .num_kv_heads = 2});
  EXPECT_EQ(Attention<float>({.embed_dim = 32, .num_heads = 4}).options().num_kv_heads, 4);  // 0: num_heads
  const auto x = heed::randn<float>({2, 3, 32}, 1);
  heed::nn::KVCache<float> wrong(2, 4, 8, 16);  // 4 kv heads: a MultiheadAttention's cache
  try {
    (void)layer(x, {.cache = &wrong});
    FAIL();
  } catch (const heed::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 4, 8], this call needs [2, 2, 8]"), std::string::npos) << e.what();
  }
  auto cache = layer.make_cache({.batch = 2, .max_len = 4});
  (void)layer(x, {.cache = &cache});
  EXPECT_THROW((void)layer(x, {.cache = &cache}), heed::ShapeError);  // 3 + 3 > 4
  EXPECT_EQ(cache.max_length(), 3);
  Tensor<bool, 2> pad({2, 5});
  EXPECT_THROW((void)layer(x, {.key_padding_mask = pad}), heed::ShapeError);
}

// the former names stay one release, deprecated
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
static_assert(std::is_same_v<heed::nn::AttentionConfig, AttentionModuleOptions>);
static_assert(
    std::is_same_v<decltype(std::declval<const Attention<float>&>().config()), const AttentionModuleOptions&>);
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

}  // namespace
