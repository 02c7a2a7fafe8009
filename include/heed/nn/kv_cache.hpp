#pragma once
// KVCache: the keys and values of the positions a model has already seen, so that a generation
// step projects only its new tokens and attends over everything before them (seed 002's
// "cache keys and values to speed up autoregressive generation").
//
// Storage is preallocated: keys and values [B, Hkv, capacity, head_dim] in the module's scalar
// type (16-bit for a bfloat16 model: half the memory). Each batch row has its own length, so
// prompts of different lengths can share one batch: prefill them right-padded to the longest,
// then truncate_row(b, its length); every later call appends each row's new positions after its
// own length, and the module's attention lets query i of row b see exactly the keys
// j <= length(b) + i, never another row's stale positions.
//
//   auto cache = mha.make_cache({.batch = 1, .max_len = 2048});
//   auto y = mha(prompt, prompt, prompt, {.need_weights = false, .cache = &cache});   // prefill
//   auto step = mha(token, token, token, {.need_weights = false, .cache = &cache});   // one more
//
// Appending past the capacity is a ShapeError and leaves the cache as it was.
//
// A module stays const and thread-safe with a cache: the state is in the cache, which belongs to
// one sequence (one batch of them) and must not be used by two calls at once. Serve concurrent
// requests with a cache each. The storage type is the module's: a KVCache<float> does not fit a
// MultiheadAttention<bfloat16> call at compile time.

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"

namespace heed::nn {

/// What a module's make_cache needs: the batch size and the most positions a row will hold.
struct KVCacheOptions {
  index_t batch = 1;    ///< batch rows
  index_t max_len = 0;  ///< the most positions a row will hold
};

/// Preallocated keys and values with a length per batch row; see the top of this file.
template <class Scalar = float>
class KVCache {
 public:
  /// An empty cache of capacity 0 (assign a module's make_cache() to it).
  KVCache() = default;
  /// ShapeError unless batch, kv_heads and head_dim are >= 1 and capacity >= 0.
  KVCache(index_t batch, index_t kv_heads, index_t head_dim, index_t capacity) {
    if (batch < 1 || kv_heads < 1 || head_dim < 1 || capacity < 0)
      throw ShapeError("heed::nn::KVCache: batch " + std::to_string(batch) + ", kv_heads " + std::to_string(kv_heads) +
                       ", head_dim " + std::to_string(head_dim) + " must be >= 1 and capacity " +
                       std::to_string(capacity) + " >= 0");
    keys_ = Tensor<Scalar, 4>({batch, kv_heads, capacity, head_dim});
    values_ = Tensor<Scalar, 4>({batch, kv_heads, capacity, head_dim});
    lengths_.assign(static_cast<std::size_t>(batch), 0);
  }

  /// Batch rows, key/value heads, positions per row at most, and the head dim: the storage's shape.
  [[nodiscard]] index_t batch() const noexcept { return keys_.size(0); }
  /// Key/value heads.
  [[nodiscard]] index_t kv_heads() const noexcept { return keys_.size(1); }
  /// Positions a row can hold.
  [[nodiscard]] index_t capacity() const noexcept { return keys_.size(2); }
  /// Components per head.
  [[nodiscard]] index_t head_dim() const noexcept { return keys_.size(3); }
  /// Positions cached for batch row b (unchecked).
  [[nodiscard]] index_t length(index_t b) const noexcept { return lengths_[static_cast<std::size_t>(b)]; }
  /// Every row's length.
  [[nodiscard]] std::span<const index_t> lengths() const noexcept { return lengths_; }
  /// The longest row's length: the keys() a call attends over.
  [[nodiscard]] index_t max_length() const noexcept {
    return lengths_.empty() ? 0 : *std::max_element(lengths_.begin(), lengths_.end());
  }

  /// Keys [B, Hkv, max_length(), head_dim]; row b holds length(b) positions, the rest is stale.
  [[nodiscard]] TensorView<const Scalar, 4> keys() const { return keys_.view().slice(2, 0, max_length()); }
  /// Values, laid out as keys().
  [[nodiscard]] TensorView<const Scalar, 4> values() const { return values_.view().slice(2, 0, max_length()); }

