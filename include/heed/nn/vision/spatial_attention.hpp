#pragma once
// SpatialAttention (seed 000 §4.2): y = x · sigmoid(conv([mean_c x, max_c x])), the map
// broadcast over channels. One pass to reduce over channels, a k×k convolution on a 2-channel
// map, one pass to scale. State dict: conv.weight [1, 2, k, k].

#include <string>

#include "heed/core/parallel.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/pooling.hpp"
#include "heed/nn/vision/se_block.hpp"
#include "heed/nn/vision/spatial_gate.hpp"
#include "heed/nn/weights.hpp"
#include "heed/simd/vector_ops.hpp"

namespace heed::nn {

struct SpatialAttentionOptions {
  index_t kernel_size = 7;  ///< odd; the seed uses 7 (3 is common too)
  std::uint64_t seed = 0;
};

/// The output and the spatial map [B, 1, H, W] of a spatial attention module.
template <class Scalar>
struct SpatialAttentionResult {
  Tensor<Scalar, 4> output;
  Tensor<Scalar, 4> spatial_map;
};

namespace vision::detail {

// y[b, c] = x[b, c] · scale[b, c] · map[b] (scale may be null: 1).
template <class Scalar>
void scale_positions(const TensorView<const Scalar, 4>& x, const Scalar* scale, const Tensor<Scalar, 4>& map,
                     Tensor<Scalar, 4>& y) {
  const index_t C = x.size(1), plane = x.size(2) * x.size(3);
  parallel_for(x.size(0) * C, 0, [&](index_t bc, int) {
    Scalar* out = y.data() + bc * plane;
    simd::multiply(x.data() + bc * plane, map.data() + (bc / C) * plane, out, plane);
    if (scale) simd::scale(scale[bc], out, plane);
  });
}

}  // namespace vision::detail

template <class Scalar = float>
class SpatialAttention {
 public:
  explicit SpatialAttention(const SpatialAttentionOptions& options = {})
      : options_(options), gate_(checked(options), options.seed) {}

  [[nodiscard]] const SpatialAttentionOptions& options() const noexcept { return options_; }

  /// Loads `prefix + conv.weight` [1, 2, k, k].
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    const Loader<S> from(source, prefix, load_options);
    gate_.load(from, "conv.weight");
    from.finish();
  }

  template <TensorLike X>
  [[nodiscard]] SpatialAttentionResult<Scalar> forward(const X& x) const {
    Tensor<Scalar, 4> storage;
    const auto in = vision::detail::dense_input<Scalar>(x, 0, "SpatialAttention", storage);
    SpatialAttentionResult<Scalar> r{Tensor<Scalar, 4>(in.shape()), gate_(channel_mean_max(in))};
    vision::detail::scale_positions<Scalar>(in, nullptr, r.spatial_map, r.output);
    return r;
  }

  template <TensorLike X>
  [[nodiscard]] Tensor<Scalar, 4> operator()(const X& x) const {
    return forward(x).output;
  }

 private:
  static index_t checked(const SpatialAttentionOptions& o) {
    vision::check_kernel_size("SpatialAttention", o.kernel_size);
    return o.kernel_size;
  }

  SpatialAttentionOptions options_;
  vision::SpatialGate<Scalar> gate_;
};

}  // namespace heed::nn
