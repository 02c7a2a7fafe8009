#pragma once
#include "heed/core/detail/internal_header_check.hpp"
// What SEBlock, SpatialAttention and CBAM share: input validation, and the per-sample loop.
// Each module runs its whole pipeline on one sample at a time (a [C, H, W] sample of the seed's
// shape is 1 MiB and stays in L2), so x is read from memory once and y written once, and
// samples run in parallel.

#include <string>
#include <vector>

#include "heed/core/error.hpp"
#include "heed/core/parallel.hpp"
#include "heed/core/tensor.hpp"

namespace heed::detail {

// The validated, contiguous input of a vision module (a copy only when x is strided).
template <class Scalar, class X>
TensorView<const Scalar, 4> dense_input(const X& x, index_t channels, const char* who, Tensor<Scalar, 4>& storage) {
  static_assert(rank_of<X> == 4, "vision modules take x [B, C, H, W]");
  static_assert(std::is_same_v<scalar_of<X>, Scalar>, "the input's scalar type must be the module's");
  const auto v = as_view(x);
  if (channels > 0 && v.size(1) != channels)
    throw ShapeError(std::string("heed::nn::") + who + ": expects " + std::to_string(channels) + " channels, got x " +
                     to_string(v.shape()));
  if (v.size(1) < 1)
    throw ShapeError(std::string("heed::nn::") + who + ": x " + to_string(v.shape()) + " has no channels");
  return contiguous(v, storage);
}

// Runs body(b, scratch) for every sample, in parallel, each worker with its own `floats`-long scratch.
template <class Scalar, class Body>
void for_each_sample(index_t samples, index_t floats, Body&& body) {
  const int workers = std::max(1, num_threads());
  std::vector<std::vector<Scalar>> scratch(static_cast<std::size_t>(workers),
                                           std::vector<Scalar>(static_cast<std::size_t>(floats)));
  parallel_for(samples, workers,
               [&](index_t b, int worker) { body(b, scratch[static_cast<std::size_t>(worker)].data()); });
}

}  // namespace heed::detail
