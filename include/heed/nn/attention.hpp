#pragma once
// Attention: the self-attention layer of the decoder-only models users deploy (Llama, Mistral,
// Qwen), with the Hugging Face state_dict names:
//   q = x W_qᵀ (+ b_q)   [B, L, H·hd]       q_proj.weight [H·hd, E]
//   k = x W_kᵀ (+ b_k)   [B, L, Hkv·hd]     k_proj.weight [Hkv·hd, E]   (grouped heads: Hkv | H)
//   v = x W_vᵀ (+ b_v)   [B, L, Hkv·hd]     v_proj.weight [Hkv·hd, E]
//   q, k ← rotary(q, k) at each row's positions (heed::Rotary; RotaryStyle::halves is Llama's)
//   o = softmax(q kᵀ / sqrt(hd) + causal) v, query head h reading key/value head h / (H / Hkv)
//   y = o W_oᵀ (+ b_o)                        o_proj.weight [E, H·hd]
// hd = E / H. Biases: Llama and Mistral have none, Qwen2 has q/k/v biases (qkv_bias) and no o_proj
// bias (o_bias).
//
// With a KVCache (make_cache, then {.cache = &cache}) a call rotates its new positions at each
// batch row's own offset, appends their keys and values, and attends over everything cached:
// one call for a prompt, one per generated token (nn/kv_cache.hpp).

#include <optional>
#include <string>

#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/rotary.hpp"
#include "heed/nn/kv_cache.hpp"
#include "heed/nn/linear.hpp"
#include "heed/nn/weights.hpp"
#include "heed/kernels/dynamic_mask.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/nn/detail/attention_block.hpp"

namespace heed::nn {

/// The constructor options of Attention, with the names of the Hugging Face configurations.
/// (Not `nn::AttentionOptions`: inside heed::nn that name would hide heed::AttentionOptions, the
/// attention kernels' per-call options.)
struct AttentionModuleOptions {
  index_t embed_dim = 0;     ///< hidden_size
  index_t num_heads = 1;     ///< num_attention_heads
  index_t num_kv_heads = 0;  ///< num_key_value_heads; 0: num_heads
  bool qkv_bias = false;     ///< biases on q_proj, k_proj and v_proj (Qwen2)
  bool o_bias = false;       ///< a bias on o_proj
  /// Rotary positions (the head dim when rotary->dim is 0); nullopt: none (with an ALiBi model,
  /// say, or positions added to the embeddings).
  std::optional<RotaryOptions> rotary = RotaryOptions{};
  std::uint64_t seed = 0;  ///< for the PyTorch-style initialization used until load()
};

/// The name AttentionModuleOptions had before it joined the library's other `*Options`.
using AttentionConfig [[deprecated("use heed::nn::AttentionModuleOptions")]] = AttentionModuleOptions;

/// The per-call options of Attention.
template <class Scalar>
struct AttentionCall {
  bool causal = true;                            ///< without a cache; with one, always causal
  TensorView<const bool, 2> key_padding_mask{};  ///< [B, keys attended], true = ignore (left padding)
  KVCache<Scalar>* cache = nullptr;              ///< append the new keys/values and attend over all cached
  MaskedRows masked_rows = MaskedRows::zero;     ///< MaskedRows::nan: PyTorch 1.13's fully masked rows
  AttentionStats* stats = nullptr;  ///< when set, receives the call's tile counts (AttentionOptions::stats)
};

/// Decoder self-attention with grouped heads, rotary positions and a KV cache; see the top of
/// this file.
template <class Scalar = float>
class Attention {
 public:
  /// ShapeError unless embed_dim is a positive multiple of num_heads, num_kv_heads divides
  /// num_heads, and the rotary options fit the head dim (heed::Rotary).
  explicit Attention(const AttentionModuleOptions& c)
      : options_(c),
        block_({.embed_dim = c.embed_dim,
                .num_heads = c.num_heads,
                .num_kv_heads = c.num_kv_heads,
                .bias = c.qkv_bias,
                .seed = c.seed},
               "heed::nn::Attention") {
    if (options_.num_kv_heads == 0) options_.num_kv_heads = options_.num_heads;
    if (c.o_bias != c.qkv_bias) {
      block_.out_proj = Linear<Scalar>(
          {.in_features = c.embed_dim, .out_features = c.embed_dim, .bias = c.o_bias, .seed = c.seed + 6});
    }
    if (c.rotary) rotary_.emplace(block_.head_dim(), *c.rotary);
  }

