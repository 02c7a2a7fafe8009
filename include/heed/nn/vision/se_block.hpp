#pragma once
// SEBlock: squeeze-and-excitation channel attention (Hu et al. 2018,
// https://arxiv.org/abs/1709.01507; the tutorial's SEBlock is in tests/golden/generate.py).
//   y = x · sigmoid(W2 relu(W1 avgpool(x)))       x, y [B, C, H, W]
// Loads the seed's state_dict (excitation.0.weight [C/r, C], excitation.2.weight [C, C/r])
// or torchvision's SqueezeExcitation (fc1.weight/bias, fc2.weight/bias as 1×1 convolutions).
// Per sample: pool, gate, scale; the sample stays in cache between the two reads.

#include <algorithm>
#include <string>

#include "heed/core/error.hpp"
#include "heed/core/parallel.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/pooling.hpp"
#include "heed/nn/weights.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/nn/vision/detail/channel_gate.hpp"
#include "heed/nn/vision/detail/per_sample.hpp"
#include "heed/simd/kernel_table.hpp"

namespace heed::nn {

/// The constructor options of SEBlock.
struct SEBlockOptions {
  index_t channels = 0;          ///< input channels C
  index_t reduction = 16;        ///< the hidden size is C / reduction unless squeeze_channels says
  index_t squeeze_channels = 0;  ///< hidden size; 0: channels / reduction (torchvision files may differ)
  std::uint64_t seed = 0;        ///< for the PyTorch-style initialization used until load()
};

/// The output and the attention map (channel weights [B, C]) of a vision attention module.
template <class Scalar>
struct ChannelAttentionResult {
  Tensor<Scalar, 4> output;           ///< [B, C, H, W]
  Tensor<Scalar, 2> channel_weights;  ///< [B, C]
};

/// Squeeze-and-excitation: see the top of this file.
template <class Scalar = float>
class SEBlock {
 public:
  /// The module for `options`, initialized as PyTorch initializes it (from heed's seeded generator) until load().
  explicit SEBlock(const SEBlockOptions& options)
      : options_(options),
        gate_(options.channels,
              detail::excitation_hidden("SEBlock", options.channels, options.reduction, options.squeeze_channels),
              options.seed) {}

  /// The options it was built with.
  [[nodiscard]] const SEBlockOptions& options() const noexcept { return options_; }

  /// Loads "excitation.0.weight" and "excitation.2.weight" under the prefix (the seed's SEBlock)
  /// or, when absent, "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias" (torchvision's
  /// SqueezeExcitation).
  template <WeightSource S>
  void load(const Loader<S>& from) {
    if (!from.has("excitation.0.weight") && from.has("fc1.weight")) {
      gate_.load_torchvision(from);
    } else {
      gate_.load_linear(from, "excitation.0.", "excitation.2.");
    }
  }
  /// Loads the parameters from a weight source (io::SafeTensors, TensorDict) under `prefix`, with PyTorch's state_dict
  /// names; with `load_options.strict`, a name under the prefix that nothing loaded is a FormatError.
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    load_module(*this, source, prefix, load_options);
  }

  /// y = x · gate(x), and the gate [B, C].
  template <TensorLike X>
  [[nodiscard]] ChannelAttentionResult<Scalar> forward(const X& x) const {
    Tensor<Scalar, 4> storage;
    const auto in = detail::dense_input<Scalar>(x, options_.channels, "SEBlock", storage);
    const index_t B = in.size(0), C = in.size(1), plane = in.size(2) * in.size(3);
    ChannelAttentionResult<Scalar> r{Tensor<Scalar, 4>(in.shape(), uninitialized), Tensor<Scalar, 2>({B, C})};
    using A = accumulator_t<Scalar>;
    // scratch: pooled [C], hidden [hidden] (wider than C where squeeze_channels says so, as
    // torchvision allows), then (16-bit) a row of the channel weights
    const index_t hidden = gate_.hidden();
    detail::for_each_sample<A>(B, C + hidden + detail::rounding_scratch<Scalar>(C, plane), [&](index_t b, A* scratch) {
      A* row = scratch + C + hidden;
      const Scalar* xb = in.data() + b * C * plane;
      const simd::VisionKernels<Scalar>& kernels = simd::vision_kernels<Scalar>();
      kernels.plane_means(xb, C, plane, scratch, /*last_first=*/true);
      const A* gate =
          detail::write_row(&r.channel_weights(b, 0), C, row, [&](A* g) { gate_.row(scratch, scratch + C, g); });
      // the first channels are in L2 (simd/vision_ops.hpp)
      kernels.gate_planes(xb, r.output.data() + b * C * plane, C, plane, gate, nullptr);
    });
    return r;
  }

  /// x [B, C, H, W] → the output [B, C, H, W]; ShapeError for another channel count.
  template <TensorLike X>
  [[nodiscard]] Tensor<Scalar, 4> operator()(const X& x) const {
    return forward(x).output;
  }

 private:
  SEBlockOptions options_;
  detail::ChannelGate<Scalar> gate_;
};

}  // namespace heed::nn
