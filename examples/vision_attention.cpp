// Seed 000 §4.1–4.3: SE block, spatial attention and CBAM on the seed's [4, 256, 32, 32] input,
// printing what the seed prints, plus the attention maps heed returns for visualization.
//   build/release/examples/heed_example_vision_attention
#include <heed/heed.hpp>

#include <algorithm>
#include <cstdio>

int main() {
  const auto x = heed::randn<float>({4, 256, 32, 32}, /*seed=*/0);

  const heed::nn::SEBlock<float> se({.channels = 256, .reduction = 16});
  std::printf("SEBlock: Input: %s -> Output: %s\n", heed::to_string(x.shape()).c_str(),
              heed::to_string(se(x).shape()).c_str());

  const heed::nn::SpatialAttention<float> spatial_attn({.kernel_size = 7});
  const auto s = spatial_attn.forward(x);
  std::printf("SpatialAttention: Input: %s -> Output: %s, map %s\n", heed::to_string(x.shape()).c_str(),
              heed::to_string(s.output.shape()).c_str(), heed::to_string(s.spatial_map.shape()).c_str());

  const heed::nn::CBAM<float> cbam({.channels = 256});
  const auto c = cbam.forward(x);
  std::printf("CBAM: Input: %s -> Output: %s, channel weights %s, spatial map %s\n", heed::to_string(x.shape()).c_str(),
              heed::to_string(c.output.shape()).c_str(), heed::to_string(c.channel_weights.shape()).c_str(),
              heed::to_string(c.spatial_map.shape()).c_str());
  // The gates are sigmoids: every weight lies in (0, 1).
  float lo = 1, hi = 0;
  for (heed::index_t i = 0; i < c.channel_weights.numel(); ++i) {
    lo = std::min(lo, c.channel_weights.data()[i]);
    hi = std::max(hi, c.channel_weights.data()[i]);
  }
  std::printf("channel weights in [%.3f, %.3f]\n", static_cast<double>(lo), static_cast<double>(hi));
  return lo > 0 && hi < 1 ? 0 : 1;
}
