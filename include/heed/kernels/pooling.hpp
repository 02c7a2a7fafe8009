#pragma once
// Reductions over the spatial plane or the channels of NCHW tensors, the squeeze steps of the
// vision attention modules. Each is one pass over the input, vectorized with the simd layer.

#include <algorithm>
#include <limits>

#include "heed/core/parallel.hpp"
#include "heed/core/tensor.hpp"
#include "heed/simd/vector_ops.hpp"

namespace heed {

namespace kernels {

/// means[i] = the mean of the i-th of `planes` contiguous planes of `plane` elements (0 if empty).
template <class T>
void plane_means(const T* x, index_t planes, index_t plane, T* means) noexcept {
  for (index_t i = 0; i < planes; ++i) means[i] = plane > 0 ? simd::sum(x + i * plane, plane) / T(plane) : T(0);
}

}  // namespace kernels

/// AdaptiveAvgPool2d(1), flattened: x [B, C, H, W] → [B, C], the mean of each plane.
template <TensorLike X>
[[nodiscard]] Tensor<scalar_of<X>, 2> global_avg_pool(const X& x) {
  using T = scalar_of<X>;
  static_assert(rank_of<X> == 4, "global_avg_pool takes x [B, C, H, W]");
  Tensor<T, 4> storage;
  const TensorView<const T, 4> dense = contiguous(as_view(x), storage);
  const index_t B = dense.size(0), C = dense.size(1), plane = dense.size(2) * dense.size(3);
  Tensor<T, 2> out({B, C}, uninitialized);
  kernels::plane_means(dense.data(), B * C, plane, out.data());
  return out;
}

namespace kernels {

/// out [2, H·W] = (mean over channels, max over channels) of one sample x [C, H·W], contiguous.
template <class T>
void channel_mean_max(const T* x, index_t C, index_t plane, T* mean, T* max) noexcept {
  std::copy(x, x + plane, mean);
  std::copy(x, x + plane, max);
  for (index_t c = 1; c < C; ++c) simd::scaled_sum_max(T(1), x + c * plane, mean, max, plane);
  simd::scale(T(1) / T(C), mean, plane);
}

/// The same for the channels scaled first, x_c · scale[c], without materializing them:
/// CBAM's spatial attention sees the channel-attended tensor.
template <class T>
void scaled_channel_mean_max(const T* x, const T* scale, index_t C, index_t plane, T* mean, T* max) noexcept {
  simd::scale_into(scale[0], x, mean, plane);
  std::copy(mean, mean + plane, max);
  for (index_t c = 1; c < C; ++c) simd::scaled_sum_max(scale[c], x + c * plane, mean, max, plane);
  simd::scale(T(1) / T(C), mean, plane);
}

}  // namespace kernels

/// torch.cat([x.mean(1, keepdim=True), x.amax(1, keepdim=True)], 1): x [B, C, H, W] → [B, 2, H, W].
template <TensorLike X>
[[nodiscard]] Tensor<scalar_of<X>, 4> channel_mean_max(const X& x) {
  using T = scalar_of<X>;
  static_assert(rank_of<X> == 4, "channel_mean_max takes x [B, C, H, W]");
  Tensor<T, 4> storage;
  const TensorView<const T, 4> dense = contiguous(as_view(x), storage);
  const index_t B = dense.size(0), C = dense.size(1), plane = dense.size(2) * dense.size(3);
  Tensor<T, 4> out({B, 2, dense.size(2), dense.size(3)});
  if (C == 0) return out;
  for (index_t b = 0; b < B; ++b)
    kernels::channel_mean_max(dense.data() + b * C * plane, C, plane, out.data() + 2 * b * plane,
                              out.data() + (2 * b + 1) * plane);
  return out;
}

}  // namespace heed
