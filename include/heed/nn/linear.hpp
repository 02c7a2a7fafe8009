#pragma once
// Linear = torch.nn.Linear: y = x Wᵀ + b over the last dimension, any leading dimensions.
// State dict: weight [out, in], bias [out].

#include <optional>
#include <string>

#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/nn/activation.hpp"
#include "heed/nn/weights.hpp"
#include "heed/kernels/gemm.hpp"
#include "heed/simd/vector_ops.hpp"

namespace heed::nn {

/// The constructor options of Linear, with torch.nn.Linear's names.
struct LinearOptions {
  index_t in_features = 0;   ///< the input's last dimension
  index_t out_features = 0;  ///< the output's last dimension
  bool bias = true;          ///< whether a bias is added
  std::uint64_t seed = 0;    ///< for the PyTorch-style initialization used until load()
};

/// torch.nn.Linear: see the top of this file.
template <class Scalar = float>
class Linear {
 public:
  Linear() = default;
  /// The module for `o`, initialized as PyTorch initializes it (from heed's seeded generator) until
  /// load() (under nn::load_new: empty until load()).
  explicit Linear(const LinearOptions& o) : options_(checked(o)) {
    if (detail::skip_initialization()) return;
    weight_ = torch_default_init<Scalar, 2>({o.out_features, o.in_features}, o.in_features, o.seed);
    if (o.bias) bias_ = torch_default_init<Scalar, 1>({o.out_features}, o.in_features, o.seed + 1);
    repack();
  }
  /// The module for `o` with these parameters (as set() takes them; ShapeError otherwise), packed once.
  Linear(const LinearOptions& o, Tensor<Scalar, 2> weight, Tensor<Scalar, 1> bias) : options_(checked(o)) {
    set(std::move(weight), std::move(bias));
  }

  /// The options it was built with.
  [[nodiscard]] const LinearOptions& options() const noexcept { return options_; }
  /// The weight [out_features, in_features].
  [[nodiscard]] const Tensor<Scalar, 2>& weight() const noexcept { return weight_; }
  /// The bias [out_features], empty without one.
  [[nodiscard]] const Tensor<Scalar, 1>& bias() const noexcept { return bias_; }

  /// Loads the parameters through `from`, under PyTorch's state_dict names; FormatError or ShapeError names a missing
  /// or misshapen one.
  template <WeightSource S>
  void load(const Loader<S>& from) {
    weight_ = from.template take<Scalar, 2>("weight", {options_.out_features, options_.in_features});
    if (options_.bias) bias_ = from.template take<Scalar, 1>("bias", {options_.out_features});
    repack();
  }
  /// Loads the parameters from a weight source (io::SafeTensors, TensorDict) under `prefix`, with PyTorch's state_dict
  /// names; with `load_options.strict`, a name under the prefix that nothing loaded is a FormatError.
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    load_module(*this, source, prefix, load_options);
  }

  /// Sets the parameters directly (e.g. slices of a packed in_proj_weight): weight
  /// [out_features, in_features], bias [out_features] (empty for a Linear built without one);
  /// ShapeError naming the shapes otherwise.
  void set(Tensor<Scalar, 2> weight, Tensor<Scalar, 1> bias) {
    assign(std::move(weight), std::move(bias));
    repack();
  }

  /// set() with W already packed by the caller, e.g. this Linear's rows of a larger packed
  /// matrix (PackedMatrix::rows_view: the attention modules' q, k and v share their stacked
  /// panels), which it then reads instead of packing a copy of its own. `packed` must hold
  /// weight and bias as PackedMatrix(weight, bias) would; ShapeError (changing nothing) unless
  /// it is [out_features, in_features] with a bias where this Linear has one.
  void set(Tensor<Scalar, 2> weight, Tensor<Scalar, 1> bias, PackedMatrix<Scalar> packed) {
    check_packed(packed, "set");
    assign(std::move(weight), std::move(bias));
    packed_ = std::move(packed);
  }

  /// Reads W from `packed` from now on instead of its own packed copy (as the three-argument
  /// set(), for the parameters it holds already).
  void use_packed(PackedMatrix<Scalar> packed) {
    check_packed(packed, "use_packed");
    packed_ = std::move(packed);
  }

