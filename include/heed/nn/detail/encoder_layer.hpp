#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "heed/core/error.hpp"
#include "heed/core/parallel.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/gemm.hpp"
#include "heed/nn/activation.hpp"
#include "heed/nn/encoder_call.hpp"
#include "heed/nn/layer_norm.hpp"
#include "heed/nn/linear.hpp"
#include "heed/nn/multihead_attention.hpp"
#include "heed/nn/weights.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/nn/detail/torch_masks.hpp"

// The Transformer encoder layer and stack behind torch's TransformerEncoderLayer /
// TransformerEncoder (heed/nn/transformer_encoder*.hpp) and the seed's own pre-norm encoder
// (heed/nn/seed/transformer_encoder.hpp): one forward pass, two sets of parameter names.
namespace heed::detail {

struct EncoderLayerConfig {
  index_t d_model = 0;
  index_t nhead = 1;
  index_t dim_feedforward = 2048;
  nn::Activation activation = nn::Activation::relu;
  double layer_norm_eps = 1e-5;
  bool norm_first = false;
  std::uint64_t seed = 0;
};

// Where a layout keeps its sub-modules: torch's names by default; the seed's feed-forward block
// is ffn.0./ffn.3., torchvision's ViT block self_attention., mlp.0./mlp.3., ln_1./ln_2.
struct EncoderNames {
  const char* linear1 = "linear1.";
  const char* linear2 = "linear2.";
  const char* self_attn = "self_attn.";
  const char* norm1 = "norm1.";
  const char* norm2 = "norm2.";
};

// x [B, L, d_model] as a contiguous view (copied into `storage` only if it is not contiguous);
// ShapeError on another width.
template <class Scalar, class X>
TensorView<const Scalar, 3> encoder_input(const X& x, index_t d_model, const char* who, Tensor<Scalar, 3>& storage) {
  static_assert(rank_of<X> == 3 && std::is_same_v<scalar_of<X>, Scalar>, "an encoder takes x [B, L, d_model]");
  const TensorView<const Scalar, 3> v = as_view(x);
  if (v.size(2) != d_model)
    throw ShapeError(std::string("heed::nn::") + who + ": expects d_model " + std::to_string(d_model) + ", got x " +
                     to_string(v.shape()));
  return contiguous(v, storage);
}

// The call's masks for x [B, L, d_model] in a layer of H heads, checked under torch's names
// (the seed's modules call the padding mask key_padding_mask).
inline void check_encoder_masks(const nn::EncoderCall& call, const Shape<3>& x, index_t H, const char* who,
                                const char* padding_name = "src_key_padding_mask") {
  check_torch_masks({.module = who,
                     .attn_mask = "mask",
                     .key_padding_mask = padding_name,
                     .heads = "nhead",
                     .queries = "L",
                     .keys = "L"},
                    x[0], H, x[1], x[1], call.src_key_padding_mask, call.mask);
}

// out[rows, d] += linear2(activation(linear1(in[rows, d]))), the bias and activation fused into
// linear1's GEMM (the encoder's and the decoder's feed-forward block). Rows go in the GEMM's row
// blocks (detail::RowBlocks), one block per worker, so each block's hidden activations [block, F]
// stay in that core's L2 between the two GEMMs instead of a [rows, F] round trip to memory. With
// fewer blocks than workers (ViT-B's 197 tokens, a decoding step's one row) the two GEMMs run
// over all the rows, each on every worker: a block per worker would leave workers idle.
template <class Scalar>
void add_feed_forward(const nn::Linear<Scalar>& linear1, const nn::Linear<Scalar>& linear2, nn::Activation activation,
                      const Scalar* in, Scalar* out, index_t rows) {
  const index_t d = linear1.weight().size(1), F = linear1.weight().size(0);
  const RowBlocks blocks(rows, simd::gemm_kernels<Scalar>().mc);
  const int workers = num_threads();
  if (blocks.count < workers) {
    Tensor<Scalar, 2> hidden({rows, F}, uninitialized);
    linear1.rows(TensorView<const Scalar, 2>(in, {rows, d}), hidden.view(), activation, workers);
    linear2.rows_add(hidden.view(), TensorView<Scalar, 2>(out, {rows, d}), workers);
    return;
  }
  std::vector<Tensor<Scalar, 2>> hidden(static_cast<std::size_t>(workers));
  parallel_for(blocks.count, workers, [&](index_t i, int worker) {
    const index_t r0 = blocks.first(i), n = blocks.size(i);
    Tensor<Scalar, 2>& h = hidden[static_cast<std::size_t>(worker)];
    if (h.empty()) h = Tensor<Scalar, 2>({std::min(RowBlocks::capacity(blocks.mc), rows), F}, uninitialized);
    const TensorView<Scalar, 2> hv(h.data(), {n, F});
    linear1.rows(TensorView<const Scalar, 2>(in + r0 * d, {n, d}), hv, activation, 1);
    linear2.rows_add(hv, TensorView<Scalar, 2>(out + r0 * d, {n, d}), 1);
  });
}

// An encoder call's masks as its layers take them: made once per call (EncoderLayer::masks) for
// every layer of a stack.
template <class Scalar>
struct LayerMasks {
  mask::Dynamic<Scalar> masks;
  MaskedRows masked_rows = MaskedRows::zero;
};

//   post-norm (default):  x = norm1(x + self_attn(x)); x = norm2(x + ff(x))
//   norm_first:           x = x + self_attn(norm1(x)); x = x + ff(norm2(x))
//   ff(x) = linear2(activation(linear1(x)))
template <class Scalar>
class EncoderLayer {
 public:
  explicit EncoderLayer(const EncoderLayerConfig& c)
      : config_(c),
        self_attn_({.embed_dim = c.d_model, .num_heads = c.nhead, .seed = c.seed}),
        linear1_({.in_features = c.d_model, .out_features = c.dim_feedforward, .seed = c.seed + 10}),
        linear2_({.in_features = c.dim_feedforward, .out_features = c.d_model, .seed = c.seed + 12}),
        norm1_({.normalized_shape = c.d_model, .eps = c.layer_norm_eps}),
        norm2_({.normalized_shape = c.d_model, .eps = c.layer_norm_eps}) {}

