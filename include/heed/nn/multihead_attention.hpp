#pragma once
// MultiheadAttention = torch.nn.MultiheadAttention(batch_first=True), inference only.
//   q = query W_qᵀ + b_q, k = key W_kᵀ + b_k, v = value W_vᵀ + b_v   (split into H heads)
//   o = softmax(q kᵀ / sqrt(E/H) + masks) v                           (heed's tiled driver)
//   y = concat_heads(o) W_oᵀ + b_o
// State dict: in_proj_weight [3E, E] and in_proj_bias [3E] (or q/k/v_proj_weight when kdim
// or vdim differ from E), out_proj.weight/.bias, bias_k/bias_v with add_bias_kv.
//
// PyTorch's mask conventions are translated here, at the boundary, into heed's typed masks:
// key_padding_mask (bool [B, Lk], true = ignore) → mask::KeyPadding; a bool attn_mask (true =
// NOT allowed, [Lq, Lk] or [B·H, Lq, Lk]) → mask::Allowed of its negation; a floating-point
// attn_mask → mask::Bias; an attn_mask that is exactly the causal triangle, and is_causal →
// mask::Causal (nn/torch_mask.hpp).
//
// With a KV cache (make_cache(), then {.cache = &cache} in each call; nn/kv_cache.hpp), a call
// projects only its new positions, appends their keys and values to the cache and attends
// causally over everything cached: the queries are the last Lq of the call's Lk new positions
// (Lq = Lk in self-attention), so query i of batch row b sees the keys up to its own position,
// length_before(b) + Lk - Lq + i; a query longer than the key is a ShapeError. A prompt
// (prefill) and single tokens go through the same call. The
// key_padding_mask then covers every cached key, [B, cache.max_length() + Lk]; attn_mask,
// attn_bias, add_bias_kv and add_zero_attn do not combine with a cache (ShapeError).

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "heed/core/cast.hpp"
#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/attention.hpp"
#include "heed/nn/kv_cache.hpp"
#include "heed/nn/linear.hpp"
#include "heed/nn/torch_mask.hpp"
#include "heed/nn/weights.hpp"
#include "heed/simd/kernel_table.hpp"
#include "heed/kernels/dynamic_mask.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/nn/detail/attention_block.hpp"
#include "heed/nn/detail/torch_masks.hpp"

namespace heed::nn {

/// The constructor options of MultiheadAttention, with torch.nn.MultiheadAttention's names.
struct MultiheadAttentionOptions {
  index_t embed_dim = 0;       ///< the model width E
  index_t num_heads = 1;       ///< heads H (E must be a multiple of H)
  bool bias = true;            ///< biases in the input and output projections
  bool add_bias_kv = false;    ///< a learned bias key and value appended to the keys and values
  bool add_zero_attn = false;  ///< a zero key and value appended after the projections
  index_t kdim = 0;            ///< 0: embed_dim
  index_t vdim = 0;            ///< 0: embed_dim
  std::uint64_t seed = 0;      ///< for the PyTorch-style initialization used until load()
};

/// The per-call options of MultiheadAttention, with PyTorch's names and conventions.
template <class Scalar>
struct MultiheadAttentionCall {
  TensorView<const bool, 2> key_padding_mask{};  ///< [B, Lk], true = ignore this key
  /// PyTorch's attn_mask (nn/torch_mask.hpp): bool, true = NOT allowed, or floating point, added;
  /// [Lq, Lk], [B·H, Lq, Lk] or [1, Lq, Lk].
  TorchMask attn_mask{};
  TensorView<const Scalar, 3> attn_bias{};    ///< a float mask in Scalar, as attn_mask takes it (kept for older code)
  bool need_weights = true;                   ///< PyTorch's default
  bool average_attn_weights = true;           ///< weights [B, 1, Lq, Lk] averaged over heads
  bool is_causal = false;                     ///< a causal mask (with no attn_mask given)
  MaskedRows masked_rows = MaskedRows::zero;  ///< MaskedRows::nan: PyTorch 1.13's fully masked rows
  KVCache<Scalar>* cache = nullptr;           ///< append the new keys/values and attend over all cached
  /// A sparse pattern over [Lq, Lk] (mask::Sparse: a window, global tokens, a block layout),
  /// heed's form of a dense attn_mask for long sequences; combines with the other masks. Not
  /// with a cache, add_bias_kv or add_zero_attn.
  std::optional<mask::Sparse> sparse{};
  /// When set, receives the tile counts of the call's attention (AttentionOptions::stats): how
  /// many tiles the masks left open, partial or blocked (skipped).
  AttentionStats* stats = nullptr;
};

/// What MultiheadAttention returns.
template <class Scalar>
struct MultiheadAttentionResult {
  Tensor<Scalar, 3> output;   ///< [B, Lq, E]
  Tensor<Scalar, 4> weights;  ///< [B, 1, Lq, Lk] averaged, [B, H, Lq, Lk] otherwise, empty without need_weights
};

/// torch.nn.MultiheadAttention (batch_first); see the top of this file.
template <class Scalar = float>
class MultiheadAttention {
 public:
  /// ShapeError unless embed_dim is a positive multiple of num_heads.
  explicit MultiheadAttention(const MultiheadAttentionOptions& o)
      : options_(o),
        block_({.embed_dim = o.embed_dim,
                .num_heads = o.num_heads,
                .kdim = o.kdim,
                .vdim = o.vdim,
                .bias = o.bias,
                .add_bias_kv = o.add_bias_kv,
                .add_zero_attn = o.add_zero_attn,
                .seed = o.seed},
               "heed::nn::MultiheadAttention") {}