  /// The options it was made with (num_kv_heads filled in).
  [[nodiscard]] const AttentionModuleOptions& options() const noexcept { return options_; }
  /// options(), by its former name.
  [[deprecated("use options()")]] [[nodiscard]] const AttentionModuleOptions& config() const noexcept {
    return options_;
  }
  /// embed_dim / num_heads.
  [[nodiscard]] index_t head_dim() const noexcept { return block_.head_dim(); }

  /// A cache for this layer: [batch, num_kv_heads, max_len, head_dim] in Scalar.
  [[nodiscard]] KVCache<Scalar> make_cache(const KVCacheOptions& o) const {
    return KVCache<Scalar>(o.batch, options_.num_kv_heads, head_dim(), o.max_len);
  }

  /// Loads q_proj, k_proj, v_proj and o_proj (weight, and bias where the options have one).
  template <WeightSource S>
  void load(const Loader<S>& from) {
    block_.q_proj.load(from.child("q_proj."));
    block_.k_proj.load(from.child("k_proj."));
    block_.v_proj.load(from.child("v_proj."));
    block_.out_proj.load(from.child("o_proj."));
    block_.pack();
  }
  /// load(Loader) from `source` under `prefix` (strict: unused names under it are an error).
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    load_module(*this, source, prefix, load_options);
  }

  /// x [B, L, E] → [B, L, E].
  template <TensorLike X>
  [[nodiscard]] Tensor<Scalar, 3> operator()(const X& x, const AttentionCall<Scalar>& call = {}) const {
    static_assert(rank_of<X> == 3, "Attention takes [B, L, E] tensors");
    const auto xv = as_view(x);
    const index_t B = xv.size(0), L = xv.size(1);
    std::optional<detail::CacheStore<Scalar>> store;
    if (call.cache) {
      KVCache<Scalar>& cache = *call.cache;
      const Shape<3> want{B, options_.num_kv_heads, head_dim()},
          have{cache.batch(), cache.kv_heads(), cache.head_dim()};
      if (want != have)
        throw ShapeError("heed::nn::Attention: the cache holds [batch, kv_heads, head_dim] = " + to_string(have) +
                         ", this call needs " + to_string(want) + " (make it with make_cache)");
      store.emplace(cache);
    }
    mask::Dynamic<Scalar> masks;
    if (call.causal && !call.cache) masks.causal.emplace();
    if (!call.key_padding_mask.is_null()) {
      const Shape<2> want{B, L + (call.cache ? call.cache->max_length() : 0)};
      if (call.key_padding_mask.shape() != want)
        throw ShapeError("heed::nn::Attention: key_padding_mask has shape " + to_string(call.key_padding_mask.shape()) +
                         ", expected " + to_string(want) + " (every key attended, cached ones included)");
      masks.padding.emplace(call.key_padding_mask);
    }
    const RotaryStep step{rotary_ ? &*rotary_ : nullptr};
    auto r = block_.forward(xv, xv, xv, std::move(masks),
                            {.masked_rows = call.masked_rows,
                             .qk_transform = rotary_ ? &step : nullptr,
                             .kv_store = store ? &*store : nullptr,
                             .stats = call.stats});
    return std::move(r.output);
  }

 private:
  // The rotary embedding as the block's q/k step.
  struct RotaryStep final : detail::QKTransform<Scalar> {
    explicit RotaryStep(const Rotary<Scalar>* r) : rotary(r) {}
    void apply(const TensorView<Scalar, 4>& q, const TensorView<Scalar, 4>& k, std::span<const index_t> q_start,
               std::span<const index_t> k_start) const override {
      rotary->rotate(q, q_start);
      rotary->rotate(k, k_start);
    }
    const Rotary<Scalar>* rotary;
  };

  AttentionModuleOptions options_;
  detail::AttentionBlock<Scalar> block_;
  std::optional<Rotary<Scalar>> rotary_;
};

}  // namespace heed::nn
