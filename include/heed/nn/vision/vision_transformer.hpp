#pragma once
// VisionTransformer = torchvision.models.VisionTransformer (ViT, Dosovitskiy et al. 2021),
// inference, with torchvision's options and state_dict names, so that its weights load as they are:
//
//   tokens   the image cut into (image_size / patch_size)² patches, each projected to hidden_dim
//            (conv_proj, a Conv2d with kernel = stride = patch_size: here one GEMM over the
//            patches), after a learned class token: [B, 1 + patches, hidden_dim], plus
//            encoder.pos_embedding;
//   encoder  num_layers pre-norm blocks, encoder.layers.encoder_layer_{i}:
//              x = x + self_attention(ln_1(x));  x = x + mlp.3(gelu(mlp.0(ln_2(x))))
//            (torch's TransformerEncoderLayer{norm_first, gelu}), then encoder.ln;
//   head     heads.head, a Linear on the class token's row: logits [B, num_classes].
//
// State dict: class_token [1, 1, D], conv_proj.{weight [D, 3, p, p], bias},
// encoder.pos_embedding [1, 1 + patches, D], encoder.layers.encoder_layer_{i}.{ln_1, ln_2,
// self_attention (MultiheadAttention's names), mlp.0, mlp.3}.*, encoder.ln.*, heads.head.*.
// torchvision's other heads (representation_size) and conv stems are not supported.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "heed/core/cast.hpp"
#include "heed/core/error.hpp"
#include "heed/core/random.hpp"
#include "heed/core/tensor.hpp"
#include "heed/nn/activation.hpp"
#include "heed/nn/layer_norm.hpp"
#include "heed/nn/linear.hpp"
#include "heed/nn/weights.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/nn/detail/encoder_layer.hpp"

namespace heed::nn {

/// The constructor options of VisionTransformer, with torchvision's names (ViT-B/16's values
/// by default).
struct VisionTransformerOptions {
  index_t image_size = 224;    ///< the images' height and width
  index_t patch_size = 16;     ///< the patches' side; must divide image_size
  index_t num_layers = 12;     ///< encoder blocks
  index_t num_heads = 12;      ///< attention heads (hidden_dim must be a multiple)
  index_t hidden_dim = 768;    ///< the model width
  index_t mlp_dim = 3072;      ///< the MLP block's hidden size
  index_t num_classes = 1000;  ///< the head's outputs
  double eps = 1e-6;           ///< the LayerNorms' eps (torchvision's norm_layer)
  std::uint64_t seed = 0;      ///< for the initialization used until load()
};

/// The per-call options of VisionTransformer::forward.
struct VisionTransformerCall {
  bool need_weights = false;  ///< return every block's attention weights
};

/// What VisionTransformer::forward returns.
template <class Scalar>
struct VisionTransformerResult {
  Tensor<Scalar, 2> logits;  ///< [B, num_classes]
  /// With need_weights: one tensor per block, [B, num_heads, 1 + patches, 1 + patches], the
  /// class token's row and column first (the seed's heatmap is layer L's [:, :, 0, 1:]).
  std::vector<Tensor<Scalar, 4>> weights;
};

/// torchvision.models.VisionTransformer: see the top of this file.
template <class Scalar = float>
class VisionTransformer {
 public:
  /// ShapeError unless the sizes are positive, patch_size divides image_size and num_heads
  /// divides hidden_dim. Initialized until load() as torchvision does in spirit (heed's seeded
  /// generator): the class token zero, the position embedding N(0, 0.02²), conv_proj and the
  /// blocks as PyTorch's defaults, the head zero.
  explicit VisionTransformer(const VisionTransformerOptions& o)
      : options_(checked(o)),
        patch_({.in_features = 3 * o.patch_size * o.patch_size, .out_features = o.hidden_dim, .seed = o.seed}),
        class_token_({o.hidden_dim}, Scalar(0)),
        ln_({.normalized_shape = o.hidden_dim, .eps = o.eps}),
        head_({.in_features = o.hidden_dim, .out_features = o.num_classes, .seed = o.seed + 2}) {
    if (detail::skip_initialization()) {  // nn::load_new: load() sets every parameter
      pos_embedding_ = Tensor<Scalar, 2>({sequence_length(), o.hidden_dim}, uninitialized);
    } else {
      Tensor<float, 2> pos = randn<float>({sequence_length(), o.hidden_dim}, o.seed + 3);
      for (index_t i = 0; i < pos.numel(); ++i) pos.data()[i] *= 0.02f;
      pos_embedding_ = cast<Scalar>(pos);
      head_.set(Tensor<Scalar, 2>({o.num_classes, o.hidden_dim}, Scalar(0)),
                Tensor<Scalar, 1>({o.num_classes}, Scalar(0)));
    }
    for (index_t i = 0; i < o.num_layers; ++i)
      layers_.emplace_back(detail::EncoderLayerConfig{.d_model = o.hidden_dim,
                                                      .nhead = o.num_heads,
                                                      .dim_feedforward = o.mlp_dim,
                                                      .activation = Activation::gelu,
                                                      .layer_norm_eps = o.eps,
                                                      .norm_first = true,
                                                      .seed = o.seed + 100 * static_cast<std::uint64_t>(i + 1)});
  }

