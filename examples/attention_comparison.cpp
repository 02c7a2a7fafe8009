// Seed 002: additive (Bahdanau), dot-product and scaled dot-product attention side by side,
// then why the scale matters: unscaled dot products grow with d and the softmax sharpens
// towards one key, while Q·K/sqrt(d) keeps the weights spread.
//   build/release/examples/heed_example_attention_comparison
#include <heed/heed.hpp>

#include <cmath>
#include <cstdio>

namespace {

// Entropy (nats) of a weight row: log(L) when uniform, 0 when all weight is on one key.
double entropy(const heed::TensorView<const float, 1>& w) {
  double h = 0;
  for (heed::index_t j = 0; j < w.size(0); ++j)
    if (w(j) > 0) h -= static_cast<double>(w(j)) * std::log(static_cast<double>(w(j)));
  return h;
}

void print_row(const char* name, const heed::TensorView<const float, 1>& w) {
  std::printf("%-22s", name);
  for (heed::index_t j = 0; j < w.size(0); ++j) std::printf(" %.3f", static_cast<double>(w(j)));
  std::printf("   entropy %.2f\n", entropy(w));
}

}  // namespace

int main() {
  const heed::index_t batch = 1, keys = 6, hidden = 32;
  const auto query = heed::randn<float>({batch, hidden}, 0);
  const auto key = heed::randn<float>({batch, keys, hidden}, 1);

  // Additive: score = v^T tanh(W_q q + W_k k), the seed's AdditiveAttention module.
  const heed::nn::seed::AdditiveAttention<float> additive({.hidden_dim = hidden});
  const auto add = additive(query, key);

  // Dot and scaled dot: the one attention driver with the Dot and ScaledDot score policies.
  const auto q4 = query.view().reshape(heed::Shape<4>{batch, 1, 1, hidden});
  const auto [dot_out, dot_w] = heed::attention(q4, key.view().reshape(heed::Shape<4>{batch, 1, keys, hidden}),
                                                key.view().reshape(heed::Shape<4>{batch, 1, keys, hidden}), heed::Dot{},
                                                heed::mask::None{}, {.need_weights = true});
  const auto [sdp_out, sdp_w] = heed::attention(q4, key.view().reshape(heed::Shape<4>{batch, 1, keys, hidden}),
                                                key.view().reshape(heed::Shape<4>{batch, 1, keys, hidden}),
                                                heed::ScaledDot{}, heed::mask::None{}, {.need_weights = true});
  std::printf("Weights over %ld keys (d = %ld):\n", keys, hidden);
  print_row("additive", add.weights.view()[0]);
  print_row("dot product", dot_w.view()[0][0][0]);
  print_row("scaled dot product", sdp_w.view()[0][0][0]);

  // The seed's experiment: one query against 10 keys at d = 16, 64, 256.
  std::printf("\nSoftmax sharpening with d (10 keys; uniform entropy = %.2f):\n", std::log(10.0));
  for (const heed::index_t d : {16, 64, 256}) {
    const auto q = heed::randn<float>({1, 1, 1, d}, static_cast<std::uint64_t>(d));
    const auto k = heed::randn<float>({1, 1, 10, d}, static_cast<std::uint64_t>(d) + 1);
    const auto unscaled = heed::attention(q, k, k, heed::Dot{}, heed::mask::None{}, {.need_weights = true});
    const auto scaled = heed::attention(q, k, k, heed::ScaledDot{}, heed::mask::None{}, {.need_weights = true});
    float top = 0;
    for (heed::index_t j = 0; j < 10; ++j) top = std::max(top, unscaled.weights(0, 0, 0, j));
    std::printf("d = %3ld: unscaled entropy %.2f (top weight %.3f), scaled entropy %.2f\n", d,
                entropy(unscaled.weights.view()[0][0][0]), static_cast<double>(top),
                entropy(scaled.weights.view()[0][0][0]));
  }
  return 0;
}