  /// rows [n, in] → out [n, out], both contiguous (the callers guarantee it). An activation is
  /// applied inside the GEMM (ReLU in registers, the others on each tile row while it is in L1).
  /// `threads` as parallel_for takes it (0: heed::num_threads()).
  void rows(const TensorView<const Scalar, 2>& x, const TensorView<Scalar, 2>& out,
            std::optional<Activation> activation = std::nullopt, int threads = 0) const {
    gemm(x, out, nullptr, activation, threads);
  }

  /// out += x Wᵀ + b: a residual connection without a temporary.
  void rows_add(const TensorView<const Scalar, 2>& x, const TensorView<Scalar, 2>& out, int threads = 0) const {
    rows_add(x, out.data(), out, threads);
  }

  /// out = skip + x Wᵀ + b, skip contiguous [n, out] (it may be out): a residual connection
  /// whose input is still needed, without copying it into out first.
  void rows_add(const TensorView<const Scalar, 2>& x, const Scalar* skip, const TensorView<Scalar, 2>& out,
                int threads = 0) const {
    gemm(x, out, skip, std::nullopt, threads);
  }

  /// x [..., in_features] → [..., out_features]; ShapeError for another last dimension.
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
  // ShapeError (from Linear::<who>) unless `packed` is [out_features, in_features], with a bias
  // where this Linear has one.
  void check_packed(const PackedMatrix<Scalar>& packed, const char* who) const {
    const std::string prefix = std::string("heed::nn::Linear::") + who + ": ";
    if (packed.rows() != options_.out_features || packed.cols() != options_.in_features)
      throw ShapeError(prefix + "a packed [" + std::to_string(packed.rows()) + ", " + std::to_string(packed.cols()) +
                       "] matrix for a Linear of " + std::to_string(options_.in_features) + " → " +
                       std::to_string(options_.out_features) + " features");
    if (packed.has_bias() != options_.bias)
      throw ShapeError(prefix + "the packed matrix has " + (packed.has_bias() ? "a bias" : "no bias") +
                       ", this Linear " + (options_.bias ? "has one" : "has none"));
  }

  // The parameters, checked, without packing them.
  void assign(Tensor<Scalar, 2> weight, Tensor<Scalar, 1> bias) {
    const Shape<2> expected{options_.out_features, options_.in_features};
    if (weight.shape() != expected)
      throw ShapeError("heed::nn::Linear::set: weight " + to_string(weight.shape()) + ", expected " +
                       to_string(expected));
    const index_t bias_size = options_.bias ? options_.out_features : 0;
    if (bias.size(0) != bias_size)
      throw ShapeError("heed::nn::Linear::set: bias " + to_string(bias.shape()) + ", expected " +
                       (options_.bias ? "[" + std::to_string(bias_size) + "]" : std::string("none (bias = false)")));
    weight_ = std::move(weight);
    bias_ = std::move(bias);
  }

  // The packed copy gemm_nt reads, rebuilt whenever the parameters change.
  void repack() {
    packed_ =
        PackedMatrix<Scalar>(weight_.data(), weight_.size(0), weight_.size(1), bias_.empty() ? nullptr : bias_.data());
  }

  // gemm_nt on the weight (and bias) packed at load time: the bias and ReLU are added in
  // registers, other activations run on each finished tile row while it is in L1.
  void gemm(const TensorView<const Scalar, 2>& x, const TensorView<Scalar, 2>& out, const Scalar* addend,
            std::optional<Activation> activation, int threads) const {
    const bool relu = activation == Activation::relu;
    const GemmOptions<Scalar> options{.addend = addend, .ld_addend = out.size(1), .relu = relu, .threads = threads};
    if (activation && !relu)
      gemm_nt(x.data(), x.size(1), x.size(0), packed_, out.data(), out.size(1), options,
              [a = *activation](auto* row, index_t, index_t count) { apply_activation(a, row, count); });
    else
      gemm_nt(x.data(), x.size(1), x.size(0), packed_, out.data(), out.size(1), options);
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
  PackedMatrix<Scalar> packed_;  // weight_ as gemm_nt reads it (a second copy, or rows shared with others)
};

}  // namespace heed::nn
