#pragma once
// TransformerEncoderLayer = torch.nn.TransformerEncoderLayer(batch_first=True), inference:
//   post-norm (default):  x = norm1(x + self_attn(x)); x = norm2(x + ff(x))
//   norm_first:           x = x + self_attn(norm1(x)); x = x + ff(norm2(x))
//   ff(x) = linear2(activation(linear1(x)))
// State dict: self_attn.*, linear1.*, linear2.*, norm1.*, norm2.*. The seed's own pre-norm
// layer, with its own names, is heed::nn::seed::TransformerEncoderLayer.

#include <cstdint>
#include <string>

#include "heed/core/tensor.hpp"
#include "heed/nn/activation.hpp"
#include "heed/nn/encoder_call.hpp"
#include "heed/nn/weights.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/nn/detail/encoder_layer.hpp"

namespace heed::nn {

/// The constructor options of TransformerEncoderLayer, with torch's names.
struct TransformerEncoderLayerOptions {
  index_t d_model = 0;                       ///< the model width
  index_t nhead = 1;                         ///< heads
  index_t dim_feedforward = 2048;            ///< the feed-forward hidden size
  Activation activation = Activation::relu;  ///< the feed-forward activation
  double layer_norm_eps = 1e-5;              ///< the LayerNorms' eps
  bool norm_first = false;                   ///< LayerNorm before each block (pre-norm) instead of after (post-norm)
  std::uint64_t seed = 0;                    ///< for the PyTorch-style initialization used until load()
};

/// torch.nn.TransformerEncoderLayer(batch_first=True): see the top of this file.
template <class Scalar = float>
class TransformerEncoderLayer {
 public:
  /// ShapeError unless d_model is a positive multiple of nhead.
  explicit TransformerEncoderLayer(const TransformerEncoderLayerOptions& o)
      : options_(o),
        layer_({.d_model = o.d_model,
                .nhead = o.nhead,
                .dim_feedforward = o.dim_feedforward,
                .activation = o.activation,
                .layer_norm_eps = o.layer_norm_eps,
                .norm_first = o.norm_first,
                .seed = o.seed}) {}

  /// The options it was built with.
  [[nodiscard]] const TransformerEncoderLayerOptions& options() const noexcept { return options_; }

  /// Loads torch's names (see the top of this file).
  template <WeightSource S>
  void load(const Loader<S>& from) {
    layer_.load(from, {.linear1 = "linear1.", .linear2 = "linear2."});
  }
  /// load(Loader) from `source` under `prefix` (strict: unused names under it are an error).
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    load_module(*this, source, prefix, load_options);
  }

  /// x [B, L, d_model] → [B, L, d_model]
  template <TensorLike X>
  [[nodiscard]] Tensor<Scalar, 3> operator()(const X& x, const EncoderCall& call = {}) const {
    Tensor<Scalar, 3> storage;
    const auto in = detail::encoder_input(x, options_.d_model, "TransformerEncoderLayer", storage);
    detail::check_encoder_masks(call, in.shape(), options_.nhead, "TransformerEncoderLayer");
    Tensor<Scalar, 3> out(in.shape(), uninitialized);
    layer_.forward(in, out.view(), layer_.masks(call, in.size(0), in.size(1)));
    return out;
  }

 private:
  TransformerEncoderLayerOptions options_;
  detail::EncoderLayer<Scalar> layer_;
};

}  // namespace heed::nn
