// Seed 000 §3.3: sinusoidal positional encoding, PE(pos, 2i) = sin(pos / 10000^(2i/d)),
// PE(pos, 2i+1) = cos(pos / 10000^(2i/d)), added to the input.
//   build/release/examples/heed_example_positional_encoding
#include <heed/heed.hpp>

#include <cmath>
#include <cstdio>

int main() {
  const heed::index_t d_model = 128, seq_len = 50, batch = 4;

  const heed::nn::PositionalEncoding<float> pe({.d_model = d_model});
  const auto x = heed::randn<float>({batch, seq_len, d_model}, 0);
  const auto output = pe(x);

  std::printf("Input shape: %s\n", heed::to_string(x.shape()).c_str());
  std::printf("Output shape: %s\n", heed::to_string(output.shape()).c_str());
  std::printf("Positional encoding shape: %s\n", heed::to_string(pe.pe().shape()).c_str());  // [1, 5000, 128]
  // Position 1, dimensions 0 and 1: sin(1) and cos(1).
  std::printf("pe[0, 1, 0:2] = %.4f, %.4f (sin 1 = %.4f, cos 1 = %.4f)\n", static_cast<double>(pe.pe()(0, 1, 0)),
              static_cast<double>(pe.pe()(0, 1, 1)), std::sin(1.0), std::cos(1.0));
  return 0;
}
