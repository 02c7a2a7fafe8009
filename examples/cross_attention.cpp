// Seed 000 §3.2: the seed's CrossAttention: Q from the target sequence, K and V from the source.
//   build/release/examples/heed_example_cross_attention
#include <heed/heed.hpp>

#include <cstdio>

int main() {
  const heed::index_t d_model = 256, n_heads = 8, batch = 2, target_len = 10, source_len = 15;

  const heed::nn::seed::CrossAttention<float> cross_attn({.d_model = d_model, .n_heads = n_heads});
  const auto target = heed::randn<float>({batch, target_len, d_model}, 0);  // decoder output
  const auto source = heed::randn<float>({batch, source_len, d_model}, 1);  // encoder output

  const auto [output, weights] = cross_attn(target, source);

  std::printf("Target sequence shape: %s\n", heed::to_string(target.shape()).c_str());
  std::printf("Source sequence shape: %s\n", heed::to_string(source.shape()).c_str());
  std::printf("Output shape: %s\n", heed::to_string(output.shape()).c_str());    // [2, 10, 256]
  std::printf("Weights shape: %s\n", heed::to_string(weights.shape()).c_str());  // [2, 8, 10, 15]
  // Meaning of weights: how much each target position attends to each source position.
  return 0;
}
