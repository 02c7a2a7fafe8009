#pragma once
// The generation demo's model (examples/train/train_char_lm.py trains it): a character-level
// language model in the Llama layout, assembled from heed's modules.
//
//   x = embed_tokens(ids)
//   per layer:  x = x + self_attn(input_layernorm(x))           nn::RMSNorm, nn::Attention
//               x = x + mlp(post_attention_layernorm(x))         nn::RMSNorm, nn::SwiGLU
//   logits = lm_head(norm(x))                                     nn::RMSNorm, nn::Linear
//
// self_attn: 8 query heads over 2 key/value heads, rotary positions (Llama's rotate_half), a
// KV cache per layer. The tensors carry the Hugging Face names (model.layers.0.self_attn.q_proj
// .weight, ...) and the file's __metadata__ carries the options and the vocabulary ("heed.config",
// read with nn::ModuleConfig), so CharLM<T>::from_file builds the model from the file alone.
// Scalar is the storage of the weights, activations and cache (float, or bfloat16 / half: the
// bfloat16 file is loaded as it is); the logits are float in every case (lm_head keeps float
// weights), so that a 16-bit model's argmax does not see ties made by rounding.
//
// Used by examples/demo_generate.cpp and benchmarks/nn/bench_generate.cpp. Not library API.
#include <heed/heed.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace char_lm {

using heed::index_t;

/// The options in the file's "heed.config", with train_char_lm.py's names.
struct Config {
  index_t dim = 0, layers = 0, heads = 0, kv_heads = 0, ffn_hidden = 0, vocab_size = 0, context_length = 0;
  double rope_theta = 10000.0, rms_norm_eps = 1e-5;
  std::string vocab;  ///< character i is token id i
};

/// Per layer, the attention's KVCache, for `batch` sequences of up to `capacity` positions.
template <class Scalar>
struct Cache {
  std::vector<heed::nn::KVCache<Scalar>> layers;
  /// Keeps the first `length` positions of sequence b (after a right-padded prompt).
  void truncate_row(index_t b, index_t length) {
    for (auto& c : layers) c.truncate_row(b, length);
  }
  /// Keeps at most `length` positions of every sequence.
  void truncate(index_t length) {
    for (auto& c : layers) c.truncate(length);
  }
};

template <class Scalar = float>
class CharLM {
 public:
  /// The model in a file written by train_char_lm.py: FormatError when the file holds another
  /// module, misses an option or a tensor; ShapeError when a tensor's shape is not the options'.
  static CharLM from_file(const std::filesystem::path& path) {
    const auto file = heed::io::SafeTensors::open(path);
    Config c;
    heed::nn::ModuleConfig::from_metadata(file, "CharLM")
        .read("dim", c.dim)
        .read("layers", c.layers)
        .read("heads", c.heads)
        .read("kv_heads", c.kv_heads)
        .read("ffn_hidden", c.ffn_hidden)
        .read("vocab_size", c.vocab_size)
        .read("context_length", c.context_length)
        .read("rope_theta", c.rope_theta)
        .read("rms_norm_eps", c.rms_norm_eps)
        .read("vocab", c.vocab)
        .finish();
    if (c.dim < 1 || c.layers < 1 || c.ffn_hidden < 1 || c.context_length < 1 ||
        c.vocab_size != static_cast<index_t>(c.vocab.size()))
      throw heed::FormatError(path.string() + ": heed.config needs dim, layers, ffn_hidden, context_length >= 1 " +
                              "and vocab_size = the vocabulary's length (" + std::to_string(c.vocab.size()) +
                              "), got " + std::to_string(c.vocab_size));
    CharLM model(c);
    model.load(file);
    return model;
  }

