#pragma once
#include "heed/core/detail/internal_header_check.hpp"
// What SEBlock, SpatialAttention and CBAM share: input validation, and the per-sample loop.
// Each module runs its whole pipeline on one sample at a time (a [C, H, W] sample of the seed's
// shape is 1 MiB in float, as large as this machine's L2), and samples run in parallel. A
// bfloat16 or half module reads its sample in place, widening values as the passes load them
// (simd/vision_ops.hpp), computes in float, and rounds each output value
// once as it writes it: it reads half the bytes of a float one.

#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "heed/core/cast.hpp"
#include "heed/core/error.hpp"
#include "heed/core/parallel.hpp"
#include "heed/core/scalar.hpp"
#include "heed/core/tensor.hpp"
#include "heed/simd/kernel_table.hpp"

namespace heed::detail {

// The validated, contiguous input of a vision module (a copy only when x is strided).
template <class Scalar, class X>
// `convolved`: the module convolves the plane (spatial attention), and PyTorch's conv2d refuses an
// empty one.
TensorView<const Scalar, 4> dense_input(const X& x, index_t channels, const char* who, Tensor<Scalar, 4>& storage,
                                        bool convolved = false) {
  static_assert(rank_of<X> == 4, "vision modules take x [B, C, H, W]");
  static_assert(std::is_same_v<scalar_of<X>, Scalar>, "the input's scalar type must be the module's");
  const auto v = as_view(x);
  if (channels > 0 && v.size(1) != channels)
    throw ShapeError(std::string("heed::nn::") + who + ": expects " + std::to_string(channels) + " channels, got x " +
                     to_string(v.shape()));
  if (v.size(1) < 1)
    throw ShapeError(std::string("heed::nn::") + who + ": x " + to_string(v.shape()) + " has no channels");
  if (convolved && (v.size(2) < 1 || v.size(3) < 1))
    throw ShapeError(std::string("heed::nn::") + who + ": x " + to_string(v.shape()) +
                     " has an empty plane, which the spatial attention's convolution refuses (as PyTorch's does)");
  return contiguous(v, storage);
}

// Runs body(b, scratch) for every sample, in parallel, each worker with its own `floats`-long
// scratch, which the body writes before it reads. The scratch is the worker thread's own and
// kept from call to call (grown when a call needs more): a fresh megabyte per call (what a
// 16-bit module's widened copy of its sample used to be) cost more in page faults than the
// module's arithmetic.
template <class Scalar, class Body>
void for_each_sample(index_t samples, index_t floats, Body&& body) {
  parallel_for(samples, std::max(1, num_threads()), [&](index_t b, int) {
    thread_local std::vector<Scalar> scratch;
    if (scratch.size() < static_cast<std::size_t>(floats)) scratch.resize(static_cast<std::size_t>(floats));
    body(b, scratch.data());
  });
}

// A parameter of storage type Scalar in the accumulator type A.
template <class A, class Scalar, std::size_t Rank>
Tensor<A, Rank> widened_parameter(Tensor<Scalar, Rank>&& t) {
  if constexpr (std::is_same_v<A, Scalar>)
    return std::move(t);
  else
    return cast<A>(t);
}

// The extra scratch a 16-bit module needs per sample: one row of accumulator values, rounded
// into a small output (the channel weights, the spatial map) as it is written.
template <class Scalar>
index_t rounding_scratch(index_t C, index_t plane) {
  return is_16bit_float_v<Scalar> ? std::max(C, plane) : 0;
}

// compute(row) writes n accumulator values: straight into out for float and double, else into
// `buffer`, then rounded into out. Returns the accumulator values (out or buffer).
template <class Scalar, class Compute>
const accumulator_t<Scalar>* write_row(Scalar* out, index_t n, accumulator_t<Scalar>* buffer, Compute&& compute) {
  if constexpr (std::is_same_v<accumulator_t<Scalar>, Scalar>) {
    compute(out);
    return out;
  } else {
    compute(buffer);
    simd::convert_kernels<Scalar>().narrow(buffer, out, n);
    return buffer;
  }
}

}  // namespace heed::detail