  /// The options it was built with.
  [[nodiscard]] const VisionTransformerOptions& options() const noexcept { return options_; }
  /// 1 + (image_size / patch_size)²: the class token and the patches.
  [[nodiscard]] index_t sequence_length() const noexcept {
    const index_t side = options_.image_size / options_.patch_size;
    return 1 + side * side;
  }

  /// Loads torchvision's names (see the top of this file).
  template <WeightSource S>
  void load(const Loader<S>& from) {
    const index_t D = options_.hidden_dim, p = options_.patch_size;
    const Tensor<Scalar, 4> conv = from.template take<Scalar, 4>("conv_proj.weight", {D, 3, p, p});
    Tensor<Scalar, 2> weight({D, 3 * p * p}, uninitialized);  // [D, 3, p, p] is [D, 3·p·p], row by row
    std::copy_n(conv.data(), conv.numel(), weight.data());
    patch_.set(std::move(weight), from.template take<Scalar, 1>("conv_proj.bias", {D}));
    const Tensor<Scalar, 3> token = from.template take<Scalar, 3>("class_token", {1, 1, D});
    std::copy_n(token.data(), D, class_token_.data());
    const Tensor<Scalar, 3> pos = from.template take<Scalar, 3>("encoder.pos_embedding", {1, sequence_length(), D});
    std::copy_n(pos.data(), pos.numel(), pos_embedding_.data());
    const detail::EncoderNames names{
        .linear1 = "mlp.0.", .linear2 = "mlp.3.", .self_attn = "self_attention.", .norm1 = "ln_1.", .norm2 = "ln_2."};
    for (std::size_t i = 0; i < layers_.size(); ++i)
      layers_[i].load(from.child("encoder.layers.encoder_layer_" + std::to_string(i) + "."), names);
    ln_.load(from.child("encoder.ln."));
    head_.load(from.child("heads.head."));
  }
  /// load(Loader) from `source` under `prefix` (strict: unused names under it are an error).
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    load_module(*this, source, prefix, load_options);
  }

  /// images [B, 3, image_size, image_size] → logits [B, num_classes].
  template <TensorLike X>
  [[nodiscard]] Tensor<Scalar, 2> operator()(const X& images) const {
    return forward(images).logits;
  }

  /// The logits and, with need_weights, every block's attention weights.
  template <TensorLike X>
  [[nodiscard]] VisionTransformerResult<Scalar> forward(const X& images, const VisionTransformerCall& call = {}) const {
    Tensor<Scalar, 3> x = tokens(images);
    const index_t B = x.size(0), L = x.size(1), D = options_.hidden_dim;
    VisionTransformerResult<Scalar> result;
    if (call.need_weights) result.weights.resize(layers_.size());
    for (std::size_t i = 0; i < layers_.size(); ++i)
      layers_[i].forward(x.view(), x.view(), detail::LayerMasks<Scalar>{},
                         call.need_weights ? &result.weights[i] : nullptr);
    // only the class token's row goes on: encoder.ln, then the head
    Tensor<Scalar, 2> cls({B, D}, uninitialized);
    for (index_t b = 0; b < B; ++b) ln_.rows(x.data() + b * L * D, cls.data() + b * D, 1);
    result.logits = head_(cls);
    return result;
  }

