#pragma once
// Naive double-precision references for the nn building blocks, straight from PyTorch's
// definitions:
//   linear       y = x Wᵀ + b                          (torch.nn.Linear)
//   layer_norm   y = (x - mean) / sqrt(var + eps) w + b, biased variance (torch.nn.LayerNorm)
//   rms_norm     y = x / sqrt(mean(x²) + eps) w (torch.nn.RMSNorm); silu x / (1 + exp(-x))
//   relu, gelu (x/2 (1 + erf(x/√2))), gelu_tanh (x/2 (1 + tanh(√(2/π) (x + 0.044715 x³))))
//   attention_pooling  w = softmax_L(x a + c) over unpadded positions, pooled = wᵀ x

#include <cmath>
#include <limits>
#include <numbers>

#include "heed/core/tensor.hpp"

namespace heed::reference {

/// x [n, in] Wᵀ [in, out] + b: [n, out] (b may be empty).
inline Tensor<double, 2> linear(const Tensor<double, 2>& x, const Tensor<double, 2>& w, const Tensor<double, 1>& b) {
  Tensor<double, 2> y({x.size(0), w.size(0)});
  for (index_t i = 0; i < x.size(0); ++i)
    for (index_t o = 0; o < w.size(0); ++o) {
      double acc = b.empty() ? 0.0 : b(o);
      for (index_t c = 0; c < x.size(1); ++c) acc += x(i, c) * w(o, c);
      y(i, o) = acc;
    }
  return y;
}

/// Each row of x [n, d] normalized with its mean and biased variance, then scaled and shifted
/// (w, b may be empty: 1 and 0).
inline Tensor<double, 2> layer_norm(const Tensor<double, 2>& x, const Tensor<double, 1>& w, const Tensor<double, 1>& b,
                                    double eps) {
  Tensor<double, 2> y(x.shape());
  const index_t d = x.size(1);
  for (index_t i = 0; i < x.size(0); ++i) {
    double mean = 0, var = 0;
    for (index_t c = 0; c < d; ++c) mean += x(i, c);
    mean /= double(d);
    for (index_t c = 0; c < d; ++c) var += (x(i, c) - mean) * (x(i, c) - mean);
    var /= double(d);
    for (index_t c = 0; c < d; ++c)
      y(i, c) = (x(i, c) - mean) / std::sqrt(var + eps) * (w.empty() ? 1.0 : w(c)) + (b.empty() ? 0.0 : b(c));
  }
  return y;
}

/// Each row of x [n, d] divided by its root mean square (with eps), then scaled by w (may be
/// empty: 1), as torch.nn.RMSNorm.
inline Tensor<double, 2> rms_norm(const Tensor<double, 2>& x, const Tensor<double, 1>& w, double eps) {
  Tensor<double, 2> y(x.shape());
  const index_t d = x.size(1);
  for (index_t i = 0; i < x.size(0); ++i) {
    double squares = 0;
    for (index_t c = 0; c < d; ++c) squares += x(i, c) * x(i, c);
    const double inv = 1.0 / std::sqrt(squares / double(d) + eps);
    for (index_t c = 0; c < d; ++c) y(i, c) = x(i, c) * inv * (w.empty() ? 1.0 : w(c));
  }
  return y;
}

/// x / (1 + exp(-x)) (torch.nn.SiLU).
inline double silu(double x) {
  return x / (1.0 + std::exp(-x));
}

inline double relu(double x) {
  return x > 0 ? x : 0.0;
}
inline double gelu(double x) {
  return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2));
}
inline double gelu_tanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}

struct PoolingReference {
  Tensor<double, 2> pooled;   // [B, E]
  Tensor<double, 2> weights;  // [B, L]
};

/// scores = x a + c (a [E]); padded positions (pad[b, j] true) get weight 0; a row with every
/// position padded pools to zeros.
inline PoolingReference attention_pooling(const Tensor<double, 3>& x, const Tensor<double, 1>& a, double c,
                                          const Tensor<bool, 2>& pad) {
  const index_t B = x.size(0), L = x.size(1), E = x.size(2);
  PoolingReference r{Tensor<double, 2>({B, E}), Tensor<double, 2>({B, L})};
  for (index_t b = 0; b < B; ++b) {
    double m = -std::numeric_limits<double>::infinity();
    for (index_t j = 0; j < L; ++j) {
      if (!pad.empty() && pad(b, j)) continue;
      double s = c;
      for (index_t e = 0; e < E; ++e) s += x(b, j, e) * a(e);
      r.weights(b, j) = s;
      m = std::max(m, s);
    }
    if (m == -std::numeric_limits<double>::infinity()) {
      for (index_t j = 0; j < L; ++j) r.weights(b, j) = 0;
      continue;
    }
    double total = 0;
    for (index_t j = 0; j < L; ++j)
      if (pad.empty() || !pad(b, j)) total += std::exp(r.weights(b, j) - m);
    for (index_t j = 0; j < L; ++j)
      r.weights(b, j) = (!pad.empty() && pad(b, j)) ? 0.0 : std::exp(r.weights(b, j) - m) / total;
    for (index_t e = 0; e < E; ++e) {
      double acc = 0;
      for (index_t j = 0; j < L; ++j) acc += r.weights(b, j) * x(b, j, e);
      r.pooled(b, e) = acc;
    }
  }
  return r;
}

}  // namespace heed::reference
