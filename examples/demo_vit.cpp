// The demo, part 3: seed 002's last tip, the Vision Transformer's [CLS] attention heatmap, on
// torchvision's VisionTransformer trained in PyTorch on scikit-learn's digits upscaled to 28x28
// with 2x2 patches, a 14x14 grid (examples/train/train_vit.py), run by heed from its
// safetensors file alone.
//
//   heed_demo_vit [data dir] [output dir]
//
// heed classifies the test digits, compares its predictions with PyTorch's, and for the first
// eight test digits draws the image beside the last block's [CLS]-to-patch attention (mean over
// heads) and beside the attention rollout (Abnar & Zuidema 2020: per block the head mean plus
// the identity, rows renormalized, multiplied from the first block up), PNG and SVG. Exits
// non-zero unless every prediction is PyTorch's and both maps are within 1e-5 of PyTorch's.
#include <heed/heed.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

namespace fs = std::filesystem;
using heed::index_t;

namespace {

// [N, 8, 8] → [N, 3, size, size] as train_vit.py's `upscale`: bilinear with half-pixel centres,
// in double, then float, the grey value in all three channels.
heed::Tensor<float, 4> upscale(const heed::Tensor<float, 3>& digits, index_t size) {
  const index_t n = digits.size(0), h = digits.size(1), w = digits.size(2);
  heed::Tensor<float, 4> out({n, 3, size, size}, heed::uninitialized);
  const auto source = [&](index_t o, index_t side) {
    const double s =
        std::max((static_cast<double>(o) + 0.5) * static_cast<double>(side) / static_cast<double>(size) - 0.5, 0.0);
    const auto i0 = static_cast<index_t>(s);
    return std::tuple{i0, std::min(i0 + 1, side - 1), s - static_cast<double>(i0)};
  };
  for (index_t oy = 0; oy < size; ++oy) {
    const auto [y0, y1, wy] = source(oy, h);
    for (index_t ox = 0; ox < size; ++ox) {
      const auto [x0, x1, wx] = source(ox, w);
      for (index_t b = 0; b < n; ++b) {
        const auto at = [&](index_t y, index_t x) { return static_cast<double>(digits(b, y, x)); };
        const double top = (1 - wx) * at(y0, x0) + wx * at(y0, x1), bottom = (1 - wx) * at(y1, x0) + wx * at(y1, x1);
        const auto v = static_cast<float>((1 - wy) * top + wy * bottom);
        for (index_t c = 0; c < 3; ++c) out(b, c, oy, ox) = v;
      }
    }
  }
  return out;
}

// The last block's [CLS] row over the patches (mean over heads) and the rollout's, [N, side, side].
std::pair<heed::Tensor<double, 3>, heed::Tensor<double, 3>> cls_maps(const std::vector<heed::Tensor<float, 4>>& weights,
                                                                     index_t side) {
  const index_t n = weights.front().size(0), heads = weights.front().size(1), L = weights.front().size(2);
  heed::Tensor<double, 3> last({n, side, side}), rollout({n, side, side});
  for (index_t b = 0; b < n; ++b) {
    std::vector<double> product(static_cast<std::size_t>(L * L)), mean(product.size()), next(product.size());
    for (std::size_t layer = 0; layer < weights.size(); ++layer) {
      std::fill(mean.begin(), mean.end(), 0.0);
      for (index_t h = 0; h < heads; ++h)
        for (index_t i = 0; i < L; ++i)
          for (index_t j = 0; j < L; ++j)
            mean[static_cast<std::size_t>(i * L + j)] += static_cast<double>(weights[layer](b, h, i, j));
      for (index_t i = 0; i < L * L; ++i) mean[static_cast<std::size_t>(i)] /= static_cast<double>(heads);
      if (layer + 1 == weights.size())
        for (index_t p = 0; p < side * side; ++p) last(b, p / side, p % side) = mean[static_cast<std::size_t>(1 + p)];
      for (index_t i = 0; i < L; ++i) {  // 0.5 · mean + 0.5 · I, each row summing to one
        double sum = 0;
        for (index_t j = 0; j < L; ++j) {
          double& a = mean[static_cast<std::size_t>(i * L + j)];
          a = 0.5 * a + (i == j ? 0.5 : 0.0);
          sum += a;
        }
        for (index_t j = 0; j < L; ++j) mean[static_cast<std::size_t>(i * L + j)] /= sum;
      }
      if (layer == 0) {
        product = mean;
        continue;
      }
      for (index_t i = 0; i < L; ++i)  // next = mean · product
        for (index_t j = 0; j < L; ++j) {
          double sum = 0;
          for (index_t k = 0; k < L; ++k)
            sum += mean[static_cast<std::size_t>(i * L + k)] * product[static_cast<std::size_t>(k * L + j)];
          next[static_cast<std::size_t>(i * L + j)] = sum;
        }
      std::swap(product, next);
    }
    for (index_t p = 0; p < side * side; ++p) rollout(b, p / side, p % side) = product[static_cast<std::size_t>(1 + p)];
  }
  return {std::move(last), std::move(rollout)};
}

double max_difference(const heed::Tensor<double, 3>& a, const heed::Tensor<double, 3>& b) {
  double d = 0;
  for (index_t i = 0; i < a.numel(); ++i) d = std::max(d, std::abs(a.data()[i] - b.data()[i]));
  return d;
}

}  // namespace

