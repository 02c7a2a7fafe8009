// torch.nn.TransformerDecoderLayer / TransformerDecoder against PyTorch 1.13 (fixture
// "transformer_decoder": post-norm relu with a causal tgt_mask and memory padding, pre-norm gelu
// with target padding and a bool memory_mask, two layers with a final norm), tgt_is_causal, and
// the decoder cache: a prompt and then one token per call give the full causal output row by row,
// the memory projected once.
#include <gtest/gtest.h>

#include <string>

#include "heed/core/random.hpp"
#include "heed/nn/transformer_decoder.hpp"
#include "heed/nn/transformer_decoder_layer.hpp"
#include "support/compare.hpp"
#include "support/golden.hpp"

namespace {

using heed::index_t;
using heed::Tensor;
using heed::TensorView;
using heed::nn::Activation;
using heed::nn::TransformerDecoder;
using heed::nn::TransformerDecoderLayer;

constexpr heed::test::Tolerance float_tol{1e-5, 1e-6};
constexpr index_t E = 24, H = 3, F = 40, L = 9, S = 13;

struct Fixture {
  heed::io::SafeTensors fx = heed::test::golden("transformer_decoder");
  Tensor<float, 3> tgt = fx.get<float, 3>("tgt"), memory = fx.get<float, 3>("memory");
  Tensor<bool, 2> tgt_pad = fx.get<bool, 2>("tgt_pad"), mem_pad = fx.get<bool, 2>("mem_pad");
  Tensor<bool, 2> mem_mask = fx.get<bool, 2>("mem_mask");
  Tensor<bool, 3> causal{{1, L, L}};  // True = NOT allowed, above the diagonal
  Fixture() {
    for (index_t i = 0; i < L; ++i)
      for (index_t j = i + 1; j < L; ++j) causal(0, i, j) = true;
  }
  [[nodiscard]] TensorView<const bool, 3> memory_mask() const {
    return TensorView<const bool, 3>(mem_mask.data(), {1, L, S}, {L * S, S, 1});
  }
};

TEST(TransformerDecoder, LayersMatchPyTorch) {
  const Fixture f;
  TransformerDecoderLayer<float> post({.d_model = E, .nhead = H, .dim_feedforward = F});
  post.load(f.fx, "post.module.", {.strict = true});
  EXPECT_TRUE(heed::test::all_close(post(f.tgt, f.memory, {.tgt_mask = f.causal, .memory_key_padding_mask = f.mem_pad}),
                                    f.fx.get<float, 3>("post.output"), float_tol));
  // tgt_is_causal is the same mask
  EXPECT_TRUE(
      heed::test::all_close(post(f.tgt, f.memory, {.memory_key_padding_mask = f.mem_pad, .tgt_is_causal = true}),
                            f.fx.get<float, 3>("post.output"), float_tol));

  TransformerDecoderLayer<float> pre(
      {.d_model = E, .nhead = H, .dim_feedforward = F, .activation = Activation::gelu, .norm_first = true});
  pre.load(f.fx, "pre.module.", {.strict = true});
  EXPECT_TRUE(
      heed::test::all_close(pre(f.tgt, f.memory, {.memory_mask = f.memory_mask(), .tgt_key_padding_mask = f.tgt_pad}),
                            f.fx.get<float, 3>("pre.output"), float_tol));
}

TEST(TransformerDecoder, StackWithFinalNormMatchesPyTorch) {
  const Fixture f;
  TransformerDecoder<float> dec({.d_model = E, .nhead = H, .dim_feedforward = F, .num_layers = 2, .final_norm = true});
  dec.load(f.fx, "dec.module.", {.strict = true});
  EXPECT_TRUE(heed::test::all_close(dec(f.tgt, f.memory, {.tgt_mask = f.causal, .memory_key_padding_mask = f.mem_pad}),
                                    f.fx.get<float, 3>("dec.output"), float_tol));
}

TEST(TransformerDecoder, ACachedPromptAndStepsGiveTheCausalOutput) {
  const Fixture f;
  TransformerDecoder<float> dec({.d_model = E, .nhead = H, .dim_feedforward = F, .num_layers = 2, .final_norm = true});
  dec.load(f.fx, "dec.module.");
  const auto expected = f.fx.get<float, 3>("dec.output");
  auto cache = dec.make_cache({.batch = 2, .max_len = L});
  EXPECT_EQ(cache.layers(), 2);
  Tensor<float, 3> stepped({2, L, E});
  for (index_t begin = 0; begin < L;) {
    const index_t end = begin == 0 ? 3 : begin + 1;
    const Tensor<float, 3> part(f.tgt.view().slice(1, begin, end));
    const auto y = dec(part, f.memory, {.memory_key_padding_mask = f.mem_pad, .cache = &cache});
    for (index_t b = 0; b < 2; ++b)
      for (index_t i = begin; i < end; ++i)
        for (index_t c = 0; c < E; ++c) stepped(b, i, c) = y(b, i - begin, c);
    begin = end;
  }
  EXPECT_TRUE(heed::test::all_close(stepped, expected, float_tol));
  EXPECT_EQ(cache.length(0), L);
  EXPECT_TRUE(cache.memory(0).has_value());
  EXPECT_TRUE(cache.memory(1).has_value());

  // a pre-norm layer through its own cache, one token at a time
  TransformerDecoderLayer<float> pre(
      {.d_model = E, .nhead = H, .dim_feedforward = F, .activation = Activation::gelu, .norm_first = true});
  pre.load(f.fx, "pre.module.");
  const auto whole = pre(f.tgt, f.memory, {.tgt_is_causal = true});
  auto one = pre.make_cache({.batch = 2, .max_len = L});
  for (index_t i = 0; i < L; ++i) {
    const Tensor<float, 3> token(f.tgt.view().slice(1, i, i + 1));
    const auto y = pre(token, f.memory, {.cache = &one});
    for (index_t b = 0; b < 2; ++b)
      for (index_t c = 0; c < E; ++c) EXPECT_NEAR(y(b, 0, c), whole(b, i, c), 1e-5);
  }
}

TEST(TransformerDecoder, BadInputsAndCachesAreShapeErrors) {
  const TransformerDecoder<float> dec({.d_model = E, .nhead = H, .dim_feedforward = F, .num_layers = 2});
  const auto tgt = heed::randn<float>({2, 3, E}, 1), memory = heed::randn<float>({2, 5, E}, 2);
  EXPECT_THROW((void)dec(tgt, heed::randn<float>({2, 5, E + 1}, 3)), heed::ShapeError);
  EXPECT_THROW((void)dec(tgt, heed::randn<float>({1, 5, E}, 3)), heed::ShapeError);
  const TransformerDecoderLayer<float> layer({.d_model = E, .nhead = H, .dim_feedforward = F});
  auto wrong = layer.make_cache({.batch = 2, .max_len = 8});  // one layer, the stack has two
  try {
    (void)dec(tgt, memory, {.cache = &wrong});
    FAIL();
  } catch (const heed::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[1, 2, 3, 8], this call needs [2, 2, 3, 8]"), std::string::npos) << e.what();
  }
  auto cache = dec.make_cache({.batch = 2, .max_len = 8});
  (void)dec(tgt, memory, {.cache = &cache});
  EXPECT_THROW((void)dec(tgt, heed::randn<float>({2, 6, E}, 4), {.cache = &cache}), heed::ShapeError);  // new memory
  EXPECT_THROW((void)dec(tgt, memory, {.tgt_mask = Tensor<bool, 3>({1, 3, 3}), .cache = &cache}), heed::ShapeError);
  EXPECT_EQ(cache.max_length(), 3);
  EXPECT_THROW((void)dec(heed::randn<float>({2, 6, E}, 5), memory, {.cache = &cache}), heed::ShapeError);  // 3 + 6 > 8
  EXPECT_EQ(cache.max_length(), 3);
  cache.reset();
  EXPECT_FALSE(cache.memory(0).has_value());
  (void)dec(tgt, heed::randn<float>({2, 6, E}, 4), {.cache = &cache});  // a new memory after reset
  EXPECT_THROW(TransformerDecoder<float>({.d_model = E, .nhead = H, .num_layers = 0}), heed::ShapeError);
}

}  // namespace
