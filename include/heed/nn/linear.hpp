#pragma once
// Linear = torch.nn.Linear: y = x Wᵀ + b over the last dimension, any leading dimensions.
// State dict: weight [out, in], bias [out].

#include <optional>
#include <string>

#include <Eigen/Core>

#include "heed/core/eigen.hpp"
#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/nn/activation.hpp"
#include "heed/nn/weights.hpp"
#include "heed/simd/vector_ops.hpp"

namespace heed::nn {

struct LinearOptions {
  index_t in_features = 0;
  index_t out_features = 0;
  bool bias = true;
  std::uint64_t seed = 0;
};

template <class Scalar = float>
class Linear {
 public:
  Linear() = default;
  explicit Linear(const LinearOptions& o)
      : options_(checked(o)),
        weight_(torch_default_init<Scalar, 2>({o.out_features, o.in_features}, o.in_features, o.seed)),
        bias_(o.bias ? torch_default_init<Scalar, 1>({o.out_features}, o.in_features, o.seed + 1)
                     : Tensor<Scalar, 1>()) {}

  [[nodiscard]] const LinearOptions& options() const noexcept { return options_; }
  [[nodiscard]] const Tensor<Scalar, 2>& weight() const noexcept { return weight_; }
  [[nodiscard]] const Tensor<Scalar, 1>& bias() const noexcept { return bias_; }

  template <WeightSource S>
  void load(const Loader<S>& from) {
    weight_ = from.template take<Scalar, 2>("weight", {options_.out_features, options_.in_features});
    if (options_.bias) bias_ = from.template take<Scalar, 1>("bias", {options_.out_features});
  }
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    load_module(*this, source, prefix, load_options);
  }

  /// Sets the parameters directly (e.g. slices of a packed in_proj_weight).
  void set(Tensor<Scalar, 2> weight, Tensor<Scalar, 1> bias) {
    weight_ = std::move(weight);
    bias_ = std::move(bias);
  }

  /// rows [n, in] → out [n, out], both contiguous (the callers guarantee it). With an
  /// activation, it is applied row by row right after the bias, while the row is in cache.
  void rows(const TensorView<const Scalar, 2>& x, const TensorView<Scalar, 2>& out,
            std::optional<Activation> activation = std::nullopt) const {
    gemm(x, out, false);
    finish_rows(out, activation);
  }

  /// out += x Wᵀ + b: a residual connection without a temporary.
  void rows_add(const TensorView<const Scalar, 2>& x, const TensorView<Scalar, 2>& out) const {
    gemm(x, out, true);
    finish_rows(out, std::nullopt);
  }

  template <TensorLike X>
  [[nodiscard]] Tensor<Scalar, rank_of<X>> operator()(const X& x) const {
    constexpr std::size_t R = rank_of<X>;
    static_assert(std::is_same_v<scalar_of<X>, Scalar>, "the input's scalar type must be the module's");
    const auto v = as_view(x);
    if (v.size(R - 1) != options_.in_features)
      throw ShapeError("heed::nn::Linear: expects " + std::to_string(options_.in_features) + " input features, got x " +
                       to_string(v.shape()));
    Tensor<Scalar, R> storage;
    const auto dense = contiguous(v, storage);
    Shape<R> out_shape = v.shape();
    out_shape[R - 1] = options_.out_features;
    Tensor<Scalar, R> out(out_shape, uninitialized);
    const index_t n = v.numel() / std::max<index_t>(1, options_.in_features);
    if (out.numel() > 0)
      rows(TensorView<const Scalar, 2>(dense.data(), {n, options_.in_features}),
           TensorView<Scalar, 2>(out.data(), {n, options_.out_features}));
    return out;
  }

 private:
  void gemm(const TensorView<const Scalar, 2>& x, const TensorView<Scalar, 2>& out, bool accumulate) const {
    // Maps with a compile-time unit inner stride: Eigen's GEMM takes its fastest packing path.
    using RowMajor = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const Eigen::Map<const RowMajor> xm(x.data(), x.size(0), x.size(1));
    const Eigen::Map<const RowMajor> w(weight_.data(), weight_.size(0), weight_.size(1));
    Eigen::Map<RowMajor> y(out.data(), out.size(0), out.size(1));
    if (accumulate)
      y.noalias() += xm * w.transpose();
    else
      y.noalias() = xm * w.transpose();
  }

  void finish_rows(const TensorView<Scalar, 2>& out, std::optional<Activation> activation) const {
    if (bias_.empty() && !activation) return;
    for (index_t i = 0; i < out.size(0); ++i) {
      Scalar* row = &out(i, 0);
      if (!bias_.empty()) simd::add(bias_.data(), row, options_.out_features);
      if (activation) apply_activation(*activation, row, options_.out_features);
    }
  }

  static const LinearOptions& checked(const LinearOptions& o) {
    if (o.in_features < 1 || o.out_features < 1)
      throw ShapeError("heed::nn::Linear: in_features and out_features must be >= 1, got " +
                       std::to_string(o.in_features) + " and " + std::to_string(o.out_features));
    return o;
  }

  LinearOptions options_;
  Tensor<Scalar, 2> weight_;
  Tensor<Scalar, 1> bias_;
};

}  // namespace heed::nn
