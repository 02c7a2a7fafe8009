#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "heed/core/cast.hpp"
#include "heed/core/scalar.hpp"
#include "heed/core/shape.hpp"
#include "heed/simd/arch.hpp"
#include "heed/simd/convert.hpp"
#include "heed/simd/vector_ops.hpp"

// The squeeze steps of the vision attention modules, on raw contiguous planes: one pass over
// the input each, vectorized with the simd layer. x may be stored in any of heed's scalar types:
// 16-bit values are widened as they are loaded (simd/convert.hpp) and every sum, max and product
// is in the accumulator type A, so a bfloat16 sample is never copied to float in memory.
namespace heed::detail {

// width<A> values of x from p in the accumulator type, and the same for one value.
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

// y[i] = f(x[i], i) for i < n, f callable on (batch of A, index of its first lane) and on (A,
// index), x read and y written in the storage type S (each output rounded once).
template <class S, class F>
inline void map_row(const S* x, S* y, index_t n, F f) noexcept {
  using A = accumulator_t<S>;
  constexpr index_t W = static_cast<index_t>(simd::width<A>);
  index_t i = 0;
  for (; i + W <= n; i += W) store_rounded(y + i, f(load_accumulated(x + i), i));
  for (; i < n; ++i) y[i] = heed::convert<S>(f(static_cast<A>(x[i]), i));
}

// The values at p + i in the form of v: a batch loaded from there for a batch, p[i] for a scalar
// (map_row's f reads a second row with it).
template <class V, class A>
[[nodiscard]] inline V same_form(const V&, const A* p, index_t i) noexcept {
  if constexpr (std::is_arithmetic_v<V>)
    return p[i];
  else
    return simd::load(p + i);
}

// The vision modules read a sample more than once (a squeeze pass or two, then the output),
// and a [256, 32, 32] float sample is as large as this machine's L2. So the squeeze passes
// alternate in direction and the output pass, which writes from the first channel to the last
// (forward streams are the prefetcher's best case), comes right after one that ran from the last
// channel to the first and left the first channels in L2: CBAM runs its means forward, then the
// reductions over channels backward, then the output (docs/decisions.md, "Attention kernel v2,
// third part", has the measurements).

// means[i] = the mean of the i-th of `planes` contiguous planes of `plane` elements (0 if empty),
// from the first plane to the last, or from the last to the first with `last_first`.
template <class S>
void plane_means(const S* x, index_t planes, index_t plane, accumulator_t<S>* means, bool last_first = false) noexcept {
  using A = accumulator_t<S>;
  const auto mean = [&](index_t i) { means[i] = plane > 0 ? simd::sum(x + i * plane, plane) / A(plane) : A(0); };
  if (last_first)
    for (index_t i = planes - 1; i >= 0; --i) mean(i);
  else
    for (index_t i = 0; i < planes; ++i) mean(i);
}

// mean and max over the C channels of one sample x [C, H·W], contiguous, of x_c · scale[c]
// (x_c without Scaled), without materializing the scaled channels: CBAM's spatial attention
// sees the channel-attended tensor. Channels go in groups of eight, the last group first (see
// above): each vector of columns is summed and maxed over the group's eight rows in registers,
// then added into mean and max (which stay in L1). Eight rows read in step are eight sequential
// streams the prefetcher follows, where blocks of columns over all C channels at once would be C
// streams 4 KB apart, and one channel at a time would read and write mean and max once per
// channel (docs/decisions.md, "Attention kernel v2, third part").
template <bool Scaled, class S, class A = accumulator_t<S>>
void reduce_over_channels(const S* x, const A* scale, index_t C, index_t plane, A* mean, A* max) noexcept {
  constexpr index_t W = static_cast<index_t>(simd::width<A>), G = 8;
  const index_t vectors = plane / W * W;
  const auto scaled = [&](index_t c, const auto& v) {
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
    const auto group = [&](auto group_rows) {
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

// out [2, H·W] = (mean over channels, max over channels) of one sample x [C, H·W], contiguous.
template <class S>
void mean_max_over_channels(const S* x, index_t C, index_t plane, accumulator_t<S>* mean,
                            accumulator_t<S>* max) noexcept {
  reduce_over_channels<false>(x, static_cast<const accumulator_t<S>*>(nullptr), C, plane, mean, max);
}

// The same of the channels scaled first, x_c · scale[c].
template <class S>
void scaled_mean_max_over_channels(const S* x, const accumulator_t<S>* scale, index_t C, index_t plane,
                                   accumulator_t<S>* mean, accumulator_t<S>* max) noexcept {
  reduce_over_channels<true>(x, scale, C, plane, mean, max);
}

}  // namespace heed::detail
