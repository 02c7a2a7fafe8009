// Seed 000 §2.1: the seed's MultiHeadAttention class (w_q, w_k, w_v, w_o) on random inputs.
//   build/release/examples/heed_example_multi_head_attention
#include <heed/heed.hpp>

#include <cstdio>

int main() {
  const heed::index_t d_model = 128, n_heads = 8, seq_len = 10, batch = 4;

  const heed::nn::seed::MultiHeadAttention<float> layer({.d_model = d_model, .n_heads = n_heads});

  const auto query = heed::randn<float>({batch, seq_len, d_model}, 0);
  const auto key = heed::randn<float>({batch, seq_len, d_model}, 1);
  const auto value = heed::randn<float>({batch, seq_len, d_model}, 2);

  const auto [output, attn_weights] = layer(query, key, value);

  std::printf("Output shape: %s\n", heed::to_string(output.shape()).c_str());                   // [4, 10, 128]
  std::printf("Attention weights shape: %s\n", heed::to_string(attn_weights.shape()).c_str());  // [4, 8, 10, 10]
  std::printf("Each head dimension d_k = %ld\n", d_model / n_heads);
  return 0;
}