  /// The options it was built with.
  [[nodiscard]] const MultiheadAttentionOptions& options() const noexcept { return options_; }
  /// The key width (kdim, or embed_dim when 0).
  [[nodiscard]] index_t kdim() const noexcept { return block_.options().kdim; }
  /// The value width (vdim, or embed_dim when 0).
  [[nodiscard]] index_t vdim() const noexcept { return block_.options().vdim; }
  /// embed_dim / num_heads.
  [[nodiscard]] index_t head_dim() const noexcept { return block_.head_dim(); }

  /// A cache for this module's keys and values: [batch, num_heads, max_len, head_dim] in Scalar.
  [[nodiscard]] KVCache<Scalar> make_cache(const KVCacheOptions& o) const {
    return KVCache<Scalar>(o.batch, options_.num_heads, head_dim(), o.max_len);
  }

  /// Loads PyTorch's state_dict names (see the top of this file).
  template <WeightSource S>
  void load(const Loader<S>& from) {
    const index_t E = options_.embed_dim;
    Tensor<Scalar, 1> in_bias;
    if (options_.bias) in_bias = from.template take<Scalar, 1>("in_proj_bias", {3 * E});
    auto bias_part = [&](index_t i) {
      return options_.bias ? Tensor<Scalar, 1>(in_bias.view().slice(0, i * E, (i + 1) * E)) : Tensor<Scalar, 1>();
    };
    Tensor<Scalar, 2> q, k, v;  // taken first: a missing name leaves the module as it was
    if (kdim() == E && vdim() == E) {
      const auto w = from.template take<Scalar, 2>("in_proj_weight", {3 * E, E});
      q = Tensor<Scalar, 2>(w.view().slice(0, 0, E));
      k = Tensor<Scalar, 2>(w.view().slice(0, E, 2 * E));
      v = Tensor<Scalar, 2>(w.view().slice(0, 2 * E, 3 * E));
    } else {
      q = from.template take<Scalar, 2>("q_proj_weight", {E, E});
      k = from.template take<Scalar, 2>("k_proj_weight", {E, kdim()});
      v = from.template take<Scalar, 2>("v_proj_weight", {E, vdim()});
    }
    Tensor<Scalar, 3> bias_k, bias_v;
    if (options_.add_bias_kv) {
      bias_k = from.template take<Scalar, 3>("bias_k", {1, 1, E});
      bias_v = from.template take<Scalar, 3>("bias_v", {1, 1, E});
    }
    block_.out_proj.load(from.child("out_proj."));
    block_.set_projections(std::move(q), bias_part(0), std::move(k), bias_part(1), std::move(v), bias_part(2));
    if (options_.add_bias_kv) {
      block_.bias_k = std::move(bias_k);
      block_.bias_v = std::move(bias_v);
    }
  }
  /// load(Loader) from `source` under `prefix` (strict: unused names under it are an error).
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    load_module(*this, source, prefix, load_options);
  }