  [[nodiscard]] const EncoderLayerConfig& config() const noexcept { return config_; }

  template <nn::WeightSource S>
  void load(const nn::Loader<S>& from, const EncoderNames& names) {
    self_attn_.load(from.child(names.self_attn));
    linear1_.load(from.child(names.linear1));
    linear2_.load(from.child(names.linear2));
    norm1_.load(from.child(names.norm1));
    norm2_.load(from.child(names.norm2));
  }

  // The call's masks (checked by the caller: check_encoder_masks) over x [B, L, d_model].
  [[nodiscard]] LayerMasks<Scalar> masks(const nn::EncoderCall& call, index_t B, index_t L) const {
    return {self_attn_.masks_of({.key_padding_mask = call.src_key_padding_mask,
                                 .attn_mask = call.mask,
                                 .is_causal = call.is_causal,
                                 .sparse = call.sparse},
                                B, L),
            call.masked_rows};
  }

  // out = layer(x), both contiguous [B, L, d_model] (validated by the caller); out may be x
  // (the stack chains layers in place). x is not copied: the first residual connection reads
  // it in the output projection's GEMM. `weights`, when not null, receives the self-attention's
  // weights per head, [B, H, L, L].
  void forward(const TensorView<const Scalar, 3>& x, const TensorView<Scalar, 3>& out, const LayerMasks<Scalar>& m,
               Tensor<Scalar, 4>* weights = nullptr) const {
    const index_t d = config_.d_model, rows = x.numel() / d;
    // out = skip + self_attn(in), the skip added by the output projection's GEMM
    const auto add_attention = [&](const auto& in, const TensorView<const Scalar, 3>& skip) {
      self_attn_.add_self_attention_with(in, skip, out, m.masks, {.masked_rows = m.masked_rows}, weights);
    };
    const auto add_feed_forward = [&](const Scalar* in) {
      detail::add_feed_forward(linear1_, linear2_, config_.activation, in, out.data(), rows);
    };
    if (config_.norm_first) {
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
  EncoderLayerConfig config_;
  nn::MultiheadAttention<Scalar> self_attn_;
  nn::Linear<Scalar> linear1_, linear2_;
  nn::LayerNorm<Scalar> norm1_, norm2_;
};

// num_layers layers (`layers.{i}.`) and an optional final LayerNorm.
template <class Scalar>
class EncoderStack {
 public:
  EncoderStack(const EncoderLayerConfig& layer, index_t num_layers, bool final_norm, const char* who)
      : final_norm_(final_norm), norm_({.normalized_shape = layer.d_model, .eps = layer.layer_norm_eps}) {
    if (num_layers < 1)
      throw ShapeError(std::string("heed::nn::") + who + ": num_layers must be >= 1, got " +
                       std::to_string(num_layers));
    for (index_t i = 0; i < num_layers; ++i) {
      EncoderLayerConfig c = layer;
      c.seed = layer.seed + 100 * static_cast<std::uint64_t>(i);
      layers_.emplace_back(c);
    }
  }

  template <nn::WeightSource S>
  void load(const nn::Loader<S>& from, const EncoderNames& names, const char* final_norm_name) {
    for (std::size_t i = 0; i < layers_.size(); ++i)
      layers_[i].load(from.child("layers." + std::to_string(i) + "."), names);
    if (final_norm_) norm_.load(from.child(final_norm_name));
  }

  Tensor<Scalar, 3> forward(const TensorView<const Scalar, 3>& in, const nn::EncoderCall& call) const {
    Tensor<Scalar, 3> out(in.shape(), uninitialized);
    const LayerMasks<Scalar> masks = layers_.front().masks(call, in.size(0), in.size(1));  // one for every layer
    layers_.front().forward(in, out.view(), masks);  // then layer by layer in place
    for (std::size_t i = 1; i < layers_.size(); ++i) layers_[i].forward(out.view(), out.view(), masks);
    const index_t d = layers_.front().config().d_model;
    if (final_norm_) norm_.rows(out.data(), out.data(), out.numel() / d);
    return out;
  }

 private:
  bool final_norm_;
  std::vector<EncoderLayer<Scalar>> layers_;
  nn::LayerNorm<Scalar> norm_;
};

}  // namespace heed::detail
