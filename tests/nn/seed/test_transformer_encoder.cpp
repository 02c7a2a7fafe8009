// seed::TransformerEncoder (seed 000 §5.1: pre-norm, GELU, final_norm) against the seed's PyTorch
// class, 1.13 fixtures; and the same run layer by layer.
#include <gtest/gtest.h>

#include "heed/nn/layer_norm.hpp"
#include "heed/nn/seed/transformer_encoder.hpp"
#include "support/compare.hpp"
#include "support/golden.hpp"

namespace {

using heed::index_t;
using heed::Tensor;
using heed::test::all_close;
using namespace heed::nn::seed;

constexpr heed::test::Tolerance tol{1e-5, 2e-6};

struct Fixture {
  heed::io::SafeTensors fx = heed::test::golden("transformer_encoder");
  Tensor<float, 3> x = fx.get<float, 3>("x");
  Tensor<bool, 2> pad = fx.get<bool, 2>("pad");
};

TEST(SeedTransformerEncoderGolden, PreNormGeluWithFinalNorm) {
  const Fixture f;
  TransformerEncoder<float> enc({.d_model = 24, .n_heads = 3, .d_ff = 40, .num_layers = 2});
  enc.load(f.fx, "seed.module.", {.strict = true});
  // The seed's encoder has no fast path: padded rows are computed and compared too.
  EXPECT_TRUE(all_close(enc(f.x, f.pad), f.fx.get<float, 3>("seed.output"), tol));
}

TEST(SeedTransformerEncoderGolden, TheStackIsItsLayersThenFinalNorm) {
  const Fixture f;
  TransformerEncoderLayer<float> layer({.d_model = 24, .n_heads = 3, .d_ff = 40});
  layer.load(f.fx, "seed.module.layers.0.", {.strict = true});
  // layer 0 followed by layer 1 and final_norm is the encoder: run them one by one
  TransformerEncoderLayer<float> second({.d_model = 24, .n_heads = 3, .d_ff = 40});
  second.load(f.fx, "seed.module.layers.1.", {.strict = true});
  heed::nn::LayerNorm<float> final_norm({.normalized_shape = 24});
  final_norm.load(f.fx, "seed.module.final_norm.", {.strict = true});
  const auto y = final_norm(second(layer(f.x, f.pad), f.pad));
  EXPECT_TRUE(all_close(y, f.fx.get<float, 3>("seed.output"), tol));
  EXPECT_THROW((void)layer(heed::randn<float>({2, 5, 16}, 1)), heed::ShapeError);
  EXPECT_THROW(TransformerEncoderLayer<float>({.d_model = 24, .n_heads = 5}), heed::ShapeError);
}

}  // namespace
