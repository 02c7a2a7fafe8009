#pragma once
// TransformerEncoder = torch.nn.TransformerEncoder: num_layers TransformerEncoderLayers
// (`layers.{i}.`) and an optional final LayerNorm (`norm.`; `final_norm.` in the seed's
// layout, seed 000 §5.1).

#include <string>
#include <vector>

#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/nn/layer_norm.hpp"
#include "heed/nn/transformer_encoder_layer.hpp"
#include "heed/nn/weights.hpp"

namespace heed::nn {

struct TransformerEncoderOptions {
  index_t d_model = 0;
  index_t nhead = 1;
  index_t dim_feedforward = 2048;
  index_t num_layers = 1;
  Activation activation = Activation::relu;
  double layer_norm_eps = 1e-5;
  bool norm_first = false;
  bool final_norm = false;
  StateDictLayout layout = StateDictLayout::torch;
  std::uint64_t seed = 0;

  [[nodiscard]] TransformerEncoderLayerOptions layer(index_t i) const {
    return {.d_model = d_model,
            .nhead = nhead,
            .dim_feedforward = dim_feedforward,
            .activation = activation,
            .layer_norm_eps = layer_norm_eps,
            .norm_first = norm_first,
            .layout = layout,
            .seed = seed + 100 * static_cast<std::uint64_t>(i)};
  }
};

template <class Scalar = float>
class TransformerEncoder {
 public:
  explicit TransformerEncoder(const TransformerEncoderOptions& o)
      : options_(o), norm_({.normalized_shape = o.d_model, .eps = o.layer_norm_eps}) {
    if (o.num_layers < 1)
      throw ShapeError("heed::nn::TransformerEncoder: num_layers must be >= 1, got " + std::to_string(o.num_layers));
    for (index_t i = 0; i < o.num_layers; ++i) layers_.emplace_back(o.layer(i));
  }

  [[nodiscard]] const TransformerEncoderOptions& options() const noexcept { return options_; }

  template <WeightSource S>
  void load(const Loader<S>& from) {
    for (std::size_t i = 0; i < layers_.size(); ++i) layers_[i].load(from.child("layers." + std::to_string(i) + "."));
    if (options_.final_norm) norm_.load(from.child(options_.layout == StateDictLayout::seed ? "final_norm." : "norm."));
  }
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    load_module(*this, source, prefix, load_options);
  }

  template <TensorLike X>
  [[nodiscard]] Tensor<Scalar, 3> operator()(const X& x, const EncoderCall& call = {}) const {
    Tensor<Scalar, 3> storage;
    const auto in = encoder_input(x, options_.d_model, "TransformerEncoder", storage);
    Tensor<Scalar, 3> out(in.shape(), uninitialized);
    layers_.front().forward(in, out.view(), call);  // then layer by layer in place
    for (std::size_t i = 1; i < layers_.size(); ++i) layers_[i].forward(out.view(), out.view(), call);
    if (options_.final_norm) norm_.rows(out.data(), out.data(), out.numel() / options_.d_model);
    return out;
  }

 private:
  TransformerEncoderOptions options_;
  std::vector<TransformerEncoderLayer<Scalar>> layers_;
  LayerNorm<Scalar> norm_;
};

}  // namespace heed::nn
