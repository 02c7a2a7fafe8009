#pragma once
// DecoderCall: the per-call options of the Transformer decoders, with PyTorch's names, in the
// order of torch's forward arguments (tgt_mask, memory_mask, tgt_key_padding_mask,
// memory_key_padding_mask, tgt_is_causal); and DecoderCache, the state a call carries from one
// generation step to the next.

#include <optional>
#include <string>
#include <vector>

#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/masked_rows.hpp"
#include "heed/nn/kv_cache.hpp"
#include "heed/nn/torch_mask.hpp"

namespace heed::nn {

/// What a Transformer decoder keeps between generation steps, per layer: the self-attention's
/// KVCache and the cross-attention's projected memory (made on the first call after
/// construction or reset(), then reused). Made by TransformerDecoder::make_cache and
/// TransformerDecoderLayer::make_cache.
template <class Scalar = float>
class DecoderCache {
 public:
  DecoderCache() = default;
  /// ShapeError as KVCache's, or for layers < 1.
  DecoderCache(index_t layers, index_t batch, index_t heads, index_t head_dim, index_t capacity) {
    if (layers < 1) throw ShapeError("heed::nn::DecoderCache: layers must be >= 1, got " + std::to_string(layers));
    for (index_t i = 0; i < layers; ++i) self_.emplace_back(batch, heads, head_dim, capacity);
    memory_.resize(static_cast<std::size_t>(layers));
  }

  /// Decoder layers.
  [[nodiscard]] index_t layers() const noexcept { return static_cast<index_t>(self_.size()); }
  /// Layer i's self-attention cache (unchecked i).
  [[nodiscard]] KVCache<Scalar>& self_attention(index_t i) noexcept { return self_[static_cast<std::size_t>(i)]; }
  /// Layer i's self-attention cache, read-only (unchecked i).
  [[nodiscard]] const KVCache<Scalar>& self_attention(index_t i) const noexcept {
    return self_[static_cast<std::size_t>(i)];
  }
  /// Layer i's projected memory, empty until the first call (unchecked i).
  [[nodiscard]] std::optional<ProjectedKV<Scalar>>& memory(index_t i) noexcept {
    return memory_[static_cast<std::size_t>(i)];
  }
  /// Layer i's projected memory, read-only (unchecked i).
  [[nodiscard]] const std::optional<ProjectedKV<Scalar>>& memory(index_t i) const noexcept {
    return memory_[static_cast<std::size_t>(i)];
  }
  /// Positions cached for batch row b (every layer holds as many).
  [[nodiscard]] index_t length(index_t b) const noexcept { return self_.empty() ? 0 : self_.front().length(b); }
  /// The most positions any batch row holds.
  [[nodiscard]] index_t max_length() const noexcept { return self_.empty() ? 0 : self_.front().max_length(); }

  /// Forgets every position and the projected memory (a new sequence with a new memory).
  void reset() noexcept {
    for (auto& c : self_) c.reset();
    for (auto& m : memory_) m.reset();
  }
  /// KVCache::truncate_row on every layer.
  void truncate_row(index_t b, index_t length) {
    for (auto& c : self_) c.truncate_row(b, length);
  }

 private:
  std::vector<KVCache<Scalar>> self_;
  std::vector<std::optional<ProjectedKV<Scalar>>> memory_;
};

/// The per-call options of TransformerDecoderLayer and TransformerDecoder. tgt_mask and
/// memory_mask are PyTorch's (nn/torch_mask.hpp): bool, true = NOT allowed, or floating point,
/// added to the scores (`generate_square_subsequent_mask`'s -inf triangle is run as a causal mask).
template <class Scalar>
struct DecoderCall {
  TorchMask tgt_mask{};                                 ///< [L, L], [B·H, L, L] or [1, L, L], self-attention
  TorchMask memory_mask{};                              ///< [L, S], [B·H, L, S] or [1, L, S], cross-attention
  TensorView<const bool, 2> tgt_key_padding_mask{};     ///< [B, L] (with a cache: [B, cached + L])
  TensorView<const bool, 2> memory_key_padding_mask{};  ///< [B, S]
  bool tgt_is_causal = false;                           ///< target position i attends to j <= i only
  TensorView<const Scalar, 3> tgt_bias{};               ///< a float tgt_mask in Scalar (kept for older code)
  TensorView<const Scalar, 3> memory_bias{};            ///< a float memory_mask in Scalar (kept for older code)
  MaskedRows masked_rows = MaskedRows::zero;            ///< MaskedRows::nan: PyTorch 1.13's fully masked rows
  /// From make_cache: each call appends its target positions to the self-attention caches and
  /// attends causally over everything cached (tgt_mask and tgt_bias then do not apply); the
  /// memory is projected on the first call and reused after.
  DecoderCache<Scalar>* cache = nullptr;
};

}  // namespace heed::nn