  /// query [B, Lq, E], key [B, Lk, kdim], value [B, Lk, vdim].
  template <TensorLike Q, TensorLike K, TensorLike V>
  [[nodiscard]] MultiheadAttentionResult<Scalar> operator()(const Q& query, const K& key, const V& value,
                                                            const MultiheadAttentionCall<Scalar>& call = {}) const {
    static_assert(rank_of<Q> == 3 && rank_of<K> == 3 && rank_of<V> == 3, "MultiheadAttention takes [B, L, E] tensors");
    const auto qv = as_view(query), kv = as_view(key), vv = as_view(value);
    if (call.cache) check_cache(*call.cache, call, qv.size(0));
    return forward_with(qv, kv, vv, checked_masks(call, qv.size(0), qv.size(1), kv.size(1)), call);
  }

  /// key [B, S, kdim] and value [B, S, vdim] projected once, for attend(): a decoder's memory,
  /// which every generation step attends without projecting it again.
  template <TensorLike K, TensorLike V>
  [[nodiscard]] ProjectedKV<Scalar> project_kv(const K& key, const V& value) const {
    static_assert(rank_of<K> == 3 && rank_of<V> == 3, "MultiheadAttention takes [B, L, E] tensors");
    const auto kv = as_view(key), vv = as_view(value);
    if (kv.size(2) != kdim() || vv.size(2) != vdim() || kv.size(0) != vv.size(0) || kv.size(1) != vv.size(1))
      throw ShapeError("heed::nn::MultiheadAttention::project_kv: key " + to_string(kv.shape()) + " and value " +
                       to_string(vv.shape()) + " must be [B, S, " + std::to_string(kdim()) + "] and [B, S, " +
                       std::to_string(vdim()) + "]");
    if (options_.add_bias_kv || options_.add_zero_attn)
      throw ShapeError("heed::nn::MultiheadAttention::project_kv: add_bias_kv and add_zero_attn are not supported");
    auto [k, v] = block_.project_kv(kv, vv);
    return {std::move(k), std::move(v)};
  }

  /// operator() with keys and values from project_kv: query [B, Lq, E], masks over the S
  /// projected keys. The call's cache must be null.
  template <TensorLike Q>
  [[nodiscard]] MultiheadAttentionResult<Scalar> attend(const Q& query, const ProjectedKV<Scalar>& kv,
                                                        const MultiheadAttentionCall<Scalar>& call = {}) const {
    static_assert(rank_of<Q> == 3, "MultiheadAttention takes [B, L, E] tensors");
    const auto qv = as_view(query);
    const index_t E = options_.embed_dim;
    if (qv.size(2) != E || kv.keys.size(0) != qv.size(0) || kv.keys.size(2) != E ||
        kv.values.shape() != kv.keys.shape())
      throw ShapeError("heed::nn::MultiheadAttention::attend: query " + to_string(qv.shape()) + " and projected keys " +
                       to_string(kv.keys.shape()) + " / values " + to_string(kv.values.shape()) + " must be [B, Lq, " +
                       std::to_string(E) + "] and [B, S, " + std::to_string(E) + "]");
    if (call.cache) throw ShapeError("heed::nn::MultiheadAttention::attend: projected keys take no cache");
    return attend_with(qv, kv, checked_masks(call, qv.size(0), qv.size(1), kv.keys.size(1)), call);
  }

  /// out = skip + self_attention(x) (no weights): an encoder layer's residual connection, the
  /// output projection's GEMM adding `skip` as it writes `out`. skip and out are [B, L, E]
  /// tensors (or views of them) with x's shape; either may be x itself: x is read (projected)
  /// before anything is written. The call's need_weights is ignored: when `weights` is not
  /// null it receives the weights of every head, [B, H, L, L] (the call's cache adds columns).
  template <TensorLike X>
  void add_self_attention(const X& x, const TensorView<const Scalar, 3>& skip, const TensorView<Scalar, 3>& out,
                          const MultiheadAttentionCall<Scalar>& call, Tensor<Scalar, 4>* weights = nullptr) const {
    const auto xv = as_view(x);
    const Shape<3> expected{xv.size(0), xv.size(1), options_.embed_dim};
    if (skip.shape() != expected || out.shape() != expected || !skip.is_contiguous() || !out.is_contiguous())
      throw ShapeError("heed::nn::MultiheadAttention: skip " + to_string(skip.shape()) + " and out " +
                       to_string(out.shape()) + " must be contiguous and match x " + to_string(xv.shape()));
    if (call.cache) check_cache(*call.cache, call, xv.size(0));
    add_self_attention_with(xv, skip, out, checked_masks(call, xv.size(0), xv.size(1), xv.size(1)), call, weights);
  }

