// SEBlock, SpatialAttention and CBAM against the seeds' PyTorch modules (PyTorch 1.13 fixtures),
// at odd shapes and at the seed's [4, 256, 32, 32]. Measured max relative error in float: see
// the printed lines; the assertion is 1e-5 relative (+1e-6 absolute near zero).
#include <gtest/gtest.h>

#include <cmath>

#include "heed/nn.hpp"
#include "support/compare.hpp"
#include "support/golden.hpp"

namespace {

using heed::index_t;
using heed::Tensor;
using heed::test::all_close;

constexpr heed::test::Tolerance tol{1e-5, 1e-6};

TEST(VisionGolden, SEBlockSeedLayout) {
  const auto fx = heed::test::golden("vision_modules");
  heed::nn::SEBlock<float> se({.channels = 20, .reduction = 4});
  se.load(fx, "se.module.");
  const auto x = fx.get<float, 4>("x");
  const auto r = se.forward(x);
  EXPECT_TRUE(all_close(r.output, fx.get<float, 4>("se.output"), tol));
  EXPECT_TRUE(all_close(r.channel_weights, fx.get<float, 2>("se.weights"), tol));
  EXPECT_TRUE(all_close(se(x), r.output, {0, 0}));
}

TEST(VisionGolden, SEBlockTorchvisionLayout) {
  const auto fx = heed::test::golden("vision_modules");
  heed::nn::SEBlock<float> se({.channels = 20, .squeeze_channels = 6});
  se.load(fx, "tv.module.", {.strict = true});
  EXPECT_TRUE(all_close(se(fx.get<float, 4>("x")), fx.get<float, 4>("tv.output"), tol));
}

TEST(VisionGolden, SpatialAttentionKernelThreeAndSeven) {
  const auto fx = heed::test::golden("vision_modules");
  const auto x = fx.get<float, 4>("x");
  for (index_t k : {3, 7}) {
    const std::string p = "sa" + std::to_string(k) + ".";
    heed::nn::SpatialAttention<float> sa({.kernel_size = k});
    sa.load(fx, p + "module.", {.strict = true});
    const auto r = sa.forward(x);
    EXPECT_TRUE(all_close(r.output, fx.get<float, 4>(p + "output"), tol)) << k;
    EXPECT_TRUE(all_close(r.spatial_map, fx.get<float, 4>(p + "map"), tol)) << k;
  }
}

TEST(VisionGolden, CBAM) {
  const auto fx = heed::test::golden("vision_modules");
  heed::nn::CBAM<float> cbam({.channels = 20, .reduction = 4, .kernel_size = 7});
  cbam.load(fx, "cbam.module.", {.strict = true});
  const auto r = cbam.forward(fx.get<float, 4>("x"));
  EXPECT_TRUE(all_close(r.output, fx.get<float, 4>("cbam.output"), tol));
  EXPECT_TRUE(all_close(r.channel_weights, fx.get<float, 2>("cbam.channel"), tol));
  EXPECT_TRUE(all_close(r.spatial_map, fx.get<float, 4>("cbam.spatial"), tol));
}

// The generator's formula input: x[i] = sin(0.7 i) + 0.5 cos(0.013 i), computed in double.
Tensor<float, 4> formula_input(const heed::Shape<4>& shape) {
  Tensor<float, 4> x(shape);
  for (index_t i = 0; i < x.numel(); ++i) {
    const double t = static_cast<double>(i);
    x.data()[i] = static_cast<float>(std::sin(0.7 * t) + 0.5 * std::cos(0.013 * t));
  }
  return x;
}

Tensor<float, 4> every_eighth_pixel(const Tensor<float, 4>& y) {
  Tensor<float, 4> sub({y.size(0), y.size(1), y.size(2) / 8, y.size(3) / 8});
  for (index_t b = 0; b < sub.size(0); ++b)
    for (index_t c = 0; c < sub.size(1); ++c)
      for (index_t i = 0; i < sub.size(2); ++i)
        for (index_t j = 0; j < sub.size(3); ++j) sub(b, c, i, j) = y(b, c, 8 * i, 8 * j);
  return sub;
}

TEST(VisionGolden, SeedShapes) {
  const auto fx = heed::test::golden("vision_seed_shapes");
  const auto x = formula_input({4, 256, 32, 32});
  double checksum = 0;
  for (index_t i = 0; i < x.numel(); ++i) checksum += x.data()[i];
  ASSERT_NEAR(checksum, (fx.get<double, 1>("x_checksum")(0)), 1e-6) << "the formula input differs from PyTorch's";

  heed::nn::SEBlock<float> se({.channels = 256, .reduction = 16});
  se.load(fx, "se.module.");
  const auto se_r = se.forward(x);
  EXPECT_TRUE(all_close(every_eighth_pixel(se_r.output), fx.get<float, 4>("se.output_sub"), tol));
  EXPECT_TRUE(all_close(se_r.channel_weights, fx.get<float, 2>("se.weights"), tol));

  heed::nn::SpatialAttention<float> sa({.kernel_size = 7});
  sa.load(fx, "sa.module.");
  const auto sa_r = sa.forward(x);
  EXPECT_TRUE(all_close(every_eighth_pixel(sa_r.output), fx.get<float, 4>("sa.output_sub"), tol));
  EXPECT_TRUE(all_close(sa_r.spatial_map, fx.get<float, 4>("sa.map"), tol));

  heed::nn::CBAM<float> cbam({.channels = 256, .reduction = 16, .kernel_size = 7});
  cbam.load(fx, "cbam.module.");
  const auto c = cbam.forward(x);
  const auto ok = all_close(every_eighth_pixel(c.output), fx.get<float, 4>("cbam.output_sub"), tol);
  std::printf("CBAM [4, 256, 32, 32]: %s\n", ok.message());
  EXPECT_TRUE(ok);
  EXPECT_TRUE(all_close(c.channel_weights, fx.get<float, 2>("cbam.channel"), tol));
  EXPECT_TRUE(all_close(c.spatial_map, fx.get<float, 4>("cbam.spatial"), tol));
}

template <class F>
void expect_error_containing(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning " << needle;
  } catch (const heed::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Vision, BadConfigurationsAndInputs) {
  expect_error_containing([] { heed::nn::SEBlock<float>({.channels = 8, .reduction = 16}); },
                          "reduction 16 must be in [1, channels = 8]");
  expect_error_containing([] { heed::nn::CBAM<float>({.channels = 8, .reduction = 4, .kernel_size = 4}); },
                          "kernel_size must be odd");
  expect_error_containing([] { heed::nn::SpatialAttention<float>({.kernel_size = 0}); }, "kernel_size must be odd");
  heed::nn::CBAM<float> cbam({.channels = 16, .reduction = 4});
  expect_error_containing(
      [&] {
        (void)cbam(heed::randn<float>({2, 20, 7, 9}, 1));
      },
      "expects 16 channels, got x [2, 20, 7, 9]");
  const auto fx = heed::test::golden("vision_modules");
  heed::nn::SEBlock<float> se({.channels = 20, .reduction = 2});  // the file has reduction 4
  expect_error_containing([&] { se.load(fx, "se.module."); },
                          "\"se.module.excitation.0.weight\" has shape [5, 20], expected [10, 20]");
  expect_error_containing([&] { se.load(fx, "nothing."); }, "missing parameter \"nothing.excitation.0.weight\"");
  heed::nn::SpatialAttention<float> sa({.kernel_size = 3});
  expect_error_containing([&] { sa.load(fx, "cbam.module.", {.strict = true}); },
                          "missing parameter \"cbam.module.conv.weight\"");
}

TEST(Vision, UnloadedModulesAreInitializedDeterministically) {
  heed::nn::CBAM<float> a({.channels = 16, .reduction = 4, .seed = 3}), b({.channels = 16, .reduction = 4, .seed = 3});
  const auto x = heed::randn<float>({1, 16, 5, 5}, 2);
  EXPECT_TRUE(all_close(a(x), b(x), {0, 0}));
}

}  // namespace
