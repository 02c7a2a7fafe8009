#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <string>
#include <vector>

#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/nn/activation.hpp"
#include "heed/nn/decoder_call.hpp"
#include "heed/nn/kv_cache.hpp"
#include "heed/nn/layer_norm.hpp"
#include "heed/nn/linear.hpp"
#include "heed/nn/multihead_attention.hpp"
#include "heed/nn/weights.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/nn/detail/encoder_layer.hpp"
#include "heed/nn/detail/torch_masks.hpp"

// The Transformer decoder layer and stack behind torch's TransformerDecoderLayer /
// TransformerDecoder (heed/nn/transformer_decoder*.hpp).
namespace heed::detail {

// A decoder layer has the options of an encoder layer (torch's two layers take the same ones).
using DecoderLayerConfig = EncoderLayerConfig;

//   post-norm (default):  x = norm1(x + sa(x)); x = norm2(x + ca(x, memory)); x = norm3(x + ff(x))
//   norm_first:           x = x + sa(norm1(x)); x = x + ca(norm2(x), memory); x = x + ff(norm3(x))
// A decoder call's masks as its layers take them: made once per call (DecoderLayer::masks) for
// every layer of a stack.
template <class Scalar>
struct DecoderMasks {
  mask::Dynamic<Scalar> self, cross;
  MaskedRows masked_rows = MaskedRows::zero;
};

// sa: self_attn over the target (with a cache: over everything cached), ca: multihead_attn over
// the memory (with a cache: its keys and values projected once), ff: linear2(act(linear1(x))).
template <class Scalar>
class DecoderLayer {
 public:
  explicit DecoderLayer(const DecoderLayerConfig& c)
      : config_(c),
        self_attn_({.embed_dim = c.d_model, .num_heads = c.nhead, .seed = c.seed}),
        multihead_attn_({.embed_dim = c.d_model, .num_heads = c.nhead, .seed = c.seed + 20}),
        linear1_({.in_features = c.d_model, .out_features = c.dim_feedforward, .seed = c.seed + 10}),
        linear2_({.in_features = c.dim_feedforward, .out_features = c.d_model, .seed = c.seed + 12}),
        norm1_({.normalized_shape = c.d_model, .eps = c.layer_norm_eps}),
        norm2_({.normalized_shape = c.d_model, .eps = c.layer_norm_eps}),
        norm3_({.normalized_shape = c.d_model, .eps = c.layer_norm_eps}) {}

  [[nodiscard]] const DecoderLayerConfig& config() const noexcept { return config_; }
  [[nodiscard]] index_t head_dim() const noexcept { return self_attn_.head_dim(); }

  template <nn::WeightSource S>
  void load(const nn::Loader<S>& from) {
    self_attn_.load(from.child("self_attn."));
    multihead_attn_.load(from.child("multihead_attn."));
    linear1_.load(from.child("linear1."));
    linear2_.load(from.child("linear2."));
    norm1_.load(from.child("norm1."));
    norm2_.load(from.child("norm2."));
    norm3_.load(from.child("norm3."));
  }

  // The call's masks (checked by the caller: check_decoder_masks) for tgt [B, L, d_model] and
  // memory [B, S, d_model]; with a cache, over everything it holds before the call.
  [[nodiscard]] DecoderMasks<Scalar> masks(const nn::DecoderCall<Scalar>& call, index_t B, index_t L, index_t S) const {
    return {self_attn_.masks_of({.key_padding_mask = call.tgt_key_padding_mask,
                                 .attn_mask = call.tgt_mask,
                                 .attn_bias = call.tgt_bias,
                                 .is_causal = call.tgt_is_causal,
                                 .cache = call.cache ? &call.cache->self_attention(0) : nullptr},
                                B, L),
            multihead_attn_.masks_of({.key_padding_mask = call.memory_key_padding_mask,
                                      .attn_mask = call.memory_mask,
                                      .attn_bias = call.memory_bias},
                                     B, S),
            call.masked_rows};
  }

  // out = layer(x, memory); x and out contiguous [B, L, d_model], memory [B, S, d_model]
  // (validated by the caller); out may be x. `layer` is this layer's index in `cache`.
  void forward(const TensorView<const Scalar, 3>& x, const TensorView<const Scalar, 3>& memory,
               const TensorView<Scalar, 3>& out, const DecoderMasks<Scalar>& masks, nn::DecoderCache<Scalar>* cache,
               index_t layer) const {
    const index_t rows = x.numel() / config_.d_model;
    const nn::MultiheadAttentionCall<Scalar> self_call{.masked_rows = masks.masked_rows,
                                                       .cache = cache ? &cache->self_attention(layer) : nullptr};
    const nn::MultiheadAttentionCall<Scalar> cross_call{.masked_rows = masks.masked_rows};
    // out += cross_attention(in)
    const auto add_cross = [&](const auto& in) {
      Tensor<Scalar, 3> y;
      if (cache) {
        auto& projected = cache->memory(layer);
        if (!projected) projected = multihead_attn_.project_kv(memory, memory);
        y = multihead_attn_.attend_with(as_view(in), *projected, masks.cross, cross_call).output;
      } else {
        y = multihead_attn_.forward_with(as_view(in), memory, memory, masks.cross, cross_call).output;
      }
      Scalar* o = out.data();
      const Scalar* a = y.data();
      for (index_t i = 0; i < y.numel(); ++i) o[i] = static_cast<Scalar>(o[i] + a[i]);
    };
    const auto add_feed_forward = [&](const Scalar* in) {
      detail::add_feed_forward(linear1_, linear2_, config_.activation, in, out.data(), rows);
    };
    if (config_.norm_first) {
      self_attn_.add_self_attention_with(norm1_(x), x, out, masks.self, self_call, nullptr);
      add_cross(norm2_(out));
      const Tensor<Scalar, 3> normed = norm3_(out);
      add_feed_forward(normed.data());
    } else {
      self_attn_.add_self_attention_with(x, x, out, masks.self, self_call,
                                         nullptr);  // x is read (projected) before out is written
      norm1_.rows(out.data(), out.data(), rows);
      add_cross(out);
      norm2_.rows(out.data(), out.data(), rows);
      add_feed_forward(out.data());
      norm3_.rows(out.data(), out.data(), rows);
    }
  }

