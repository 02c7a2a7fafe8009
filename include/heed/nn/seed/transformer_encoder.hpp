#pragma once
// seed::TransformerEncoderLayer and seed::TransformerEncoder: the tutorial's own pre-norm encoder
// (SeedEncoder in tests/golden/generate.py), on the same forward pass as torch's TransformerEncoder:
//   x = x + self_attn(norm1(x)); x = x + ffn(norm2(x)), ffn = Linear, GELU, Dropout, Linear
//   encoder: the layers, then final_norm
// State dict: self_attn.* (nn.MultiheadAttention), ffn.0.*, ffn.3.*, norm1.*, norm2.*; the
// encoder: layers.{i}.*, final_norm.*.

#include <cstdint>
#include <string>

#include "heed/core/tensor.hpp"
#include "heed/nn/activation.hpp"
#include "heed/nn/encoder_call.hpp"
#include "heed/nn/weights.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/nn/seed/detail/seed_encoder.hpp"

namespace heed::nn::seed {

/// The seed's TransformerEncoderLayer(d_model, n_heads, d_ff) (dropout is the identity).
struct TransformerEncoderLayerOptions {
  index_t d_model = 0;     ///< the model width
  index_t n_heads = 1;     ///< heads
  index_t d_ff = 2048;     ///< the feed-forward hidden size
  std::uint64_t seed = 0;  ///< for the PyTorch-style initialization used until load()
};

/// The seed's TransformerEncoder(d_model, n_heads, d_ff, num_layers).
struct TransformerEncoderOptions {
  index_t d_model = 0;     ///< the model width
  index_t n_heads = 1;     ///< heads
  index_t d_ff = 2048;     ///< the feed-forward hidden size
  index_t num_layers = 1;  ///< encoder layers
  std::uint64_t seed = 0;  ///< layer i is initialized from seed + 100·i until load()
};

/// The seed's pre-norm encoder layer: see the top of this file.
template <class Scalar = float>
class TransformerEncoderLayer {
 public:
  /// ShapeError unless d_model is a positive multiple of n_heads.
  explicit TransformerEncoderLayer(const TransformerEncoderLayerOptions& o)
      : options_(o), layer_(heed::detail::seed_layer(o.d_model, o.n_heads, o.d_ff, o.seed)) {}

  /// The options it was built with.
  [[nodiscard]] const TransformerEncoderLayerOptions& options() const noexcept { return options_; }

  /// Loads the seed's names (see the top of this file).
  template <WeightSource S>
  void load(const Loader<S>& from) {
    layer_.load(from, heed::detail::seed_names);
  }
  /// load(Loader) from `source` under `prefix` (strict: unused names under it are an error).
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    load_module(*this, source, prefix, load_options);
  }

  /// x [B, L, d_model] → [B, L, d_model]; key_padding_mask [B, L], true = padding.
  template <TensorLike X>
  [[nodiscard]] Tensor<Scalar, 3> operator()(const X& x, TensorView<const bool, 2> key_padding_mask = {}) const {
    Tensor<Scalar, 3> storage;
    const auto in = heed::detail::encoder_input(x, options_.d_model, "seed::TransformerEncoderLayer", storage);
    heed::detail::check_encoder_masks({.src_key_padding_mask = key_padding_mask}, in.shape(), options_.n_heads,
                                      "seed::TransformerEncoderLayer", "key_padding_mask");
    Tensor<Scalar, 3> out(in.shape(), uninitialized);
    layer_.forward(in, out.view(), layer_.masks({.src_key_padding_mask = key_padding_mask}, in.size(0), in.size(1)));
    return out;
  }

 private:
  TransformerEncoderLayerOptions options_;
  heed::detail::EncoderLayer<Scalar> layer_;
};

/// The seed's encoder: num_layers pre-norm layers, then final_norm. See the top of this file.
template <class Scalar = float>
class TransformerEncoder {
 public:
  /// ShapeError unless d_model is a positive multiple of n_heads and num_layers >= 1.
  explicit TransformerEncoder(const TransformerEncoderOptions& o)
      : options_(o),
        stack_(heed::detail::seed_layer(o.d_model, o.n_heads, o.d_ff, o.seed), o.num_layers, true,
               "seed::TransformerEncoder") {}

  /// The options it was built with.
  [[nodiscard]] const TransformerEncoderOptions& options() const noexcept { return options_; }

  /// Loads the seed's names (see the top of this file).
  template <WeightSource S>
  void load(const Loader<S>& from) {
    stack_.load(from, heed::detail::seed_names, "final_norm.");
  }
  /// load(Loader) from `source` under `prefix` (strict: unused names under it are an error).
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    load_module(*this, source, prefix, load_options);
  }

  /// x [B, L, d_model] → [B, L, d_model]; key_padding_mask [B, L], true = padding.
  template <TensorLike X>
  [[nodiscard]] Tensor<Scalar, 3> operator()(const X& x, TensorView<const bool, 2> key_padding_mask = {}) const {
    Tensor<Scalar, 3> storage;
    const auto in = heed::detail::encoder_input(x, options_.d_model, "seed::TransformerEncoder", storage);
    heed::detail::check_encoder_masks({.src_key_padding_mask = key_padding_mask}, in.shape(), options_.n_heads,
                                      "seed::TransformerEncoder", "key_padding_mask");
    return stack_.forward(in, {.src_key_padding_mask = key_padding_mask});
  }

 private:
  TransformerEncoderOptions options_;
  heed::detail::EncoderStack<Scalar> stack_;
};

}  // namespace heed::nn::seed
