#pragma once
// TransformerDecoder = torch.nn.TransformerDecoder: num_layers TransformerDecoderLayers
// (`layers.{i}.`) and an optional final LayerNorm (`norm.`). With a cache (make_cache) each layer
// keeps its self-attention keys and values and its projected memory (nn/kv_cache.hpp's
// DecoderCache): a prompt in one call, then one call per generated token.

#include <cstdint>
#include <string>
#include <vector>

#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/nn/activation.hpp"
#include "heed/nn/decoder_call.hpp"
#include "heed/nn/kv_cache.hpp"
#include "heed/nn/layer_norm.hpp"
#include "heed/nn/weights.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/nn/detail/decoder_layer.hpp"

namespace heed::nn {

/// The constructor options of TransformerDecoder: the layer's options, the number of layers,
/// and whether a final LayerNorm follows them (torch's `norm=nn.LayerNorm(d_model)`).
struct TransformerDecoderOptions {
  index_t d_model = 0;                       ///< the model width
  index_t nhead = 1;                         ///< heads
  index_t dim_feedforward = 2048;            ///< the feed-forward hidden size
  index_t num_layers = 1;                    ///< decoder layers
  Activation activation = Activation::relu;  ///< the feed-forward activation
  double layer_norm_eps = 1e-5;              ///< the LayerNorms' eps
  bool norm_first = false;                   ///< LayerNorm before each block (pre-norm) instead of after (post-norm)
  bool final_norm = false;                   ///< a LayerNorm after the last layer
  std::uint64_t seed = 0;                    ///< layer i is initialized from seed + 100·i until load()
};

/// torch.nn.TransformerDecoder: see the top of this file.
template <class Scalar = float>
class TransformerDecoder {
 public:
  /// ShapeError unless d_model is a positive multiple of nhead and num_layers >= 1.
  explicit TransformerDecoder(const TransformerDecoderOptions& o)
      : options_(o), norm_({.normalized_shape = o.d_model, .eps = o.layer_norm_eps}) {
    if (o.num_layers < 1)
      throw ShapeError("heed::nn::TransformerDecoder: num_layers must be >= 1, got " + std::to_string(o.num_layers));
    for (index_t i = 0; i < o.num_layers; ++i)
      layers_.emplace_back(detail::DecoderLayerConfig{.d_model = o.d_model,
                                                      .nhead = o.nhead,
                                                      .dim_feedforward = o.dim_feedforward,
                                                      .activation = o.activation,
                                                      .layer_norm_eps = o.layer_norm_eps,
                                                      .norm_first = o.norm_first,
                                                      .seed = o.seed + 100 * static_cast<std::uint64_t>(i)});
  }

  /// The options it was made with.
  [[nodiscard]] const TransformerDecoderOptions& options() const noexcept { return options_; }

  /// A cache for generation: every layer's self-attention keys and values and its projected memory.
  [[nodiscard]] DecoderCache<Scalar> make_cache(const KVCacheOptions& o) const {
    return DecoderCache<Scalar>(options_.num_layers, o.batch, options_.nhead, layers_.front().head_dim(), o.max_len);
  }

  /// Loads torch's names (see the top of this file).
  template <WeightSource S>
  void load(const Loader<S>& from) {
    for (std::size_t i = 0; i < layers_.size(); ++i) layers_[i].load(from.child("layers." + std::to_string(i) + "."));
    if (options_.final_norm) norm_.load(from.child("norm."));
  }
  /// load(Loader) from `source` under `prefix` (strict: unused names under it are an error).
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    load_module(*this, source, prefix, load_options);
  }

  /// tgt [B, L, d_model], memory [B, S, d_model] → [B, L, d_model]
  template <TensorLike T, TensorLike M>
  [[nodiscard]] Tensor<Scalar, 3> operator()(const T& tgt, const M& memory,
                                             const DecoderCall<Scalar>& call = {}) const {
    Tensor<Scalar, 3> tgt_storage, memory_storage;
    const auto [x, m] = detail::decoder_inputs<Scalar>(tgt, memory, layers_.front().config(), options_.num_layers, call,
                                                       "TransformerDecoder", tgt_storage, memory_storage);
    Tensor<Scalar, 3> out(x.shape(), uninitialized);
    const auto masks = layers_.front().masks(call, x.size(0), x.size(1), m.size(1));  // one for every layer
    layers_.front().forward(x, m, out.view(), masks, call.cache, 0);                  // then layer by layer in place
    for (std::size_t i = 1; i < layers_.size(); ++i)
      layers_[i].forward(out.view(), m, out.view(), masks, call.cache, static_cast<index_t>(i));
    if (options_.final_norm) norm_.rows(out.data(), out.data(), out.numel() / options_.d_model);
    return out;
  }

 private:
  TransformerDecoderOptions options_;
  std::vector<detail::DecoderLayer<Scalar>> layers_;
  LayerNorm<Scalar> norm_;
};

}  // namespace heed::nn