 private:
  // The encoder's and decoder's layers run these with masks their stack made once per call
  // (masks_of) for all its layers, having checked the call under the stack's own names.
  template <class>
  friend class detail::EncoderLayer;
  template <class>
  friend class detail::DecoderLayer;

  // The public calls' work, with the masks made: the call's attn_mask, attn_bias,
  // key_padding_mask, is_causal and sparse are not read; its cache, masked_rows and stats are.
  MultiheadAttentionResult<Scalar> forward_with(const TensorView<const Scalar, 3>& query,
                                                const TensorView<const Scalar, 3>& key,
                                                const TensorView<const Scalar, 3>& value, mask::Dynamic<Scalar> masks,
                                                const MultiheadAttentionCall<Scalar>& call) const {
    return finish(run_block(query, key, value, std::move(masks), call, {.need_weights = call.need_weights}), call);
  }

  MultiheadAttentionResult<Scalar> attend_with(const TensorView<const Scalar, 3>& query, const ProjectedKV<Scalar>& kv,
                                               const mask::Dynamic<Scalar>& masks,
                                               const MultiheadAttentionCall<Scalar>& call) const {
    Tensor<Scalar, 3> storage;
    const auto dense = contiguous(query, storage);
    return finish(block_.forward_projected(
                      dense, kv.keys, kv.values, masks,
                      {.need_weights = call.need_weights, .masked_rows = call.masked_rows, .stats = call.stats}),
                  call);
  }

  template <TensorLike X>
  void add_self_attention_with(const X& x, const TensorView<const Scalar, 3>& skip, const TensorView<Scalar, 3>& out,
                               mask::Dynamic<Scalar> masks, const MultiheadAttentionCall<Scalar>& call,
                               Tensor<Scalar, 4>* weights) const {
    const auto xv = as_view(x);
    auto r = run_block(xv, xv, xv, std::move(masks), call,
                       {.need_weights = weights != nullptr, .skip = skip.data(), .out = out.data()});
    if (weights) *weights = std::move(r.weights);
  }

  // block_.forward with `block`'s need_weights, skip and out, and the call's cache (as the
  // block's store), masked_rows and stats.
  detail::BlockResult<Scalar> run_block(const TensorView<const Scalar, 3>& query,
                                        const TensorView<const Scalar, 3>& key,
                                        const TensorView<const Scalar, 3>& value, mask::Dynamic<Scalar> masks,
                                        const MultiheadAttentionCall<Scalar>& call,
                                        detail::BlockCall<Scalar> block) const {
    std::optional<detail::CacheStore<Scalar>> store;
    if (call.cache) store.emplace(*call.cache);
    block.masked_rows = call.masked_rows;
    block.kv_store = store ? &*store : nullptr;
    block.stats = call.stats;
    return block_.forward(query, key, value, std::move(masks), block);
  }

  // The result with torch's weights: averaged over the heads or per head, as the call asks.
  static MultiheadAttentionResult<Scalar> finish(detail::BlockResult<Scalar> r,
                                                 const MultiheadAttentionCall<Scalar>& call) {
    MultiheadAttentionResult<Scalar> result{std::move(r.output), {}};
    if (call.need_weights && call.average_attn_weights) {
      const index_t B = r.weights.size(0), H = r.weights.size(1), Lq = r.weights.size(2), Lk = r.weights.size(3);
      using Acc = accumulator_t<Scalar>;  // 16-bit weights are averaged in float, then rounded once
      Tensor<Acc, 4> mean({B, 1, Lq, Lk});
      for (index_t b = 0; b < B && Lq * Lk > 0; ++b)
        for (index_t h = 0; h < H; ++h) {
          const Scalar* w = &r.weights(b, h, 0, 0);
          Acc* m = &mean(b, 0, 0, 0);
          if constexpr (std::is_same_v<Acc, Scalar>)
            simd::vector_kernels<Acc>().axpy(Acc(1) / Acc(H), w, m, Lq * Lk);
          else
            for (index_t i = 0; i < Lq * Lk; ++i) m[i] += static_cast<Acc>(w[i]) / Acc(H);
        }
      if constexpr (std::is_same_v<Acc, Scalar>)
        result.weights = std::move(mean);
      else
        result.weights = cast<Scalar>(mean);
    } else {
      result.weights = std::move(r.weights);
    }
    return result;
  }

