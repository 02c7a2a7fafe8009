// nn::KVCache with torch's MultiheadAttention (heed/nn/kv_cache.hpp): a sequence fed through the
// cache (a prompt, then token by token) gives the full causal output row by row; rows of one
// batch with different lengths (a right-padded prefill truncated per row, or left padding with a
// key_padding_mask) each give what they give alone; a full cache refuses, unchanged; a cache of
// another module is named in the error. The steps past 512 keys run on the driver's decode path.
#include <gtest/gtest.h>

#include <vector>

#include "heed/core/cast.hpp"
#include "heed/core/random.hpp"
#include "heed/nn/multihead_attention.hpp"
#include "support/compare.hpp"

namespace {

using heed::index_t;
using heed::Tensor;
using heed::nn::KVCache;
using heed::nn::MultiheadAttention;

constexpr index_t E = 32, H = 4;

// dst[:, begin:begin + L] = src [B, L, E]
template <class T>
void put_rows(Tensor<T, 3>& dst, index_t begin, const Tensor<T, 3>& src) {
  for (index_t b = 0; b < src.size(0); ++b)
    for (index_t i = 0; i < src.size(1); ++i)
      for (index_t c = 0; c < src.size(2); ++c) dst(b, begin + i, c) = src(b, i, c);
}

template <class T>
Tensor<T, 3> rows(const Tensor<T, 3>& x, index_t begin, index_t end) {
  return Tensor<T, 3>(x.view().slice(1, begin, end));
}

// The sequence x [B, L, E] through `mha` with a cache: `prompt` positions at once, then one
// at a time. Returns the outputs [B, L, E].
template <class T>
Tensor<T, 3> through_cache(const MultiheadAttention<T>& mha, const Tensor<T, 3>& x, index_t prompt, KVCache<T>& cache) {
  const index_t B = x.size(0), L = x.size(1);
  Tensor<T, 3> out({B, L, E});
  for (index_t begin = 0; begin < L;) {
    const index_t end = begin == 0 ? prompt : begin + 1;
    const auto part = rows(x, begin, end);
    const auto y = mha(part, part, part, {.need_weights = false, .cache = &cache}).output;
    put_rows(out, begin, y);
    begin = end;
  }
  return out;
}

TEST(KVCache, TokenByTokenEqualsTheFullCausalOutput) {
  const MultiheadAttention<float> mha({.embed_dim = E, .num_heads = H, .seed = 3});
  const index_t L = 600;  // past 512 keys the steps take the decode path
  const auto x = heed::randn<float>({2, L, E}, 1);
  const auto whole = mha(x, x, x, {.need_weights = false, .is_causal = true}).output;
  auto cache = mha.make_cache({.batch = 2, .max_len = L});
  EXPECT_EQ(cache.capacity(), L);
  const auto steps = through_cache(mha, x, 37, cache);
  EXPECT_EQ(cache.length(0), L);
  EXPECT_EQ(cache.length(1), L);
  EXPECT_TRUE(heed::test::all_close(steps, whole, {1e-5, 1e-6}));
  // the cache holds the projected keys and values, in the module's layout
  EXPECT_EQ(cache.keys().shape(), (heed::Shape<4>{2, H, L, E / H}));
  // reset: the same sequence again gives the same outputs
  cache.reset();
  EXPECT_EQ(cache.max_length(), 0);
  EXPECT_TRUE(heed::test::all_close(through_cache(mha, x, 5, cache), whole, {1e-5, 1e-6}));
}

TEST(KVCache, WorksInDoubleAndThroughTheResidualForm) {
  const MultiheadAttention<double> mha({.embed_dim = E, .num_heads = H, .seed = 4});
  const auto x = heed::randn<double>({1, 20, E}, 2);
  const auto whole = mha(x, x, x, {.need_weights = false, .is_causal = true}).output;
  auto cache = mha.make_cache({.batch = 1, .max_len = 32});
  EXPECT_TRUE(heed::test::all_close(through_cache(mha, x, 8, cache), whole, {1e-12, 1e-13}));
  // add_self_attention (the encoder layer's form): out = skip + attention, with the cache
  KVCache<double> again = mha.make_cache({.batch = 1, .max_len = 32});
  for (index_t i = 0; i < 20; ++i) {
    const auto token = rows(x, i, i + 1);
    Tensor<double, 3> out({1, 1, E});
    mha.add_self_attention(token, token.view(), out.view(), {.cache = &again});
    for (index_t c = 0; c < E; ++c) EXPECT_NEAR(out(0, 0, c), x(0, i, c) + whole(0, i, c), 1e-12);
  }
}

// Two prompts of lengths 9 and 4, prefilled right-padded to 9; row 1 is truncated to 4; then
// 6 steps each. Every row equals its own sequence run alone.
TEST(KVCache, RowsOfDifferentLengthsEachMatchTheirOwnSequence) {
  const MultiheadAttention<float> mha({.embed_dim = E, .num_heads = H, .seed = 5});
  const index_t lengths[] = {9, 4}, steps = 6;
  const auto prompts = heed::randn<float>({2, 9, E}, 6), tokens = heed::randn<float>({2, steps, E}, 7);
  auto cache = mha.make_cache({.batch = 2, .max_len = 16});
  const auto first = mha(prompts, prompts, prompts, {.need_weights = false, .cache = &cache}).output;
  cache.truncate_row(1, lengths[1]);
  EXPECT_EQ(cache.length(0), 9);
  EXPECT_EQ(cache.length(1), 4);
  Tensor<float, 3> stepped({2, steps, E});
  for (index_t s = 0; s < steps; ++s) {
    const auto token = rows(tokens, s, s + 1);
    const auto y = mha(token, token, token, {.need_weights = false, .cache = &cache}).output;
    put_rows(stepped, s, y);
  }
  for (index_t b = 0; b < 2; ++b) {
    SCOPED_TRACE(b);
    Tensor<float, 3> alone({1, lengths[b] + steps, E});
    for (index_t i = 0; i < lengths[b]; ++i)
      for (index_t c = 0; c < E; ++c) alone(0, i, c) = prompts(b, i, c);
    for (index_t s = 0; s < steps; ++s)
      for (index_t c = 0; c < E; ++c) alone(0, lengths[b] + s, c) = tokens(b, s, c);
    const auto expected = mha(alone, alone, alone, {.need_weights = false, .is_causal = true}).output;
    for (index_t i = 0; i < lengths[b]; ++i)
      for (index_t c = 0; c < E; ++c) EXPECT_NEAR(first(b, i, c), expected(0, i, c), 1e-5);
    for (index_t s = 0; s < steps; ++s)
      for (index_t c = 0; c < E; ++c) EXPECT_NEAR(stepped(b, s, c), expected(0, lengths[b] + s, c), 1e-5);
  }
}

// Row 1's prompt is left-padded by 3; the key_padding_mask over every cached key hides them.
TEST(KVCache, LeftPaddingWithAKeyPaddingMask) {
  const MultiheadAttention<float> mha({.embed_dim = E, .num_heads = H, .seed = 8});
  const index_t P = 8, pad = 3, steps = 4;
  const auto x = heed::randn<float>({2, P + steps, E}, 9);
  auto cache = mha.make_cache({.batch = 2, .max_len = P + steps});
  Tensor<bool, 2> ignore({2, P + steps});
  for (index_t j = 0; j < pad; ++j) ignore(1, j) = true;
  Tensor<float, 3> out({2, P + steps, E});
  for (index_t begin = 0; begin < P + steps;) {
    const index_t end = begin == 0 ? P : begin + 1;
    const auto part = rows(x, begin, end);
    const Tensor<bool, 2> seen(ignore.view().slice(1, 0, end));
    const auto y = mha(part, part, part, {.key_padding_mask = seen, .need_weights = false, .cache = &cache}).output;
    put_rows(out, begin, y);
    begin = end;
  }
  const auto row1 = Tensor<float, 3>(x.view().slice(0, 1, 2).slice(1, pad, P + steps));
  const auto expected = mha(row1, row1, row1, {.need_weights = false, .is_causal = true}).output;
  for (index_t i = pad; i < P + steps; ++i)
    for (index_t c = 0; c < E; ++c) EXPECT_NEAR(out(1, i, c), expected(0, i - pad, c), 1e-5);
}

TEST(KVCache, SixteenBitCacheFollowsTheFullCausalOutput) {
  const MultiheadAttention<float> reference({.embed_dim = E, .num_heads = H, .seed = 10});
  MultiheadAttention<heed::bfloat16> mha({.embed_dim = E, .num_heads = H, .seed = 10});
  const auto x = heed::cast<heed::bfloat16>(heed::randn<float>({1, 530, E}, 11));
  const auto whole = heed::cast<float>(mha(x, x, x, {.need_weights = false, .is_causal = true}).output);
  auto cache = mha.make_cache({.batch = 1, .max_len = 530});
  const auto steps = heed::cast<float>(through_cache(mha, x, 500, cache));
  // both round each output once to bfloat16 (u = 2^-8); the paths differ in float order only
  EXPECT_LE(heed::test::max_abs_diff(steps, whole), 2 * 0x1p-8 * 2.0);
}

TEST(KVCache, AFullCacheRefusesAndStaysUnchanged) {
  const MultiheadAttention<float> mha({.embed_dim = E, .num_heads = H, .seed = 12});
  auto cache = mha.make_cache({.batch = 1, .max_len = 10});
  const auto x = heed::randn<float>({1, 8, E}, 13), more = heed::randn<float>({1, 3, E}, 14);
  (void)mha(x, x, x, {.need_weights = false, .cache = &cache});
  const Tensor<float, 4> keys(cache.keys());
  try {
    (void)mha(more, more, more, {.need_weights = false, .cache = &cache});
    FAIL() << "no ShapeError";
  } catch (const heed::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("exceed the capacity 10"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cache.max_length(), 8);
  EXPECT_TRUE(heed::test::all_close(Tensor<float, 4>(cache.keys()), keys, {0, 0}));
  EXPECT_THROW(cache.truncate_row(0, 9), heed::ShapeError);  // longer than it is
  EXPECT_THROW(cache.truncate_row(1, 0), heed::ShapeError);  // no such row
}

TEST(KVCache, ACacheThatDoesNotFitTheModuleIsNamed) {
  const MultiheadAttention<float> mha({.embed_dim = E, .num_heads = H});
  const auto x = heed::randn<float>({2, 3, E}, 15);
  const auto expect_error = [&](KVCache<float> cache, const char* text) {
    try {
      (void)mha(x, x, x, {.need_weights = false, .cache = &cache});
      FAIL() << "no ShapeError for " << text;
    } catch (const heed::ShapeError& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  expect_error(mha.make_cache({.batch = 1, .max_len = 8}), "[1, 4, 8], this call needs [2, 4, 8]");
  expect_error(KVCache<float>(2, 2, 8, 8), "[2, 2, 8], this call needs [2, 4, 8]");
  expect_error(KVCache<float>(2, 4, 4, 8), "[2, 4, 4], this call needs [2, 4, 8]");
  auto cache = mha.make_cache({.batch = 2, .max_len = 8});
  Tensor<bool, 3> attn({1, 3, 3});
  EXPECT_THROW((void)mha(x, x, x, {.attn_mask = attn, .cache = &cache}), heed::ShapeError);
  Tensor<bool, 2> short_pad({2, 2});
  EXPECT_THROW((void)mha(x, x, x, {.key_padding_mask = short_pad, .cache = &cache}), heed::ShapeError);
  EXPECT_EQ(cache.max_length(), 0);  // nothing appended by the refused calls
  const MultiheadAttention<float> biased({.embed_dim = E, .num_heads = H, .add_bias_kv = true});
  auto other = biased.make_cache({.batch = 2, .max_len = 8});
  EXPECT_THROW((void)biased(x, x, x, {.cache = &other}), heed::ShapeError);
  EXPECT_THROW(KVCache<float>(0, 1, 1, 1), heed::ShapeError);
}

}  // namespace
