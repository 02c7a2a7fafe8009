#pragma once
// Naive double-precision softmax, straight from the definition
//   softmax(x)_i = exp(x_i - max_j x_j) / sum_k exp(x_k - max_j x_j).
// A row of only -inf yields NaN, as the formula (and PyTorch 1.13) does.

#include <cmath>
#include <limits>

#include "heed/core/tensor.hpp"

namespace heed::reference {

/// Converts any tensor to double, the precision every reference computes in.
template <class X>
Tensor<double, rank_of<X>> to_double(const X& x) {
  const auto v = as_view(x);
  const Tensor<scalar_of<X>, rank_of<X>> dense(v);
  Tensor<double, rank_of<X>> out(v.shape());
  for (index_t i = 0; i < out.numel(); ++i) out.data()[i] = static_cast<double>(dense.data()[i]);
  return out;
}

template <TensorLike X>
Tensor<double, rank_of<X>> softmax(const X& x) {
  Tensor<double, rank_of<X>> y = to_double(x);
  const index_t n = y.shape().back();
  for (index_t r = 0; n > 0 && r < y.numel() / n; ++r) {
    double* row = y.data() + r * n;
    double m = -std::numeric_limits<double>::infinity();
    for (index_t i = 0; i < n; ++i) m = std::max(m, row[i]);
    double total = 0;
    for (index_t i = 0; i < n; ++i) total += std::exp(row[i] - m);
    for (index_t i = 0; i < n; ++i) row[i] = std::exp(row[i] - m) / total;
  }
  return y;
}

}  // namespace heed::reference
