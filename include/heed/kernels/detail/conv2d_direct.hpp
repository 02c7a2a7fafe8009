#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <algorithm>

#include "heed/core/parallel.hpp"
#include "heed/core/tensor.hpp"
#include "heed/simd/vector_ops.hpp"

namespace heed::detail {

// out [B, Cout, Ho, Wo] = conv(x [B, Cin, H, W], w [Cout, Cin, kh, kw]) + bias; shapes validated
// by the caller; x and w contiguous; bias empty or [Cout].
template <class T>
void conv2d_direct(const TensorView<const T, 4>& x, const TensorView<const T, 4>& w, const TensorView<const T, 1>& bias,
                   const TensorView<T, 4>& out, index_t pad, index_t stride, int threads) {
  const index_t B = x.size(0), Cin = x.size(1), H = x.size(2), W = x.size(3);
  const index_t Cout = w.size(0), kh = w.size(2), kw = w.size(3);
  const index_t Ho = out.size(2), Wo = out.size(3);
  parallel_for(B * Cout, threads, [&](index_t task, int) {
    const index_t b = task / Cout, co = task % Cout;
    T* o = &out(b, co, 0, 0);
    std::fill(o, o + Ho * Wo, bias.empty() ? T(0) : bias(co));
    for (index_t ci = 0; ci < Cin; ++ci) {
      const T* in = &x(b, ci, 0, 0);
      for (index_t ky = 0; ky < kh; ++ky)
        for (index_t kx = 0; kx < kw; ++kx) {
          const T weight = w(co, ci, ky, kx);
          // output columns whose input column ox·stride + kx - pad lies inside [0, W)
          const index_t ox_lo = std::max<index_t>(0, (pad - kx + stride - 1) / stride);
          const index_t ox_hi = std::min<index_t>(Wo, (W - 1 + pad - kx) / stride + 1);
          if (ox_hi <= ox_lo) continue;
          for (index_t oy = 0; oy < Ho; ++oy) {
            const index_t iy = oy * stride + ky - pad;
            if (iy < 0 || iy >= H) continue;
            const T* src = in + iy * W + ox_lo * stride + kx - pad;
            T* dst = o + oy * Wo + ox_lo;
            if (stride == 1) {
              simd::axpy(weight, src, dst, ox_hi - ox_lo);
            } else {
              for (index_t ox = 0; ox < ox_hi - ox_lo; ++ox) dst[ox] += weight * src[ox * stride];
            }
          }
        }
    }
  });
}

}  // namespace heed::detail
