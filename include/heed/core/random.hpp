#pragma once
// Factories and seeded random tensors. The generator is splitmix64 (Steele, Lea, Flood 2014)
// and normals come from Box-Muller, both written out here rather than taken from <random>,
// whose distributions differ between standard libraries: the same seed gives the same
// tensor with libstdc++, libc++ and MSVC (up to the last bit of the libm calls).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numbers>

#include "heed/core/tensor.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/core/detail/splitmix64.hpp"

namespace heed {

/// A zero-filled tensor of `shape` (the same as Tensor(shape)).
template <class Scalar, std::size_t Rank>
[[nodiscard]] Tensor<Scalar, Rank> zeros(const Shape<Rank>& shape) {
  return Tensor<Scalar, Rank>(shape);
}
/// zeros() of a braced shape: `heed::zeros<float>({2, 3})`.
template <class Scalar, std::size_t Rank>
[[nodiscard]] Tensor<Scalar, Rank> zeros(const index_t (&shape)[Rank]) {
  return Tensor<Scalar, Rank>(std::to_array(shape));
}

/// A tensor of `shape` with every element `value`.
template <class Scalar, std::size_t Rank>
[[nodiscard]] Tensor<Scalar, Rank> full(const Shape<Rank>& shape, Scalar value) {
  return Tensor<Scalar, Rank>(shape, value);
}
/// full() of a braced shape: `heed::full<float>({2, 3}, 1.0f)`.
template <class Scalar, std::size_t Rank>
[[nodiscard]] Tensor<Scalar, Rank> full(const index_t (&shape)[Rank], Scalar value) {
  return Tensor<Scalar, Rank>(std::to_array(shape), value);
}

/// Uniform in [lo, hi), deterministic for a seed.
template <class Scalar, std::size_t Rank>
[[nodiscard]] Tensor<Scalar, Rank> uniform(const Shape<Rank>& shape, Scalar lo, Scalar hi, std::uint64_t seed) {
  Tensor<Scalar, Rank> t(shape);
  detail::SplitMix64 gen(seed);
  const double span = static_cast<double>(hi) - static_cast<double>(lo);
  Scalar* p = t.data();
  for (index_t i = 0; i < t.numel(); ++i) p[i] = static_cast<Scalar>(static_cast<double>(lo) + span * gen.uniform());
  return t;
}
/// uniform() of a braced shape.
template <class Scalar, std::size_t Rank>
[[nodiscard]] Tensor<Scalar, Rank> uniform(const index_t (&shape)[Rank], Scalar lo, Scalar hi, std::uint64_t seed) {
  return uniform<Scalar, Rank>(std::to_array(shape), lo, hi, seed);
}

/// Standard normal samples, deterministic for a seed.
template <class Scalar, std::size_t Rank>
[[nodiscard]] Tensor<Scalar, Rank> randn(const Shape<Rank>& shape, std::uint64_t seed) {
  Tensor<Scalar, Rank> t(shape);
  detail::SplitMix64 gen(seed);
  Scalar* p = t.data();
  const index_t n = t.numel();
  for (index_t i = 0; i < n; i += 2) {
    // Box-Muller: two uniforms give two independent normals. 1 - u keeps log away from 0.
    const double radius = std::sqrt(-2.0 * std::log(1.0 - gen.uniform()));
    const double angle = 2.0 * std::numbers::pi * gen.uniform();
    p[i] = static_cast<Scalar>(radius * std::cos(angle));
    if (i + 1 < n) p[i + 1] = static_cast<Scalar>(radius * std::sin(angle));
  }
  return t;
}
/// randn() of a braced shape: `heed::randn<float>({2, 8, 128, 64}, 0)`.
template <class Scalar, std::size_t Rank>
[[nodiscard]] Tensor<Scalar, Rank> randn(const index_t (&shape)[Rank], std::uint64_t seed) {
  return randn<Scalar, Rank>(std::to_array(shape), seed);
}

}  // namespace heed
