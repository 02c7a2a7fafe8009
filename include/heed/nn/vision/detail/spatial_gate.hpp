#pragma once
#include "heed/core/detail/internal_header_check.hpp"
// The spatial gate shared by SpatialAttention and CBAM (Woo et al. 2018,
// https://arxiv.org/abs/1807.06521):  map = sigmoid(conv_k×k([mean_c(x), max_c(x)]))  [B, 1, H, W],
// a 2 → 1 convolution with padding k/2 and no bias.

#include <string>

#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/conv2d.hpp"
#include "heed/nn/weights.hpp"
#include "heed/nn/vision/detail/per_sample.hpp"
#include "heed/simd/kernel_table.hpp"

namespace heed::detail {

// Throws ShapeError unless the kernel size is odd and positive (PyTorch's padding k/2 keeps
// the size only then).
inline void check_kernel_size(const char* who, index_t k) {
  if (k < 1 || k % 2 == 0)
    throw ShapeError(std::string("heed::nn::") + who + ": kernel_size must be odd and >= 1, got " + std::to_string(k));
}

// The weight is kept in the accumulator type, as ChannelGate's (channel_gate.hpp).
template <class Scalar>
class SpatialGate {
 public:
  using A = accumulator_t<Scalar>;
  SpatialGate() = default;
  SpatialGate(index_t kernel_size, std::uint64_t seed)
      : weight_(widened_parameter<A>(nn::torch_default_init<Scalar, 4>({1, 2, kernel_size, kernel_size},
                                                                       2 * kernel_size * kernel_size, seed))) {}

  [[nodiscard]] index_t kernel_size() const noexcept { return weight_.size(2); }

  template <nn::WeightSource S>
  void load(const nn::Loader<S>& from, const std::string& name) {
    weight_ = widened_parameter<A>(from.template take<Scalar, 4>(name, {1, 2, kernel_size(), kernel_size()}));
  }

  // One sample: mean_max [2, H, W] → map [H, W] (contiguous).
  void row(const A* mean_max, index_t H, index_t W, A* map) const {
    const TensorView<const A, 4> in(mean_max, {1, 2, H, W});
    conv2d_direct<A>(in, weight_.view(), {}, TensorView<A, 4>(map, {1, 1, H, W}), kernel_size() / 2, 1, 1);
    simd::vector_kernels<A>().sigmoid(map, map, H * W);
  }

 private:
  Tensor<A, 4> weight_;  // [1, 2, k, k]
};

}  // namespace heed::detail
