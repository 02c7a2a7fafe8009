#pragma once
// The options and the result that the seeds' three attention classes share
// (MultiHeadAttention, SelfAttention, CrossAttention).

#include <cstdint>

#include "heed/core/tensor.hpp"

namespace heed::nn::seed {

/// The constructor options of the seeds' attention classes: the seed's `(d_model, n_heads)`
/// (dropout is the identity at inference).
struct MultiHeadOptions {
  index_t d_model = 0;
  index_t n_heads = 1;
  std::uint64_t seed = 0;  ///< for the PyTorch-style initialization used until load()
};

/// What the seeds' attention classes return: output [B, Lq, d_model], weights [B, H, Lq, Lk].
template <class Scalar>
struct MultiHeadResult {
  Tensor<Scalar, 3> output;
  Tensor<Scalar, 4> weights;
};

}  // namespace heed::nn::seed
