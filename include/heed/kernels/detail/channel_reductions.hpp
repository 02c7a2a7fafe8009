#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <algorithm>

#include "heed/core/shape.hpp"
#include "heed/simd/vector_ops.hpp"

// The squeeze steps of the vision attention modules, on raw contiguous planes: one pass over
// the input each, vectorized with the simd layer.
namespace heed::detail {

// means[i] = the mean of the i-th of `planes` contiguous planes of `plane` elements (0 if empty).
template <class T>
void plane_means(const T* x, index_t planes, index_t plane, T* means) noexcept {
  for (index_t i = 0; i < planes; ++i) means[i] = plane > 0 ? simd::sum(x + i * plane, plane) / T(plane) : T(0);
}

// out [2, H·W] = (mean over channels, max over channels) of one sample x [C, H·W], contiguous.
template <class T>
void mean_max_over_channels(const T* x, index_t C, index_t plane, T* mean, T* max) noexcept {
  std::copy(x, x + plane, mean);
  std::copy(x, x + plane, max);
  for (index_t c = 1; c < C; ++c) simd::scaled_sum_max(T(1), x + c * plane, mean, max, plane);
  simd::scale(T(1) / T(C), mean, plane);
}

// The same for the channels scaled first, x_c · scale[c], without materializing them:
// CBAM's spatial attention sees the channel-attended tensor. Blocks of four vectors of columns
// stay in registers over all C channels, so x is read once and mean and max written once (one
// channel at a time read and wrote both per channel: a third of CBAM's time); the columns past
// the last block go channel by channel. The arithmetic is the same either way.
template <class T>
void scaled_mean_max_over_channels(const T* x, const T* scale, index_t C, index_t plane, T* mean, T* max) noexcept {
  constexpr index_t W = static_cast<index_t>(simd::width<T>), U = 4;
  const T inv = T(1) / T(C);
  index_t j = 0;
  for (; j + U * W <= plane; j += U * W) {
    simd::batch<T> sum[U], top[U];
    const simd::batch<T> s0 = simd::broadcast(scale[0]);
    for (index_t u = 0; u < U; ++u) sum[u] = top[u] = simd::load(x + j + u * W) * s0;
    for (index_t c = 1; c < C; ++c) {
      const simd::batch<T> sc = simd::broadcast(scale[c]);
      const T* row = x + c * plane + j;
      for (index_t u = 0; u < U; ++u) {
        const simd::batch<T> v = sc * simd::load(row + u * W);
        sum[u] = sum[u] + v;
        top[u] = simd::max(top[u], v);
      }
    }
    const simd::batch<T> vinv = simd::broadcast(inv);
    for (index_t u = 0; u < U; ++u) {
      simd::store(mean + j + u * W, sum[u] * vinv);
      simd::store(max + j + u * W, top[u]);
    }
  }
  const index_t rest = plane - j;
  if (rest == 0) return;
  simd::scale_into(scale[0], x + j, mean + j, rest);
  std::copy(mean + j, mean + plane, max + j);
  for (index_t c = 1; c < C; ++c) simd::scaled_sum_max(scale[c], x + c * plane + j, mean + j, max + j, rest);
  simd::scale(inv, mean + j, rest);
}

}  // namespace heed::detail