  /// Forgets every position.
  void reset() noexcept { truncate(0); }
  /// Keeps at most `length` positions in every row (ShapeError when negative).
  void truncate(index_t length) {
    for (index_t b = 0; b < batch(); ++b) truncate_row(b, std::min(length, this->length(b)));
  }
  /// Keeps the first `length` positions of row b, which must be at most its length (a prompt
  /// shorter than the batch's longest, after a right-padded prefill). The dropped positions are
  /// zeroed, so that no value from them (an Inf, say) can reach a later call's arithmetic.
  void truncate_row(index_t b, index_t length) {
    if (b < 0 || b >= batch() || length < 0 || length > this->length(b))
      throw ShapeError("heed::nn::KVCache::truncate_row: row " + std::to_string(b) + " to length " +
                       std::to_string(length) + ", but the cache has " + std::to_string(batch()) + " rows" +
                       (b >= 0 && b < batch() ? " and row " + std::to_string(b) + " holds " +
                                                    std::to_string(this->length(b)) + " positions"
                                              : std::string()));
    const index_t dropped = (this->length(b) - length) * head_dim();
    if (dropped == 0) return;  // (nothing to zero, and position `length` may be past the capacity)
    for (index_t h = 0; h < kv_heads(); ++h) {
      std::fill_n(&keys_(b, h, length, 0), dropped, Scalar(0));
      std::fill_n(&values_(b, h, length, 0), dropped, Scalar(0));
    }
    lengths_[static_cast<std::size_t>(b)] = length;
  }

  /// What append() returns.
  struct Appended {
    TensorView<const Scalar, 4> keys;    ///< the cache's keys, as keys() returns them
    TensorView<const Scalar, 4> values;  ///< the cache's values, as values() returns them
  };
  /// Appends k and v [B, Hkv, L, head_dim] after each row's positions and returns keys() and
  /// values() with them. ShapeError, with the cache unchanged, when the shapes differ from the
  /// cache's or a row would exceed the capacity.
  Appended append(const TensorView<const Scalar, 4>& k, const TensorView<const Scalar, 4>& v) {
    const index_t L = k.size(2);
    const Shape<4> expected{batch(), kv_heads(), L, head_dim()};
    if (k.shape() != expected || v.shape() != expected)
      throw ShapeError("heed::nn::KVCache::append: k " + to_string(k.shape()) + " and v " + to_string(v.shape()) +
                       " must be [batch, kv_heads, L, head_dim] = " + to_string(expected) + " for this cache");
    if (max_length() + L > capacity())
      throw ShapeError("heed::nn::KVCache::append: " + std::to_string(L) + " positions after " +
                       std::to_string(max_length()) + " exceed the capacity " + std::to_string(capacity()) +
                       " (nothing was written; make a larger cache or truncate)");
    for (index_t b = 0; b < batch(); ++b) {
      const index_t at = length(b);
      for (index_t h = 0; h < kv_heads(); ++h)
        for (index_t i = 0; i < L; ++i) {
          const Scalar* ks = &k(b, h, i, 0);
          const Scalar* vs = &v(b, h, i, 0);
          Scalar* kd = &keys_(b, h, at + i, 0);
          Scalar* vd = &values_(b, h, at + i, 0);
          if (k.stride(3) == 1 && v.stride(3) == 1) {
            std::copy_n(ks, head_dim(), kd);
            std::copy_n(vs, head_dim(), vd);
          } else {
            for (index_t c = 0; c < head_dim(); ++c) {
              kd[c] = k(b, h, i, c);
              vd[c] = v(b, h, i, c);
            }
          }
        }
      lengths_[static_cast<std::size_t>(b)] = at + L;
    }
    return {keys(), values()};
  }

 private:
  Tensor<Scalar, 4> keys_, values_;
  std::vector<index_t> lengths_;
};

/// Keys and values projected once by a module's project_kv ([B, S, Hkv·head_dim] each, as the
/// projections write them), attended from many calls without projecting them again: a decoder's
/// memory (MultiheadAttention::attend, nn::DecoderCache in decoder_call.hpp).
template <class Scalar = float>
struct ProjectedKV {
  Tensor<Scalar, 3> keys;    ///< the projected keys, [B, S, E]
  Tensor<Scalar, 3> values;  ///< the projected values, [B, S, E]
};

}  // namespace heed::nn
