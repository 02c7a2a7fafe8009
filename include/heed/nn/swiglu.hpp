#pragma once
// SwiGLU: the gated feed-forward block of Llama, Mistral and Qwen (Shazeer, "GLU Variants
// Improve Transformer", 2020), with the Hugging Face state_dict names:
//   y = down_proj( silu(gate_proj(x)) ⊙ up_proj(x) )
//   gate_proj.weight [hidden, dim], up_proj.weight [hidden, dim], down_proj.weight [dim, hidden]
// silu(g) = g / (1 + exp(-g)), applied inside gate_proj's GEMM while its tile is in L1. Biases
// (none in Llama) on all three projections when `bias` is set.
// A bfloat16 or half SwiGLU keeps its weights 16-bit; each projection accumulates in float
// and rounds its output once, as PyTorch's 16-bit Linear does.

#include <cstdint>
#include <string>

#include "heed/core/error.hpp"
#include "heed/core/scalar.hpp"
#include "heed/core/tensor.hpp"
#include "heed/nn/activation.hpp"
#include "heed/nn/linear.hpp"
#include "heed/nn/weights.hpp"
#include "heed/simd/kernel_table.hpp"

namespace heed::nn {

/// The constructor options of SwiGLU, with the Hugging Face configuration's meaning.
struct SwiGLUOptions {
  index_t dim = 0;         ///< hidden_size: the input and output features
  index_t hidden_dim = 0;  ///< intermediate_size
  bool bias = false;       ///< biases on the three projections (Llama: none)
  std::uint64_t seed = 0;  ///< for the PyTorch-style initialization used until load()
};

/// The gated feed-forward block: see the top of this file.
template <class Scalar = float>
class SwiGLU {
 public:
  /// An empty block (assign a constructed one to it).
  SwiGLU() = default;
  /// ShapeError unless dim and hidden_dim are >= 1.
  explicit SwiGLU(const SwiGLUOptions& o)
      : options_(checked(o)),
        gate_proj_({.in_features = o.dim, .out_features = o.hidden_dim, .bias = o.bias, .seed = o.seed}),
        up_proj_({.in_features = o.dim, .out_features = o.hidden_dim, .bias = o.bias, .seed = o.seed + 1}),
        down_proj_({.in_features = o.hidden_dim, .out_features = o.dim, .bias = o.bias, .seed = o.seed + 2}) {}

  /// The options it was made with.
  [[nodiscard]] const SwiGLUOptions& options() const noexcept { return options_; }

  /// Loads gate_proj, up_proj and down_proj (weight, and bias with `bias`).
  template <WeightSource S>
  void load(const Loader<S>& from) {
    gate_proj_.load(from.child("gate_proj."));
    up_proj_.load(from.child("up_proj."));
    down_proj_.load(from.child("down_proj."));
  }
  /// load(Loader) from `source` under `prefix` (strict: unused names under it are an error).
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    load_module(*this, source, prefix, load_options);
  }

  /// out = skip + ff(x) for `n` contiguous rows: x [n, dim], skip and out [n, dim] (skip may be
  /// out, or null for out = ff(x)): the residual connection of a decoder block without a
  /// temporary for ff(x).
  void rows_add(const Scalar* x, const Scalar* skip, Scalar* out, index_t n) const {
    const index_t d = options_.dim, F = options_.hidden_dim;
    Tensor<Scalar, 2> gate({n, F}, uninitialized), up({n, F}, uninitialized);
    const TensorView<const Scalar, 2> in(x, {n, d});
    gate_proj_.rows(in, gate.view(), Activation::silu);
    up_proj_.rows(in, up.view());
    multiply(gate.data(), up.data(), gate.numel());
    down_proj_.rows_add(gate.view(), skip, TensorView<Scalar, 2>(out, {n, d}));
  }

  /// x [..., dim] → [..., dim].
  template <TensorLike X>
  [[nodiscard]] Tensor<Scalar, rank_of<X>> operator()(const X& x) const {
    constexpr std::size_t R = rank_of<X>;
    static_assert(std::is_same_v<scalar_of<X>, Scalar>, "the input's scalar type must be the module's");
    const auto v = as_view(x);
    if (v.size(R - 1) != options_.dim)
      throw ShapeError("heed::nn::SwiGLU: expects " + std::to_string(options_.dim) + " input features, got x " +
                       to_string(v.shape()));
    Tensor<Scalar, R> storage;
    const auto dense = contiguous(v, storage);
    Tensor<Scalar, R> out(v.shape(), uninitialized);
    if (out.numel() > 0) rows_add(dense.data(), nullptr, out.data(), out.numel() / options_.dim);
    return out;
  }

 private:
  // g[i] *= u[i]; 16-bit values are multiplied in float and rounded once, as PyTorch does.
  static void multiply(Scalar* g, const Scalar* u, index_t n) noexcept {
    if constexpr (is_16bit_float_v<Scalar>) {
      for (index_t i = 0; i < n; ++i) g[i] = Scalar(static_cast<float>(g[i]) * static_cast<float>(u[i]));
    } else {
      simd::vector_kernels<Scalar>().multiply(g, u, g, n);
    }
  }

  static const SwiGLUOptions& checked(const SwiGLUOptions& o) {
    if (o.dim < 1 || o.hidden_dim < 1)
      throw ShapeError("heed::nn::SwiGLU: dim and hidden_dim must be >= 1, got " + std::to_string(o.dim) + " and " +
                       std::to_string(o.hidden_dim));
    return o;
  }

  SwiGLUOptions options_;
  Linear<Scalar> gate_proj_, up_proj_, down_proj_;
};

}  // namespace heed::nn
