#pragma once
// TransformerDecoderLayer = torch.nn.TransformerDecoderLayer(batch_first=True), inference:
//   post-norm (default):  x = norm1(x + self_attn(x)); x = norm2(x + multihead_attn(x, memory));
//                         x = norm3(x + ff(x))
//   norm_first:           x = x + self_attn(norm1(x)); x = x + multihead_attn(norm2(x), memory);
//                         x = x + ff(norm3(x))
//   ff(x) = linear2(activation(linear1(x)))
// State dict: self_attn.*, multihead_attn.*, linear1.*, linear2.*, norm1.*, norm2.*, norm3.*.
//
// Generation: make_cache({.batch, .max_len}), then {.cache = &cache} in each call. A call appends
// its target positions to the self-attention cache and attends causally over everything cached;
// the memory's keys and values are projected on the first call and reused (nn/kv_cache.hpp).

#include <cstdint>
#include <string>

#include "heed/core/tensor.hpp"
#include "heed/nn/activation.hpp"
#include "heed/nn/decoder_call.hpp"
#include "heed/nn/kv_cache.hpp"
#include "heed/nn/weights.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/nn/detail/decoder_layer.hpp"

namespace heed::nn {

/// The constructor options of TransformerDecoderLayer, with torch's names.
struct TransformerDecoderLayerOptions {
  index_t d_model = 0;                       ///< the model width
  index_t nhead = 1;                         ///< heads
  index_t dim_feedforward = 2048;            ///< the feed-forward hidden size
  Activation activation = Activation::relu;  ///< the feed-forward activation
  double layer_norm_eps = 1e-5;              ///< the LayerNorms' eps
  bool norm_first = false;                   ///< LayerNorm before each block (pre-norm) instead of after (post-norm)
  std::uint64_t seed = 0;                    ///< for the PyTorch-style initialization used until load()
};

/// torch.nn.TransformerDecoderLayer(batch_first=True): see the top of this file.
template <class Scalar = float>
class TransformerDecoderLayer {
 public:
  /// ShapeError unless d_model is a positive multiple of nhead.
  explicit TransformerDecoderLayer(const TransformerDecoderLayerOptions& o)
      : options_(o),
        layer_({.d_model = o.d_model,
                .nhead = o.nhead,
                .dim_feedforward = o.dim_feedforward,
                .activation = o.activation,
                .layer_norm_eps = o.layer_norm_eps,
                .norm_first = o.norm_first,
                .seed = o.seed}) {}

  /// The options it was made with.
  [[nodiscard]] const TransformerDecoderLayerOptions& options() const noexcept { return options_; }

  /// A cache for generation with this layer.
  [[nodiscard]] DecoderCache<Scalar> make_cache(const KVCacheOptions& o) const {
    return DecoderCache<Scalar>(1, o.batch, options_.nhead, layer_.head_dim(), o.max_len);
  }

  /// Loads torch's names (see the top of this file).
  template <WeightSource S>
  void load(const Loader<S>& from) {
    layer_.load(from);
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
    const auto [x, m] = detail::decoder_inputs<Scalar>(tgt, memory, layer_.config(), 1, call, "TransformerDecoderLayer",
                                                       tgt_storage, memory_storage);
    Tensor<Scalar, 3> out(x.shape(), uninitialized);
    layer_.forward(x, m, out.view(), layer_.masks(call, x.size(0), x.size(1), m.size(1)), call.cache, 0);
    return out;
  }

 private:
  TransformerDecoderLayerOptions options_;
  detail::DecoderLayer<Scalar> layer_;
};

}  // namespace heed::nn
