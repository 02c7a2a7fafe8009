// The demo, part 1: the seed's AttentionClassifier (seed 000 §6.1), trained in PyTorch on six
// categories of Debian's `fortunes` (examples/train/train_fortunes.py), run by heed.
//
//   heed_demo_fortunes [data dir] [output dir]
//
// Builds the model from its safetensors file alone (the options travel in __metadata__),
// tokenizes the test fortunes as the training script did, classifies them, compares with the
// logits PyTorch wrote, and draws the attention-pooling weights of a few fortunes as SVG, with
// the words on the axis. Exits non-zero unless heed agrees with every PyTorch prediction.
#include <heed/heed.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace fs = std::filesystem;
using heed::index_t;

namespace {

// ASCII-lowercased runs of [a-z0-9'], at most max_tokens: the training script's tokenize().
std::vector<std::string> tokenize(const std::string& text, std::size_t max_tokens) {
  std::vector<std::string> words;
  std::string word;
  const auto flush = [&] {
    if (!word.empty() && words.size() < max_tokens) words.push_back(word);
    word.clear();
  };
  for (const char c : text) {
    const char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    if ((lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9') || lower == '\'')
      word += lower;
    else
      flush();
  }
  flush();
  return words;
}

struct Example {
  std::string category, text;
  std::vector<std::string> words;
  std::vector<std::int32_t> ids;
};

std::vector<std::string> read_lines(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw heed::IoError("cannot open " + path.string());
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string shorten(const std::string& s, std::size_t n) {
  return s.size() <= n ? s : s.substr(0, n - 3) + "...";
}

}  // namespace

int main(int argc, char** argv) try {
  const fs::path data = argc > 1 ? fs::path(argv[1]) : fs::path(HEED_EXAMPLES_DATA_DIR);
  const fs::path out = argc > 2 ? fs::path(argv[2]) : fs::path("heed-demo");
  fs::create_directories(out);

  // 1. The model, from its file alone.
  const auto file = heed::io::SafeTensors::open(data / "fortunes_classifier.safetensors");
  const auto model = heed::nn::seed::AttentionClassifier<float>::from_safetensors(file);
  std::vector<std::string> classes;
  const auto class_names = heed::io::Json::parse(file.metadata("classes", "[]"), "classes");
  for (const auto& c : class_names.as_array()) classes.push_back(c.as_string());
  const auto max_tokens = static_cast<std::size_t>(std::stoul(file.metadata("max_tokens", "64")));
  const auto& o = model.options();
  std::printf("AttentionClassifier from %s: vocab %ld, embed %ld, %ld layers x %ld heads, classes:",
              (data / "fortunes_classifier.safetensors").string().c_str(), o.vocab_size, o.embed_dim, o.num_layers,
              o.n_heads);
  for (const auto& c : classes) std::printf(" %s", c.c_str());
  std::printf("\n");

  // 2. The test set, tokenized as in training (id 1 = unknown word, 0 = padding).
  std::unordered_map<std::string, std::int32_t> vocab;
  const auto words = read_lines(data / "fortunes_vocab.txt");
  for (std::size_t i = 0; i < words.size(); ++i) vocab.emplace(words[i], static_cast<std::int32_t>(i));
  std::vector<Example> test;
  for (const auto& line : read_lines(data / "fortunes_test.tsv")) {
    const auto tab = line.find('\t');
    Example e{line.substr(0, tab), line.substr(tab + 1), {}, {}};
    e.words = tokenize(e.text, max_tokens);
    for (const auto& w : e.words) {
      const auto it = vocab.find(w);
      e.ids.push_back(it == vocab.end() ? 1 : it->second);
    }
    test.push_back(std::move(e));
  }
  const auto reference = heed::io::SafeTensors::open(data / "fortunes_reference.safetensors");
  const auto torch_ids = reference.get<std::int32_t, 2>("ids");
  const auto torch_logits = reference.get<float, 2>("logits");
  const auto torch_predictions = reference.get<std::int64_t, 1>("predictions");
  const auto labels = reference.get<std::int64_t, 1>("labels");
  const auto n = static_cast<index_t>(test.size());
  if (torch_ids.size(0) != n) throw heed::FormatError("the test set and PyTorch's reference differ in size");
  index_t tokens_agree = 0;
  for (index_t i = 0; i < n; ++i) {
    bool same = true;
    for (index_t t = 0; t < torch_ids.size(1); ++t) {
      const auto ours = t < static_cast<index_t>(test[static_cast<std::size_t>(i)].ids.size())
                            ? test[static_cast<std::size_t>(i)].ids[static_cast<std::size_t>(t)]
                            : 0;
      same = same && ours == torch_ids(i, t);
    }
    tokens_agree += same;
  }
  std::printf("Test set: %ld fortunes; token ids identical to PyTorch's for %ld of them\n", n, tokens_agree);

  // 3. Classify in batches of 64, each padded to its longest fortune (as the script did).
  heed::Tensor<float, 2> logits({n, static_cast<index_t>(classes.size())});
  std::vector<heed::Tensor<float, 2>> pooling;  // per batch: [batch, L]
  const auto start = std::chrono::steady_clock::now();
  for (index_t b0 = 0; b0 < n; b0 += 64) {
    const index_t bn = std::min<index_t>(64, n - b0);
    std::size_t longest = 0;
    for (index_t i = b0; i < b0 + bn; ++i) longest = std::max(longest, test[static_cast<std::size_t>(i)].ids.size());
    heed::Tensor<std::int64_t, 2> ids({bn, static_cast<index_t>(longest)});
    for (index_t i = 0; i < bn; ++i) {
      const auto& e = test[static_cast<std::size_t>(b0 + i)].ids;
      for (std::size_t t = 0; t < e.size(); ++t) ids(i, static_cast<index_t>(t)) = e[t];
    }
    auto result = model(ids);
    for (index_t i = 0; i < bn; ++i)
      for (index_t c = 0; c < logits.size(1); ++c) logits(b0 + i, c) = result.logits(i, c);
    pooling.push_back(std::move(result.weights));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  index_t correct = 0, torch_correct = 0, agree = 0;
  double max_diff = 0;
  for (index_t i = 0; i < n; ++i) {
    index_t best = 0;
    for (index_t c = 0; c < logits.size(1); ++c) {
      if (logits(i, c) > logits(i, best)) best = c;
      max_diff = std::max(max_diff, static_cast<double>(std::abs(logits(i, c) - torch_logits(i, c))));
    }
    correct += best == labels(i);
    torch_correct += torch_predictions(i) == labels(i);
    agree += best == torch_predictions(i);
  }
  const auto percent = [n](index_t k) { return 100.0 * static_cast<double>(k) / static_cast<double>(n); };
  std::printf("heed accuracy: %.2f%% (PyTorch: %.2f%%; chance: %.2f%%)\n", percent(correct), percent(torch_correct),
              100.0 / static_cast<double>(classes.size()));
  std::printf("Agreement with PyTorch's predictions: %.1f%% (%ld of %ld)\n", percent(agree), agree, n);
  std::printf("Max |logit difference| vs PyTorch: %.2e\n", max_diff);
  std::printf("Speed: %.0f sentences/s (%d threads, batches of 64)\n", static_cast<double>(n) / seconds,
              heed::num_threads());

  // 4. What the model looked at: the pooling weights over the words of a few fortunes.
  std::printf("Attention-pooling heatmaps:\n");
  int drawn = 0;
  for (index_t i = 0; i < n && drawn < 4; ++i) {
    const Example& e = test[static_cast<std::size_t>(i)];
    if (e.words.size() < 8 || e.words.size() > 24) continue;
    const auto& w = pooling[static_cast<std::size_t>(i / 64)];
    heed::Tensor<float, 2> row({1, static_cast<index_t>(e.words.size())});
    for (index_t t = 0; t < row.size(1); ++t) row(0, t) = w(i % 64, t);
    index_t best = 0;
    for (index_t c = 0; c < logits.size(1); ++c)
      if (logits(i, c) > logits(i, best)) best = c;
    const fs::path svg = out / ("fortune_" + std::to_string(i) + "_pooling.svg");
    heed::io::write_heatmap_svg(
        svg, row,
        {.title = "\"" + shorten(e.text, 70) + "\"",
         .x_labels = e.words,
         .y_labels = {"pool"},
         .panel_titles = {"predicted " + classes[static_cast<std::size_t>(best)] + ", labelled " + e.category},
         .x_axis = "word",
         .y_axis = "",
         .cell = 28});
    std::printf("  %s\n", svg.string().c_str());
    ++drawn;
  }
  if (agree != n || correct != torch_correct || tokens_agree != n) {
    std::printf("Verdict: MISMATCH with PyTorch\n");
    return 1;
  }
  std::printf("Verdict: heed matches PyTorch (same accuracy%s)\n", ", every prediction, every token");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "heed_demo_fortunes: %s\n", e.what());
  return 2;
}
