#pragma once
// The options and the result that the seeds' three attention classes share
// (MultiHeadAttention, SelfAttention, CrossAttention).

#include <cstdint>

#include "heed/core/tensor.hpp"

namespace heed::nn::seed {

/// The constructor options of the seeds' attention classes: the seed's `(d_model, n_heads)`
/// (dropout is the identity at inference).
struct MultiHeadOptions {
  index_t d_model = 0;     ///< the model width
  index_t n_heads = 1;     ///< heads (d_model must be a multiple)
  std::uint64_t seed = 0;  ///< for the PyTorch-style initialization used until load()
};

/// What the seeds' attention classes return: output [B, Lq, d_model], weights [B, H, Lq, Lk].
template <class Scalar>
struct MultiHeadResult {
  Tensor<Scalar, 3> output;   ///< [B, Lq, d_model]
  Tensor<Scalar, 4> weights;  ///< [B, H, Lq, Lk]
};

}  // namespace heed::nn::seed
