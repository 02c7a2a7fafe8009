// TransformerEncoderLayer / TransformerEncoder against torch.nn 1.13.
// PyTorch 1.13's eval-mode fast path (nested tensors) writes zeros at padded positions; heed
// computes them like any other row, so padded rows are left out of the comparison.
#include <gtest/gtest.h>

#include "heed/nn/transformer_encoder.hpp"
#include "support/compare.hpp"
#include "support/golden.hpp"

namespace {

using heed::index_t;
using heed::Tensor;
using heed::test::all_close;
using heed::test::with_padded_rows_from;
using namespace heed::nn;

constexpr heed::test::Tolerance tol{1e-5, 2e-6};

struct Fixture {
  heed::io::SafeTensors fx = heed::test::golden("transformer_encoder");
  Tensor<float, 3> x = fx.get<float, 3>("x");
  Tensor<bool, 2> pad = fx.get<bool, 2>("pad");
  void expect(const Tensor<float, 3>& y, const std::string& name) const {
    const auto expected = fx.get<float, 3>(name);
    const auto ok = all_close(with_padded_rows_from(y, expected, pad), expected, tol);
    std::printf("%s: %s\n", name.c_str(), ok.message());
    EXPECT_TRUE(ok) << name;
  }
};

TEST(TransformerEncoderGolden, PostNormReluLayer) {
  const Fixture f;
  TransformerEncoderLayer<float> layer({.d_model = 24, .nhead = 3, .dim_feedforward = 40});
  layer.load(f.fx, "post.module.", {.strict = true});
  f.expect(layer(f.x, {.src_key_padding_mask = f.pad}), "post.output");
  EXPECT_TRUE(all_close(layer(f.x), f.fx.get<float, 3>("post.output_nomask"), tol));
}

TEST(TransformerEncoderGolden, PreNormGeluLayer) {
  const Fixture f;
  TransformerEncoderLayer<float> layer(
      {.d_model = 24, .nhead = 3, .dim_feedforward = 40, .activation = Activation::gelu, .norm_first = true});
  layer.load(f.fx, "pre.module.", {.strict = true});
  f.expect(layer(f.x, {.src_key_padding_mask = f.pad}), "pre.output");
}

TEST(TransformerEncoderGolden, TwoLayersWithFinalNormPaddedAndCausal) {
  const Fixture f;
  TransformerEncoder<float> enc({.d_model = 24,
                                 .nhead = 3,
                                 .dim_feedforward = 40,
                                 .num_layers = 2,
                                 .activation = Activation::gelu,
                                 .final_norm = true});
  enc.load(f.fx, "enc.module.", {.strict = true});
  f.expect(enc(f.x, {.src_key_padding_mask = f.pad}), "enc.output");
  EXPECT_TRUE(all_close(enc(f.x, {.is_causal = true}), f.fx.get<float, 3>("enc.output_causal"), tol));
}

TEST(TransformerEncoder, BadShapes) {
  EXPECT_THROW(TransformerEncoder<float>({.d_model = 24, .nhead = 5}), heed::ShapeError);
  EXPECT_THROW(TransformerEncoder<float>({.d_model = 24, .nhead = 3, .num_layers = 0}), heed::ShapeError);
  const TransformerEncoder<float> enc({.d_model = 24, .nhead = 3, .dim_feedforward = 8});
  EXPECT_THROW((void)enc(heed::randn<float>({2, 5, 16}, 1)), heed::ShapeError);
}

}  // namespace
