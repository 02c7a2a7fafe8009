// nn::VisionTransformer against torchvision's VisionTransformer (tests/golden/generate.py,
// fixture vision_transformer): its state_dict loaded as it is, logits and every block's
// attention weights in float, logits in bfloat16 against the same model run in float64.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "heed/core/cast.hpp"
#include "heed/core/random.hpp"
#include "heed/nn/renamed.hpp"
#include "heed/nn/vision/vision_transformer.hpp"
#include "support/compare.hpp"
#include "support/golden.hpp"

namespace {

using heed::index_t;

constexpr heed::nn::VisionTransformerOptions kFixture{.image_size = 28,
                                                      .patch_size = 4,
                                                      .num_layers = 3,
                                                      .num_heads = 3,
                                                      .hidden_dim = 48,
                                                      .mlp_dim = 96,
                                                      .num_classes = 10};

template <class Scalar>
heed::nn::VisionTransformer<Scalar> fixture_model(const heed::io::SafeTensors& fx) {
  heed::nn::VisionTransformer<Scalar> model(kFixture);
  model.load(fx, "model.", {.strict = true});
  return model;
}

index_t argmax(const heed::Tensor<double, 2>& logits, index_t row) {
  index_t best = 0;
  for (index_t j = 1; j < logits.size(1); ++j)
    if (logits(row, j) > logits(row, best)) best = j;
  return best;
}

TEST(VisionTransformer, LogitsAndAttentionWeightsMatchTorchvision) {
  const auto fx = heed::test::golden("vision_transformer");
  const auto model = fixture_model<float>(fx);
  EXPECT_EQ(model.sequence_length(), 50);
  const auto images = fx.get<float, 4>("images");
  const auto result = model.forward(images, {.need_weights = true});
  EXPECT_TRUE(heed::test::all_close(result.logits, fx.get<float, 2>("logits"), {1e-5, 1e-5}));
  ASSERT_EQ(result.weights.size(), 3U);
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_TRUE(
        heed::test::all_close(result.weights[i], fx.get<float, 4>("weights." + std::to_string(i)), {1e-6, 1e-5}))
        << "block " << i;
  // without weights: the same logits, bit for bit, and no weights
  const auto plain = model.forward(images);
  EXPECT_TRUE(plain.weights.empty());
  EXPECT_TRUE(heed::test::all_close(plain.logits, result.logits, {0, 0}));
  EXPECT_TRUE(heed::test::all_close(model(images), result.logits, {0, 0}));
}

// bfloat16 weights and images: heed rounds each GEMM's and norm's output once, PyTorch 1.13 more
// often; both are held to the model's own value (the bfloat16 parameters run in float64).
TEST(VisionTransformer, BFloat16LogitsApproachTheModelInFloat64) {
  const auto fx = heed::test::golden("vision_transformer");
  const auto model = fixture_model<heed::bfloat16>(fx);
  const auto logits = heed::cast<double>(model(heed::cast<heed::bfloat16>(fx.get<float, 4>("images"))));
  const auto exact = fx.get<double, 2>("logits_bf16_in_f64"), torch = fx.get<double, 2>("logits_bf16");
  double heed_error = 0, torch_error = 0, scale = 0;
  for (index_t i = 0; i < exact.numel(); ++i) {
    heed_error = std::max(heed_error, std::abs(logits.data()[i] - exact.data()[i]));
    torch_error = std::max(torch_error, std::abs(torch.data()[i] - exact.data()[i]));
    scale = std::max(scale, std::abs(exact.data()[i]));
  }
  EXPECT_LE(heed_error, 0.01 * scale) << "torch's bfloat16 error " << torch_error;
  EXPECT_LE(heed_error, std::max(torch_error, 1e-3 * scale)) << "torch's bfloat16 error " << torch_error;
  for (index_t b = 0; b < exact.size(0); ++b) EXPECT_EQ(argmax(logits, b), argmax(exact, b)) << "image " << b;
}

// The tokens the blocks take: class token then patches, plus the position embedding, computed
// here from the state_dict in double (conv_proj as the convolution it is).
TEST(VisionTransformer, TokensAreTheClassTokenAndTheConvolvedPatchesPlusPositions) {
  const auto fx = heed::test::golden("vision_transformer");
  const auto model = fixture_model<float>(fx);
  const auto images = fx.get<double, 4>("images");
  const auto w = fx.get<double, 4>("model.conv_proj.weight");
  const auto bias = fx.get<double, 1>("model.conv_proj.bias");
  const auto token = fx.get<double, 3>("model.class_token"), pos = fx.get<double, 3>("model.encoder.pos_embedding");
  const auto got = model.tokens(fx.get<float, 4>("images"));
  ASSERT_EQ(got.shape(), (heed::Shape<3>{2, 50, 48}));
  heed::Tensor<double, 3> want({2, 50, 48});
  for (index_t b = 0; b < 2; ++b)
    for (index_t d = 0; d < 48; ++d) {
      want(b, 0, d) = token(0, 0, d) + pos(0, 0, d);
      for (index_t r = 0; r < 7; ++r)
        for (index_t c = 0; c < 7; ++c) {
          double sum = bias(d);
          for (index_t ch = 0; ch < 3; ++ch)
            for (index_t kh = 0; kh < 4; ++kh)
              for (index_t kw = 0; kw < 4; ++kw) sum += w(d, ch, kh, kw) * images(b, ch, 4 * r + kh, 4 * c + kw);
          want(b, 1 + 7 * r + c, d) = sum + pos(0, 1 + 7 * r + c, d);
        }
    }
  EXPECT_TRUE(heed::test::all_close(got, want, {1e-5, 1e-5}));
  // a strided view of the images gives the same tokens
  heed::Tensor<float, 4> wide({2, 3, 28, 56});
  const auto dense = fx.get<float, 4>("images");
  for (index_t b = 0; b < 2; ++b)
    for (index_t ch = 0; ch < 3; ++ch)
      for (index_t y = 0; y < 28; ++y)
        for (index_t x = 0; x < 28; ++x) wide(b, ch, y, 2 * x) = dense(b, ch, y, x);
  const heed::TensorView<const float, 4> view(wide.data(), {2, 3, 28, 28}, {3 * 28 * 56, 28 * 56, 56, 2});
  EXPECT_TRUE(heed::test::all_close(model.tokens(view), got, {0, 0}));
}

// Built without its random initialization (nn::load_new): the same logits, bit for bit.
TEST(VisionTransformer, LoadNewGivesTheSameModel) {
  const auto fx = heed::test::golden("vision_transformer");
  const auto model = heed::nn::load_new<heed::nn::VisionTransformer<float>>(kFixture, fx, "model.", {.strict = true});
  const auto images = fx.get<float, 4>("images");
  EXPECT_TRUE(heed::test::all_close(model(images), fixture_model<float>(fx)(images), {0, 0}));
  EXPECT_THROW((void)heed::nn::load_new<heed::nn::VisionTransformer<float>>(kFixture, fx, "absent."),
               heed::FormatError);
}

TEST(VisionTransformer, LoadsThroughARenamedSourceAndRejectsWrongShapesAndOptions) {
  const auto fx = heed::test::golden("vision_transformer");
  // a checkpoint whose keys carry a wrapper's prefix ("module." from DataParallel)
  const auto source = heed::nn::renamed(fx, {{"^model.", "module."}});
  heed::nn::VisionTransformer<float> model(kFixture);
  model.load(source, "module.");
  EXPECT_TRUE(heed::test::all_close(model(fx.get<float, 4>("images")), fx.get<float, 2>("logits"), {1e-5, 1e-5}));

  try {
    (void)model(heed::Tensor<float, 4>({1, 3, 28, 27}));
    FAIL();
  } catch (const heed::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("expects images [B, 3, 28, 28], got [1, 3, 28, 27]"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)model(heed::Tensor<float, 4>({1, 1, 28, 28})), heed::ShapeError);
  // an empty batch: no logits, no work
  EXPECT_EQ(model(heed::Tensor<float, 4>({0, 3, 28, 28})).shape(), (heed::Shape<2>{0, 10}));

  auto options = kFixture;
  options.patch_size = 5;  // does not divide 28
  EXPECT_THROW(heed::nn::VisionTransformer<float>{options}, heed::ShapeError);
  options = kFixture;
  options.num_heads = 5;  // does not divide 48
  EXPECT_THROW(heed::nn::VisionTransformer<float>{options}, heed::ShapeError);
  options = kFixture;
  options.num_classes = 0;
  EXPECT_THROW(heed::nn::VisionTransformer<float>{options}, heed::ShapeError);
  // a model of another size: the error names the parameter and both shapes
  options = kFixture;
  options.image_size = 32;
  heed::nn::VisionTransformer<float> bigger(options);
  try {
    bigger.load(fx, "model.");
    FAIL();
  } catch (const heed::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("\"model.encoder.pos_embedding\" has shape [1, 50, 48], expected [1, 65, 48]"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
