// PyTorch's masks as PyTorch's modules take them (nn::TorchMask): rank 2 and 3, bool and floating
// point, against PyTorch 1.13 (fixture "torch_masks": a 2-layer encoder with a float [L, L] mask
// and a bool [B·H, L, L] one, a 2-layer decoder with generate_square_subsequent_mask and a float
// [B·H, L, S] memory_mask); the causal triangle run as a causal mask (its tiles skipped); errors
// that name the argument the caller passed and the shapes it takes.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "heed/core/cast.hpp"
#include "heed/core/random.hpp"
#include "heed/nn/multihead_attention.hpp"
#include "heed/nn/transformer_decoder.hpp"
#include "heed/nn/transformer_encoder.hpp"
#include "support/compare.hpp"
#include "support/golden.hpp"

namespace {

using heed::index_t;
using heed::Tensor;
using heed::test::all_close;
using namespace heed::nn;

constexpr heed::test::Tolerance tol{1e-5, 2e-6};
constexpr index_t E = 24, H = 3, F = 40, B = 2, L = 11, S = 7;

struct Fixture {
  heed::io::SafeTensors fx = heed::test::golden("torch_masks");
  Tensor<float, 3> x = fx.get<float, 3>("x"), memory = fx.get<float, 3>("memory");
  TransformerEncoder<float> enc{{.d_model = E, .nhead = H, .dim_feedforward = F, .num_layers = 2}};
  TransformerDecoder<float> dec{{.d_model = E, .nhead = H, .dim_feedforward = F, .num_layers = 2}};
  Fixture() {
    enc.load(fx, "enc.module.", {.strict = true});
    dec.load(fx, "dec.module.", {.strict = true});
  }
};

// The message of the ShapeError that f() throws ("" when it throws none).
template <class F>
std::string shape_error(F&& f) {
  try {
    f();
  } catch (const heed::ShapeError& e) {
    return e.what();
  }
  return "";
}

TEST(TorchMask, EncoderTakesAFloatMaskAndAPerHeadBoolMask) {
  const Fixture f;
  const auto float_mask = f.fx.get<float, 2>("float_mask");
  const auto by_float = f.enc(f.x, {.mask = float_mask});
  EXPECT_TRUE(all_close(by_float, f.fx.get<float, 3>("enc.output_float"), tol));
  EXPECT_TRUE(
      all_close(f.enc(f.x, {.mask = f.fx.get<bool, 3>("head_mask")}), f.fx.get<float, 3>("enc.output_heads"), tol));
  // The same values in double (float's values exactly) give the same bits.
  const auto as_double = heed::cast<double>(float_mask);
  EXPECT_TRUE(all_close(f.enc(f.x, {.mask = as_double}), by_float, {0, 0}));
}

TEST(TorchMask, DecoderTakesGenerateSquareSubsequentMaskAndAPerHeadFloatMemoryMask) {
  const Fixture f;
  const auto subsequent = f.fx.get<float, 2>("subsequent");
  const auto memory_mask = f.fx.get<float, 3>("memory_mask");
  const auto expected = f.fx.get<float, 3>("dec.output");
  EXPECT_TRUE(all_close(f.dec(f.x, f.memory, {.tgt_mask = subsequent, .memory_mask = memory_mask}), expected, tol));
  // tgt_is_causal and the older field (memory_bias) say the same
  EXPECT_TRUE(all_close(f.dec(f.x, f.memory, {.tgt_is_causal = true, .memory_bias = memory_mask}), expected, tol));
}

// A mask that is exactly the causal triangle runs as mask::Causal: its blocked tiles are skipped,
// as with is_causal (a float mask, a bias, would be added to every tile); one entry different
// and the float mask is a bias again.
TEST(TorchMask, TheCausalTriangleSkipsTiles) {
  constexpr index_t N = 300, D = 32;
  MultiheadAttention<float> mha({.embed_dim = D, .num_heads = 2, .seed = 3});
  const auto x = heed::randn<float>({1, N, D}, 4);
  Tensor<float, 2> subsequent({N, N}, 0.0f);
  Tensor<bool, 2> upper({N, N}, false);
  for (index_t i = 0; i < N; ++i)
    for (index_t j = i + 1; j < N; ++j) {
      subsequent(i, j) = -std::numeric_limits<float>::infinity();
      upper(i, j) = true;
    }
  heed::AttentionStats causal, by_float, by_bool, dense;
  const auto want = mha(x, x, x, {.need_weights = false, .is_causal = true, .stats = &causal}).output;
  const auto got_float = mha(x, x, x, {.attn_mask = subsequent, .need_weights = false, .stats = &by_float}).output;
  const auto got_bool = mha(x, x, x, {.attn_mask = upper, .need_weights = false, .stats = &by_bool}).output;
  EXPECT_GT(causal.blocked, 0);
  EXPECT_EQ(by_float.blocked, causal.blocked);
  EXPECT_EQ(by_bool.blocked, causal.blocked);
  EXPECT_TRUE(all_close(got_float, want, {0, 0}));
  EXPECT_TRUE(all_close(got_bool, want, {0, 0}));

  // no longer the triangle: a float mask is a bias again, added to every tile (none skipped)
  subsequent(N - 1, 0) = -std::numeric_limits<float>::infinity();
  const auto near = mha(x, x, x, {.attn_mask = subsequent, .need_weights = false, .stats = &dense}).output;
  EXPECT_EQ(dense.blocked, 0);
  EXPECT_FALSE(all_close(near, want, tol));  // the last row lost its first key
}

TEST(TorchMask, AMaskThatHidesNothingIsNoMask) {
  MultiheadAttention<float> mha({.embed_dim = 16, .num_heads = 4, .seed = 5});
  const auto x = heed::randn<float>({2, 9, 16}, 6);
  const Tensor<bool, 2> none({9, 9}, false);
  const Tensor<double, 3> zeros({1, 9, 9}, 0.0);
  const auto want = mha(x, x, x);
  EXPECT_TRUE(all_close(mha(x, x, x, {.attn_mask = none}).output, want.output, {0, 0}));
  EXPECT_TRUE(all_close(mha(x, x, x, {.attn_mask = zeros}).weights, want.weights, {0, 0}));
}

TEST(TorchMask, ErrorsNameTheCallersArgumentAndTheShapesItTakes) {
  const Fixture f;
  const Tensor<bool, 3> square4({1, 4, 4});
  EXPECT_EQ(shape_error([&] { (void)f.dec(f.x, f.memory, {.tgt_mask = square4}); }),
            "heed::nn::TransformerDecoder: tgt_mask (bool) has shape [1, 4, 4], expected [L, L] = [11, 11], "
            "[B·nhead, L, L] = [6, 11, 11] or [1, L, L] = [1, 11, 11]");
  const Tensor<float, 2> wide({L, S + 1});
  EXPECT_EQ(shape_error([&] { (void)f.dec(f.x, f.memory, {.memory_mask = wide}); }),
            "heed::nn::TransformerDecoder: memory_mask (float) has shape [11, 8], expected [L, S] = [11, 7], "
            "[B·nhead, L, S] = [6, 11, 7] or [1, L, S] = [1, 11, 7]");
  const Tensor<bool, 2> pad({B, S - 1});
  EXPECT_EQ(shape_error([&] { (void)f.dec(f.x, f.memory, {.memory_key_padding_mask = pad}); }),
            "heed::nn::TransformerDecoder: memory_key_padding_mask has shape [2, 6], expected [B, S] = [2, 7]");
  EXPECT_NE(shape_error([&] {
              (void)f.dec(f.x, f.memory, {.tgt_key_padding_mask = pad});
            }).find("tgt_key_padding_mask has shape [2, 6], expected [B, L] = [2, 11]"),
            std::string::npos);
  const Tensor<float, 3> bias({1, L, L});
  EXPECT_NE(shape_error([&] {
              (void)f.dec(f.x, f.memory, {.tgt_mask = square4, .tgt_bias = bias});
            }).find("give tgt_mask or tgt_bias"),
            std::string::npos);
  auto cache = f.dec.make_cache({.batch = B, .max_len = 16});
  EXPECT_NE(shape_error([&] {
              (void)f.dec(f.x, f.memory, {.tgt_mask = f.fx.get<float, 2>("subsequent"), .cache = &cache});
            }).find("TransformerDecoder: tgt_mask does not combine with a cache"),
            std::string::npos);

  EXPECT_EQ(shape_error([&] {
              (void)f.enc(f.x, {.mask = Tensor<heed::bfloat16, 3>({B * H + 1, L, L})});
            }),
            "heed::nn::TransformerEncoder: mask (bfloat16) has shape [7, 11, 11], expected [L, L] = [11, 11], "
            "[B·nhead, L, L] = [6, 11, 11] or [1, L, L] = [1, 11, 11]");
  EXPECT_NE(shape_error([&] {
              (void)f.enc(f.x, {.src_key_padding_mask = pad});
            }).find("TransformerEncoder: src_key_padding_mask has shape [2, 6], expected [B, L] = [2, 11]"),
            std::string::npos);

  MultiheadAttention<float> mha({.embed_dim = E, .num_heads = H});
  EXPECT_EQ(shape_error([&] {
              (void)mha(f.x, f.memory, f.memory, {.attn_mask = Tensor<float, 2>({L, L})});
            }),
            "heed::nn::MultiheadAttention: attn_mask (float) has shape [11, 11], expected [L, S] = [11, 7], "
            "[B·H, L, S] = [6, 11, 7] or [1, L, S] = [1, 11, 7]");
}

}  // namespace
