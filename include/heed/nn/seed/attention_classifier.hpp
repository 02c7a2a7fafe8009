#pragma once
// seed::AttentionClassifier (the tutorial's classifier, in PyTorch in examples/train/common.py): token ids → logits,
// with attention pooling. (heed::nn::AttentionClassifier, its name before 0.1, is a deprecated alias:
// heed/nn/attention_classifier.hpp.)
//   x = embedding(ids) · sqrt(E) + PE;  x = transformer(x, padding = (ids == 0))
//   pooled, weights = attn_pool(x, padding);  logits = classifier.3(gelu(classifier.0(pooled)))
// State dict: embedding.weight, pos_encoding.pe (optional: heed computes the same table),
// transformer.layers.{i}.* (nn.TransformerEncoder, gelu, post-norm), attn_pool.0.*,
// classifier.0.*, classifier.3.*.
// from_file(path) builds the model from a safetensors file alone when its __metadata__ carries
// "heed.config" (the options as JSON), as examples/train/train_fortunes.py writes it.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>

#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/nn/activation.hpp"
#include "heed/io/safetensors.hpp"
#include "heed/nn/attention_pooling.hpp"
#include "heed/nn/config.hpp"
#include "heed/nn/embedding.hpp"
#include "heed/nn/linear.hpp"
#include "heed/nn/positional_encoding.hpp"
#include "heed/nn/transformer_encoder.hpp"
#include "heed/nn/weights.hpp"

namespace heed::nn::seed {

/// The constructor options of AttentionClassifier, with the seed's names.
struct AttentionClassifierOptions {
  index_t vocab_size = 0;   ///< tokens in the vocabulary
  index_t embed_dim = 0;    ///< the model width E
  index_t hidden_dim = 0;   ///< the classifier head's hidden layer
  index_t num_classes = 0;  ///< output classes
  index_t n_heads = 4;      ///< attention heads per encoder layer
  index_t num_layers = 2;   ///< encoder layers
  index_t max_len = 5000;   ///< positions the positional encoding covers
  std::uint64_t seed = 0;   ///< for the PyTorch-style initialization used until load()
};

/// What AttentionClassifier returns.
template <class Scalar>
struct ClassifierResult {
  Tensor<Scalar, 2> logits;   ///< [B, num_classes]
  Tensor<Scalar, 2> weights;  ///< [B, L], the attention-pooling weights
};

/// The seed's attention-pooling text classifier: see the top of this file.
template <class Scalar = float>
class AttentionClassifier {
 public:
  /// The model for `o`, initialized as PyTorch initializes it (from heed's seeded generator, not PyTorch's stream)
  /// until load().
  explicit AttentionClassifier(const AttentionClassifierOptions& o)
      : options_(o),
        embedding_({.num_embeddings = o.vocab_size, .embedding_dim = o.embed_dim, .padding_idx = 0, .seed = o.seed}),
        pos_encoding_({.d_model = o.embed_dim, .max_len = o.max_len}),
        transformer_({.d_model = o.embed_dim,
                      .nhead = o.n_heads,
                      .dim_feedforward = o.hidden_dim,
                      .num_layers = o.num_layers,
                      .activation = Activation::gelu,
                      .seed = o.seed + 1000}),
        attn_pool_({.embed_dim = o.embed_dim, .seed = o.seed + 2000}),
        hidden_({.in_features = o.embed_dim, .out_features = o.hidden_dim, .seed = o.seed + 3000}),
        out_({.in_features = o.hidden_dim, .out_features = o.num_classes, .seed = o.seed + 3002}) {
    if (o.num_classes < 1) throw ShapeError("heed::nn::seed::AttentionClassifier: num_classes must be >= 1");
  }

  /// The options it was built with.
  [[nodiscard]] const AttentionClassifierOptions& options() const noexcept { return options_; }

