#pragma once
#include "heed/core/detail/internal_header_check.hpp"
// The squeeze-and-excitation gate shared by SEBlock and CBAM's channel attention:
//   s = sigmoid(W2 · relu(W1 · mean_hw(x) + b1) + b2)        [B, C]
// (Hu et al. 2018, https://arxiv.org/abs/1709.01507). The seeds' layout has no biases;
// torchvision's SqueezeExcitation has them (1×1 convolutions fc1, fc2). The weights are kept in
// the accumulator type (a few KB; a 16-bit module's are rounded to 16 bits as they load, as
// torch's .to(dtype) would, then widened) and the gate is computed in it.

#include <algorithm>
#include <string>

#include "heed/core/eigen.hpp"
#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/nn/weights.hpp"
#include "heed/nn/vision/detail/per_sample.hpp"
#include "heed/simd/kernel_table.hpp"

namespace heed::detail {

template <class Scalar>
class ChannelGate {
 public:
  using A = accumulator_t<Scalar>;
  ChannelGate() = default;
  ChannelGate(index_t channels, index_t hidden, std::uint64_t seed)
      : w1_(widened_parameter<A>(nn::torch_default_init<Scalar, 2>({hidden, channels}, channels, seed))),
        b1_({hidden}),
        w2t_(transposed(widened_parameter<A>(nn::torch_default_init<Scalar, 2>({channels, hidden}, hidden, seed + 1)))),
        b2_({channels}) {}

  [[nodiscard]] index_t channels() const noexcept { return w1_.size(1); }
  [[nodiscard]] index_t hidden() const noexcept { return w1_.size(0); }

  // nn.Sequential(Linear(C, C/r, bias=False), ReLU, Linear(C/r, C, bias=False), Sigmoid) at
  // `first` and `second` (e.g. "excitation.0.", "excitation.2.").
  template <nn::WeightSource S>
  void load_linear(const nn::Loader<S>& from, const std::string& first, const std::string& second) {
    w1_ = widened_parameter<A>(from.template take<Scalar, 2>(first + "weight", {hidden(), channels()}));
    w2t_ = transposed(widened_parameter<A>(from.template take<Scalar, 2>(second + "weight", {channels(), hidden()})));
    b1_ = Tensor<A, 1>({hidden()});
    b2_ = Tensor<A, 1>({channels()});
  }

  // torchvision.ops.SqueezeExcitation: fc1 / fc2, 1×1 convolutions with biases.
  template <nn::WeightSource S>
  void load_torchvision(const nn::Loader<S>& from) {
    const auto fc1 = from.template take<Scalar, 4>("fc1.weight", {hidden(), channels(), 1, 1});
    const auto fc2 = from.template take<Scalar, 4>("fc2.weight", {channels(), hidden(), 1, 1});
    w1_ = widened_parameter<A>(Tensor<Scalar, 2>(fc1.view().reshape(Shape<2>{hidden(), channels()})));
    w2t_ = transposed(widened_parameter<A>(Tensor<Scalar, 2>(fc2.view().reshape(Shape<2>{channels(), hidden()}))));
    b1_ = widened_parameter<A>(from.template take<Scalar, 1>("fc1.bias", {hidden()}));
    b2_ = widened_parameter<A>(from.template take<Scalar, 1>("fc2.bias", {channels()}));
  }

  // One sample: pooled [C] → gate [C]; `hidden_scratch` holds hidden() values. The first
  // product is hidden() dot products of C values, the second hidden() axpys over rows of W2ᵀ
  // (not C dot products of hidden() values, 16 for the seed's CBAM, each ended in a horizontal
  // sum, as Eigen's matrix-vector products computed it: docs/decisions.md, "Attention kernel
  // v2, third part").
  void row(const A* pooled, A* hidden_scratch, A* gate) const {
    const index_t C = channels();
    const simd::VectorKernels<A>& ops = simd::vector_kernels<A>();
    for (index_t k = 0; k < hidden(); ++k) hidden_scratch[k] = ops.dot(w1_.data() + k * C, pooled, C) + b1_.data()[k];
    ops.relu(hidden_scratch, hidden_scratch, hidden());
    std::copy(b2_.data(), b2_.data() + C, gate);
    for (index_t k = 0; k < hidden(); ++k) ops.axpy(hidden_scratch[k], w2t_.data() + k * C, gate, C);
    ops.sigmoid(gate, gate, C);
  }

 private:
  Tensor<A, 2> w1_;   // [hidden, C]
  Tensor<A, 1> b1_;   // [hidden], zeros in the seeds' layout
  Tensor<A, 2> w2t_;  // [hidden, C]: the second weight [C, hidden] transposed, for row()
  Tensor<A, 1> b2_;   // [C]

  static Tensor<A, 2> transposed(const Tensor<A, 2>& w) {
    Tensor<A, 2> t({w.size(1), w.size(0)}, uninitialized);
    as_matrix(t) = as_matrix(w).transpose();
    return t;
  }
};

// Throws ShapeError unless `channels` and `reduction` give a hidden size of at least 1.
inline index_t excitation_hidden(const char* who, index_t channels, index_t reduction, index_t squeeze) {
  if (channels < 1)
    throw ShapeError(std::string("heed::nn::") + who + ": channels must be >= 1, got " + std::to_string(channels));
  if (squeeze > 0) return squeeze;
  if (reduction < 1 || reduction > channels)
    throw ShapeError(std::string("heed::nn::") + who + ": reduction " + std::to_string(reduction) +
                     " must be in [1, channels = " + std::to_string(channels) +
                     "] (channels / reduction is the hidden size)");
  return channels / reduction;
}

}  // namespace heed::detail
