// Seed 000 §5.1: the seed's pre-norm Transformer encoder (3 layers of self-attention and a GELU
// feed-forward block, then a final LayerNorm) with a key padding mask. heed::nn::seed::
// TransformerEncoder loads the seed's names (self_attn, ffn.0, ffn.3, norm1, norm2, final_norm);
// heed::nn::TransformerEncoder is torch.nn.TransformerEncoder.
//   build/release/examples/heed_example_transformer_encoder
#include <heed/heed.hpp>

#include <cstdio>

int main() {
  const heed::index_t d_model = 128, n_heads = 4, d_ff = 512, num_layers = 3, seq_len = 20, batch = 4;

  const heed::nn::seed::TransformerEncoder<float> encoder(
      {.d_model = d_model, .n_heads = n_heads, .d_ff = d_ff, .num_layers = num_layers});
  const auto x = heed::randn<float>({batch, seq_len, d_model}, 0);

  // Padding mask: true = ignore this position.
  heed::Tensor<bool, 2> key_padding_mask({batch, seq_len});
  for (heed::index_t t = 15; t < seq_len; ++t) key_padding_mask(0, t) = true;

  const auto output = encoder(x, key_padding_mask);
  std::printf("Input: %s -> Output: %s\n", heed::to_string(x.shape()).c_str(), heed::to_string(output.shape()).c_str());
  return 0;
}
