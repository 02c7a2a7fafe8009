// MultiheadAttention and TransformerEncoder with sparse patterns (mask::Sparse) against
// torch.nn 1.13 given the same patterns as dense boolean masks (fixture sparse_attention):
// Longformer (a window of 6 either side, global tokens 0 and 40) and a 16-block layout over
// L = 75, both with key padding. PyTorch's encoder writes zeros at padded positions (its
// nested-tensor fast path), so padded rows are left out of the encoder comparison.
#include <gtest/gtest.h>

#include <string>

#include "heed/core/random.hpp"
#include "heed/nn/multihead_attention.hpp"
#include "heed/nn/transformer_encoder.hpp"
#include "support/compare.hpp"
#include "support/golden.hpp"

namespace {

using heed::index_t;
using heed::Tensor;
using heed::test::all_close;
namespace mask = heed::mask;
namespace nn = heed::nn;

constexpr heed::test::Tolerance tol{1e-5, 2e-6};

struct Fixture {
  heed::io::SafeTensors fx = heed::test::golden("sparse_attention");
  Tensor<float, 3> x = fx.get<float, 3>("x");
  Tensor<bool, 2> pad = fx.get<bool, 2>("pad");
  Tensor<bool, 1> global = fx.get<bool, 1>("global");
  Tensor<bool, 2> layout = fx.get<bool, 2>("layout");

  [[nodiscard]] mask::Sparse pattern(const std::string& name) const {
    if (name == "longformer") return {.window = mask::SlidingWindow{6, 6}, .global = mask::GlobalTokens{global}};
    return {.blocks = mask::BlockSparse{layout, 16}};
  }
};

TEST(SparseModulesGolden, MultiheadAttentionTakesThePattern) {
  const Fixture f;
  nn::MultiheadAttention<float> mha({.embed_dim = 32, .num_heads = 4});
  mha.load(f.fx, "mha.module.", {.strict = true});
  for (const std::string name : {"longformer", "blocks"}) {
    const auto r = mha(f.x, f.x, f.x, {.key_padding_mask = f.pad, .sparse = f.pattern(name)});
    const auto ok = all_close(r.output, f.fx.get<float, 3>("mha." + name + ".output"), tol);
    std::printf("%s: output %s\n", name.c_str(), ok.message());
    EXPECT_TRUE(ok) << name;
    const auto weights = f.fx.get<float, 3>("mha." + name + ".weights");  // [B, L, L], averaged
    EXPECT_TRUE(all_close(r.weights.view().reshape(weights.shape()), weights, tol)) << name;
    const auto fast = mha(f.x, f.x, f.x, {.key_padding_mask = f.pad, .need_weights = false, .sparse = f.pattern(name)});
    EXPECT_TRUE(all_close(fast.output, r.output, {0, 0})) << name;
  }
}

TEST(SparseModulesGolden, TransformerEncoderTakesThePattern) {
  const Fixture f;
  nn::TransformerEncoder<float> enc({.d_model = 32,
                                     .nhead = 4,
                                     .dim_feedforward = 48,
                                     .num_layers = 2,
                                     .activation = nn::Activation::gelu,
                                     .final_norm = true});
  enc.load(f.fx, "enc.module.", {.strict = true});
  for (const std::string name : {"longformer", "blocks"}) {
    const auto expected = f.fx.get<float, 3>("enc." + name + ".output");
    const auto y = enc(f.x, {.src_key_padding_mask = f.pad, .sparse = f.pattern(name)});
    const auto ok = all_close(heed::test::with_padded_rows_from(y, expected, f.pad), expected, tol);
    std::printf("%s: encoder %s\n", name.c_str(), ok.message());
    EXPECT_TRUE(ok) << name;
  }
}

TEST(SparseModules, BadPatternsNameTheShapes) {
  const Fixture f;
  nn::MultiheadAttention<float> mha({.embed_dim = 32, .num_heads = 4});
  const auto short_x = heed::randn<float>({2, 74, 32}, 1);
  try {
    (void)mha(short_x, short_x, short_x, {.sparse = f.pattern("longformer")});
    ADD_FAILURE() << "no ShapeError";
  } catch (const heed::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[75]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[2, 4, 74, 74]"), std::string::npos) << e.what();
  }
  const auto shorter = heed::randn<float>({2, 64, 32}, 2);  // 4 blocks of 16, the layout has 5
  EXPECT_THROW((void)mha(shorter, shorter, shorter, {.sparse = f.pattern("blocks")}), heed::ShapeError);
  EXPECT_THROW((void)mha(short_x, short_x, short_x, {.sparse = mask::Sparse{}}), heed::ShapeError);
  nn::MultiheadAttention<float> with_bias_kv({.embed_dim = 32, .num_heads = 4, .add_bias_kv = true});
  EXPECT_THROW((void)with_bias_kv(f.x, f.x, f.x, {.sparse = f.pattern("blocks")}), heed::ShapeError);
  const nn::TransformerEncoder<float> enc({.d_model = 32, .nhead = 4, .dim_feedforward = 8});
  EXPECT_THROW((void)enc(shorter, {.sparse = f.pattern("blocks")}), heed::ShapeError);
  EXPECT_THROW((void)enc(short_x, {.sparse = f.pattern("longformer")}), heed::ShapeError);
}

}  // namespace
