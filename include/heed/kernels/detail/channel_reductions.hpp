#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <algorithm>

#include "heed/core/shape.hpp"
#include "heed/simd/vector_ops.hpp"

// The squeeze steps of the vision attention modules, on raw contiguous planes: one pass over
// the input each, vectorized with the simd layer.
namespace heed::detail {

// The vision modules read a sample more than once (a squeeze pass or two, then the output),
// and a [256, 32, 32] float sample is as large as this machine's L2. So the squeeze passes
// alternate in direction and the output pass, which writes from the first channel to the last
// (forward streams are the prefetcher's best case: a backward output pass ran 7% slower), comes
// right after one that ran from the last channel to the first and left the first channels in L2:
// CBAM (means forward, then the reductions over channels backward, then the output) went from
// 207 to 170 µs on one core for [4, 256, 32, 32].

// means[i] = the mean of the i-th of `planes` contiguous planes of `plane` elements (0 if empty),
// from the first plane to the last, or from the last to the first with `last_first`.
template <class T>
void plane_means(const T* x, index_t planes, index_t plane, T* means, bool last_first = false) noexcept {
  const auto mean = [&](index_t i) { means[i] = plane > 0 ? simd::sum(x + i * plane, plane) / T(plane) : T(0); };
  if (last_first)
    for (index_t i = planes - 1; i >= 0; --i) mean(i);
  else
    for (index_t i = 0; i < planes; ++i) mean(i);
}

// mean and max over the C channels of one sample x [C, H·W], contiguous, of x_c · scale[c]
// (x_c when scale is null), without materializing the scaled channels: CBAM's spatial attention
// sees the channel-attended tensor. Channels go in groups of eight, the last group first (see
// above): each vector of columns is summed and maxed over the group's eight rows in registers,
// then added into mean and max (which stay in L1). Eight rows read in step are eight sequential
// streams the prefetcher follows; blocks of columns over all C channels at once (C streams, 4 KB
// apart) ran a third slower, and one channel at a time reads and writes mean and max once per
// channel.
template <class T>
void reduce_over_channels(const T* x, const T* scale, index_t C, index_t plane, T* mean, T* max) noexcept {
  constexpr index_t W = static_cast<index_t>(simd::width<T>), G = 8;
  const index_t vectors = plane / W * W;
  const auto scaled = [&](index_t c, const simd::batch<T>& v) { return scale ? simd::broadcast(scale[c]) * v : v; };
  const index_t last = (C - 1) / G * G;
  for (index_t c0 = last; c0 >= 0; c0 -= G) {
    const index_t g = std::min(G, C - c0);
    const T* rows = x + c0 * plane;
    const auto group = [&](index_t count) {
      for (index_t j = 0; j < vectors; j += W) {
        simd::batch<T> sum = scaled(c0, simd::load(rows + j)), top = sum;
        if (c0 != last) {
          top = simd::max(simd::load(max + j), sum);
          sum = simd::load(mean + j) + sum;
        }
        for (index_t c = 1; c < count; ++c) {
          const simd::batch<T> v = scaled(c0 + c, simd::load(rows + c * plane + j));
          sum = sum + v;
          top = simd::max(top, v);
        }
        simd::store(mean + j, sum);
        simd::store(max + j, top);
      }
    };
    if (g == G)
      group(G);  // the count known at compile time: the loop over the group unrolls
    else
      group(g);
  }
  const T inv = T(1) / T(C);
  simd::scale(inv, mean, vectors);
  const index_t rest = plane - vectors;
  if (rest == 0) return;
  simd::scale_into(scale ? scale[0] : T(1), x + vectors, mean + vectors, rest);
  std::copy(mean + vectors, mean + plane, max + vectors);
  for (index_t c = 1; c < C; ++c)
    simd::scaled_sum_max(scale ? scale[c] : T(1), x + c * plane + vectors, mean + vectors, max + vectors, rest);
  simd::scale(inv, mean + vectors, rest);
}

// out [2, H·W] = (mean over channels, max over channels) of one sample x [C, H·W], contiguous.
template <class T>
void mean_max_over_channels(const T* x, index_t C, index_t plane, T* mean, T* max) noexcept {
  reduce_over_channels(x, static_cast<const T*>(nullptr), C, plane, mean, max);
}

// The same of the channels scaled first, x_c · scale[c].
template <class T>
void scaled_mean_max_over_channels(const T* x, const T* scale, index_t C, index_t plane, T* mean, T* max) noexcept {
  reduce_over_channels(x, scale, C, plane, mean, max);
}

}  // namespace heed::detail
