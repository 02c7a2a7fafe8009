#pragma once
// TransformerEncoderLayer = torch.nn.TransformerEncoderLayer(batch_first=True), inference:
//   post-norm (default):  x = norm1(x + self_attn(x)); x = norm2(x + ff(x))
//   norm_first:           x = x + self_attn(norm1(x)); x = x + ff(norm2(x))
//   ff(x) = linear2(activation(linear1(x)))
// State dict: self_attn.*, linear1.*, linear2.*, norm1.*, norm2.* — or, with
// StateDictLayout::seed, the seed's own pre-norm layer (seed 000 §5.1): ffn.0.*, ffn.3.*.

#include <string>
#include <vector>

#include "heed/core/error.hpp"
#include "heed/core/parallel.hpp"
#include "heed/core/tensor.hpp"
#include "heed/nn/activation.hpp"
#include "heed/nn/layer_norm.hpp"
#include "heed/nn/linear.hpp"
#include "heed/nn/multihead_attention.hpp"
#include "heed/nn/weights.hpp"
#include "heed/simd/gemm.hpp"
#include "heed/simd/vector_ops.hpp"

namespace heed::nn {

/// Whose parameter names an encoder loads: torch.nn's, or the seed's custom encoder's.
enum class StateDictLayout { torch, seed };

struct TransformerEncoderLayerOptions {
  index_t d_model = 0;
  index_t nhead = 1;
  index_t dim_feedforward = 2048;
  Activation activation = Activation::relu;
  double layer_norm_eps = 1e-5;
  bool norm_first = false;
  StateDictLayout layout = StateDictLayout::torch;
  std::uint64_t seed = 0;
};

/// The per-call options of the encoder, with PyTorch's names.
struct EncoderCall {
  TensorView<const bool, 2> src_key_padding_mask{};  ///< [B, L], true = padding
  bool is_causal = false;                            ///< position i attends to j <= i only
  MaskedRows masked_rows = MaskedRows::zero;
};

/// x [B, L, d_model] as a contiguous view (copied into `storage` only if it is not contiguous);
/// ShapeError on another width.
template <class Scalar, class X>
TensorView<const Scalar, 3> encoder_input(const X& x, index_t d_model, const char* who, Tensor<Scalar, 3>& storage) {
  static_assert(rank_of<X> == 3 && std::is_same_v<scalar_of<X>, Scalar>, "an encoder takes x [B, L, d_model]");
  const TensorView<const Scalar, 3> v = as_view(x);
  if (v.size(2) != d_model)
    throw ShapeError(std::string("heed::nn::") + who + ": expects d_model " + std::to_string(d_model) + ", got x " +
                     to_string(v.shape()));
  return contiguous(v, storage);
}

template <class Scalar = float>
class TransformerEncoderLayer {
 public:
  explicit TransformerEncoderLayer(const TransformerEncoderLayerOptions& o)
      : options_(o),
        self_attn_({.embed_dim = o.d_model, .num_heads = o.nhead, .seed = o.seed}),
        linear1_({.in_features = o.d_model, .out_features = o.dim_feedforward, .seed = o.seed + 10}),
        linear2_({.in_features = o.dim_feedforward, .out_features = o.d_model, .seed = o.seed + 12}),
        norm1_({.normalized_shape = o.d_model, .eps = o.layer_norm_eps}),
        norm2_({.normalized_shape = o.d_model, .eps = o.layer_norm_eps}) {}

  [[nodiscard]] const TransformerEncoderLayerOptions& options() const noexcept { return options_; }

  template <WeightSource S>
  void load(const Loader<S>& from) {
    const bool seed = options_.layout == StateDictLayout::seed;
    self_attn_.load(from.child("self_attn."));
    linear1_.load(from.child(seed ? "ffn.0." : "linear1."));
    linear2_.load(from.child(seed ? "ffn.3." : "linear2."));
    norm1_.load(from.child("norm1."));
    norm2_.load(from.child("norm2."));
  }
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    load_module(*this, source, prefix, load_options);
  }

  /// x [B, L, d_model] → [B, L, d_model]
  template <TensorLike X>
  [[nodiscard]] Tensor<Scalar, 3> operator()(const X& x, const EncoderCall& call = {}) const {
    Tensor<Scalar, 3> storage;
    const auto in = encoder_input(x, options_.d_model, "TransformerEncoderLayer", storage);
    Tensor<Scalar, 3> out(in.shape(), uninitialized);
    forward(in, out.view(), call);
    return out;
  }

  /// out = layer(x), both contiguous [B, L, d_model] (validated by the caller); out may be x
  /// (the encoder chains layers in place). x is not copied: the first residual connection
  /// reads it in the output projection's GEMM.
  void forward(const TensorView<const Scalar, 3>& x, const TensorView<Scalar, 3>& out, const EncoderCall& call) const {
    const index_t d = options_.d_model, rows = x.numel() / d;
    // out = skip + self_attn(in), the skip added by the output projection's GEMM
    const auto add_attention = [&](const auto& in, const TensorView<const Scalar, 3>& skip) {
      self_attn_.add_self_attention(in, skip, out,
                                    {.key_padding_mask = call.src_key_padding_mask,
                                     .is_causal = call.is_causal,
                                     .masked_rows = call.masked_rows});
    };
    // out += linear2(activation(linear1(in))), the bias and activation fused into linear1's GEMM.
    // Rows go in blocks, one block per worker, so each block's hidden activations [block, F]
    // stay in that core's L2 between the two GEMMs instead of a [rows, F] round trip to memory.
    const auto add_feed_forward = [&](const Scalar* in) {
      const index_t F = options_.dim_feedforward, block = simd::GemmTile<Scalar>::mc;
      const index_t blocks = (rows + block - 1) / block;
      const int threads = static_cast<int>(std::min<index_t>(num_threads(), blocks));
      std::vector<Tensor<Scalar, 2>> hidden(static_cast<std::size_t>(std::max(threads, 1)));
      parallel_for(blocks, threads, [&](index_t i, int worker) {
        const index_t r0 = i * block, n = std::min(block, rows - r0);
        Tensor<Scalar, 2>& h = hidden[static_cast<std::size_t>(worker)];
        if (h.empty()) h = Tensor<Scalar, 2>({block, F}, uninitialized);
        const TensorView<Scalar, 2> hv(h.data(), {n, F});
        linear1_.rows(TensorView<const Scalar, 2>(in + r0 * d, {n, d}), hv, options_.activation, 1);
        linear2_.rows_add(hv, TensorView<Scalar, 2>(out.data() + r0 * d, {n, d}), 1);
      });
    };
    if (options_.norm_first) {
      add_attention(norm1_(x), x);
      const Tensor<Scalar, 3> normed = norm2_(out);
      add_feed_forward(normed.data());
    } else {
      add_attention(x, x);  // x is fully read (projected) before out is written
      norm1_.rows(out.data(), out.data(), rows);
      add_feed_forward(out.data());
      norm2_.rows(out.data(), out.data(), rows);
    }
  }

 private:
  TransformerEncoderLayerOptions options_;
  MultiheadAttention<Scalar> self_attn_;
  Linear<Scalar> linear1_, linear2_;
  LayerNorm<Scalar> norm1_, norm2_;
};

}  // namespace heed::nn
