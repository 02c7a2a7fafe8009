// Seed 000 §3.1: the seed's SelfAttention, without and with the causal mask, and the causality check.
//   build/release/examples/heed_example_self_attention
#include <heed/heed.hpp>

#include <cstdio>

int main() {
  const heed::index_t d_model = 256, n_heads = 8, seq_len = 20, batch = 2;

  const heed::nn::seed::SelfAttention<float> attn({.d_model = d_model, .n_heads = n_heads});
  const auto x = heed::randn<float>({batch, seq_len, d_model}, 0);

  // Without causal mask (encoder scenario)
  const auto [output_enc, weights_enc] = attn(x);
  std::printf("[Encoder] Output: %s, weights: %s\n", heed::to_string(output_enc.shape()).c_str(),
              heed::to_string(weights_enc.shape()).c_str());

  // With causal mask (decoder / autoregressive generation scenario)
  const auto [output_dec, weights_dec] = attn(x, {.causal = true});
  std::printf("[Decoder] Output: %s, weights: %s\n", heed::to_string(output_dec.shape()).c_str(),
              heed::to_string(weights_dec.shape()).c_str());

  // Verify causality: the first token should not attend to later tokens.
  std::printf("causal=True, weights[0,0,0,5:] (should be all 0): [");
  for (heed::index_t k = 5; k < 10; ++k)
    std::printf("%s%.1f", k > 5 ? ", " : "", static_cast<double>(weights_dec(0, 0, 0, k)));
  std::printf("]\n");
  float above_diagonal = 0;
  for (heed::index_t h = 0; h < n_heads; ++h)
    for (heed::index_t q = 0; q < seq_len; ++q)
      for (heed::index_t k = q + 1; k < seq_len; ++k) above_diagonal += weights_dec(1, h, q, k);
  std::printf("Sum of every weight above the diagonal (should be 0): %.1f\n", static_cast<double>(above_diagonal));
  return 0;
}
