#pragma once
// SpatialAttention (Woo et al. 2018; the tutorial's is in tests/golden/generate.py):
//   y = x · sigmoid(conv([mean_c x, max_c x])), the map broadcast over channels. One pass to reduce over channels, a
//   k×k convolution on a 2-channel
// map, one pass to scale. State dict: conv.weight [1, 2, k, k].

#include <algorithm>
#include <string>

#include "heed/core/parallel.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/pooling.hpp"
#include "heed/nn/weights.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/nn/vision/detail/spatial_gate.hpp"
#include "heed/nn/vision/detail/per_sample.hpp"
#include "heed/simd/kernel_table.hpp"

namespace heed::nn {

/// The constructor options of SpatialAttention.
struct SpatialAttentionOptions {
  index_t kernel_size = 7;  ///< odd; the seed uses 7 (3 is common too)
  std::uint64_t seed = 0;   ///< for the PyTorch-style initialization used until load()
};

/// The output and the spatial map [B, 1, H, W] of a spatial attention module.
template <class Scalar>
struct SpatialAttentionResult {
  Tensor<Scalar, 4> output;       ///< [B, C, H, W]
  Tensor<Scalar, 4> spatial_map;  ///< [B, 1, H, W]
};

/// Spatial attention: see the top of this file.
template <class Scalar = float>
class SpatialAttention {
 public:
  /// The module for `options`, initialized as PyTorch initializes it (from heed's seeded generator) until load().
  explicit SpatialAttention(const SpatialAttentionOptions& options = {})
      : options_(options), gate_(checked(options), options.seed) {}

  /// The options it was built with.
  [[nodiscard]] const SpatialAttentionOptions& options() const noexcept { return options_; }

  /// Loads `prefix + conv.weight` [1, 2, k, k].
  template <WeightSource S>
  void load(const Loader<S>& from) {
    gate_.load(from, "conv.weight");
  }
  /// Loads the parameters from a weight source (io::SafeTensors, TensorDict) under `prefix`, with PyTorch's state_dict
  /// names; with `load_options.strict`, a name under the prefix that nothing loaded is a FormatError.
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    load_module(*this, source, prefix, load_options);
  }

  /// x [B, C, H, W] → the output and the spatial map.
  template <TensorLike X>
  [[nodiscard]] SpatialAttentionResult<Scalar> forward(const X& x) const {
    Tensor<Scalar, 4> storage;
    const auto in = detail::dense_input<Scalar>(x, 0, "SpatialAttention", storage, /*convolved=*/true);
    const index_t B = in.size(0), C = in.size(1), H = in.size(2), W = in.size(3), plane = H * W;
    SpatialAttentionResult<Scalar> r{Tensor<Scalar, 4>(in.shape(), uninitialized), Tensor<Scalar, 4>({B, 1, H, W})};
    using A = accumulator_t<Scalar>;
    // scratch: mean/max [2, plane], the map [plane], then (16-bit) a row of the map
    detail::for_each_sample<A>(B, 3 * plane + detail::rounding_scratch<Scalar>(C, plane), [&](index_t b, A* scratch) {
      A* mean_max = scratch;
      A* map = scratch + 2 * plane;
      A* row = map + plane;
      const Scalar* xb = in.data() + b * C * plane;
      const simd::VisionKernels<Scalar>& kernels = simd::vision_kernels<Scalar>();
      kernels.mean_max_over_channels(xb, nullptr, C, plane, mean_max, mean_max + plane);
      gate_.row(mean_max, H, W, map);
      detail::write_row(&r.spatial_map(b, 0, 0, 0), plane, row, [&](A* m) { std::copy(map, map + plane, m); });
      // the first channels are in L2 (simd/vision_ops.hpp)
      kernels.gate_planes(xb, r.output.data() + b * C * plane, C, plane, nullptr, map);
    });
    return r;
  }

  /// x [B, C, H, W] → the output [B, C, H, W].
  template <TensorLike X>
  [[nodiscard]] Tensor<Scalar, 4> operator()(const X& x) const {
    return forward(x).output;
  }

 private:
  static index_t checked(const SpatialAttentionOptions& o) {
    detail::check_kernel_size("SpatialAttention", o.kernel_size);
    return o.kernel_size;
  }

  SpatialAttentionOptions options_;
  detail::SpatialGate<Scalar> gate_;
};

}  // namespace heed::nn
