#pragma once
// Naive double-precision reference for the batched products, from PyTorch's definition:
//   baddbmm  out[i] = beta · input[i] + alpha · a[i] · b[i]   (torch.baddbmm; bmm is beta 0, alpha 1)
// input is given expanded to [B, n, p] (the test broadcasts it by its own index arithmetic); with
// beta = 0 it is not read.

#include "heed/core/tensor.hpp"

namespace heed::reference {

/// beta · input + alpha · a [B, n, m] · b [B, m, p]; input [B, n, p] or empty (read only where beta ≠ 0).
inline Tensor<double, 3> baddbmm(const Tensor<double, 3>& input, const Tensor<double, 3>& a, const Tensor<double, 3>& b,
                                 double beta, double alpha) {
  const index_t B = a.size(0), n = a.size(1), m = a.size(2), p = b.size(2);
  Tensor<double, 3> out({B, n, p});
  for (index_t i = 0; i < B; ++i)
    for (index_t r = 0; r < n; ++r)
      for (index_t c = 0; c < p; ++c) {
        double sum = 0.0;
        for (index_t k = 0; k < m; ++k) sum += a(i, r, k) * b(i, k, c);
        out(i, r, c) = alpha * sum + (beta == 0.0 ? 0.0 : beta * input(i, r, c));
      }
  return out;
}

}  // namespace heed::reference
