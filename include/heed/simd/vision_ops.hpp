#pragma once
// The passes of the vision modules over NCHW planes (SEBlock, SpatialAttention, CBAM,
// heed::conv2d, heed::global_avg_pool, heed::channel_mean_max), at the translation unit's
// level; the modules call them through simd::VisionKernels (simd/kernel_table.hpp).
//
// x may be stored in any of heed's scalar types: 16-bit values are widened as they are loaded
// (simd/convert.hpp) and every sum, max and product is in the accumulator type A, so a bfloat16
// sample is never copied to float in memory; each output is rounded once.
//
// The vision modules read a sample more than once (a squeeze pass or two, then the output),
// and a [256, 32, 32] float sample is as large as an L2 cache of 1 MB. So the squeeze passes
// alternate in direction and the output pass, which writes from the first channel to the last
// (forward streams are the prefetcher's best case), comes right after one that ran from the last
// channel to the first and left the first channels in L2: CBAM runs its means forward, then the
// reductions over channels backward, then the output (docs/decisions.md, "Attention kernel v2,
// third part", has the measurements).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <type_traits>

#include "heed/core/cast.hpp"
#include "heed/core/scalar.hpp"
#include "heed/core/shape.hpp"
#include "heed/simd/arch.hpp"
#include "heed/simd/convert.hpp"
#include "heed/simd/vector_ops.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/simd/detail/vector_loops.hpp"

