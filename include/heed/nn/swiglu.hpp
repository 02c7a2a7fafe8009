#pragma once
// SwiGLU: the gated feed-forward block of Llama, Mistral and Qwen (Shazeer, "GLU Variants
// Improve Transformer", 2020), with the Hugging Face state_dict names:
//   y = down_proj( silu(gate_proj(x)) ⊙ up_proj(x) )
//   gate_proj.weight [hidden, dim], up_proj.weight [hidden, dim], down_proj.weight [dim, hidden]
// gate_proj and up_proj run as one GEMM (their weights stacked into one packed matrix at load,
// a second copy of them), silu(g) = g / (1 + exp(-g)) applied to the gate half while its tile is
// in L1. Biases (none in Llama) on all three projections when `bias` is set.
// A bfloat16 or half SwiGLU keeps its weights 16-bit; each projection accumulates in float
// and rounds its output once, as PyTorch's 16-bit Linear does.

#include <algorithm>
#include <cstdint>
#include <string>

#include "heed/core/error.hpp"
#include "heed/core/parallel.hpp"
#include "heed/core/scalar.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/gemm.hpp"
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
        down_proj_({.in_features = o.hidden_dim, .out_features = o.dim, .bias = o.bias, .seed = o.seed + 2}) {
    pack();
  }

  /// The options it was made with.
  [[nodiscard]] const SwiGLUOptions& options() const noexcept { return options_; }

  /// Loads gate_proj, up_proj and down_proj (weight, and bias with `bias`).
  template <WeightSource S>
  void load(const Loader<S>& from) {
    gate_proj_.load(from.child("gate_proj."));
    up_proj_.load(from.child("up_proj."));
    down_proj_.load(from.child("down_proj."));
    pack();
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
    // gate_proj and up_proj as one GEMM, one parallel region: [n, 2F], silu on the first F columns
    Tensor<Scalar, 2> gate_up({n, 2 * F}, uninitialized), hidden({n, F}, uninitialized);
    gemm_nt(x, d, n, gate_up_, gate_up.data(), 2 * F, {}, [F](auto* row, index_t col0, index_t count) {
      const index_t end = std::min(col0 + count, F);
      if (col0 < end) apply_activation(Activation::silu, row, end - col0);
    });
    const int threads = n * F < product_serial_work ? 1 : 0;
    parallel_for(n, threads, [&](index_t r, int) {
      const Scalar* g = gate_up.data() + r * 2 * F;
      multiply(g, g + F, hidden.data() + r * F, F);
    });
    down_proj_.rows_add(hidden.view(), skip, TensorView<Scalar, 2>(out, {n, d}));
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
  // z[i] = g[i]·u[i]; 16-bit values are multiplied in float and rounded once, as PyTorch does.
  static void multiply(const Scalar* g, const Scalar* u, Scalar* z, index_t n) noexcept {
    if constexpr (is_16bit_float_v<Scalar>) {
      const simd::ConvertKernels<Scalar>& convert = simd::convert_kernels<Scalar>();
      const auto product = simd::vector_kernels<float>().multiply;
      constexpr index_t chunk = 256;
      float gf[chunk], uf[chunk];
      for (index_t i = 0; i < n; i += chunk) {
        const index_t m = std::min(chunk, n - i);
        convert.widen(g + i, gf, m);
        convert.widen(u + i, uf, m);
        product(gf, uf, gf, m);
        convert.narrow(gf, z + i, m);
      }
    } else {
      simd::vector_kernels<Scalar>().multiply(g, u, z, n);
    }
  }

  // gate_proj and up_proj stacked into one [2·hidden, dim] matrix, packed for gemm_nt (rebuilt
  // after load): a decoding step's feed-forward block is then two parallel regions, not three.
  void pack() {
    const index_t d = options_.dim, F = options_.hidden_dim;
    if (F < 1 || gate_proj_.weight().empty()) return;  // empty: under nn::load_new, until load()
    Tensor<Scalar, 2> w({2 * F, d}, uninitialized);
    std::copy_n(gate_proj_.weight().data(), F * d, w.data());
    std::copy_n(up_proj_.weight().data(), F * d, w.data() + F * d);
    Tensor<Scalar, 1> b;
    if (options_.bias) {
      b = Tensor<Scalar, 1>({2 * F}, uninitialized);
      std::copy_n(gate_proj_.bias().data(), F, b.data());
      std::copy_n(up_proj_.bias().data(), F, b.data() + F);
    }
    gate_up_ = PackedMatrix<Scalar>(w.data(), 2 * F, d, options_.bias ? b.data() : nullptr);
  }

  // Multiplications below which silu(gate) ⊙ up runs on the caller (a decoding step's row).
  static constexpr index_t product_serial_work = 64 * 1024;

  static const SwiGLUOptions& checked(const SwiGLUOptions& o) {
    if (o.dim < 1 || o.hidden_dim < 1)
      throw ShapeError("heed::nn::SwiGLU: dim and hidden_dim must be >= 1, got " + std::to_string(o.dim) + " and " +
                       std::to_string(o.hidden_dim));
    return o;
  }

  SwiGLUOptions options_;
  Linear<Scalar> gate_proj_, up_proj_, down_proj_;
  PackedMatrix<Scalar> gate_up_;  // gate_proj_ and up_proj_ as one GEMM reads them
};

}  // namespace heed::nn