  /// The model described by a file's metadata, with every parameter loaded (strictly: a tensor
  /// nothing uses is an error too). FormatError/ShapeError/IoError name the file.
  [[nodiscard]] static AttentionClassifier from_file(const std::filesystem::path& path) {
    return from_safetensors(io::SafeTensors::open(path));
  }
  /// As from_file, from an opened file.
  [[nodiscard]] static AttentionClassifier from_safetensors(const io::SafeTensors& file) {
    AttentionClassifierOptions o;
    ModuleConfig config = ModuleConfig::from_metadata(file, "AttentionClassifier");
    config.read("vocab_size", o.vocab_size)
        .read("embed_dim", o.embed_dim)
        .read("hidden_dim", o.hidden_dim)
        .read("num_classes", o.num_classes)
        .read("n_heads", o.n_heads)
        .read("num_layers", o.num_layers)
        .read("max_len", o.max_len)
        .finish();
    config.require_values(file, parameters_at_least(o, file.contains("pos_encoding.pe")),
                          "vocab_size " + std::to_string(o.vocab_size) + ", embed_dim " + std::to_string(o.embed_dim) +
                              ", hidden_dim " + std::to_string(o.hidden_dim) + ", num_classes " +
                              std::to_string(o.num_classes) + ", num_layers " + std::to_string(o.num_layers) +
                              ", max_len " + std::to_string(o.max_len));
    AttentionClassifier model(o);
    model.load(file, "", {.strict = true});
    return model;
  }

  /// Loads the parameters through `from`, under PyTorch's state_dict names; FormatError or ShapeError names a missing
  /// or misshapen one.
  template <WeightSource S>
  void load(const Loader<S>& from) {
    embedding_.load(from.child("embedding."));
    pos_encoding_.load(from.child("pos_encoding."));
    transformer_.load(from.child("transformer."));
    attn_pool_.load(from.child("attn_pool."));
    hidden_.load(from.child("classifier.0."));
    out_.load(from.child("classifier.3."));
  }
  /// Loads the parameters from a weight source (io::SafeTensors, TensorDict) under `prefix`, with PyTorch's state_dict
  /// names; with `load_options.strict`, a name under the prefix that nothing loaded is a FormatError.
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    load_module(*this, source, prefix, load_options);
  }

  /// ids [B, L] (0 = padding) → logits [B, num_classes] and pooling weights [B, L].
  template <TensorLike Ids>
  [[nodiscard]] ClassifierResult<Scalar> operator()(const Ids& ids) const {
    const auto v = as_view(ids);
    if (v.size(1) < 1)
      throw ShapeError("heed::nn::seed::AttentionClassifier: empty sequences (ids " + to_string(v.shape()) + ")");
    Tensor<bool, 2> padding(v.shape());
    for (index_t b = 0; b < v.size(0); ++b)
      for (index_t t = 0; t < v.size(1); ++t) padding(b, t) = v(b, t) == 0;
    Tensor<Scalar, 3> x = embedding_(v, static_cast<Scalar>(std::sqrt(static_cast<double>(options_.embed_dim))));
    pos_encoding_.add_to(x);
    x = transformer_(x, {.src_key_padding_mask = padding});
    auto pooled = attn_pool_(x, padding);
    Tensor<Scalar, 2> hidden = hidden_(pooled.pooled);
    apply_activation(Activation::gelu, hidden.data(), hidden.numel());
    return {out_(hidden), std::move(pooled.weights)};
  }

 private:
  // The values a file must hold for these options: the embedding, the encoder's projections and
  // feed-forward matrices, the head's two matrices, and the positional table when the file
  // stores it (a computed table may be up to 4 Mi values larger than the file). A lower bound of
  // the parameter count (biases and norms left out), so no valid file is refused by it; every
  // allocation the constructor makes is within a small factor of it.
  [[nodiscard]] static std::int64_t parameters_at_least(const AttentionClassifierOptions& o, bool stores_positions) {
    const auto mul = ModuleConfig::saturating_product;
    const auto add = ModuleConfig::saturating_sum;
    const std::int64_t e = o.embed_dim, f = o.hidden_dim;
    std::int64_t n = mul(o.vocab_size, e);
    n = add(n, mul(o.num_layers, add(mul(mul(4, e), e), mul(mul(2, f), e))));
    n = add(n, add(mul(e, f), mul(f, o.num_classes)));
    const std::int64_t table = mul(o.max_len, e);
    return stores_positions ? add(n, table) : std::max(n, table - (std::int64_t{1} << 22));
  }

  AttentionClassifierOptions options_;
  Embedding<Scalar> embedding_;
  PositionalEncoding<Scalar> pos_encoding_;
  nn::TransformerEncoder<Scalar> transformer_;  // torch's, not the seed's pre-norm encoder
  AttentionPooling<Scalar> attn_pool_;
  Linear<Scalar> hidden_, out_;
};

}  // namespace heed::nn::seed