namespace heed::detail::inline HEED_SIMD_LEVEL_NAMESPACE {

// width<A> values of x from p in the accumulator type A.
template <class S>
[[nodiscard]] inline simd::batch<accumulator_t<S>> load_accumulated(const S* p) noexcept {
  return simd::load_widened(p);
}

// v rounded to S into p (width<A> values; a plain store when S is the accumulator type).
template <class S>
inline void store_rounded(S* p, const simd::batch<accumulator_t<S>>& v) noexcept {
  if constexpr (std::is_same_v<S, accumulator_t<S>>)
    simd::store(p, v);
  else
    simd::store_narrowed(p, v);
}

// mean and max over the C channels of x [C, plane] (x_c · scale[c] where Scaled), in groups of
// eight channels, the last group first (see the top of this file): each vector of columns is
// summed and maxed over the group's eight rows in registers, then added into mean and max (which
// stay in L1). Eight rows read in step are eight sequential streams the prefetcher follows, where
// blocks of columns over all C channels at once would be C streams 4 KB apart, and one channel at
// a time would read and write mean and max once per channel (docs/decisions.md, "Attention
// kernel v2, third part").
template <bool Scaled, class S, class A = accumulator_t<S>>
inline void reduce_over_channels(const S* x, const A* scale, index_t C, index_t plane, A* mean, A* max) noexcept {
  constexpr index_t W = static_cast<index_t>(simd::width<A>), G = 8;
  const index_t vectors = plane / W * W;
  const auto scaled = [&](index_t c, const auto& v) noexcept {
    if constexpr (!Scaled)
      return v;
    else
      return splat(v, scale[c]) * v;
  };
  const index_t last = (C - 1) / G * G;
  for (index_t c0 = last; c0 >= 0; c0 -= G) {
    const index_t g = std::min(G, C - c0);
    const S* rows = x + c0 * plane;
    // group_rows: G as a compile-time constant for a whole group, a plain index for the last,
    // shorter one. With the count a run-time argument, gcc -O2 kept this lambda out of line and
    // reloaded its captures for every vector: a half CBAM's reductions took 1.7× their -O3 time
    // (docs/decisions.md).
    const auto group = [&](auto group_rows) noexcept {
      const index_t count = group_rows;
      for (index_t j = 0; j < vectors; j += W) {
        simd::batch<A> sum = scaled(c0, load_accumulated(rows + j)), top = sum;
        if (c0 != last) {
          top = simd::max(simd::load(max + j), sum);
          sum = simd::load(mean + j) + sum;
        }
        HEED_UNROLL(8)
        for (index_t c = 1; c < count; ++c) {
          const simd::batch<A> v = scaled(c0 + c, load_accumulated(rows + c * plane + j));
          sum = sum + v;
          top = simd::max(top, v);
        }
        simd::store(mean + j, sum);
        simd::store(max + j, top);
      }
      for (index_t j = vectors; j < plane; ++j) {  // the columns past the last whole vector
        A sum = scaled(c0, static_cast<A>(rows[j])), top = sum;
        if (c0 != last) {
          top = std::max(max[j], sum);
          sum = mean[j] + sum;
        }
        for (index_t c = 1; c < count; ++c) {
          const A v = scaled(c0 + c, static_cast<A>(rows[c * plane + j]));
          sum = sum + v;
          top = std::max(top, v);
        }
        mean[j] = sum;
        max[j] = top;
      }
    };
    if (g == G)
      group(std::integral_constant<index_t, G>{});
    else
      group(g);
  }
  // The vector max drops a NaN that is not in its running value; torch.amax keeps it. A NaN in a
  // column always reaches its sum, so the columns whose sum is NaN (a NaN, or +inf with -inf:
  // rare) get their max again by a scalar pass that keeps NaN.
  for (index_t j = 0; j < plane; ++j) {
    if (!std::isnan(mean[j])) continue;
    A top = scaled(0, static_cast<A>(x[j]));
    for (index_t c = 1; c < C && !std::isnan(top); ++c) {
      const A v = scaled(c, static_cast<A>(x[c * plane + j]));
      top = std::isnan(v) ? v : std::max(top, v);
    }
    max[j] = top;
  }
  simd::scale(A(1) / A(C), mean, plane);
}

// y[c, j] = channel[c] · x[c, j] · spatial[j], without a factor where its pointer is null.
template <bool Channel, bool Spatial, class S, class A = accumulator_t<S>>
inline void gate_planes(const S* x, S* y, index_t C, index_t plane, const A* channel, const A* spatial) noexcept {
  constexpr index_t W = static_cast<index_t>(simd::width<A>);
  const auto gated = [&](index_t c, const auto& v, index_t j) noexcept {
    if constexpr (Channel && Spatial)
      return splat(v, channel[c]) * v * simd::load(spatial + j);
    else if constexpr (Channel)
      return splat(v, channel[c]) * v;
    else if constexpr (Spatial)
      return v * simd::load(spatial + j);
    else
      return v;
  };
  for (index_t c = 0; c < C; ++c) {
    const S* xc = x + c * plane;
    S* yc = y + c * plane;
    index_t j = 0;
    for (; j + W <= plane; j += W) store_rounded(yc + j, gated(c, load_accumulated(xc + j), j));
    for (; j < plane; ++j) {
      A v = static_cast<A>(xc[j]);
      if constexpr (Channel) v = channel[c] * v;
      if constexpr (Spatial) v = v * spatial[j];
      yc[j] = heed::convert<S>(v);
    }
  }
}

}  // namespace heed::detail::inline HEED_SIMD_LEVEL_NAMESPACE

