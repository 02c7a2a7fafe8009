#pragma once
// Reductions over the spatial plane or the channels of NCHW tensors, the squeeze steps of the
// vision attention modules. Each is one pass over the input, vectorized with the simd layer.

#include <algorithm>
#include <limits>
#include <string>

#include "heed/core/error.hpp"
#include "heed/core/parallel.hpp"
#include "heed/core/tensor.hpp"

#include "heed/simd/kernel_table.hpp"

namespace heed {

/// AdaptiveAvgPool2d(1), flattened: x [B, C, H, W] → [B, C], the mean of each plane; ShapeError
/// for an empty plane, which PyTorch refuses too.
template <TensorLike X>
[[nodiscard]] Tensor<scalar_of<X>, 2> global_avg_pool(const X& x) {
  using T = scalar_of<X>;
  static_assert(rank_of<X> == 4, "global_avg_pool takes x [B, C, H, W]");
  static_assert(std::is_floating_point_v<T>, "global_avg_pool takes float or double tensors (heed::cast 16-bit ones)");
  Tensor<T, 4> storage;
  const TensorView<const T, 4> dense = contiguous(as_view(x), storage);
  const index_t B = dense.size(0), C = dense.size(1), plane = dense.size(2) * dense.size(3);
  if (plane == 0) throw ShapeError("heed::global_avg_pool: x " + to_string(dense.shape()) + " has empty planes");
  Tensor<T, 2> out({B, C}, uninitialized);
  simd::vision_kernels<T>().plane_means(dense.data(), B * C, plane, out.data(), /*last_first=*/false);
  return out;
}

/// torch.cat([x.mean(1, keepdim=True), x.amax(1, keepdim=True)], 1): x [B, C, H, W] → [B, 2, H, W];
/// a NaN in a channel is NaN in the max, as torch.amax keeps it. ShapeError for C = 0 (torch.amax
/// refuses an empty reduction).
template <TensorLike X>
[[nodiscard]] Tensor<scalar_of<X>, 4> channel_mean_max(const X& x) {
  using T = scalar_of<X>;
  static_assert(rank_of<X> == 4, "channel_mean_max takes x [B, C, H, W]");
  static_assert(std::is_floating_point_v<T>, "channel_mean_max takes float or double tensors (heed::cast 16-bit ones)");
  Tensor<T, 4> storage;
  const TensorView<const T, 4> dense = contiguous(as_view(x), storage);
  const index_t B = dense.size(0), C = dense.size(1), plane = dense.size(2) * dense.size(3);
  if (C == 0) throw ShapeError("heed::channel_mean_max: x " + to_string(dense.shape()) + " has no channels");
  Tensor<T, 4> out({B, 2, dense.size(2), dense.size(3)});
  const simd::VisionKernels<T>& kernels = simd::vision_kernels<T>();
  for (index_t b = 0; b < B; ++b)
    kernels.mean_max_over_channels(dense.data() + b * C * plane, nullptr, C, plane, out.data() + 2 * b * plane,
                                   out.data() + (2 * b + 1) * plane);
  return out;
}

}  // namespace heed
