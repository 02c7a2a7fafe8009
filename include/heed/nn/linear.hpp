#pragma once
// Linear = torch.nn.Linear: y = x Wᵀ + b over the last dimension, any leading dimensions.
// State dict: weight [out, in], bias [out].

#include <string>

#include <Eigen/Core>

#include "heed/core/eigen.hpp"
#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
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
    const Loader<S> from(source, prefix, load_options);
    load(from);
    from.finish();
  }

  /// Sets the parameters directly (e.g. slices of a packed in_proj_weight).
  void set(Tensor<Scalar, 2> weight, Tensor<Scalar, 1> bias) {
    weight_ = std::move(weight);
    bias_ = std::move(bias);
  }

  /// rows [n, in] → out [n, out]; both contiguous rows (checked by the caller).
  void rows(const TensorView<const Scalar, 2>& x, const TensorView<Scalar, 2>& out) const {
    auto y = as_matrix(out);
    y.noalias() = as_matrix(x) * as_matrix(weight_).transpose();
    if (!bias_.empty())
      for (index_t i = 0; i < out.size(0); ++i) simd::add(bias_.data(), &out(i, 0), options_.out_features);
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
