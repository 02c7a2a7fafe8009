#pragma once
// Element-wise comparison of a heed result with an expected tensor, as a gtest assertion
// that reports the worst element, its index, and the max absolute and relative errors.
// NaN matches NaN and ±inf match themselves; anything else must be within atol + rtol·|expected|.

#include <cmath>
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "heed/core/tensor.hpp"

namespace heed::test {

struct Tolerance {
  double rtol;
  double atol;
};

/// The tolerance used for a scalar type unless a test states its own.
template <class T>
constexpr Tolerance default_tolerance() {
  if constexpr (sizeof(T) >= 8)
    return {1e-10, 1e-12};
  else
    return {2e-5, 2e-6};
}

template <class A, class E>
::testing::AssertionResult all_close(const A& actual, const E& expected, Tolerance tol) {
  const auto a = as_view(actual);
  const auto e = as_view(expected);
  if (a.shape() != e.shape())
    return ::testing::AssertionFailure() << "shape " << to_string(a.shape()) << " != expected " << to_string(e.shape());
  const Tensor<scalar_of<A>, rank_of<A>> ad(a);
  const Tensor<scalar_of<E>, rank_of<E>> ed(e);
  double max_abs = 0, max_rel = 0;
  index_t worst = -1;
  double worst_excess = 0;
  for (index_t i = 0; i < ad.numel(); ++i) {
    const auto x = static_cast<double>(ad.data()[i]);
    const auto y = static_cast<double>(ed.data()[i]);
    if (std::isnan(y) || std::isnan(x)) {
      if (std::isnan(x) != std::isnan(y)) {
        worst = i;
        worst_excess = INFINITY;
      }
      continue;
    }
    if (std::isinf(y) || std::isinf(x)) {
      if (x != y) {
        worst = i;
        worst_excess = INFINITY;
      }
      continue;
    }
    const double err = std::abs(x - y);
    max_abs = std::max(max_abs, err);
    if (y != 0) max_rel = std::max(max_rel, err / std::abs(y));
    const double excess = err - (tol.atol + tol.rtol * std::abs(y));
    if (excess > worst_excess) {
      worst_excess = excess;
      worst = i;
    }
  }
  if (worst < 0) return ::testing::AssertionSuccess() << "max abs error " << max_abs << ", max rel error " << max_rel;
  std::ostringstream msg;
  msg << "element " << worst << " (flat) of shape " << to_string(a.shape()) << ": actual "
      << static_cast<double>(ad.data()[worst]) << ", expected " << static_cast<double>(ed.data()[worst]) << " (rtol "
      << tol.rtol << ", atol " << tol.atol << "); max abs error " << max_abs << ", max rel error " << max_rel;
  return ::testing::AssertionFailure() << msg.str();
}

template <class A, class E>
::testing::AssertionResult all_close(const A& actual, const E& expected) {
  return all_close(actual, expected, default_tolerance<scalar_of<A>>());
}

/// Largest absolute difference (NaN-aware: NaN vs NaN is 0).
template <class A, class E>
double max_abs_diff(const A& actual, const E& expected) {
  const Tensor<scalar_of<A>, rank_of<A>> ad(as_view(actual));
  const Tensor<scalar_of<E>, rank_of<E>> ed(as_view(expected));
  double worst = 0;
  for (index_t i = 0; i < ad.numel(); ++i) {
    const auto x = static_cast<double>(ad.data()[i]);
    const auto y = static_cast<double>(ed.data()[i]);
    if (std::isnan(x) && std::isnan(y)) continue;
    worst = std::max(worst, std::abs(x - y));
  }
  return worst;
}

/// y [B, L, E] with the rows padded in `pad` [B, L] copied from `expected`, so that they compare
/// equal: PyTorch 1.13's encoder fast path (nested tensors) writes zeros there, heed computes
/// them like any other row.
inline Tensor<float, 3> with_padded_rows_from(const Tensor<float, 3>& y, const Tensor<float, 3>& expected,
                                              const Tensor<bool, 2>& pad) {
  Tensor<float, 3> out = y;
  for (index_t b = 0; b < y.size(0); ++b)
    for (index_t i = 0; i < y.size(1); ++i)
      if (pad(b, i))
        for (index_t e = 0; e < y.size(2); ++e) out(b, i, e) = expected(b, i, e);
  return out;
}

}  // namespace heed::test
