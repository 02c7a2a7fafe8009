#pragma once
// seed::AdditiveAttention: the second tutorial's Bahdanau attention module
// (seed002_scores in tests/golden/generate.py). One query [B, h] against keys
// [B, L, h]:  weights = softmax_L(score(tanh(query_proj(q) + key_proj(k))))   [B, L]
// State dict: query_proj.*, key_proj.* (nn.Linear(h, h)), score.* (nn.Linear(h, 1)). It runs on
// heed's driver with the Additive score policy; the context (the weighted sum of the keys)
// comes for free. score.bias shifts every score alike and does not change the softmax.

#include <string>

#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/attention.hpp"
#include "heed/kernels/dynamic_mask.hpp"
#include "heed/nn/linear.hpp"
#include "heed/nn/weights.hpp"

namespace heed::nn::seed {

/// The constructor options of seed::AdditiveAttention (the seed's `hidden_dim`).
struct AdditiveAttentionOptions {
  index_t hidden_dim = 0;  ///< the hidden size of the score's tanh layer
  std::uint64_t seed = 0;  ///< for the PyTorch-style initialization used until load()
};

/// What seed::AdditiveAttention returns.
template <class Scalar>
struct AdditiveAttentionResult {
  Tensor<Scalar, 2> weights;  ///< [B, L], what the seed's forward returns
  Tensor<Scalar, 2> context;  ///< [B, h] = sum_j weights[b, j] · keys[b, j]
};

/// The seed's AdditiveAttention(hidden_dim): see the top of this file.
template <class Scalar = float>
class AdditiveAttention {
 public:
  /// ShapeError unless hidden_dim >= 1.
  explicit AdditiveAttention(const AdditiveAttentionOptions& o)
      : options_(o),
        query_proj_({.in_features = o.hidden_dim, .out_features = o.hidden_dim, .seed = o.seed}),
        key_proj_({.in_features = o.hidden_dim, .out_features = o.hidden_dim, .seed = o.seed + 2}),
        score_({.in_features = o.hidden_dim, .out_features = 1, .seed = o.seed + 4}) {}

  /// Loads the seed's names (see the top of this file).
  template <WeightSource S>
  void load(const Loader<S>& from) {
    query_proj_.load(from.child("query_proj."));
    key_proj_.load(from.child("key_proj."));
    score_.load(from.child("score."));
  }
  /// Loads the parameters from a weight source (io::SafeTensors, TensorDict) under `prefix`, with PyTorch's state_dict
  /// names; with `load_options.strict`, a name under the prefix that nothing loaded is a FormatError.
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
    heed::mask::Dynamic<Scalar> masks;
    if (!padding.is_null()) masks.padding.emplace(padding);
    const auto r = attention(q3, k, k, score, masks, {.need_weights = true});
    return {Tensor<Scalar, 2>(r.weights.view().reshape(Shape<2>{B, L})),
            Tensor<Scalar, 2>(r.output.view().reshape(Shape<2>{B, h}))};
  }

 private:
  AdditiveAttentionOptions options_;
  Linear<Scalar> query_proj_, key_proj_, score_;
};

}  // namespace heed::nn::seed
