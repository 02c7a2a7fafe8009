// Models built from their files alone, and what happens when the file or the input is wrong.
// Uses the demo's trained classifier (examples/data, written by examples/train/train_fortunes.py).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "heed/core/random.hpp"
#include "heed/io/safetensors.hpp"
#include "heed/nn/attention_classifier.hpp"
#include "heed/nn/conv2d.hpp"
#include "support/compare.hpp"
#include "support/files.hpp"
#include "support/golden.hpp"

namespace {

namespace fs = std::filesystem;
using heed::index_t;
using Classifier = heed::nn::seed::AttentionClassifier<float>;

const fs::path data_dir = HEED_EXAMPLES_DATA_DIR;
const fs::path model_path = data_dir / "fortunes_classifier.safetensors";

fs::path write_temp(const std::string& name, const std::vector<std::byte>& bytes) {
  const fs::path path = fs::temp_directory_path() / name;
  heed::test::write_bytes(path, bytes);
  return path;
}

template <class Error, class F>
void expect_error(F f, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning " << needles.front();
  } catch (const Error& e) {
    for (const auto& needle : needles) EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(FromFile, BuildsTheTrainedClassifierAndReproducesPyTorch) {
  const Classifier model = Classifier::from_file(model_path);
  EXPECT_EQ(model.options().vocab_size, 6002);
  EXPECT_EQ(model.options().embed_dim, 64);
  EXPECT_EQ(model.options().hidden_dim, 128);
  EXPECT_EQ(model.options().num_classes, 6);
  EXPECT_EQ(model.options().n_heads, 4);
  EXPECT_EQ(model.options().num_layers, 2);

  // PyTorch evaluated the test set in batches of 64 padded to each batch's longest; the first
  // batch here, padded to the widest fortune, must give the same logits (padding is masked).
  const auto reference = heed::io::SafeTensors::open(data_dir / "fortunes_reference.safetensors");
  const auto ids = reference.get<std::int64_t, 2>("ids");
  const auto torch_logits = reference.get<float, 2>("logits");
  const index_t n = 16;
  const auto result = model(ids.view().slice(0, 0, n));
  EXPECT_TRUE(heed::test::all_close(result.logits, torch_logits.view().slice(0, 0, n), {1e-5, 2e-5}));
  for (index_t b = 0; b < n; ++b) {
    double sum = 0;
    for (index_t t = 0; t < ids.size(1); ++t) {
      sum += result.weights(b, t);
      if (ids(b, t) == 0) {
        EXPECT_EQ(result.weights(b, t), 0.0f) << "padding gets no pooling weight";
      }
    }
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }
}

TEST(FromFile, TruncatedOrCorruptedFilesNameTheFile) {
  const auto bytes = heed::test::read_bytes(model_path);
  const fs::path truncated = write_temp("heed_truncated_classifier.safetensors", {bytes.begin(), bytes.end() - 1000});
  expect_error<heed::FormatError>([&] { (void)Classifier::from_file(truncated); },
                                  {"heed_truncated_classifier.safetensors", "runs past the end"});
  auto corrupted = bytes;
  std::uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), 8);
  const std::string header(reinterpret_cast<const char*>(bytes.data() + 8), header_size);
  ASSERT_NE(header.find("\"dtype\""), std::string::npos);
  corrupted[8 + header.find("\"dtype\"") + 1] = std::byte{'X'};  // "Xtype": the entry has no dtype
  const fs::path bad = write_temp("heed_corrupted_classifier.safetensors", corrupted);
  expect_error<heed::FormatError>([&] { (void)Classifier::from_file(bad); },
                                  {"heed_corrupted_classifier.safetensors", "no string \"dtype\""});
  expect_error<heed::IoError>([&] { (void)Classifier::from_file(data_dir / "no_such_model.safetensors"); },
                              {"no_such_model.safetensors"});
  fs::remove(truncated);
  fs::remove(bad);
}

