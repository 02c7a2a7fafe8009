#pragma once
// SEBlock: squeeze-and-excitation channel attention (seed 000 §4.1).
//   y = x · sigmoid(W2 relu(W1 avgpool(x)))       x, y [B, C, H, W]
// Loads the seed's state_dict (excitation.0.weight [C/r, C], excitation.2.weight [C, C/r])
// or torchvision's SqueezeExcitation (fc1.weight/bias, fc2.weight/bias as 1×1 convolutions).
// Two passes over x: one to pool, one to scale; memory-bound by design.

#include <string>

#include "heed/core/error.hpp"
#include "heed/core/parallel.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/pooling.hpp"
#include "heed/nn/vision/channel_gate.hpp"
#include "heed/nn/weights.hpp"
#include "heed/simd/vector_ops.hpp"

namespace heed::nn {

struct SEBlockOptions {
  index_t channels = 0;
  index_t reduction = 16;
  index_t squeeze_channels = 0;  ///< hidden size; 0: channels / reduction (torchvision files may differ)
  std::uint64_t seed = 0;        ///< for the PyTorch-style initialization used until load()
};

/// The output and the attention map (channel weights [B, C]) of a vision attention module.
template <class Scalar>
struct ChannelAttentionResult {
  Tensor<Scalar, 4> output;
  Tensor<Scalar, 2> channel_weights;
};

namespace vision::detail {

// y[b, c] = x[b, c] · gate[b, c], plane by plane.
template <class Scalar>
void scale_channels(const TensorView<const Scalar, 4>& x, const Tensor<Scalar, 2>& gate, Tensor<Scalar, 4>& y) {
  const index_t C = x.size(1), plane = x.size(2) * x.size(3);
  parallel_for(x.size(0) * C, 0, [&](index_t bc, int) {
    simd::scale_into(gate.data()[bc], x.data() + bc * plane, y.data() + bc * plane, plane);
  });
}

// The validated, contiguous input of a vision module (a copy only when x is strided).
template <class Scalar, class X>
TensorView<const Scalar, 4> dense_input(const X& x, index_t channels, const char* who, Tensor<Scalar, 4>& storage) {
  static_assert(rank_of<X> == 4, "vision modules take x [B, C, H, W]");
  static_assert(std::is_same_v<scalar_of<X>, Scalar>, "the input's scalar type must be the module's");
  const auto v = as_view(x);
  if (channels > 0 && v.size(1) != channels)
    throw ShapeError(std::string("heed::nn::") + who + ": expects " + std::to_string(channels) + " channels, got x " +
                     to_string(v.shape()));
  if (v.size(1) < 1)
    throw ShapeError(std::string("heed::nn::") + who + ": x " + to_string(v.shape()) + " has no channels");
  return contiguous(v, storage);
}

}  // namespace vision::detail

template <class Scalar = float>
class SEBlock {
 public:
  explicit SEBlock(const SEBlockOptions& options)
      : options_(options),
        gate_(options.channels,
              vision::excitation_hidden("SEBlock", options.channels, options.reduction, options.squeeze_channels),
              options.seed) {}

  [[nodiscard]] const SEBlockOptions& options() const noexcept { return options_; }

  /// Loads `prefix + excitation.{0,2}.weight` (the seed's SEBlock) or, when absent,
  /// `prefix + fc{1,2}.{weight,bias}` (torchvision's SqueezeExcitation).
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    const Loader<S> from(source, prefix, load_options);
    if (!from.has("excitation.0.weight") && from.has("fc1.weight")) {
      gate_.load_torchvision(from);
    } else {
      gate_.load_linear(from, "excitation.0.", "excitation.2.");
    }
    from.finish();
  }

  /// y = x · gate(x), and the gate [B, C].
  template <TensorLike X>
  [[nodiscard]] ChannelAttentionResult<Scalar> forward(const X& x) const {
    Tensor<Scalar, 4> storage;
    const auto in = vision::detail::dense_input<Scalar>(x, options_.channels, "SEBlock", storage);
    ChannelAttentionResult<Scalar> r{Tensor<Scalar, 4>(in.shape()), gate_(global_avg_pool(in))};
    vision::detail::scale_channels(in, r.channel_weights, r.output);
    return r;
  }

  template <TensorLike X>
  [[nodiscard]] Tensor<Scalar, 4> operator()(const X& x) const {
    return forward(x).output;
  }

 private:
  SEBlockOptions options_;
  vision::ChannelGate<Scalar> gate_;
};

}  // namespace heed::nn
