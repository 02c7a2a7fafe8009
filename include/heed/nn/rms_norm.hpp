#pragma once
// RMSNorm = torch.nn.RMSNorm(d) (PyTorch 2.4) over the last dimension:
//   y = x / sqrt(mean(x²) + eps) · w
// computed as x · rsqrt(mean + eps), then · w. eps = nullopt is PyTorch's eps=None: the machine
// epsilon of the type the norm is computed in (float's for float, bfloat16 and half; double's
// for double). State dict: weight (none without elementwise_affine). Llama, Mistral and Qwen
// normalize with it, before attention and before the feed-forward.
// A bfloat16 or half RMSNorm keeps its weight 16-bit and normalizes each row in float
// (widened, normalized, rounded once).

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "heed/core/error.hpp"
#include "heed/core/scalar.hpp"
#include "heed/core/tensor.hpp"
#include "heed/nn/weights.hpp"
#include "heed/simd/kernel_table.hpp"

namespace heed::nn {

/// The constructor options of RMSNorm, with torch.nn.RMSNorm's names (one normalized dimension).
struct RMSNormOptions {
  index_t normalized_shape = 0;              ///< the last dimension
  std::optional<double> eps = std::nullopt;  ///< nullopt: the epsilon of the computation type
  bool elementwise_affine = true;            ///< a learned weight (initialized to 1)
};

/// torch.nn.RMSNorm over the last dimension: see the top of this file.
template <class Scalar = float>
class RMSNorm {
  using Acc = accumulator_t<Scalar>;

 public:
  /// An empty norm (assign a constructed one to it).
  RMSNorm() = default;
  /// ShapeError unless normalized_shape >= 1 and eps (when given) is >= 0.
  explicit RMSNorm(const RMSNormOptions& o) : options_(o), weight_(Shape<1>{o.normalized_shape}, Scalar(1)) {
    if (o.normalized_shape < 1)
      throw ShapeError("heed::nn::RMSNorm: normalized_shape must be >= 1, got " + std::to_string(o.normalized_shape));
    if (o.eps && !(*o.eps >= 0)) throw ShapeError("heed::nn::RMSNorm: eps must be >= 0, got " + std::to_string(*o.eps));
  }

  /// The options it was made with.
  [[nodiscard]] const RMSNormOptions& options() const noexcept { return options_; }
  /// The eps added to mean(x²): options().eps, or the computation type's epsilon.
  [[nodiscard]] Acc eps() const noexcept {
    return options_.eps ? static_cast<Acc>(*options_.eps) : std::numeric_limits<Acc>::epsilon();
  }
  /// The elementwise weight [normalized_shape] (ones without elementwise_affine).
  [[nodiscard]] const Tensor<Scalar, 1>& weight() const noexcept { return weight_; }

  /// Loads weight [normalized_shape] (nothing without elementwise_affine).
  template <WeightSource S>
  void load(const Loader<S>& from) {
    if (options_.elementwise_affine) weight_ = from.template take<Scalar, 1>("weight", {options_.normalized_shape});
  }
  /// load(Loader) from `source` under `prefix` (strict: unused names under it are an error).
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    load_module(*this, source, prefix, load_options);
  }

  /// Normalizes `n` contiguous rows of normalized_shape elements from x into y (y may be x).
  void rows(const Scalar* x, Scalar* y, index_t n) const {
    const index_t d = options_.normalized_shape;
    const bool affine = options_.elementwise_affine;
    if constexpr (is_16bit_float_v<Scalar>) {
      thread_local std::vector<float> w, row;
      w.resize(static_cast<std::size_t>(d));
      row.resize(static_cast<std::size_t>(d));
      for (index_t j = 0; j < d; ++j) w[std::size_t(j)] = static_cast<float>(weight_.data()[j]);
      const simd::ConvertKernels<Scalar>& convert = simd::convert_kernels<Scalar>();
      const auto rms_norm = simd::vector_kernels<float>().rms_norm;
      for (index_t r = 0; r < n; ++r) {
        convert.widen(x + r * d, row.data(), d);
        rms_norm(row.data(), row.data(), affine ? w.data() : nullptr, eps(), d);
        convert.narrow(row.data(), y + r * d, d);
      }
    } else {
      const auto rms_norm = simd::vector_kernels<Scalar>().rms_norm;
      for (index_t r = 0; r < n; ++r) rms_norm(x + r * d, y + r * d, affine ? weight_.data() : nullptr, eps(), d);
    }
  }

  /// x [..., normalized_shape] → the same shape.
  template <TensorLike X>
  [[nodiscard]] Tensor<Scalar, rank_of<X>> operator()(const X& x) const {
    constexpr std::size_t R = rank_of<X>;
    static_assert(std::is_same_v<scalar_of<X>, Scalar>, "the input's scalar type must be the module's");
    const auto v = as_view(x);
    if (options_.normalized_shape == 0)
      throw ShapeError("heed::nn::RMSNorm: default-constructed, it normalizes nothing: build it from its options (x " +
                       to_string(v.shape()) + ")");
    if (v.size(R - 1) != options_.normalized_shape)
      throw ShapeError("heed::nn::RMSNorm: normalizes " + std::to_string(options_.normalized_shape) +
                       " features, got x " + to_string(v.shape()));
    Tensor<Scalar, R> out(v);
    rows(out.data(), out.data(), out.numel() / options_.normalized_shape);
    return out;
  }

 private:
  RMSNormOptions options_;
  Tensor<Scalar, 1> weight_;
};

}  // namespace heed::nn
