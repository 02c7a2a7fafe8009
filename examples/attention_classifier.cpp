// Seed 000 §6.1: the AttentionClassifier (embedding, sinusoidal positions, a GELU Transformer
// encoder, attention pooling, a classifier head) on random token ids with padding (id 0).
// Untrained here; heed_example_demo_fortunes runs a trained one.
//   build/release/examples/heed_example_attention_classifier
#include <heed/heed.hpp>

#include <cstdio>

int main() {
  const heed::nn::seed::AttentionClassifier<float> model(
      {.vocab_size = 10000, .embed_dim = 128, .hidden_dim = 256, .num_classes = 5});

  // Simulated input (with padding): ids in [1, 10000), the last 10 positions are padding.
  heed::Tensor<std::int64_t, 2> x({16, 50});
  const auto u = heed::uniform<double>({16, 50}, 1.0, 10000.0, 0);
  for (heed::index_t b = 0; b < 16; ++b)
    for (heed::index_t t = 0; t < 40; ++t) x(b, t) = static_cast<std::int64_t>(u(b, t));

  const auto [logits, attn_weights] = model(x);
  std::printf("Input: %s\n", heed::to_string(x.shape()).c_str());
  std::printf("Logits: %s\n", heed::to_string(logits.shape()).c_str());                   // [16, 5]
  std::printf("Attention weights: %s\n", heed::to_string(attn_weights.shape()).c_str());  // [16, 50]
  float on_padding = 0, total = 0;
  for (heed::index_t t = 0; t < 50; ++t) (t < 40 ? total : on_padding) += attn_weights(0, t);
  std::printf("Pooling weight on real tokens: %.4f, on padding: %.4f\n", static_cast<double>(total),
              static_cast<double>(on_padding));
  return 0;
}
