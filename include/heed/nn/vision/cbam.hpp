#pragma once
// CBAM (Woo et al. 2018, https://arxiv.org/abs/1807.06521; the tutorial's CBAM is in
// examples/train/common.py): channel attention, then spatial attention on the
// channel-attended tensor:
//   ca = sigmoid(W2 relu(W1 avgpool(x)))            [B, C]
//   sa = sigmoid(conv([mean_c(x·ca), max_c(x·ca)]))  [B, 1, H, W]
//   y  = x · ca · sa
// x·ca is never materialized; each sample is pooled, reduced and scaled while it is in cache.
// State dict: channel_attn.2.weight [C/r, C], channel_attn.4.weight [C, C/r],
// spatial_attn.0.weight [1, 2, k, k].

#include <algorithm>
#include <string>
#include <vector>

#include "heed/core/parallel.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/pooling.hpp"
#include "heed/nn/vision/se_block.hpp"
#include "heed/nn/vision/spatial_attention.hpp"
#include "heed/nn/weights.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/nn/vision/detail/channel_gate.hpp"
#include "heed/nn/vision/detail/spatial_gate.hpp"
#include "heed/nn/vision/detail/per_sample.hpp"

namespace heed::nn {

/// The constructor options of CBAM, with the seed's names.
struct CBAMOptions {
  index_t channels = 0;     ///< input channels C
  index_t reduction = 16;   ///< the channel gate's hidden size is C / reduction
  index_t kernel_size = 7;  ///< the spatial gate's kernel side (odd)
  std::uint64_t seed = 0;   ///< for the PyTorch-style initialization used until load()
};

/// The output and both attention maps of CBAM.
template <class Scalar>
struct CBAMResult {
  Tensor<Scalar, 4> output;           ///< [B, C, H, W]
  Tensor<Scalar, 2> channel_weights;  ///< [B, C]
  Tensor<Scalar, 4> spatial_map;      ///< [B, 1, H, W]
};

/// CBAM: see the top of this file.
template <class Scalar = float>
class CBAM {
 public:
  /// The module for `options`, initialized as PyTorch initializes it (from heed's seeded generator) until load().
  explicit CBAM(const CBAMOptions& options)
      : options_(options),
        channel_(options.channels, detail::excitation_hidden("CBAM", options.channels, options.reduction, 0),
                 options.seed),
        spatial_((detail::check_kernel_size("CBAM", options.kernel_size), options.kernel_size), options.seed + 2) {}

  /// The options it was built with.
  [[nodiscard]] const CBAMOptions& options() const noexcept { return options_; }

  /// Loads the parameters through `from`, under PyTorch's state_dict names; FormatError or ShapeError names a missing
  /// or misshapen one.
  template <WeightSource S>
  void load(const Loader<S>& from) {
    channel_.load_linear(from, "channel_attn.2.", "channel_attn.4.");
    spatial_.load(from, "spatial_attn.0.weight");
  }
  /// Loads the parameters from a weight source (io::SafeTensors, TensorDict) under `prefix`, with PyTorch's state_dict
  /// names; with `load_options.strict`, a name under the prefix that nothing loaded is a FormatError.
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    load_module(*this, source, prefix, load_options);
  }

  /// x [B, C, H, W] → the output and both attention maps; ShapeError for another channel count.
  template <TensorLike X>
  [[nodiscard]] CBAMResult<Scalar> forward(const X& x) const {
    Tensor<Scalar, 4> storage;
    const auto in = detail::dense_input<Scalar>(x, options_.channels, "CBAM", storage, /*convolved=*/true);
    const index_t B = in.size(0), C = in.size(1), H = in.size(2), W = in.size(3), plane = H * W;
    CBAMResult<Scalar> r{Tensor<Scalar, 4>(in.shape(), uninitialized), Tensor<Scalar, 2>({B, C}),
                         Tensor<Scalar, 4>({B, 1, H, W})};
    using A = accumulator_t<Scalar>;
    // scratch: pooled [C], hidden [hidden], the channel gate [C], mean/max [2, plane], the map
    // [plane], then (16-bit) a row of the small outputs
    const index_t hidden = channel_.hidden();
    const index_t floats = 2 * C + hidden + 3 * plane + detail::rounding_scratch<Scalar>(C, plane);
    detail::for_each_sample<A>(B, floats, [&](index_t b, A* scratch) {
      A* ca = scratch + C + hidden;
      A* mean_max = ca + C;
      A* sa = mean_max + 2 * plane;
      A* row = sa + plane;
      const Scalar* xb = in.data() + b * C * plane;
      const simd::VisionKernels<Scalar>& kernels = simd::vision_kernels<Scalar>();
      kernels.plane_means(xb, C, plane, scratch, /*last_first=*/false);
      channel_.row(scratch, scratch + C, ca);
      kernels.mean_max_over_channels(xb, ca, C, plane, mean_max, mean_max + plane);
      spatial_.row(mean_max, H, W, sa);
      detail::write_row(&r.channel_weights(b, 0), C, row, [&](A* g) { std::copy(ca, ca + C, g); });
      detail::write_row(&r.spatial_map(b, 0, 0, 0), plane, row, [&](A* m) { std::copy(sa, sa + plane, m); });
      // the first channels are in L2 (simd/vision_ops.hpp)
      kernels.gate_planes(xb, r.output.data() + b * C * plane, C, plane, ca, sa);
    });
    return r;
  }

  /// x [B, C, H, W] → the output [B, C, H, W]; ShapeError for another channel count.
  template <TensorLike X>
  [[nodiscard]] Tensor<Scalar, 4> operator()(const X& x) const {
    return forward(x).output;
  }

 private:
  CBAMOptions options_;
  detail::ChannelGate<Scalar> channel_;
  detail::SpatialGate<Scalar> spatial_;
};

}  // namespace heed::nn
