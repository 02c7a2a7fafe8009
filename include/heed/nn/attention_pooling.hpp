#pragma once
// AttentionPooling (the tutorial's attn_pool; AttentionClassifier in examples/train/common.py): one learned scoring
// vector turns a sequence into one vector.
//   scores = x w + b  [B, L];  padding → -inf;  weights = softmax_L(scores);  pooled = weights · x
// That is attention with the fixed query w against keys = values = x (b shifts every score
// alike), so it runs on heed's driver. State dict: `0.weight` [1, E], `0.bias` [1]
// (nn.Sequential(nn.Linear(E, 1)), as the seed's attn_pool).

#include <string>

#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/attention.hpp"
#include "heed/kernels/dynamic_mask.hpp"
#include "heed/nn/linear.hpp"
#include "heed/nn/weights.hpp"

namespace heed::nn {

/// The constructor options of AttentionPooling.
struct AttentionPoolingOptions {
  index_t embed_dim = 0;   ///< the width of the pooled vectors
  std::uint64_t seed = 0;  ///< for the PyTorch-style initialization used until load()
};

/// What AttentionPooling returns.
template <class Scalar>
struct AttentionPoolingResult {
  Tensor<Scalar, 2> pooled;   ///< [B, E]
  Tensor<Scalar, 2> weights;  ///< [B, L]
};

/// Attention pooling with one learned scoring vector: see the top of this file.
template <class Scalar = float>
class AttentionPooling {
 public:
  /// The module for `o`, initialized as PyTorch initializes it (from heed's seeded generator) until load().
  explicit AttentionPooling(const AttentionPoolingOptions& o)
      : options_(o), score_({.in_features = o.embed_dim, .out_features = 1, .seed = o.seed}) {}

  /// Loads the parameters through `from`, under PyTorch's state_dict names; FormatError or ShapeError names a missing
  /// or misshapen one.
  template <WeightSource S>
  void load(const Loader<S>& from) {
    score_.load(from.child("0."));
  }
  /// load(Loader) from `source` under `prefix` (strict: unused names under it are an error).
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    load_module(*this, source, prefix, load_options);
  }

  /// x [B, L, E], padding [B, L] (true = ignore; may be empty). A row with every position
  /// padded pools to zeros (PyTorch: NaN).
  template <TensorLike X>
  [[nodiscard]] AttentionPoolingResult<Scalar> operator()(const X& x, TensorView<const bool, 2> padding = {},
                                                          MaskedRows masked_rows = MaskedRows::zero) const {
    const auto v = as_view(x);
    const index_t B = v.size(0), L = v.size(1), E = options_.embed_dim;
    if (v.size(2) != E)
      throw ShapeError("heed::nn::AttentionPooling: expects [B, L, " + std::to_string(E) + "], got x " +
                       to_string(v.shape()));
    const TensorView<const Scalar, 3> query(score_.weight().data(), {B, 1, E}, {0, 0, 1});
    const AttentionOptions options{.need_weights = true, .masked_rows = masked_rows};
    mask::Dynamic<Scalar> masks;
    if (!padding.is_null()) masks.padding.emplace(padding);
    const auto r = attention(query, v, v, Dot{}, masks, options);
    return {Tensor<Scalar, 2>(r.output.view().reshape(Shape<2>{B, E})),
            Tensor<Scalar, 2>(r.weights.view().reshape(Shape<2>{B, L}))};
  }

 private:
  AttentionPoolingOptions options_;
  Linear<Scalar> score_;
};

}  // namespace heed::nn
