// Seed 000 §5.1: the seed's pre-norm Transformer encoder (3 layers, final LayerNorm) with a key
// padding mask. StateDictLayout::seed loads the seed's names (self_attn, ffn.0, ffn.3, norm1,
// norm2, final_norm); the default layout is torch.nn.TransformerEncoder's.
//   build/release/examples/heed_example_transformer_encoder
#include <heed/heed.hpp>

#include <cstdio>

int main() {
  const heed::index_t d_model = 128, n_heads = 4, d_ff = 512, num_layers = 3, seq_len = 20, batch = 4;

  const heed::nn::TransformerEncoder<float> encoder({.d_model = d_model,
                                                     .nhead = n_heads,
                                                     .dim_feedforward = d_ff,
                                                     .num_layers = num_layers,
                                                     .activation = heed::nn::Activation::relu,
                                                     .norm_first = true,
                                                     .final_norm = true,
                                                     .layout = heed::nn::StateDictLayout::seed});
  const auto x = heed::randn<float>({batch, seq_len, d_model}, 0);

  // Padding mask: true = ignore this position.
  heed::Tensor<bool, 2> key_padding_mask({batch, seq_len});
  for (heed::index_t t = 15; t < seq_len; ++t) key_padding_mask(0, t) = true;

  const auto output = encoder(x, {.src_key_padding_mask = key_padding_mask});
  std::printf("Input: %s -> Output: %s\n", heed::to_string(x.shape()).c_str(), heed::to_string(output.shape()).c_str());
  return 0;
}
