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
// CBAM's spatial attention sees the channel-attended tensor.
template <class T>
void scaled_mean_max_over_channels(const T* x, const T* scale, index_t C, index_t plane, T* mean, T* max) noexcept {
  simd::scale_into(scale[0], x, mean, plane);
  std::copy(mean, mean + plane, max);
  for (index_t c = 1; c < C; ++c) simd::scaled_sum_max(scale[c], x + c * plane, mean, max, plane);
  simd::scale(T(1) / T(C), mean, plane);
}

}  // namespace heed::detail
