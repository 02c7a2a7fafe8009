#pragma once
// TransformerEncoder = torch.nn.TransformerEncoder: num_layers TransformerEncoderLayers
// (`layers.{i}.`) and an optional final LayerNorm (`norm.`). The seed's own encoder, with its
// own names, is heed::nn::seed::TransformerEncoder.

#include <cstdint>
#include <string>

#include "heed/core/tensor.hpp"
#include "heed/nn/activation.hpp"
#include "heed/nn/encoder_call.hpp"
#include "heed/nn/transformer_encoder_layer.hpp"
#include "heed/nn/weights.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/nn/detail/encoder_layer.hpp"

namespace heed::nn {

/// The constructor options of TransformerEncoder: the layer's options, the number of layers,
/// and whether a final LayerNorm follows them (torch's `norm=nn.LayerNorm(d_model)`).
struct TransformerEncoderOptions {
  index_t d_model = 0;                       ///< the model width
  index_t nhead = 1;                         ///< heads
  index_t dim_feedforward = 2048;            ///< the feed-forward hidden size
  index_t num_layers = 1;                    ///< encoder layers
  Activation activation = Activation::relu;  ///< the feed-forward activation
  double layer_norm_eps = 1e-5;              ///< the LayerNorms' eps
  bool norm_first = false;                   ///< LayerNorm before each block (pre-norm) instead of after (post-norm)
  bool final_norm = false;                   ///< a LayerNorm after the last layer
  std::uint64_t seed = 0;                    ///< layer i is initialized from seed + 100·i until load()
};

/// torch.nn.TransformerEncoder: see the top of this file.
template <class Scalar = float>
class TransformerEncoder {
 public:
  /// ShapeError unless d_model is a positive multiple of nhead and num_layers >= 1.
  explicit TransformerEncoder(const TransformerEncoderOptions& o)
      : options_(o),
        stack_({.d_model = o.d_model,
                .nhead = o.nhead,
                .dim_feedforward = o.dim_feedforward,
                .activation = o.activation,
                .layer_norm_eps = o.layer_norm_eps,
                .norm_first = o.norm_first,
                .seed = o.seed},
               o.num_layers, o.final_norm, "TransformerEncoder") {}

  /// The options it was built with.
  [[nodiscard]] const TransformerEncoderOptions& options() const noexcept { return options_; }

  /// Loads torch's names (see the top of this file).
  template <WeightSource S>
  void load(const Loader<S>& from) {
    stack_.load(from, {.linear1 = "linear1.", .linear2 = "linear2."}, "norm.");
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
    const auto in = detail::encoder_input(x, options_.d_model, "TransformerEncoder", storage);
    detail::check_encoder_masks(call, in.shape(), options_.nhead, "TransformerEncoder");
    return stack_.forward(in, call);
  }

 private:
  TransformerEncoderOptions options_;
  detail::EncoderStack<Scalar> stack_;
};

}  // namespace heed::nn
