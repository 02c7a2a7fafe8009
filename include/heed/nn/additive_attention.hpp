#pragma once
// AdditiveAttention: seed 002's Bahdanau attention module. One query [B, h] against keys
// [B, L, h]:  weights = softmax_L(score(tanh(query_proj(q) + key_proj(k))))   [B, L]
// State dict: query_proj.*, key_proj.* (nn.Linear(h, h)), score.* (nn.Linear(h, 1)). It runs on
// heed's driver with the Additive score policy; the context (the weighted sum of the keys)
// comes for free. score.bias shifts every score alike and does not change the softmax.

#include <string>

#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/attention.hpp"
#include "heed/nn/linear.hpp"
#include "heed/nn/weights.hpp"

namespace heed::nn {

struct AdditiveAttentionOptions {
  index_t hidden_dim = 0;
  std::uint64_t seed = 0;
};

template <class Scalar>
struct AdditiveAttentionResult {
  Tensor<Scalar, 2> weights;  ///< [B, L], what the seed's forward returns
  Tensor<Scalar, 2> context;  ///< [B, h] = sum_j weights[b, j] · keys[b, j]
};

template <class Scalar = float>
class AdditiveAttention {
 public:
  explicit AdditiveAttention(const AdditiveAttentionOptions& o)
      : options_(o),
        query_proj_({.in_features = o.hidden_dim, .out_features = o.hidden_dim, .seed = o.seed}),
        key_proj_({.in_features = o.hidden_dim, .out_features = o.hidden_dim, .seed = o.seed + 2}),
        score_({.in_features = o.hidden_dim, .out_features = 1, .seed = o.seed + 4}) {}

  template <WeightSource S>
  void load(const Loader<S>& from) {
    query_proj_.load(from.child("query_proj."));
    key_proj_.load(from.child("key_proj."));
    score_.load(from.child("score."));
  }
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    load_module(*this, source, prefix, load_options);
  }

  /// query [B, h], keys [B, L, h] (a key padding mask [B, L], true = ignore, is optional).
  template <TensorLike Q, TensorLike K>
  [[nodiscard]] AdditiveAttentionResult<Scalar> operator()(const Q& query, const K& keys,
                                                           TensorView<const bool, 2> padding = {}) const {
    static_assert(rank_of<Q> == 2 && rank_of<K> == 3, "AdditiveAttention takes query [B, h] and keys [B, L, h]");
    const auto q = as_view(query);
    const auto k = as_view(keys);
    const index_t B = k.size(0), L = k.size(1), h = options_.hidden_dim;
    if (q.size(0) != B || q.size(1) != h || k.size(2) != h)
      throw ShapeError("heed::nn::AdditiveAttention: expects query [B, " + std::to_string(h) + "] and keys [B, L, " +
                       std::to_string(h) + "], got query " + to_string(q.shape()) + " and keys " +
                       to_string(k.shape()));
    const Additive<Scalar> score{.w_q = query_proj_.weight(),
                                 .w_k = key_proj_.weight(),
                                 .v = score_.weight().view()[0],
                                 .b_q = query_proj_.bias(),
                                 .b_k = key_proj_.bias()};
    const TensorView<const Scalar, 3> q3(q.data(), {B, 1, h}, {q.stride(0), 0, q.stride(1)});
    const auto r = padding.is_null() ? attention(q3, k, k, score, mask::None{}, {.need_weights = true})
                                     : attention(q3, k, k, score, mask::KeyPadding{padding}, {.need_weights = true});
    return {Tensor<Scalar, 2>(r.weights.view().reshape(Shape<2>{B, L})),
            Tensor<Scalar, 2>(r.output.view().reshape(Shape<2>{B, h}))};
  }

 private:
  AdditiveAttentionOptions options_;
  Linear<Scalar> query_proj_, key_proj_, score_;
};

}  // namespace heed::nn