  /// What the encoder blocks take: the class token and the projected patches, plus the
  /// position embedding, [B, 1 + patches, hidden_dim]; ShapeError unless images is
  /// [B, 3, image_size, image_size].
  template <TensorLike X>
  [[nodiscard]] Tensor<Scalar, 3> tokens(const X& images) const {
    static_assert(rank_of<X> == 4 && std::is_same_v<scalar_of<X>, Scalar>,
                  "VisionTransformer takes images [B, 3, H, W] of its own Scalar");
    Tensor<Scalar, 4> storage;
    const TensorView<const Scalar, 4> in = contiguous(as_view(images), storage);
    const index_t S = options_.image_size, p = options_.patch_size, D = options_.hidden_dim;
    if (in.size(1) != 3 || in.size(2) != S || in.size(3) != S)
      throw ShapeError("heed::nn::VisionTransformer: expects images [B, 3, " + std::to_string(S) + ", " +
                       std::to_string(S) + "], got " + to_string(in.shape()));
    const index_t B = in.size(0), L = sequence_length(), side = S / p, K = 3 * p * p;
    Tensor<Scalar, 3> x({B, L, D}, uninitialized);
    Tensor<Scalar, 2> patches({L - 1, K}, uninitialized);
    for (index_t b = 0; b < B; ++b) {
      // conv_proj as one GEMM: each patch's pixels in the weight's order (channel, row, column)
      for (index_t r = 0; r < side; ++r)
        for (index_t c = 0; c < side; ++c) {
          Scalar* row = &patches(r * side + c, 0);
          for (index_t ch = 0; ch < 3; ++ch)
            for (index_t kh = 0; kh < p; ++kh, row += p) std::copy_n(&in(b, ch, r * p + kh, c * p), p, row);
        }
      Scalar* out = x.data() + b * L * D;
      const Scalar* pos = pos_embedding_.data();
      for (index_t j = 0; j < D; ++j)  // the class token, rounded once as torch's cat-then-add rounds it
        out[j] = static_cast<Scalar>(static_cast<accumulator_t<Scalar>>(class_token_.data()[j]) +
                                     static_cast<accumulator_t<Scalar>>(pos[j]));
      patch_.rows_add(patches.view(), pos + D, TensorView<Scalar, 2>(out + D, {L - 1, D}));
    }
    return x;
  }

 private:
  static VisionTransformerOptions checked(const VisionTransformerOptions& o) {
    const auto positive = [](index_t v) { return v > 0; };
    if (!positive(o.image_size) || !positive(o.patch_size) || !positive(o.num_layers) || !positive(o.num_heads) ||
        !positive(o.hidden_dim) || !positive(o.mlp_dim) || !positive(o.num_classes) ||
        o.image_size % o.patch_size != 0 || o.image_size / o.patch_size > 32768 || o.hidden_dim % o.num_heads != 0)
      throw ShapeError("heed::nn::VisionTransformer: image_size " + std::to_string(o.image_size) + ", patch_size " +
                       std::to_string(o.patch_size) + ", num_layers " + std::to_string(o.num_layers) + ", num_heads " +
                       std::to_string(o.num_heads) + ", hidden_dim " + std::to_string(o.hidden_dim) + ", mlp_dim " +
                       std::to_string(o.mlp_dim) + ", num_classes " + std::to_string(o.num_classes) +
                       ": all must be positive, patch_size must divide image_size (at most 32768 patches a side) "
                       "and num_heads hidden_dim");
    return o;
  }

  VisionTransformerOptions options_;
  Linear<Scalar> patch_;             // conv_proj as [D, 3·p·p]
  Tensor<Scalar, 1> class_token_;    // [D]
  Tensor<Scalar, 2> pos_embedding_;  // [1 + patches, D]
  std::vector<detail::EncoderLayer<Scalar>> layers_;
  LayerNorm<Scalar> ln_;
  Linear<Scalar> head_;
};

}  // namespace heed::nn
