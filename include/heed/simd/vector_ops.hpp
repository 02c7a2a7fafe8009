#pragma once
// Vector primitives on contiguous arrays: full batches, then a scalar tail. Every function
// has one body; with the scalar fallback (batch<T> == T) the batch loop is the whole loop.
// Accuracy of the transcendental ones is xsimd's (tests/simd measure it against double
// precision and state the bound), and the scalar tail uses <cmath>.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <type_traits>

#include "heed/core/shape.hpp"
#include "heed/core/scalar.hpp"
#include "heed/simd/arch.hpp"
#include "heed/simd/convert.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/simd/detail/vector_loops.hpp"

namespace heed::simd::inline HEED_SIMD_LEVEL_NAMESPACE {

/// sum_i x[i] y[i]
template <class T>
[[nodiscard]] inline T dot(const T* x, const T* y, index_t n) noexcept {
  using detail::full_batches;
  using detail::lanes;
  index_t i = 0;
  T result = T(0);
  if (n >= lanes<T>) {
    // Four independent accumulators hide the FMA latency (4 cycles on current x86).
    auto acc0 = simd::broadcast(T(0)), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    for (; i < n / (4 * lanes<T>)*(4 * lanes<T>); i += 4 * lanes<T>) {
      acc0 = simd::fma(simd::load(x + i), simd::load(y + i), acc0);
      acc1 = simd::fma(simd::load(x + i + lanes<T>), simd::load(y + i + lanes<T>), acc1);
      acc2 = simd::fma(simd::load(x + i + 2 * lanes<T>), simd::load(y + i + 2 * lanes<T>), acc2);
      acc3 = simd::fma(simd::load(x + i + 3 * lanes<T>), simd::load(y + i + 3 * lanes<T>), acc3);
    }
    for (; i < full_batches<T>(n); i += lanes<T>) acc0 = simd::fma(simd::load(x + i), simd::load(y + i), acc0);
    result = simd::reduce_add((acc0 + acc1) + (acc2 + acc3));
  }
  for (; i < n; ++i) result += x[i] * y[i];
  return result;
}

/// sum_i x[i] y[i] in the accumulator type, for any storage type (16-bit values are widened
/// as they are read; for float and double this is dot()).
template <class Storage>
[[nodiscard]] inline accumulator_t<Storage> dot_widened(const Storage* x, const Storage* y, index_t n) noexcept {
  using A = accumulator_t<Storage>;
  if constexpr (std::is_same_v<A, Storage>) {
    return dot(x, y, n);
  } else {
    constexpr index_t W = static_cast<index_t>(width<A>);
    index_t i = 0;
    A result = A(0);
    if (n >= W) {
      auto acc0 = simd::broadcast(A(0)), acc1 = acc0;
      for (; i + 2 * W <= n; i += 2 * W) {
        acc0 = simd::fma(load_widened(x + i), load_widened(y + i), acc0);
        acc1 = simd::fma(load_widened(x + i + W), load_widened(y + i + W), acc1);
      }
      for (; i + W <= n; i += W) acc0 = simd::fma(load_widened(x + i), load_widened(y + i), acc0);
      result = simd::reduce_add(acc0 + acc1);
    }
    for (; i < n; ++i) result += static_cast<A>(x[i]) * static_cast<A>(y[i]);
    return result;
  }
}

/// sum_i v[i] tanh(a[i] + b[i]): the additive (Bahdanau) score of one query-key pair whose
/// projections are a and b.
template <class T>
[[nodiscard]] inline T tanh_dot(const T* a, const T* b, const T* v, index_t n) noexcept {
  using detail::full_batches;
  using detail::lanes;
  index_t i = 0;
  T result = T(0);
  if (n >= lanes<T>) {
    auto acc = simd::broadcast(T(0));
    for (; i < full_batches<T>(n); i += lanes<T>)
      acc = simd::fma(simd::load(v + i), simd::tanh(simd::load(a + i) + simd::load(b + i)), acc);
    result = simd::reduce_add(acc);
  }
  for (; i < n; ++i) result += v[i] * std::tanh(a[i] + b[i]);
  return result;
}

/// y[i] += a x[i]
template <class T>
inline void axpy(T a, const T* x, T* y, index_t n) noexcept {
  using detail::full_batches;
  using detail::lanes;
  index_t i = 0;
  const auto va = simd::broadcast(a);
  for (; i < full_batches<T>(n); i += lanes<T>) simd::store(y + i, simd::fma(va, simd::load(x + i), simd::load(y + i)));
  for (; i < n; ++i) y[i] += a * x[i];
}

/// x[i] = value (a masked run of a score row: std::fill of a float is a scalar loop at -O2)
template <class T>
inline void fill(T* x, index_t n, T value) noexcept {
  using detail::full_batches;
  using detail::lanes;
  index_t i = 0;
  const auto v = simd::broadcast(value);
  for (; i < full_batches<T>(n); i += lanes<T>) simd::store(x + i, v);
  for (; i < n; ++i) x[i] = value;
}

/// y[i] += x[i]
template <class T>
inline void add(const T* x, T* y, index_t n) noexcept {
  using detail::full_batches;
  using detail::lanes;
  index_t i = 0;
  for (; i < full_batches<T>(n); i += lanes<T>) simd::store(y + i, simd::load(y + i) + simd::load(x + i));
  for (; i < n; ++i) y[i] += x[i];
}

/// y[i] = max(y[i], x[i])
template <class T>
inline void maximum(const T* x, T* y, index_t n) noexcept {
  using detail::full_batches;
  using detail::lanes;
  index_t i = 0;
  for (; i < full_batches<T>(n); i += lanes<T>) simd::store(y + i, simd::max(simd::load(y + i), simd::load(x + i)));
  for (; i < n; ++i) y[i] = std::max(y[i], x[i]);
}

/// z[i] = x[i] · y[i]
template <class T>
inline void multiply(const T* x, const T* y, T* z, index_t n) noexcept {
  using detail::full_batches;
  using detail::lanes;
  index_t i = 0;
  for (; i < full_batches<T>(n); i += lanes<T>) simd::store(z + i, simd::load(x + i) * simd::load(y + i));
  for (; i < n; ++i) z[i] = x[i] * y[i];
}

/// z[i] = a · x[i] · y[i]
template <class T>
inline void multiply_scaled(T a, const T* x, const T* y, T* z, index_t n) noexcept {
  using detail::full_batches;
  using detail::lanes;
  index_t i = 0;
  const auto va = simd::broadcast(a);
  for (; i < full_batches<T>(n); i += lanes<T>) simd::store(z + i, va * simd::load(x + i) * simd::load(y + i));
  for (; i < n; ++i) z[i] = a * x[i] * y[i];
}

/// v = a · x[i]; sum[i] += v; max[i] = max(max[i], v): one channel's step of a scaled
/// mean-and-max reduction over channels, in one pass.
template <class T>
inline void scaled_sum_max(T a, const T* x, T* sum, T* max, index_t n) noexcept {
  using detail::full_batches;
  using detail::lanes;
  index_t i = 0;
  const auto va = simd::broadcast(a);
  for (; i < full_batches<T>(n); i += lanes<T>) {
    const auto v = va * simd::load(x + i);
    simd::store(sum + i, simd::load(sum + i) + v);
    simd::store(max + i, simd::max(simd::load(max + i), v));
  }
  for (; i < n; ++i) {
    const T v = a * x[i];
    sum[i] += v;
    max[i] = std::max(max[i], v);
  }
}

/// y[i] = a · x[i]
template <class T>
inline void scale_into(T a, const T* x, T* y, index_t n) noexcept {
  detail::transform(x, y, n, [a](const auto& v) { return v * detail::splat(v, a); });
}

/// x[i] *= a
template <class T>
inline void scale(T a, T* x, index_t n) noexcept {
  detail::transform(x, x, n, [a](const auto& v) { return v * detail::splat(v, a); });
}

/// x[i] = a · x[i] where x[i] >= cut, else 0: the values below the cut are zeroed before the
/// product, which could be subnormal for them (the attention weights' last rescaling,
/// heed/kernels/detail/attention_tiles.hpp).
template <class T>
inline void scale_above(T a, T cut, T* x, index_t n) noexcept {
  detail::transform(
      x, x, n, [a, cut](const auto& v) { return simd::zero_below(v, detail::splat(v, cut), v) * detail::splat(v, a); });
}

/// max_i x[i]; -infinity for n == 0.
template <class T>
[[nodiscard]] inline T max(const T* x, index_t n) noexcept {
  return detail::fold(
      x, n, -std::numeric_limits<T>::infinity(), [](const auto& a, const auto& b) { return simd::max(a, b); },
      [](const auto& acc) { return simd::reduce_max(acc); });
}

/// sum_i x[i] in Storage's accumulator type (a bfloat16 or half x is widened as it is read); 0 for n == 0.
template <class Storage>
[[nodiscard]] inline accumulator_t<Storage> sum(const Storage* x, index_t n) noexcept {
  return detail::fold(
      x, n, accumulator_t<Storage>(0), [](const auto& a, const auto& b) { return a + b; },
      [](const auto& acc) { return simd::reduce_add(acc); });
}

/// y = (x - mean) / sqrt(var + eps) · w + b over n elements, mean and (biased) variance of x
/// taken in two passes, as torch.nn.LayerNorm computes them; w and b may be null (1 and 0).
/// y may be x.
template <class T>
inline void layer_norm(const T* x, T* y, const T* w, const T* b, T eps, index_t n) noexcept {
  using detail::full_batches;
  using detail::lanes;
  const T mean = simd::sum(x, n) / T(n);
  index_t i = 0;
  T squares = T(0);
  const auto vmean = simd::broadcast(mean);
  if (n >= lanes<T>) {
    auto acc0 = simd::broadcast(T(0)), acc1 = acc0;  // two chains hide the FMA latency
    for (; i + 2 * lanes<T> <= full_batches<T>(n); i += 2 * lanes<T>) {
      const auto d0 = simd::load(x + i) - vmean, d1 = simd::load(x + i + lanes<T>) - vmean;
      acc0 = simd::fma(d0, d0, acc0);
      acc1 = simd::fma(d1, d1, acc1);
    }
    for (; i < full_batches<T>(n); i += lanes<T>) {
      const auto d = simd::load(x + i) - vmean;
      acc0 = simd::fma(d, d, acc0);
    }
    squares = simd::reduce_add(acc0 + acc1);
  }
  for (; i < n; ++i) squares += (x[i] - mean) * (x[i] - mean);
  const T inv = T(1) / std::sqrt(squares / T(n) + eps);
  const auto vinv = simd::broadcast(inv);
  i = 0;
  for (; i < full_batches<T>(n); i += lanes<T>) {
    auto v = (simd::load(x + i) - vmean) * vinv;
    if (w) v = v * simd::load(w + i);
    if (b) v = v + simd::load(b + i);
    simd::store(y + i, v);
  }
  for (; i < n; ++i) {
    T v = (x[i] - mean) * inv;
    if (w) v = v * w[i];
    if (b) v = v + b[i];
    y[i] = v;
  }
}

/// y = x / sqrt(mean(x²) + eps) · w over n elements (w may be null: 1), as torch.nn.RMSNorm
/// computes it: x · rsqrt(mean + eps), then · w. y may be x.
template <class T>
inline void rms_norm(const T* x, T* y, const T* w, T eps, index_t n) noexcept {
  using detail::full_batches;
  using detail::lanes;
  index_t i = 0;
  T squares = T(0);
  if (n >= lanes<T>) {
    auto acc0 = simd::broadcast(T(0)), acc1 = acc0;  // two chains hide the FMA latency
    for (; i + 2 * lanes<T> <= full_batches<T>(n); i += 2 * lanes<T>) {
      const auto v0 = simd::load(x + i), v1 = simd::load(x + i + lanes<T>);
      acc0 = simd::fma(v0, v0, acc0);
      acc1 = simd::fma(v1, v1, acc1);
    }
    for (; i < full_batches<T>(n); i += lanes<T>) {
      const auto v = simd::load(x + i);
      acc0 = simd::fma(v, v, acc0);
    }
    squares = simd::reduce_add(acc0 + acc1);
  }
  for (; i < n; ++i) squares += x[i] * x[i];
  const T inv = T(1) / std::sqrt(squares / T(n) + eps);
  const auto vinv = simd::broadcast(inv);
  i = 0;
  for (; i < full_batches<T>(n); i += lanes<T>) {
    auto v = simd::load(x + i) * vinv;
    if (w) v = v * simd::load(w + i);
    simd::store(y + i, v);
  }
  for (; i < n; ++i) y[i] = w ? x[i] * inv * w[i] : x[i] * inv;
}

/// y[i] = exp(x[i]) (y may be x)
template <class T>
inline void exp(const T* x, T* y, index_t n) noexcept {
  detail::transform(x, y, n, [](const auto& v) { return simd::exp(v); });
}

/// y[i] = exp(x[i] - shift), returning sum_i y[i]: the inner step of a softmax, shift at least every
/// x[i] (softmax_exp: 0 where x[i] - shift < softmax_floor<T>). x may be y.
template <class T>
inline T exp_sum(const T* x, T shift, T* y, index_t n) noexcept {
  using detail::full_batches;
  using detail::lanes;
  index_t i = 0;
  T total = T(0);
  if (n >= lanes<T>) {
    const auto vshift = simd::broadcast(shift);
    auto acc = simd::broadcast(T(0));
    for (; i < full_batches<T>(n); i += lanes<T>) {
      const auto e = simd::softmax_exp(simd::load(x + i) - vshift);
      simd::store(y + i, e);
      acc = acc + e;
    }
    total = simd::reduce_add(acc);
  }
  for (; i < n; ++i) {
    y[i] = simd::softmax_exp(x[i] - shift);
    total += y[i];
  }
  return total;
}

/// y[i] = tanh(x[i])
template <class T>
inline void tanh(const T* x, T* y, index_t n) noexcept {
  detail::transform(x, y, n, [](const auto& v) { return simd::tanh(v); });
}

/// y[i] = 1 / (1 + exp(-x[i]))
template <class T>
inline void sigmoid(const T* x, T* y, index_t n) noexcept {
  detail::transform(x, y, n, [](const auto& v) { return detail::sigmoid_of(v); });
}

/// y[i] = max(x[i], 0)
template <class T>
inline void relu(const T* x, T* y, index_t n) noexcept {
  detail::transform(x, y, n, [](const auto& v) { return simd::max(v, detail::splat(v, T(0))); });
}

/// y[i] = SiLU(x[i]) = x[i] / (1 + exp(-x[i])) (torch.nn.SiLU, the gate of SwiGLU).
template <class T>
inline void silu(const T* x, T* y, index_t n) noexcept {
  detail::transform(x, y, n, [](const auto& v) { return detail::silu_of(v); });
}

/// y[i] = GELU(x[i]), the exact erf form (torch.nn.GELU()).
template <class T>
inline void gelu(const T* x, T* y, index_t n) noexcept {
  detail::transform(x, y, n, [](const auto& v) { return detail::gelu_of(v); });
}

/// y[i] = GELU(x[i]), the tanh approximation (torch.nn.GELU(approximate="tanh")).
template <class T>
inline void gelu_tanh(const T* x, T* y, index_t n) noexcept {
  detail::transform(x, y, n, [](const auto& v) { return detail::gelu_tanh_of(v); });
}

}  // namespace heed::simd::inline HEED_SIMD_LEVEL_NAMESPACE
