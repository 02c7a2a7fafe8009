#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <cstddef>
#include <type_traits>

#include "heed/core/scalar.hpp"
#include "heed/core/shape.hpp"
#include "heed/simd/arch.hpp"
#include "heed/simd/convert.hpp"

// The loops every vector primitive of heed/simd/vector_ops.hpp is written with, and the
// elementwise functions that run on both T and simd::batch<T>.
namespace heed::detail::inline HEED_SIMD_LEVEL_NAMESPACE {

// The scalar type of a scalar or of a batch.
template <class V>
struct batch_scalar {
  using type = typename V::value_type;
};
template <class V>
requires std::is_arithmetic_v<V>
struct batch_scalar<V> {
  using type = V;
};
template <class V>
using batch_scalar_t = typename batch_scalar<V>::type;

template <class T>
inline constexpr index_t lanes = static_cast<index_t>(simd::width<T>);

// The end of the whole batches in [0, n). Loops run `i < full_batches(n)` rather than
// `i + lanes <= n`: the same bound, but one gcc's loop analysis can see never overflows.
template <class T>
[[nodiscard]] constexpr index_t full_batches(index_t n) noexcept {
  return n / lanes<T> * lanes<T>;
}

// y[i] = f(x[i]), with f callable on both T and batch<T>.
template <class T, class F>
inline void transform(const T* x, T* y, index_t n, F f) noexcept {
  index_t i = 0;
  for (; i < full_batches<T>(n); i += lanes<T>) simd::store(y + i, f(simd::load(x + i)));
  for (; i < n; ++i) y[i] = f(x[i]);
}

// Folds op over x[0, n) from `init` in the accumulator type A of x's type S (16-bit values are
// widened as they are loaded); op is callable on batches and on scalars of A, and `finish`
// reduces the batch accumulator to one scalar. Four accumulators take turns, so a sum of a
// cached 4 KB row waits on the adder's throughput, not its latency (one accumulator ran a
// plane of CBAM's channel pooling at a quarter of the load rate); op must be associative and
// commutative up to rounding (sum, max).
template <class S, class Op, class Finish, class A = accumulator_t<S>>
[[nodiscard]] inline A fold(const S* x, index_t n, A init, Op op, Finish finish) noexcept {
  index_t i = 0;
  A result = init;
  if (n >= lanes<A>) {
    auto acc = simd::broadcast(init);
    if (n >= 4 * lanes<A>) {
      auto acc1 = acc, acc2 = acc, acc3 = acc;
      for (; i + 4 * lanes<A> <= full_batches<A>(n); i += 4 * lanes<A>) {
        acc = op(acc, simd::load_widened(x + i));
        acc1 = op(acc1, simd::load_widened(x + i + lanes<A>));
        acc2 = op(acc2, simd::load_widened(x + i + 2 * lanes<A>));
        acc3 = op(acc3, simd::load_widened(x + i + 3 * lanes<A>));
      }
      acc = op(op(acc, acc1), op(acc2, acc3));
    }
    for (; i < full_batches<A>(n); i += lanes<A>) acc = op(acc, simd::load_widened(x + i));
    result = finish(acc);
  }
  for (; i < n; ++i) result = op(result, static_cast<A>(x[i]));
  return result;
}

// `value` in the type of `like`: a T for a T, a broadcast batch for a batch.
template <class V, class T>
[[nodiscard]] inline V splat(const V&, T value) noexcept {
  return V(value);
}

template <class V>
[[nodiscard]] inline V sigmoid_of(const V& x) noexcept {
  using T = batch_scalar_t<V>;
  return V(T(1)) / (V(T(1)) + simd::exp(-x));
}

// SiLU: x / (1 + exp(-x)), as torch's silu kernel computes it.
template <class V>
[[nodiscard]] inline V silu_of(const V& x) noexcept {
  using T = batch_scalar_t<V>;
  return x / (V(T(1)) + simd::exp(-x));
}

// GELU, exact form: x/2 (1 + erf(x / sqrt 2)), as torch.nn.GELU() computes it.
template <class V>
[[nodiscard]] inline V gelu_of(const V& x) noexcept {
  using T = batch_scalar_t<V>;
  const T inv_sqrt2 = T(0.70710678118654752440);
  return V(T(0.5)) * x * (V(T(1)) + simd::erf(x * V(inv_sqrt2)));
}

// GELU, tanh approximation: torch.nn.GELU(approximate="tanh").
template <class V>
[[nodiscard]] inline V gelu_tanh_of(const V& x) noexcept {
  using T = batch_scalar_t<V>;
  const T k0 = T(0.79788456080286535588);  // sqrt(2 / pi)
  const T k1 = T(0.044715);
  const V inner = V(k0) * simd::fma(V(k1) * x * x, x, x);
  return V(T(0.5)) * x * (V(T(1)) + simd::tanh(inner));
}

}  // namespace heed::detail::inline HEED_SIMD_LEVEL_NAMESPACE
