#pragma once
// Naive double-precision attention, straight from the formulas, for checking the tiled
// driver:   S[b,h,i,j] = score(q[b,h,i], k[b,g(h),j]) + mask(b, h, i, j)
//           P = softmax_j(S)          (a row of only -inf: NaN, or 0 when asked)
//           O[b,h,i] = sum_j P[b,h,i,j] v[b,g(h),j]
// with g(h) = h / (Hq / Hkv), the key/value head of query head h (grouped-query attention;
// g(h) = h when the head counts agree). The mask is a function returning 0 (visible), -inf
// (hidden) or a bias to add.

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>

#include "heed/core/tensor.hpp"
#include "reference/softmax.hpp"

namespace heed::reference {

/// score(b, h, i, j) of query i and key j in batch b, head h
using ScoreFn = std::function<double(index_t b, index_t h, index_t i, index_t j)>;
using MaskFn = std::function<double(index_t b, index_t h, index_t i, index_t j)>;

inline const MaskFn no_mask = [](index_t, index_t, index_t, index_t) { return 0.0; };
inline constexpr double hidden = -std::numeric_limits<double>::infinity();

/// The key/value head that query head h of q reads from k.
inline index_t kv_head(const Tensor<double, 4>& q, const Tensor<double, 4>& k, index_t h) {
  return h / (q.size(1) / k.size(1));
}

/// qᵀk · scale
inline ScoreFn scaled_dot(const Tensor<double, 4>& q, const Tensor<double, 4>& k, double scale) {
  return [&q, &k, scale](index_t b, index_t h, index_t i, index_t j) {
    double s = 0;
    // rows of contiguous tensors: read as arrays, the compiler does not gather them by stride
    const double* qi = &q(b, h, i, 0);
    const double* kj = &k(b, kv_head(q, k, h), j, 0);
    for (index_t c = 0; c < q.size(3); ++c) s += qi[c] * kj[c];
    return s * scale;
  };
}

/// x W^T + bias, row by row: [B, H, L, d] → [B, H, L, hidden]
inline Tensor<double, 4> linear(const Tensor<double, 4>& x, const Tensor<double, 2>& w, const Tensor<double, 1>& bias) {
  Tensor<double, 4> y({x.size(0), x.size(1), x.size(2), w.size(0)});
  for (index_t b = 0; b < x.size(0); ++b)
    for (index_t h = 0; h < x.size(1); ++h)
      for (index_t i = 0; i < x.size(2); ++i)
        for (index_t u = 0; u < w.size(0); ++u) {
          double acc = bias.empty() ? 0 : bias(u);
          for (index_t c = 0; c < w.size(1); ++c) acc += w(u, c) * x(b, h, i, c);
          y(b, h, i, u) = acc;
        }
  return y;
}

/// vᵀ tanh(W_q q + b_q + W_k k + b_k), with W [hidden, d] row-major (nn.Linear's layout).
inline ScoreFn additive(const Tensor<double, 4>& q, const Tensor<double, 4>& k, const Tensor<double, 2>& wq,
                        const Tensor<double, 2>& wk, const Tensor<double, 1>& v, const Tensor<double, 1>& bq,
                        const Tensor<double, 1>& bk) {
  auto qp = std::make_shared<Tensor<double, 4>>(linear(q, wq, bq));
  auto kp = std::make_shared<Tensor<double, 4>>(linear(k, wk, bk));
  return [qp, kp, &v](index_t b, index_t h, index_t i, index_t j) {
    double s = 0;
    const index_t g = kv_head(*qp, *kp, h);
    for (index_t u = 0; u < v.size(0); ++u) s += v(u) * std::tanh((*qp)(b, h, i, u) + (*kp)(b, g, j, u));
    return s;
  };
}

struct AttentionReference {
  Tensor<double, 4> output;   // [B, H, Lq, dv]
  Tensor<double, 4> weights;  // [B, H, Lq, Lk]
};

/// q [B, Hq, Lq, dq], k [B, Hkv, Lk, dk], v [B, Hkv, Lk, dv], all double and contiguous.
inline AttentionReference attention(const Tensor<double, 4>& q, const Tensor<double, 4>& k, const Tensor<double, 4>& v,
                                    const ScoreFn& score, const MaskFn& mask, bool masked_rows_nan) {
  const index_t B = q.size(0), H = q.size(1), Lq = q.size(2), Lk = k.size(2), dv = v.size(3);
  AttentionReference r{Tensor<double, 4>({B, H, Lq, dv}), Tensor<double, 4>({B, H, Lq, Lk})};
  for (index_t b = 0; b < B; ++b)
    for (index_t h = 0; h < H; ++h)
      for (index_t i = 0; i < Lq; ++i) {
        double m = hidden;
        for (index_t j = 0; j < Lk; ++j) {
          const double s = score(b, h, i, j) + mask(b, h, i, j);
          r.weights(b, h, i, j) = s;
          m = std::max(m, s);
        }
        if (m == hidden) {  // fully masked row
          const double fill = masked_rows_nan ? std::numeric_limits<double>::quiet_NaN() : 0.0;
          for (index_t j = 0; j < Lk; ++j) r.weights(b, h, i, j) = fill;
          for (index_t c = 0; c < dv; ++c) r.output(b, h, i, c) = fill;
          continue;
        }
        double total = 0;
        for (index_t j = 0; j < Lk; ++j) total += std::exp(r.weights(b, h, i, j) - m);
        for (index_t j = 0; j < Lk; ++j) r.weights(b, h, i, j) = std::exp(r.weights(b, h, i, j) - m) / total;
        // O[i, c] = Σ_j P[i, j] v[j, c], summed in the order of j for every c, a row of v at a time
        double* o = &r.output(b, h, i, 0);
        std::fill(o, o + dv, 0.0);
        const index_t g = kv_head(q, v, h);
        for (index_t j = 0; j < Lk; ++j) {
          const double p = r.weights(b, h, i, j);
          const double* vj = &v(b, g, j, 0);
          for (index_t c = 0; c < dv; ++c) o[c] += p * vj[c];
        }
      }
  return r;
}

}  // namespace heed::reference