  explicit CharLM(const Config& c)
      : config_(c),
        embed_tokens_({.num_embeddings = c.vocab_size, .embedding_dim = c.dim}),
        norm_({.normalized_shape = c.dim, .eps = c.rms_norm_eps}),
        lm_head_({.in_features = c.dim, .out_features = c.vocab_size, .bias = false}) {
    for (index_t i = 0; i < c.layers; ++i)
      layers_.push_back(Layer{
          .input_layernorm = heed::nn::RMSNorm<Scalar>({.normalized_shape = c.dim, .eps = c.rms_norm_eps}),
          .self_attn = heed::nn::Attention<Scalar>(
              {.embed_dim = c.dim,
               .num_heads = c.heads,
               .num_kv_heads = c.kv_heads,
               .rotary = heed::RotaryOptions{.base = c.rope_theta, .max_positions = c.context_length}}),
          .post_attention_layernorm = heed::nn::RMSNorm<Scalar>({.normalized_shape = c.dim, .eps = c.rms_norm_eps}),
          .mlp = heed::nn::SwiGLU<Scalar>({.dim = c.dim, .hidden_dim = c.ffn_hidden})});
  }

  [[nodiscard]] const Config& config() const noexcept { return config_; }

  /// Every weight under its Hugging Face name (strict: a tensor the model does not use is an error).
  template <heed::nn::WeightSource S>
  void load(const S& file) {
    heed::nn::Loader<S> from(file, "", {.strict = true});
    embed_tokens_.load(from.child("model.embed_tokens."));
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      Layer& l = layers_[i];
      const auto layer = from.child("model.layers." + std::to_string(i) + ".");
      l.input_layernorm.load(layer.child("input_layernorm."));
      l.self_attn.load(layer.child("self_attn."));
      l.post_attention_layernorm.load(layer.child("post_attention_layernorm."));
      l.mlp.load(layer.child("mlp."));
    }
    norm_.load(from.child("model.norm."));
    lm_head_.load(from.child("lm_head."));
    from.finish();
  }

  /// The token ids of `text`. ShapeError naming the first character outside the vocabulary and
  /// its position.
  [[nodiscard]] std::vector<std::int32_t> encode(std::string_view text) const {
    std::vector<std::int32_t> ids;
    ids.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
      const auto at = config_.vocab.find(text[i]);
      if (at == std::string::npos) {
        const auto code = static_cast<unsigned>(static_cast<unsigned char>(text[i]));
        throw heed::ShapeError("char_lm: the character with code " + std::to_string(code) + " at position " +
                               std::to_string(i) + " is not in the model's vocabulary (printable ASCII and newline)");
      }
      ids.push_back(static_cast<std::int32_t>(at));
    }
    return ids;
  }
  [[nodiscard]] std::string decode(const std::vector<std::int32_t>& ids) const {
    std::string text;
    for (const auto id : ids) text += config_.vocab[static_cast<std::size_t>(id)];
    return text;
  }

  /// A cache for `batch` sequences of up to `capacity` positions each. ShapeError when capacity
  /// exceeds the model's context (its rotary table and what it was built for).
  [[nodiscard]] Cache<Scalar> make_cache(index_t batch, index_t capacity) const {
    if (capacity > config_.context_length)
      throw heed::ShapeError("char_lm: a cache of " + std::to_string(capacity) + " positions exceeds the context of " +
                             std::to_string(config_.context_length));
    Cache<Scalar> cache;
    for (const Layer& l : layers_)
      cache.layers.push_back(l.self_attn.make_cache({.batch = batch, .max_len = capacity}));
    return cache;
  }

  /// ids [B, L] appended to the cache's sequences → float logits [B, L, vocab] (with
  /// `last_only`, [B, 1, vocab] of each row's last position: what generation needs). Without a
  /// cache the L positions are attended causally from position 0. ShapeError when a sequence
  /// would exceed the cache's capacity (the cache is left unchanged then) or L the context.
  template <heed::TensorLike Ids>
  [[nodiscard]] heed::Tensor<float, 3> operator()(const Ids& ids, Cache<Scalar>* cache = nullptr,
                                                  bool last_only = false) const {
    const auto v = heed::as_view(ids);
    const index_t B = v.size(0), L = v.size(1);
    if (!cache && L > config_.context_length)
      throw heed::ShapeError("char_lm: " + std::to_string(L) + " positions exceed the context of " +
                             std::to_string(config_.context_length));
    if (cache) {
      const auto& first = cache->layers.front();
      if (first.batch() != B)
        throw heed::ShapeError("char_lm: the cache holds " + std::to_string(first.batch()) + " sequences, ids " +
                               heed::to_string(v.shape()));
      for (index_t b = 0; b < B; ++b)
        if (first.length(b) + L > first.capacity())
          throw heed::ShapeError("char_lm: sequence " + std::to_string(b) + " holds " +
                                 std::to_string(first.length(b)) + " positions; " + std::to_string(L) +
                                 " more exceed the cache's capacity of " + std::to_string(first.capacity()));
    }
    heed::Tensor<Scalar, 3> x = embed_tokens_(ids);
    const index_t rows = B * L, d = config_.dim;
    heed::Tensor<Scalar, 3> h(x.shape(), heed::uninitialized);
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      const Layer& l = layers_[i];
      l.input_layernorm.rows(x.data(), h.data(), rows);
      const auto attended = l.self_attn(h, {.causal = true, .cache = cache ? &cache->layers[i] : nullptr});
      add(attended.data(), x.data(), rows * d);
      l.post_attention_layernorm.rows(x.data(), h.data(), rows);
      l.mlp.rows_add(h.data(), x.data(), x.data(), rows);
    }
    // the final norm and lm_head on the rows wanted, in float
    const index_t out_rows = last_only ? B : rows;
    heed::Tensor<float, 2> normed({out_rows, d}, heed::uninitialized);
    for (index_t r = 0; r < out_rows; ++r) {
      const index_t source = last_only ? r * L + (L - 1) : r;
      norm_.rows(x.data() + source * d, h.data(), 1);
      for (index_t c = 0; c < d; ++c) normed(r, c) = static_cast<float>(h.data()[c]);
    }
    heed::Tensor<float, 3> logits({B, last_only ? 1 : L, config_.vocab_size}, heed::uninitialized);
    lm_head_.rows(normed.view(), heed::TensorView<float, 2>(logits.data(), {out_rows, config_.vocab_size}));
    return logits;
  }

  /// Bytes of every weight (what one generation step reads, besides the cache).
  [[nodiscard]] std::size_t weight_bytes() const noexcept {
    const auto c = static_cast<std::size_t>(config_.dim), f = static_cast<std::size_t>(config_.ffn_hidden),
               kv = static_cast<std::size_t>(config_.dim / config_.heads * config_.kv_heads),
               v = static_cast<std::size_t>(config_.vocab_size);
    const std::size_t per_layer = (2 * c * c + 2 * c * kv + 3 * c * f + 2 * c) * sizeof(Scalar);
    return static_cast<std::size_t>(config_.layers) * per_layer + v * c * sizeof(Scalar) + c * sizeof(Scalar) +
           v * c * sizeof(float);
  }

 private:
  struct Layer {
    heed::nn::RMSNorm<Scalar> input_layernorm;
    heed::nn::Attention<Scalar> self_attn;
    heed::nn::RMSNorm<Scalar> post_attention_layernorm;
    heed::nn::SwiGLU<Scalar> mlp;
  };

  // y += x, 16-bit values added in float and rounded once.
  static void add(const Scalar* x, Scalar* y, index_t n) noexcept {
    if constexpr (heed::is_16bit_float_v<Scalar>) {
      const heed::simd::ConvertKernels<Scalar>& convert = heed::simd::convert_kernels<Scalar>();
      constexpr index_t chunk = 256;
      float xf[chunk], yf[chunk];
      for (index_t i = 0; i < n; i += chunk) {
        const index_t m = std::min(chunk, n - i);
        convert.widen(x + i, xf, m);
        convert.widen(y + i, yf, m);
        heed::simd::add(xf, yf, m);
        convert.narrow(yf, y + i, m);
      }
    } else {
      heed::simd::add(x, y, n);
    }
  }

  Config config_;
  heed::nn::Embedding<Scalar> embed_tokens_;
  std::vector<Layer> layers_;
  heed::nn::RMSNorm<Scalar> norm_;
  heed::nn::Linear<float> lm_head_;
};

}  // namespace char_lm
