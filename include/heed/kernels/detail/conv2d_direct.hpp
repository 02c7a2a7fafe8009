#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "heed/core/parallel.hpp"
#include "heed/core/tensor.hpp"
#include "heed/simd/kernel_table.hpp"

namespace heed::detail {

// Stride 1: each task copies its sample's input planes once into a zero-padded scratch of whole
// steps of the level's plane kernel (simd::conv2d_plane, through the kernel table), which then
// accumulates every output of the plane in registers.
template <class T>
void conv2d_stride1(const TensorView<const T, 4>& x, const TensorView<const T, 4>& w,
                    const TensorView<const T, 1>& bias, const TensorView<T, 4>& out, index_t pad, int threads) {
  const simd::VisionKernels<T>& kernels = simd::vision_kernels<T>();
  const index_t V = kernels.conv_columns, R = kernels.conv_rows;
  const index_t B = x.size(0), Cin = x.size(1), H = x.size(2), W = x.size(3);
  const index_t Cout = w.size(0), kh = w.size(2), kw = w.size(3);
  const index_t Ho = out.size(2), Wo = out.size(3);
  const index_t Wp = (Wo + V - 1) / V * V + kw - 1;
  const index_t Hp = Ho + kh - 1 + R;  // the last row block may read R - 1 rows past the map
  parallel_for(B * Cout, threads, [&](index_t task, int) {
    const index_t b = task / Cout, co = task % Cout;
    thread_local std::vector<T> padded;
    padded.assign(static_cast<std::size_t>(Cin * Hp * Wp), T(0));
    // input (iy, ix) lands at padded (iy + pad, ix + pad); Wp >= Wo + kw - 1 = W + 2·pad
    for (index_t ci = 0; ci < Cin; ++ci)
      for (index_t iy = 0; iy < H; ++iy)
        std::copy(&x(b, ci, iy, 0), &x(b, ci, iy, 0) + W, padded.data() + (ci * Hp + iy + pad) * Wp + pad);
    // w is contiguous and may have no input channels: its co-th filter by offset, not &w(co, 0, 0, 0)
    kernels.conv2d_plane(padded.data(), Hp, Wp, w.data() + co * Cin * kh * kw, bias.empty() ? T(0) : bias(co), Cin, kh,
                         kw, &out(b, co, 0, 0), Ho, Wo);
  });
}

// out [B, Cout, Ho, Wo] = conv(x [B, Cin, H, W], w [Cout, Cin, kh, kw]) + bias; shapes validated
// by the caller; x and w contiguous; bias empty or [Cout]. A stride above 1 runs a plain strided
// loop.
template <class T>
void conv2d_direct(const TensorView<const T, 4>& x, const TensorView<const T, 4>& w, const TensorView<const T, 1>& bias,
                   const TensorView<T, 4>& out, index_t pad, index_t stride, int threads) {
  const index_t B = x.size(0), Cin = x.size(1), H = x.size(2), W = x.size(3);
  const index_t Cout = w.size(0), kh = w.size(2), kw = w.size(3);
  const index_t Ho = out.size(2), Wo = out.size(3);
  if (stride == 1) return conv2d_stride1(x, w, bias, out, pad, threads);
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
          // (floor division: a kernel column right of every input column reads none, where C++'s
          // division would round its negative reach up to column 0; found by tests/fuzz/fuzz_modules)
          const index_t reach = W - 1 + pad - kx;
          const index_t ox_hi = reach < 0 ? 0 : std::min<index_t>(Wo, reach / stride + 1);
          if (ox_hi <= ox_lo) continue;
          for (index_t oy = 0; oy < Ho; ++oy) {
            const index_t iy = oy * stride + ky - pad;
            if (iy < 0 || iy >= H) continue;
            const T* src = in + iy * W + ox_lo * stride + kx - pad;
            T* dst = o + oy * Wo + ox_lo;
            for (index_t ox = 0; ox < ox_hi - ox_lo; ++ox) dst[ox] += weight * src[ox * stride];
          }
        }
    }
  });
}

}  // namespace heed::detail