 private:
  DecoderLayerConfig config_;
  nn::MultiheadAttention<Scalar> self_attn_, multihead_attn_;
  nn::Linear<Scalar> linear1_, linear2_;
  nn::LayerNorm<Scalar> norm1_, norm2_, norm3_;
};

// The call's masks, checked under their names (the per-layer attentions then find them valid).
template <class Scalar>
void check_decoder_masks(const nn::DecoderCall<Scalar>& call, index_t B, index_t H, index_t L, index_t S,
                         const char* who) {
  const bool self_bias = !call.tgt_bias.is_null(), cross_bias = !call.memory_bias.is_null();
  const TorchMaskNames self_names{.module = who,
                                  .attn_mask = self_bias ? "tgt_bias" : "tgt_mask",
                                  .key_padding_mask = "tgt_key_padding_mask",
                                  .heads = "nhead",
                                  .queries = "L",
                                  .keys = call.cache ? "cached + L" : "L"};
  const TorchMaskNames cross_names{.module = who,
                                   .attn_mask = cross_bias ? "memory_bias" : "memory_mask",
                                   .key_padding_mask = "memory_key_padding_mask",
                                   .heads = "nhead",
                                   .queries = "L",
                                   .keys = "S"};
  if (self_bias && !call.tgt_mask.is_null())
    throw_mask_error(self_names, "give tgt_mask or tgt_bias (a float tgt_mask), not both");
  if (cross_bias && !call.memory_mask.is_null())
    throw_mask_error(cross_names, "give memory_mask or memory_bias (a float memory_mask), not both");
  const nn::TorchMask self = self_bias ? nn::TorchMask(call.tgt_bias) : call.tgt_mask;
  const nn::TorchMask cross = cross_bias ? nn::TorchMask(call.memory_bias) : call.memory_mask;
  if (call.cache && !self.is_null())
    throw_mask_error(self_names, std::string(self_names.attn_mask) +
                                     " does not combine with a cache (the cache attends causally over everything "
                                     "cached; use tgt_key_padding_mask)");
  const index_t cached = call.cache ? call.cache->max_length() : 0;
  check_torch_masks(self_names, B, H, L, cached + L, call.tgt_key_padding_mask, self);
  check_torch_masks(cross_names, B, H, L, S, call.memory_key_padding_mask, cross);
}

// Checks a decoder call's tensors, masks and cache; returns tgt and memory as contiguous views.
template <class Scalar, class T, class M>
std::pair<TensorView<const Scalar, 3>, TensorView<const Scalar, 3>> decoder_inputs(
    const T& tgt, const M& memory, const DecoderLayerConfig& c, index_t layers, const nn::DecoderCall<Scalar>& call,
    const char* who, Tensor<Scalar, 3>& tgt_storage, Tensor<Scalar, 3>& memory_storage) {
  const nn::DecoderCache<Scalar>* cache = call.cache;
  static_assert(rank_of<T> == 3 && rank_of<M> == 3 && std::is_same_v<scalar_of<T>, Scalar> &&
                    std::is_same_v<scalar_of<M>, Scalar>,
                "a decoder takes tgt [B, L, d_model] and memory [B, S, d_model] of its scalar type");
  const TensorView<const Scalar, 3> t = as_view(tgt), m = as_view(memory);
  if (t.size(2) != c.d_model || m.size(2) != c.d_model || m.size(0) != t.size(0))
    throw ShapeError(std::string("heed::nn::") + who + ": expects tgt [B, L, " + std::to_string(c.d_model) +
                     "] and memory [B, S, " + std::to_string(c.d_model) + "], got tgt " + to_string(t.shape()) +
                     " and memory " + to_string(m.shape()));
  if (cache) {
    const Shape<4> want{layers, t.size(0), c.nhead, c.d_model / c.nhead};
    const bool empty = cache->layers() == 0;  // default-constructed: no layer to read
    const Shape<4> have{cache->layers(), empty ? 0 : cache->self_attention(0).batch(),
                        empty ? 0 : cache->self_attention(0).kv_heads(),
                        empty ? 0 : cache->self_attention(0).head_dim()};
    if (want != have)
      throw ShapeError(std::string("heed::nn::") + who + ": the cache holds [layers, batch, heads, head_dim] = " +
                       to_string(have) + ", this call needs " + to_string(want) + " (make it with make_cache)");
  }
  if (cache) {
    const auto& projected = cache->memory(0);
    if (projected && projected->keys.size(1) != m.size(1))
      throw ShapeError(std::string("heed::nn::") + who + ": the cache holds a memory of " +
                       std::to_string(projected->keys.size(1)) + " positions, this call's has " +
                       std::to_string(m.size(1)) + " (reset() the cache for a new memory)");
  }
  check_decoder_masks(call, t.size(0), c.nhead, t.size(1), m.size(1), who);
  return {contiguous(t, tgt_storage), contiguous(m, memory_storage)};
}

}  // namespace heed::detail