namespace heed::simd::inline HEED_SIMD_LEVEL_NAMESPACE {

/// means[i] = the mean of the i-th of `planes` contiguous planes of `plane` values (0 if empty),
/// from the first plane to the last, or from the last to the first with `last_first`.
template <class S>
inline void plane_means(const S* x, index_t planes, index_t plane, accumulator_t<S>* means, bool last_first) noexcept {
  using A = accumulator_t<S>;
  const auto mean = [&](index_t i) noexcept {
    means[i] = plane > 0 ? simd::sum(x + i * plane, plane) / A(plane) : A(0);
  };
  if (last_first)
    for (index_t i = planes - 1; i >= 0; --i) mean(i);
  else
    for (index_t i = 0; i < planes; ++i) mean(i);
}

/// mean[j] and max[j] over the C >= 1 channels of one sample x [C, plane], contiguous, of
/// x_c · scale[c] where scale is not null (CBAM's spatial attention sees the channel-attended
/// tensor without it being written out); a NaN in a column is NaN in its max, as torch.amax.
template <class S>
inline void mean_max_over_channels(const S* x, const accumulator_t<S>* scale, index_t C, index_t plane,
                                   accumulator_t<S>* mean, accumulator_t<S>* max) noexcept {
  if (scale)
    detail::reduce_over_channels<true>(x, scale, C, plane, mean, max);
  else
    detail::reduce_over_channels<false>(x, scale, C, plane, mean, max);
}

/// y[c, j] = channel[c] · x[c, j] · spatial[j] for one sample x [C, plane] (the output of SE,
/// spatial attention and CBAM), in that order, each in the accumulator type and rounded once;
/// channel [C] and spatial [plane] may be null (no factor). y may be x.
template <class S>
inline void gate_planes(const S* x, S* y, index_t C, index_t plane, const accumulator_t<S>* channel,
                        const accumulator_t<S>* spatial) noexcept {
  if (channel && spatial)
    detail::gate_planes<true, true>(x, y, C, plane, channel, spatial);
  else if (channel)
    detail::gate_planes<true, false>(x, y, C, plane, channel, spatial);
  else if (spatial)
    detail::gate_planes<false, true>(x, y, C, plane, channel, spatial);
  else
    detail::gate_planes<false, false>(x, y, C, plane, channel, spatial);
}

/// Output rows and columns of conv2d_plane's step: the zero-padded planes it reads hold whole
/// steps (see there).
template <class T>
inline constexpr index_t conv_rows = 4;
template <class T>
inline constexpr index_t conv_columns = static_cast<index_t>(width<T>);

/// One output plane of a stride-1 convolution, out [Ho, Wo] = bias + Σ_ci,ky,kx w[ci, ky, kx] ·
/// padded[ci, oy + ky, ox + kx], from the input planes copied into zero-padded scratch
/// padded [Cin, Hp, Wp] with Wp >= ceil(Wo / conv_columns) · conv_columns + kw - 1 and
/// Hp >= Ho + kh - 1 + conv_rows: conv_rows output rows × one vector of columns are accumulated
/// in registers over all Cin · kh · kw taps, one broadcast weight, conv_rows unaligned loads and
/// conv_rows FMAs per tap, no bounds tests and no scalar tails. (Row-by-row axpys spent most of a
/// 32 × 32 CBAM map's time in tails and call overhead.)
template <class T>
inline void conv2d_plane(const T* padded, index_t Hp, index_t Wp, const T* w, T bias, index_t Cin, index_t kh,
                         index_t kw, T* out, index_t Ho, index_t Wo) noexcept {
  constexpr index_t V = conv_columns<T>, R = conv_rows<T>;
  const index_t chunks = (Wo + V - 1) / V;
  for (index_t oy = 0; oy < Ho; oy += R)
    for (index_t c = 0; c < chunks; ++c) {
      const index_t x0 = c * V;
      // The loops over the R accumulators are unrolled by hand (R = 4), and the one that stores
      // them has no early exit: at -O2 gcc kept them on the stack otherwise, and CBAM's 7 × 7
      // map took 3× as long (docs/decisions.md).
      batch<T> acc[static_cast<std::size_t>(R)];
      HEED_UNROLL(4)
      for (index_t r = 0; r < R; ++r) acc[r] = broadcast(bias);
      for (index_t ci = 0; ci < Cin; ++ci)
        for (index_t ky = 0; ky < kh; ++ky) {
          const T* row = padded + (ci * Hp + oy + ky) * Wp + x0;
          const T* taps = w + (ci * kh + ky) * kw;
          for (index_t kx = 0; kx < kw; ++kx) {
            const batch<T> wv = broadcast(taps[kx]);
            HEED_UNROLL(4)
            for (index_t r = 0; r < R; ++r) acc[r] = fma(wv, load(row + r * Wp + kx), acc[r]);
          }
        }
      HEED_UNROLL(4)
      for (index_t r = 0; r < R; ++r) {
        if (oy + r >= Ho) continue;
        T* dst = out + (oy + r) * Wo + x0;
        if (x0 + V <= Wo) {
          store(dst, acc[r]);
        } else {
          alignas(64) T tail[static_cast<std::size_t>(V)];
          store(tail, acc[r]);
          for (index_t i = 0; i < Wo - x0; ++i) dst[i] = tail[i];
        }
      }
    }
}

}  // namespace heed::simd::inline HEED_SIMD_LEVEL_NAMESPACE