TEST(FromFile, ConfigErrorsNameTheKey) {
  const auto w = heed::randn<float>({2, 2}, 1);
  const fs::path dir = fs::temp_directory_path();
  heed::io::SafeTensorsWriter().add("w", w).write(dir / "heed_no_config.safetensors");
  expect_error<heed::FormatError>([&] { (void)Classifier::from_file(dir / "heed_no_config.safetensors"); },
                                  {"heed_no_config.safetensors", "no \"heed.config\""});
  heed::io::SafeTensorsWriter()
      .add("w", w)
      .metadata("heed.module", "CBAM")
      .metadata("heed.config", "{}")
      .write(dir / "heed_other_module.safetensors");
  expect_error<heed::FormatError>([&] { (void)Classifier::from_file(dir / "heed_other_module.safetensors"); },
                                  {"holds a \"CBAM\", not a \"AttentionClassifier\""});
  heed::io::SafeTensorsWriter()
      .add("w", w)
      .metadata("heed.config", R"({"vocab_size": 10, "embed_dim": 8, "hidden_dim": 8, "num_classes": 2, "n_head": 2})")
      .write(dir / "heed_typo.safetensors");
  expect_error<heed::FormatError>([&] { (void)Classifier::from_file(dir / "heed_typo.safetensors"); },
                                  {"heed.config: unknown options n_head"});
  heed::io::SafeTensorsWriter()
      .add("w", w)
      .metadata("heed.config", R"({"vocab_size": "ten"})")
      .write(dir / "heed_bad_value.safetensors");
  expect_error<heed::FormatError>([&] { (void)Classifier::from_file(dir / "heed_bad_value.safetensors"); },
                                  {"\"vocab_size\"", "expected a number"});
  // A valid config, but the weights are not there: the first missing parameter is named (the
  // stray tensor holds more values than the model needs, so the size check lets it through).
  heed::io::SafeTensorsWriter()
      .add("w", heed::randn<float>({32, 32}, 1))
      .metadata("heed.config", R"({"vocab_size": 10, "embed_dim": 8, "hidden_dim": 8, "num_classes": 2, "n_heads": 2})")
      .write(dir / "heed_no_weights.safetensors");
  expect_error<heed::FormatError>([&] { (void)Classifier::from_file(dir / "heed_no_weights.safetensors"); },
                                  {"missing parameter \"embedding.weight\" (expected shape [10, 8])"});
  for (const char* name : {"heed_no_config", "heed_other_module", "heed_typo", "heed_bad_value", "heed_no_weights"})
    fs::remove(dir / (std::string(name) + ".safetensors"));
}

// A config is read before the weights: a small file asking for a huge model is refused before
// anything is allocated, with the sizes it asked for and the values it holds.
TEST(FromFile, AConfigLargerThanTheFileIsRefusedBeforeAllocating) {
  const auto w = heed::randn<float>({2, 2}, 1);
  const fs::path path = fs::temp_directory_path() / "heed_huge_config.safetensors";
  const auto write = [&](const std::string& config, const heed::Tensor<float, 2>& tensor) {
    heed::io::SafeTensorsWriter().add("w", tensor).metadata("heed.config", config).write(path);
  };
  write(R"({"vocab_size": 1000000000, "embed_dim": 4096, "hidden_dim": 8, "num_classes": 2, "n_heads": 2})", w);
  expect_error<heed::FormatError>([&] { (void)Classifier::from_file(path); },
                                  {"heed_huge_config.safetensors: heed.config (vocab_size 1000000000, embed_dim 4096",
                                   "asks for at least", "the file's tensors hold 4 values"});
  // Products beyond int64 saturate instead of wrapping round to a small number.
  write(R"({"vocab_size": 4611686018427387904, "embed_dim": 4611686018427387904, "hidden_dim": 8, "num_classes": 2})",
        w);
  expect_error<heed::FormatError>([&] { (void)Classifier::from_file(path); },
                                  {"asks for at least 9223372036854775807 parameters"});
  // A positional table the file does not store is computed: it may exceed the file by 4 Mi values, not more.
  write(R"({"vocab_size": 2, "embed_dim": 2, "hidden_dim": 2, "num_classes": 2, "n_heads": 1, "max_len": 100000000})",
        w);
  expect_error<heed::FormatError>([&] { (void)Classifier::from_file(path); },
                                  {"max_len 100000000", "asks for at least"});
  // Within the allowance, the size check passes and loading names the first missing parameter.
  write(
      R"({"vocab_size": 2, "embed_dim": 2, "hidden_dim": 2, "num_classes": 2, "n_heads": 1, "num_layers": 1, "max_len": 1000})",
      heed::randn<float>({8, 8}, 2));
  expect_error<heed::FormatError>([&] { (void)Classifier::from_file(path); },
                                  {"missing parameter \"embedding.weight\" (expected shape [2, 2])"});
  fs::remove(path);
}

