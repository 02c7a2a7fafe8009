// The demo, part 2: a small CNN with the seed's CBAM (seed 000 §4.3), trained in PyTorch on
// scikit-learn's 8x8 digits (examples/train/train_digits.py), run by heed.
//
//   heed_demo_digits [data dir] [output dir]
//
// The model is composed from heed modules and loaded by PyTorch's state_dict names; its sizes
// come from the file's __metadata__. heed classifies the test digits, compares logits,
// predictions and CBAM's spatial-attention maps with PyTorch's, and writes the maps of a few
// digits as PNG. Exits non-zero unless heed agrees with every PyTorch prediction.
#include <heed/heed.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

namespace fs = std::filesystem;
using heed::index_t;

namespace {

struct DigitsOptions {
  index_t channels1 = 16, channels2 = 32, reduction = 4, kernel_size = 3, num_classes = 10;
};

/// conv 3x3 → ReLU → CBAM → conv 3x3 → ReLU → global average pool → linear, as in train_digits.py.
class DigitsCBAM {
 public:
  explicit DigitsCBAM(const DigitsOptions& o)
      : conv1_({.in_channels = 1, .out_channels = o.channels1, .kernel_size = 3, .padding = 1}),
        conv2_({.in_channels = o.channels1, .out_channels = o.channels2, .kernel_size = 3, .padding = 1}),
        cbam_({.channels = o.channels1, .reduction = o.reduction, .kernel_size = o.kernel_size}),
        fc_({.in_features = o.channels2, .out_features = o.num_classes}) {}

  static DigitsCBAM from_safetensors(const heed::io::SafeTensors& file) {
    DigitsOptions o;
    heed::nn::ModuleConfig::from_metadata(file, "DigitsCBAM")
        .read("channels1", o.channels1)
        .read("channels2", o.channels2)
        .read("reduction", o.reduction)
        .read("kernel_size", o.kernel_size)
        .read("num_classes", o.num_classes)
        .finish();
    DigitsCBAM model(o);
    model.load(file, "", {.strict = true});
    return model;
  }

  template <heed::nn::WeightSource S>
  void load(const heed::nn::Loader<S>& from) {
    conv1_.load(from.child("conv1."));
    conv2_.load(from.child("conv2."));
    cbam_.load(from.child("cbam."));
    fc_.load(from.child("fc."));
  }
  template <heed::nn::WeightSource S>
  void load(const S& source, const std::string& prefix, heed::nn::LoadOptions options) {
    heed::nn::load_module(*this, source, prefix, options);
  }

  struct Result {
    heed::Tensor<float, 2> logits;       // [B, classes]
    heed::Tensor<float, 4> spatial_map;  // [B, 1, 8, 8]
  };

  Result operator()(const heed::Tensor<float, 4>& images) const {
    using heed::nn::Activation;
    auto attended = cbam_.forward(conv1_(images, Activation::relu));
    const auto features = conv2_(attended.output, Activation::relu);
    return {fc_(heed::global_avg_pool(features)), std::move(attended.spatial_map)};
  }

 private:
  heed::nn::Conv2d<float> conv1_, conv2_;
  heed::nn::CBAM<float> cbam_;
  heed::nn::Linear<float> fc_;
};

}  // namespace

int main(int argc, char** argv) try {
  const fs::path data = argc > 1 ? fs::path(argv[1]) : fs::path(HEED_EXAMPLES_DATA_DIR);
  const fs::path out = argc > 2 ? fs::path(argv[2]) : fs::path("heed-demo");
  fs::create_directories(out);

  const auto model = DigitsCBAM::from_safetensors(heed::io::SafeTensors::open(data / "digits_cbam.safetensors"));
  const auto reference = heed::io::SafeTensors::open(data / "digits_reference.safetensors");
  const auto images = reference.get<float, 4>("images");
  const auto labels = reference.get<std::int64_t, 1>("labels");
  const auto torch_logits = reference.get<float, 2>("logits");
  const auto torch_predictions = reference.get<std::int64_t, 1>("predictions");
  const auto torch_maps = reference.get<float, 4>("spatial_maps");
  const index_t n = images.size(0);
  std::printf("DigitsCBAM from %s; %ld test digits %s\n", (data / "digits_cbam.safetensors").string().c_str(), n,
              heed::to_string(images.shape()).c_str());

  const auto start = std::chrono::steady_clock::now();
  const auto result = model(images);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  index_t correct = 0, torch_correct = 0, agree = 0;
  double max_diff = 0, max_map_diff = 0;
  for (index_t i = 0; i < n; ++i) {
    index_t best = 0;
    for (index_t c = 0; c < result.logits.size(1); ++c) {
      if (result.logits(i, c) > result.logits(i, best)) best = c;
      max_diff = std::max(max_diff, static_cast<double>(std::abs(result.logits(i, c) - torch_logits(i, c))));
    }
    correct += best == labels(i);
    torch_correct += torch_predictions(i) == labels(i);
    agree += best == torch_predictions(i);
  }
  for (index_t i = 0; i < result.spatial_map.numel(); ++i)
    max_map_diff =
        std::max(max_map_diff, static_cast<double>(std::abs(result.spatial_map.data()[i] - torch_maps.data()[i])));
  const auto percent = [n](index_t k) { return 100.0 * static_cast<double>(k) / static_cast<double>(n); };
  std::printf("heed accuracy: %.2f%% (PyTorch: %.2f%%)\n", percent(correct), percent(torch_correct));
  std::printf("Agreement with PyTorch's predictions: %.1f%% (%ld of %ld)\n", percent(agree), agree, n);
  std::printf("Max |logit difference| vs PyTorch: %.2e; max |spatial map difference|: %.2e\n", max_diff, max_map_diff);
  std::printf("Speed: %.0f images/s (%d threads, one batch)\n", static_cast<double>(n) / seconds, heed::num_threads());

  // The first eight digits and where CBAM's spatial attention looked, side by side.
  const index_t shown = std::min<index_t>(8, n);
  heed::Tensor<float, 3> digits({shown, 8, 8}), maps({shown, 8, 8});
  for (index_t i = 0; i < shown; ++i)
    for (index_t y = 0; y < 8; ++y)
      for (index_t x = 0; x < 8; ++x)
        digits(i, y, x) = images(i, 0, y, x), maps(i, y, x) = result.spatial_map(i, 0, y, x);
  heed::io::write_heatmap_png(out / "digits_input.png", digits, {.cell = 24});
  heed::io::write_heatmap_png(out / "digits_spatial_attention.png", maps, {.cell = 24});
  std::vector<std::string> titles;
  for (index_t i = 0; i < shown; ++i) titles.push_back("digit " + std::to_string(labels(i)));
  heed::io::write_heatmap_svg(out / "digits_spatial_attention.svg", maps,
                              {.title = "CBAM spatial attention on test digits",
                               .panel_titles = titles,
                               .x_axis = "x",
                               .y_axis = "y",
                               .cell = 16});
  std::printf("Pictures: %s, %s, %s\n", (out / "digits_input.png").string().c_str(),
              (out / "digits_spatial_attention.png").string().c_str(),
              (out / "digits_spatial_attention.svg").string().c_str());
  if (agree != n || correct != torch_correct) {
    std::printf("Verdict: MISMATCH with PyTorch\n");
    return 1;
  }
  std::printf("Verdict: heed matches PyTorch (same accuracy%s)\n", ", every prediction");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "heed_demo_digits: %s\n", e.what());
  return 2;
}