int main(int argc, char** argv) try {
  const fs::path data = argc > 1 ? fs::path(argv[1]) : fs::path(HEED_EXAMPLES_DATA_DIR);
  const fs::path out = argc > 2 ? fs::path(argv[2]) : fs::path("heed-demo");
  fs::create_directories(out);

  const auto file = heed::io::SafeTensors::open(data / "digits_vit.safetensors");
  heed::nn::VisionTransformerOptions options;
  heed::nn::ModuleConfig::from_metadata(file, "VisionTransformer")
      .read("image_size", options.image_size)
      .read("patch_size", options.patch_size)
      .read("num_layers", options.num_layers)
      .read("num_heads", options.num_heads)
      .read("hidden_dim", options.hidden_dim)
      .read("mlp_dim", options.mlp_dim)
      .read("num_classes", options.num_classes)
      .finish();
  heed::nn::VisionTransformer<float> model(options);
  model.load(file, "", {.strict = true});  // torchvision's state_dict, as it is

  const auto reference = heed::io::SafeTensors::open(data / "digits_vit_reference.safetensors");
  const auto images = upscale(reference.get<float, 3>("digits"), options.image_size);
  const auto labels = reference.get<std::int64_t, 1>("labels");
  const auto torch_predictions = reference.get<std::int64_t, 1>("predictions");
  const index_t n = images.size(0), side = options.image_size / options.patch_size;
  std::printf(
      "torchvision VisionTransformer from %s: %ld blocks, width %ld, %ld heads, %ldx%ld patches of %ldx%ld; "
      "%ld test digits %s\n",
      (data / "digits_vit.safetensors").string().c_str(), options.num_layers, options.hidden_dim, options.num_heads,
      side, side, options.patch_size, options.patch_size, n, heed::to_string(images.shape()).c_str());

  const auto start = std::chrono::steady_clock::now();
  const auto logits = model(images);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  index_t correct = 0, torch_correct = 0, agree = 0;
  for (index_t i = 0; i < n; ++i) {
    index_t best = 0;
    for (index_t c = 1; c < logits.size(1); ++c)
      if (logits(i, c) > logits(i, best)) best = c;
    correct += best == labels(i);
    torch_correct += torch_predictions(i) == labels(i);
    agree += best == torch_predictions(i);
  }
  const auto percent = [n](index_t k) { return 100.0 * static_cast<double>(k) / static_cast<double>(n); };
  std::printf("heed accuracy: %.2f%% (PyTorch: %.2f%%)\n", percent(correct), percent(torch_correct));
  std::printf("Agreement with PyTorch's predictions: %.1f%% (%ld of %ld)\n", percent(agree), agree, n);
  std::printf("Speed: %.0f images/s (%d threads, one batch)\n", static_cast<double>(n) / seconds, heed::num_threads());

  // The first eight digits: every block's attention, the [CLS] maps from it
  const index_t shown = std::min<index_t>(8, n);
  heed::Tensor<float, 4> first({shown, 3, options.image_size, options.image_size});
  std::copy_n(images.data(), first.numel(), first.data());
  const auto weights = model.forward(first, {.need_weights = true}).weights;
  const auto [last, rollout] = cls_maps(weights, side);
  const double last_diff = max_difference(last, reference.get<double, 3>("cls_attention"));
  const double rollout_diff = max_difference(rollout, reference.get<double, 3>("rollout"));
  std::printf("Max |[CLS] attention difference| vs PyTorch: %.2e; rollout: %.2e\n", last_diff, rollout_diff);

  // Per digit: the image, the last block's [CLS] attention and the rollout on the image's grid
  // (each patch 2x2 pixels), each panel scaled to its own maximum so that all three show.
  const index_t S = options.image_size, p = options.patch_size;
  std::vector<std::string> written;
  for (index_t i = 0; i < shown; ++i) {
    heed::Tensor<float, 3> panels({3, S, S});
    double peak[3] = {0, 0, 0};
    for (index_t y = 0; y < S; ++y)
      for (index_t x = 0; x < S; ++x) {
        const double v[3] = {images(i, 0, y, x), last(i, y / p, x / p), rollout(i, y / p, x / p)};
        for (int k = 0; k < 3; ++k) peak[k] = std::max(peak[k], v[k]);
      }
    for (index_t y = 0; y < S; ++y)
      for (index_t x = 0; x < S; ++x) {
        const double v[3] = {images(i, 0, y, x), last(i, y / p, x / p), rollout(i, y / p, x / p)};
        for (index_t k = 0; k < 3; ++k) panels(k, y, x) = static_cast<float>(peak[k] > 0 ? v[k] / peak[k] : 0.0);
      }
    const std::string stem = "vit_digit_" + std::to_string(i);
    heed::io::write_heatmap_png(out / (stem + ".png"), panels, {.cell = 6});
    heed::io::write_heatmap_svg(out / (stem + ".svg"), panels,
                                {.title = "Test digit " + std::to_string(labels(i)) + ": where [CLS] looks",
                                 .panel_titles = {"image", "last block's [CLS] attention", "attention rollout"},
                                 .x_axis = "x",
                                 .y_axis = "y",
                                 .cell = 6});
    written.push_back((out / stem).string());
  }
  std::printf("Pictures: %s.{png,svg} … %s.{png,svg}\n", written.front().c_str(), written.back().c_str());
  if (agree != n || correct != torch_correct || !(last_diff <= 1e-5) || !(rollout_diff <= 1e-5)) {
    std::printf("Verdict: MISMATCH with PyTorch\n");
    return 1;
  }
  std::printf("Verdict: heed matches PyTorch (same accuracy, every prediction, both maps)\n");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "heed_demo_vit: %s\n", e.what());
  return 2;
}
