#pragma once
// LayerNorm = torch.nn.LayerNorm(d) over the last dimension: (x - mean) / sqrt(var + eps) · w + b,
// with the biased variance (divide by d), as PyTorch computes it. State dict: weight, bias.
// A bfloat16 or half LayerNorm keeps its parameters 16-bit and normalizes each row in float
// (widened, normalized, rounded once), as PyTorch's CPU kernel computes 16-bit layer norms.

#include <string>
#include <vector>

#include "heed/core/cast.hpp"
#include "heed/core/error.hpp"
#include "heed/core/scalar.hpp"
#include "heed/core/tensor.hpp"
#include "heed/nn/weights.hpp"
#include "heed/simd/kernel_table.hpp"

namespace heed::nn {

/// The constructor options of LayerNorm, with torch.nn.LayerNorm's names (one normalized dimension).
struct LayerNormOptions {
  index_t normalized_shape = 0;    ///< the last dimension
  double eps = 1e-5;               ///< added to the variance
  bool elementwise_affine = true;  ///< whether a weight and a bias are applied (ones and zeros until load())
};

/// torch.nn.LayerNorm over the last dimension: see the top of this file.
template <class Scalar = float>
class LayerNorm {
 public:
  LayerNorm() = default;
  /// The module for `o`: weight ones, bias zeros, as PyTorch initializes them.
  explicit LayerNorm(const LayerNormOptions& o)
      : options_(o), weight_(Shape<1>{o.normalized_shape}, Scalar(1)), bias_(Shape<1>{o.normalized_shape}) {
    if (o.normalized_shape < 1)
      throw ShapeError("heed::nn::LayerNorm: normalized_shape must be >= 1, got " + std::to_string(o.normalized_shape));
  }

  /// The options it was built with.
  [[nodiscard]] const LayerNormOptions& options() const noexcept { return options_; }

  /// Loads the parameters through `from`, under PyTorch's state_dict names; FormatError or ShapeError names a missing
  /// or misshapen one.
  template <WeightSource S>
  void load(const Loader<S>& from) {
    if (!options_.elementwise_affine) return;
    weight_ = from.template take<Scalar, 1>("weight", {options_.normalized_shape});
    bias_ = from.template take<Scalar, 1>("bias", {options_.normalized_shape});
  }
  /// Loads the parameters from a weight source (io::SafeTensors, TensorDict) under `prefix`, with PyTorch's state_dict
  /// names; with `load_options.strict`, a name under the prefix that nothing loaded is a FormatError.
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    load_module(*this, source, prefix, load_options);
  }

  /// Normalizes `n` contiguous rows of normalized_shape elements from x into y (y may be x).
  void rows(const Scalar* x, Scalar* y, index_t n) const {
    const index_t d = options_.normalized_shape;
    const bool affine = options_.elementwise_affine;
    if constexpr (is_16bit_float_v<Scalar>) {
      // the parameters and each row widened to float, the result rounded once
      thread_local std::vector<float> w, b, row;
      w.resize(static_cast<std::size_t>(d));
      b.resize(static_cast<std::size_t>(d));
      row.resize(static_cast<std::size_t>(d));
      for (index_t j = 0; j < d; ++j) {
        w[std::size_t(j)] = static_cast<float>(weight_.data()[j]);
        b[std::size_t(j)] = static_cast<float>(bias_.data()[j]);
      }
      const simd::ConvertKernels<Scalar>& convert = simd::convert_kernels<Scalar>();
      const auto layer_norm = simd::vector_kernels<float>().layer_norm;
      for (index_t r = 0; r < n; ++r) {
        convert.widen(x + r * d, row.data(), d);
        layer_norm(row.data(), row.data(), affine ? w.data() : nullptr, affine ? b.data() : nullptr,
                   float(options_.eps), d);
        convert.narrow(row.data(), y + r * d, d);
      }
    } else {
      const auto layer_norm = simd::vector_kernels<Scalar>().layer_norm;
      for (index_t r = 0; r < n; ++r)
        layer_norm(x + r * d, y + r * d, affine ? weight_.data() : nullptr, affine ? bias_.data() : nullptr,
                   Scalar(options_.eps), d);
    }
  }

  /// x [..., normalized_shape] normalized over its last dimension; ShapeError for another last dimension.
  template <TensorLike X>
  [[nodiscard]] Tensor<Scalar, rank_of<X>> operator()(const X& x) const {
    constexpr std::size_t R = rank_of<X>;
    const auto v = as_view(x);
    if (options_.normalized_shape == 0)
      throw ShapeError(
          "heed::nn::LayerNorm: default-constructed, it normalizes nothing: build it from its options (x " +
          to_string(v.shape()) + ")");
    if (v.size(R - 1) != options_.normalized_shape)
      throw ShapeError("heed::nn::LayerNorm: normalizes " + std::to_string(options_.normalized_shape) +
                       " features, got x " + to_string(v.shape()));
    Tensor<Scalar, R> out(v);
    rows(out.data(), out.data(), out.numel() / options_.normalized_shape);
    return out;
  }

 private:
  LayerNormOptions options_;
  Tensor<Scalar, 1> weight_;
  Tensor<Scalar, 1> bias_;
};

}  // namespace heed::nn
