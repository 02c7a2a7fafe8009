// Seed 000 §2.2: torch.nn.MultiheadAttention's counterpart, heed::nn::MultiheadAttention, in
// the seed's TransformerAttention block: self-attention with a key padding mask, then
// LayerNorm(x + attention(x)). PyTorch's convention holds here: key_padding_mask true = ignore.
//   build/release/examples/heed_example_builtin_multihead_attention
#include <heed/heed.hpp>

#include <cstdio>

int main() {
  const heed::index_t d_model = 128, n_heads = 8, seq_len = 10, batch = 4;

  const heed::nn::MultiheadAttention<float> attention({.embed_dim = d_model, .num_heads = n_heads});
  const heed::nn::LayerNorm<float> layernorm({.normalized_shape = d_model});
  const auto x = heed::randn<float>({batch, seq_len, d_model}, 0);

  // Create padding mask: true indicates that position should be ignored.
  heed::Tensor<bool, 2> key_padding_mask({batch, seq_len});
  for (heed::index_t t = 7; t < seq_len; ++t) key_padding_mask(0, t) = true;  // last 3 of sample 0
  for (heed::index_t t = 5; t < seq_len; ++t) key_padding_mask(1, t) = true;  // last 5 of sample 1

  const auto [attn_output, attn_weights] = attention(x, x, x, {.key_padding_mask = key_padding_mask});
  heed::Tensor<float, 3> residual = x;
  for (heed::index_t i = 0; i < residual.numel(); ++i) residual.data()[i] += attn_output.data()[i];
  const auto output = layernorm(residual);

  std::printf("Output shape: %s\n", heed::to_string(output.shape()).c_str());  // [4, 10, 128]
  // Averaged over heads, as PyTorch does by default: [B, 1, Lq, Lk] (PyTorch squeezes to [4, 10, 10]).
  std::printf("Attention weight shape: %s\n", heed::to_string(attn_weights.shape()).c_str());
  float padded = 0;
  for (heed::index_t q = 0; q < seq_len; ++q)
    for (heed::index_t k = 7; k < seq_len; ++k) padded += attn_weights(0, 0, q, k);
  std::printf("Weight on sample 0's padded keys (should be 0): %.1f\n", static_cast<double>(padded));
  return 0;
}
