#pragma once
// Conv2d = torch.nn.Conv2d (square kernel, zero padding, groups = 1), with an
// optional ReLU fused after the bias. State dict: weight [out, in, k, k], bias [out].

#include <optional>
#include <string>

#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/conv2d.hpp"
#include "heed/nn/activation.hpp"
#include "heed/nn/weights.hpp"

namespace heed::nn {

/// The constructor options of nn::Conv2d, with torch.nn.Conv2d's names.
struct Conv2dOptions {
  index_t in_channels = 0;   ///< input channels
  index_t out_channels = 0;  ///< output channels
  index_t kernel_size = 3;   ///< a square kernel of this side
  index_t stride = 1;        ///< the step between output positions
  index_t padding = 0;       ///< zeros added on every side
  index_t dilation = 1;      ///< the step between kernel taps
  bool bias = true;          ///< whether a bias is added
  std::uint64_t seed = 0;    ///< for the PyTorch-style initialization used until load()
};

/// torch.nn.Conv2d: see the top of this file.
template <class Scalar = float>
class Conv2d {
 public:
  /// The module for `o`, initialized as PyTorch initializes it (from heed's seeded generator) until
  /// load() (under nn::load_new: empty until load()).
  explicit Conv2d(const Conv2dOptions& o) : options_(checked(o)) {
    if (detail::skip_initialization()) return;
    const index_t fan_in = o.in_channels * o.kernel_size * o.kernel_size;
    weight_ =
        torch_default_init<Scalar, 4>({o.out_channels, o.in_channels, o.kernel_size, o.kernel_size}, fan_in, o.seed);
    if (o.bias) bias_ = torch_default_init<Scalar, 1>({o.out_channels}, fan_in, o.seed + 1);
  }

  /// The options it was built with.
  [[nodiscard]] const Conv2dOptions& options() const noexcept { return options_; }
  /// The weight [out_channels, in_channels, kernel_size, kernel_size].
  [[nodiscard]] const Tensor<Scalar, 4>& weight() const noexcept { return weight_; }
  /// The bias [out_channels], empty without one.
  [[nodiscard]] const Tensor<Scalar, 1>& bias() const noexcept { return bias_; }

  /// Loads the parameters through `from`, under PyTorch's state_dict names; FormatError or ShapeError names a missing
  /// or misshapen one.
  template <WeightSource S>
  void load(const Loader<S>& from) {
    const index_t k = options_.kernel_size;
    weight_ = from.template take<Scalar, 4>("weight", {options_.out_channels, options_.in_channels, k, k});
    if (options_.bias) bias_ = from.template take<Scalar, 1>("bias", {options_.out_channels});
  }
  /// Loads the parameters from a weight source (io::SafeTensors, TensorDict) under `prefix`, with PyTorch's state_dict
  /// names; with `load_options.strict`, a name under the prefix that nothing loaded is a FormatError.
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    load_module(*this, source, prefix, load_options);
  }

  /// x [B, in_channels, H, W] → [B, out_channels, Ho, Wo]; ShapeError names both shapes.
  template <TensorLike X>
  [[nodiscard]] Tensor<Scalar, 4> operator()(const X& x, std::optional<Activation> activation = std::nullopt) const {
    static_assert(rank_of<X> == 4 && std::is_same_v<scalar_of<X>, Scalar>, "Conv2d takes x [B, C, H, W]");
    const auto v = as_view(x);
    if (v.size(1) != options_.in_channels)
      throw ShapeError("heed::nn::Conv2d: expected " + std::to_string(options_.in_channels) + " input channels, x is " +
                       to_string(v.shape()));
    Tensor<Scalar, 4> y = conv2d(
        v, weight_, bias_.view(),
        heed::Conv2dOptions{.padding = options_.padding, .stride = options_.stride, .dilation = options_.dilation});
    if (activation) apply_activation(*activation, y.data(), y.numel());
    return y;
  }

 private:
  static const Conv2dOptions& checked(const Conv2dOptions& o) {
    if (o.in_channels < 1 || o.out_channels < 1 || o.kernel_size < 1 || o.stride < 1 || o.padding < 0 || o.dilation < 1)
      throw ShapeError("heed::nn::Conv2d: in_channels " + std::to_string(o.in_channels) + ", out_channels " +
                       std::to_string(o.out_channels) + ", kernel_size " + std::to_string(o.kernel_size) + ", stride " +
                       std::to_string(o.stride) + ", padding " + std::to_string(o.padding) + ", dilation " +
                       std::to_string(o.dilation) +
                       ": channels, kernel size, stride and dilation must be >= 1, padding >= 0");
    return o;
  }

  Conv2dOptions options_;
  Tensor<Scalar, 4> weight_;
  Tensor<Scalar, 1> bias_;
};

}  // namespace heed::nn