  // The cache, checked against this module and call: its batch, heads and head dim, and the
  // options that do not combine with it.
  void check_cache(const KVCache<Scalar>& cache, const MultiheadAttentionCall<Scalar>& call, index_t B) const {
    const std::string who = "heed::nn::MultiheadAttention: ";
    const Shape<3> want{B, options_.num_heads, head_dim()}, have{cache.batch(), cache.kv_heads(), cache.head_dim()};
    if (want != have)
      throw ShapeError(who + "the cache holds [batch, heads, head_dim] = " + to_string(have) + ", this call needs " +
                       to_string(want) + " (make it with make_cache)");
    if (options_.add_bias_kv || options_.add_zero_attn)
      throw ShapeError(who + "add_bias_kv and add_zero_attn do not combine with a cache");
    if (!call.attn_mask.is_null() || !call.attn_bias.is_null())
      throw ShapeError(who +
                       "attn_mask and attn_bias do not combine with a cache (it is causal; use key_padding_mask)");
  }

  // masks_of(call, B, new_keys), the call's masks checked first (ShapeError naming this module's
  // arguments) over Lq queries and new_keys keys (with a cache, after every cached one).
  mask::Dynamic<Scalar> checked_masks(const MultiheadAttentionCall<Scalar>& call, index_t B, index_t Lq,
                                      index_t new_keys) const {
    const bool has_bias = !call.attn_bias.is_null();
    if (has_bias && !call.attn_mask.is_null())
      throw ShapeError("heed::nn::MultiheadAttention: give attn_mask or attn_bias (a float attn_mask), not both");
    detail::check_torch_masks({.module = "MultiheadAttention",
                               .attn_mask = has_bias ? "attn_bias" : "attn_mask",
                               .key_padding_mask = "key_padding_mask"},
                              B, options_.num_heads, Lq, keys_of(call, new_keys), call.key_padding_mask,
                              attn_mask_of(call));
    if (call.sparse && (call.cache || block_.extra_keys() > 0))
      throw ShapeError(
          "heed::nn::MultiheadAttention: a sparse pattern does not combine with a cache, add_bias_kv or "
          "add_zero_attn");
    return masks_of(call, B, new_keys);
  }

  // The keys the call's masks cover: with a cache, every cached key and the new ones.
  static index_t keys_of(const MultiheadAttentionCall<Scalar>& call, index_t new_keys) {
    return new_keys + (call.cache ? call.cache->max_length() : 0);
  }

  // The call's attn_mask, or its attn_bias (checked_masks allows one of them at most).
  static TorchMask attn_mask_of(const MultiheadAttentionCall<Scalar>& call) {
    return call.attn_bias.is_null() ? call.attn_mask : TorchMask(call.attn_bias);
  }

  // heed's typed masks from PyTorch's (checked: checked_masks), with a visible column for each
  // extra key (bias_k, the zero key), as PyTorch pads them.
  mask::Dynamic<Scalar> masks_of(const MultiheadAttentionCall<Scalar>& call, index_t B, index_t new_keys) const {
    const index_t Lk0 = keys_of(call, new_keys), Lk = Lk0 + block_.extra_keys();
    mask::Dynamic<Scalar> masks;
    if (call.sparse) masks.sparse = *call.sparse;
    if (call.is_causal && !call.cache) masks.causal.emplace();  // a cache brings its own
    if (!call.key_padding_mask.is_null()) {
      Tensor<bool, 2> pad({B, Lk});  // extra columns visible
      for (index_t b = 0; b < B; ++b)
        for (index_t j = 0; j < Lk0; ++j) pad(b, j) = call.key_padding_mask(b, j);
      masks.padding.emplace(std::move(pad));
    }
    detail::add_torch_mask(attn_mask_of(call), B, options_.num_heads, Lk, masks);
    return masks;
  }

  MultiheadAttentionOptions options_;
  detail::AttentionBlock<Scalar> block_;
};

}  // namespace heed::nn
