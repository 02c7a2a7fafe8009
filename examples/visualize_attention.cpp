// Seed 000 §5.2: visualize_attention without matplotlib. Writes the heads of simulated attention
// weights (softmax of random scores) as an SVG (token labels, color bar) and a PNG.
//   build/release/examples/heed_example_visualize_attention [output dir]
#include <heed/heed.hpp>

#include <cstdio>
#include <filesystem>

int main(int argc, char** argv) {
  const std::filesystem::path out = argc > 1 ? argv[1] : ".";
  std::filesystem::create_directories(out);
  const heed::index_t n_heads = 4, seq_len = 8;

  // Simulated attention weights after training.
  const auto attention_weights = heed::softmax(heed::randn<float>({n_heads, seq_len, seq_len}, 0));
  const std::vector<std::string> tokens = {"The", "cat", "sat", "on", "the", "mat", ".", "[PAD]"};

  const heed::io::HeatmapOptions options{.title = "Attention weights", .x_labels = tokens, .y_labels = tokens};
  heed::io::write_heatmap_svg(out / "attention.svg", attention_weights, options);
  heed::io::write_heatmap_png(out / "attention.png", attention_weights, options);
  std::printf("Wrote %s and %s: %ld heads of %ld x %ld weights\n", (out / "attention.svg").string().c_str(),
              (out / "attention.png").string().c_str(), n_heads, seq_len, seq_len);
  return 0;
}