TEST(FromFile, BadTokensAndEmptySequencesAreShapeErrors) {
  const Classifier model = Classifier::from_file(model_path);
  heed::Tensor<std::int64_t, 2> ids({2, 5});
  ids(0, 0) = 5, ids(1, 3) = 6002;  // one past the vocabulary
  expect_error<heed::ShapeError>([&] { (void)model(ids); }, {"6002"});
  ids(1, 3) = -1;
  expect_error<heed::ShapeError>([&] { (void)model(ids); }, {"-1"});
  expect_error<heed::ShapeError>([&] { (void)model(heed::Tensor<std::int64_t, 2>({2, 0})); }, {"empty sequences"});
}

TEST(Conv2dModule, ChecksChannelsAndParameterShapes) {
  const heed::nn::Conv2d<float> conv({.in_channels = 3, .out_channels = 4, .kernel_size = 3, .padding = 1});
  const auto x = heed::randn<float>({2, 3, 5, 6}, 2);
  const auto y = conv(x, heed::nn::Activation::relu);
  ASSERT_EQ(y.shape(), (heed::Shape<4>{2, 4, 5, 6}));
  // The module is F.conv2d with its parameters, then ReLU.
  auto expected = heed::conv2d(x, conv.weight(), conv.bias().view(), {.padding = 1});
  for (index_t i = 0; i < expected.numel(); ++i) expected.data()[i] = std::max(expected.data()[i], 0.0f);
  EXPECT_TRUE(heed::test::all_close(y, expected, {0, 0}));
  expect_error<heed::ShapeError>(
      [&] {
        (void)conv(heed::randn<float>({1, 2, 5, 5}, 3));
      },
      {"expected 3 input channels", "[1, 2, 5, 5]"});
  heed::nn::TensorDict wrong;
  wrong.set("weight", heed::randn<float>({4, 3, 5, 5}, 4)).set("bias", heed::randn<float>({4}, 5));
  heed::nn::Conv2d<float> target({.in_channels = 3, .out_channels = 4, .kernel_size = 3});
  expect_error<heed::ShapeError>([&] { target.load(wrong, ""); }, {"\"weight\"", "[4, 3, 5, 5]", "[4, 3, 3, 3]"});
  EXPECT_THROW(heed::nn::Conv2d<float>({.in_channels = 0, .out_channels = 4}), heed::ShapeError);
  EXPECT_THROW(heed::nn::Conv2d<float>({.in_channels = 3, .out_channels = 4, .dilation = 0}), heed::ShapeError);
}

// torch.nn.Conv2d with strides and dilations (tests/golden/generate.py, fixture conv2d_strided),
// loaded by name: a ViT-style patch embedding, stride 2 with dilation 2, dilation 3 without bias.
TEST(Conv2dModule, StridedAndDilatedMatchPyTorch) {
  const auto fx = heed::test::golden("conv2d_strided");
  const heed::test::Tolerance tol{1e-5, 1e-5};
  heed::nn::Conv2d<float> patch({.in_channels = 3, .out_channels = 24, .kernel_size = 16, .stride = 16});
  patch.load(fx, "patch.");
  EXPECT_TRUE(heed::test::all_close(patch(fx.get<float, 4>("image")), fx.get<float, 4>("patch.output"), tol));
  heed::nn::Conv2d<float> dilated(
      {.in_channels = 4, .out_channels = 6, .kernel_size = 3, .stride = 2, .padding = 2, .dilation = 2});
  dilated.load(fx, "dilated.");
  const auto x = fx.get<float, 4>("x");
  EXPECT_TRUE(heed::test::all_close(dilated(x), fx.get<float, 4>("dilated.output"), tol));
  heed::nn::Conv2d<float> dilated3(
      {.in_channels = 4, .out_channels = 5, .kernel_size = 3, .dilation = 3, .bias = false});
  dilated3.load(fx, "dilated3.");
  EXPECT_TRUE(heed::test::all_close(dilated3(x), fx.get<float, 4>("dilated3.output"), tol));
}

}  // namespace
