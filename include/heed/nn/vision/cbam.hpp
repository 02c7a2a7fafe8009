#pragma once
// CBAM (seed 000 §4.3; Woo et al. 2018): channel attention, then spatial attention on the
// channel-attended tensor:
//   ca = sigmoid(W2 relu(W1 avgpool(x)))            [B, C]
//   sa = sigmoid(conv([mean_c(x·ca), max_c(x·ca)]))  [B, 1, H, W]
//   y  = x · ca · sa
// x·ca is never materialized: three passes over x in all (pool, reduce, scale).
// State dict: channel_attn.2.weight [C/r, C], channel_attn.4.weight [C, C/r],
// spatial_attn.0.weight [1, 2, k, k].

#include <string>
#include <vector>

#include "heed/core/parallel.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/pooling.hpp"
#include "heed/nn/vision/channel_gate.hpp"
#include "heed/nn/vision/se_block.hpp"
#include "heed/nn/vision/spatial_attention.hpp"
#include "heed/nn/vision/spatial_gate.hpp"
#include "heed/nn/weights.hpp"

namespace heed::nn {

struct CBAMOptions {
  index_t channels = 0;
  index_t reduction = 16;
  index_t kernel_size = 7;
  std::uint64_t seed = 0;
};

/// The output and both attention maps of CBAM.
template <class Scalar>
struct CBAMResult {
  Tensor<Scalar, 4> output;
  Tensor<Scalar, 2> channel_weights;  ///< [B, C]
  Tensor<Scalar, 4> spatial_map;      ///< [B, 1, H, W]
};

template <class Scalar = float>
class CBAM {
 public:
  explicit CBAM(const CBAMOptions& options)
      : options_(options),
        channel_(options.channels, vision::excitation_hidden("CBAM", options.channels, options.reduction, 0),
                 options.seed),
        spatial_((vision::check_kernel_size("CBAM", options.kernel_size), options.kernel_size), options.seed + 2) {}

  [[nodiscard]] const CBAMOptions& options() const noexcept { return options_; }

  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    const Loader<S> from(source, prefix, load_options);
    channel_.load_linear(from, "channel_attn.2.", "channel_attn.4.");
    spatial_.load(from, "spatial_attn.0.weight");
    from.finish();
  }

  template <TensorLike X>
  [[nodiscard]] CBAMResult<Scalar> forward(const X& x) const {
    Tensor<Scalar, 4> storage;
    const auto in = vision::detail::dense_input<Scalar>(x, options_.channels, "CBAM", storage);
    const index_t B = in.size(0), C = in.size(1), plane = in.size(2) * in.size(3);
    CBAMResult<Scalar> r;
    r.channel_weights = channel_(global_avg_pool(in));
    Tensor<Scalar, 4> mean_max({B, 2, in.size(2), in.size(3)});
    std::vector<std::vector<Scalar>> tmp(static_cast<std::size_t>(std::max(1, num_threads())),
                                         std::vector<Scalar>(static_cast<std::size_t>(plane)));
    parallel_for(B, 0, [&](index_t b, int worker) {
      kernels::scaled_channel_mean_max(in.data() + b * C * plane, &r.channel_weights(b, 0), C, plane,
                                       &mean_max(b, 0, 0, 0), &mean_max(b, 1, 0, 0),
                                       tmp[static_cast<std::size_t>(worker)].data());
    });
    r.spatial_map = spatial_(mean_max);
    r.output = Tensor<Scalar, 4>(in.shape());
    vision::detail::scale_positions<Scalar>(in, r.channel_weights.data(), r.spatial_map, r.output);
    return r;
  }

  template <TensorLike X>
  [[nodiscard]] Tensor<Scalar, 4> operator()(const X& x) const {
    return forward(x).output;
  }

 private:
  CBAMOptions options_;
  vision::ChannelGate<Scalar> channel_;
  vision::SpatialGate<Scalar> spatial_;
};

}  // namespace heed::nn
