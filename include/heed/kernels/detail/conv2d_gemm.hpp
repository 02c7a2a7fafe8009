#pragma once
#include "heed/core/detail/internal_header_check.hpp"
// heed::conv2d as GEMMs, for strides and dilations other than 1 (a Vision Transformer's patch embedding is a
// convolution with kernel = stride = patch): out[b] [Cout, Ho·Wo] = w [Cout, K] · cols [K, n],
// K = Cin·kh·kw, where cols holds the receptive fields of a chunk of n output pixels (im2col,
// row (ci, ky, kx) of it the input values under that weight), packed for gemm_nt; the bias is
// added in the GEMM's epilogue.

#include <algorithm>
#include <cstddef>
#include <vector>

#include "heed/core/parallel.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/gemm.hpp"

namespace heed::detail {

// Output pixels per GEMM: cols [K, chunk] stays near 2^20 values (4 MiB of float).
inline constexpr index_t conv2d_cols_values = index_t{1} << 20;

// cols [K, n] for output pixels [p0, p0 + n) of sample b: cols[(ci·kh + ky)·kw + kx, j] =
// x[b, ci, oy·stride + ky·dilation - pad, ox·stride + kx·dilation - pad] (0 outside the plane), pixel p0 + j =
// oy·Wo + ox.
template <class T>
void im2col(const TensorView<const T, 4>& x, index_t b, index_t kh, index_t kw, index_t pad, index_t stride,
            index_t dilation, index_t Wo, index_t p0, index_t n, T* cols) {
  const index_t C = x.size(1), H = x.size(2), W = x.size(3);
  const T* sample = x.data() + b * C * H * W;
  for (index_t ci = 0; ci < C; ++ci)
    for (index_t ky = 0; ky < kh; ++ky)
      for (index_t kx = 0; kx < kw; ++kx) {
        T* dst = cols + ((ci * kh + ky) * kw + kx) * n;
        const T* plane = sample + ci * H * W;
        index_t oy = p0 / Wo, ox = p0 % Wo;
        for (index_t j = 0; j < n;) {
          // the rest of output row oy, or of the chunk
          const index_t run = std::min(n - j, Wo - ox);
          const index_t iy = oy * stride + ky * dilation - pad;
          if (iy < 0 || iy >= H) {
            std::fill_n(dst + j, run, T(0));
          } else {
            const T* row = plane + iy * W;
            for (index_t t = 0; t < run; ++t) {
              const index_t ix = (ox + t) * stride + kx * dilation - pad;
              dst[j + t] = ix >= 0 && ix < W ? row[ix] : T(0);
            }
          }
          j += run;
          ox = 0;
          ++oy;
        }
      }
}

// out [B, Cout, Ho, Wo] = conv(x [B, Cin, H, W], w [Cout, Cin, kh, kw]) + bias; shapes validated
// by the caller; x, w and out contiguous; bias empty or [Cout]. Tasks of (sample, chunk of output
// pixels) spread over the workers where there are enough of them; otherwise each GEMM runs on
// all the workers.
template <class T>
void conv2d_gemm(const TensorView<const T, 4>& x, const TensorView<const T, 4>& w, const TensorView<const T, 1>& bias,
                 const TensorView<T, 4>& out, index_t pad, index_t stride, index_t dilation, int threads_asked) {
  const index_t B = x.size(0), Cout = w.size(0), kh = w.size(2), kw = w.size(3), K = w.size(1) * kh * kw;
  const index_t Wo = out.size(3), N = out.size(2) * Wo;
  const index_t chunk = std::min(N, std::max<index_t>(16, conv2d_cols_values / std::max<index_t>(K, 1) / 16 * 16));
  const index_t chunks = (N + chunk - 1) / chunk, tasks = B * chunks;
  const int threads = threads_asked > 0 ? threads_asked : num_threads();
  const auto task = [&](index_t t, int gemm_threads) {
    const index_t b = t / chunks, p0 = (t % chunks) * chunk, n = std::min(chunk, N - p0);
    thread_local std::vector<T> cols;
    cols.resize(static_cast<std::size_t>(K * n));
    im2col(x, b, kh, kw, pad, stride, dilation, Wo, p0, n, cols.data());
    const PackedMatrix<T> packed(cols.data(), n, K, 1, n);  // W = colsᵀ [n, K]
    T* c = out.data() + b * Cout * N + p0;
    const GemmOptions<T> options{.threads = gemm_threads};
    if (bias.empty())
      gemm_nt(w.data(), K, Cout, packed, c, N, options);
    else
      gemm_nt(w.data(), K, Cout, packed, c, N, options, [&](T* row, index_t i, index_t, index_t count) {
        const T value = bias(i);
        for (index_t j = 0; j < count; ++j) row[j] += value;
      });
  };
  if (tasks >= threads)
    parallel_for(tasks, threads, [&](index_t t, int) { task(t, 1); });
  else
    for (index_t t = 0; t < tasks; ++t) task(t, threads);
}

}  // namespace heed::detail
