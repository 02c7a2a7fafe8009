// Seed 000 §1.2: scaled dot-product attention on random Q, K, V, printing what the seed prints.
//   build/release/examples/heed_example_sdpa
#include <heed/heed.hpp>

#include <cstdio>

int main() {
  const heed::index_t batch_size = 2, n_heads = 4, seq_len_q = 5, seq_len_k = 6, d_k = 8, d_v = 16;

  const auto Q = heed::randn<float>({batch_size, n_heads, seq_len_q, d_k}, /*seed=*/0);
  const auto K = heed::randn<float>({batch_size, n_heads, seq_len_k, d_k}, 1);
  const auto V = heed::randn<float>({batch_size, n_heads, seq_len_k, d_v}, 2);

  // softmax(Q Kᵀ / sqrt(d_k)) V, with the weights kept: the seed's function returns both.
  const auto [output, attn_weights] =
      heed::attention(Q, K, V, heed::ScaledDot{}, heed::mask::None{}, {.need_weights = true});

  float row_sum = 0;
  for (heed::index_t j = 0; j < seq_len_k; ++j) row_sum += attn_weights(0, 0, 0, j);

  std::printf("Output shape: %s\n", heed::to_string(output.shape()).c_str());                   // [2, 4, 5, 16]
  std::printf("Attention weights shape: %s\n", heed::to_string(attn_weights.shape()).c_str());  // [2, 4, 5, 6]
  std::printf("Weight row sum (should be 1.0): %.4f\n", static_cast<double>(row_sum));

  // The same output without materializing the weights: memory stays O(tile).
  const auto fast = heed::scaled_dot_product_attention(Q, K, V);
  std::printf("scaled_dot_product_attention agrees: %s\n", fast(1, 3, 4, 15) == output(1, 3, 4, 15) ? "yes" : "no");
  return 0;
}
