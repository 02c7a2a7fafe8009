#pragma once
// Naive double-precision 2-D cross-correlation with zero padding, from the definition:
//   out[b, o, y, x] = bias[o] + sum_{c, ky, kx} w[o, c, ky, kx] · in[b, c, y·s + ky·d - p, x·s + kx·d - p]

#include "heed/core/tensor.hpp"

namespace heed::reference {

inline Tensor<double, 4> conv2d(const Tensor<double, 4>& in, const Tensor<double, 4>& w, const Tensor<double, 1>& bias,
                                index_t pad, index_t stride, index_t dilation = 1) {
  const index_t B = in.size(0), C = in.size(1), H = in.size(2), W = in.size(3);
  const index_t O = w.size(0), kh = w.size(2), kw = w.size(3);
  const index_t Ho = (H + 2 * pad - dilation * (kh - 1) - 1) / stride + 1;
  const index_t Wo = (W + 2 * pad - dilation * (kw - 1) - 1) / stride + 1;
  Tensor<double, 4> out({B, O, Ho, Wo});
  for (index_t b = 0; b < B; ++b)
    for (index_t o = 0; o < O; ++o)
      for (index_t y = 0; y < Ho; ++y)
        for (index_t x = 0; x < Wo; ++x) {
          double acc = bias.empty() ? 0.0 : bias(o);
          for (index_t c = 0; c < C; ++c)
            for (index_t ky = 0; ky < kh; ++ky)
              for (index_t kx = 0; kx < kw; ++kx) {
                const index_t iy = y * stride + ky * dilation - pad, ix = x * stride + kx * dilation - pad;
                if (iy >= 0 && iy < H && ix >= 0 && ix < W) acc += w(o, c, ky, kx) * in(b, c, iy, ix);
              }
          out(b, o, y, x) = acc;
        }
  return out;
}

}  // namespace heed::reference
