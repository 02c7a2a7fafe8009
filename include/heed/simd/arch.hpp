#pragma once
// The one header that includes xsimd. It gives the rest of heed:
//   heed::simd::batch<T>   the widest register of T that the compile-time target has;
//   heed::simd::width<T>   its lane count;
//   load / store / broadcast, reduce_add / reduce_max, and the math functions, as
//   overloads for both T and batch<T>; prefetch hints.
// Without an instruction set xsimd knows (or with HEED_SIMD_SCALAR defined, which the tests
// use to exercise it), batch<T> is T itself and width<T> is 1: the same kernels then run as
// plain scalar loops, so there is one generic code path and no #ifdef outside this folder.
//
// xsimd versions: 8.x spells the horizontal sum `hadd` and has no `reduce_max`; 9 and later
// have `reduce_add` and `reduce_max`. The shims below hide that.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <type_traits>

#if !defined(HEED_SIMD_SCALAR)
#include <xsimd/xsimd.hpp>
#if defined(XSIMD_NO_SUPPORTED_ARCHITECTURE)
#define HEED_SIMD_SCALAR 1
#endif
#endif

namespace heed::simd {

/// The scalar type of a scalar or of a batch.
template <class V>
struct scalar_of {
  using type = typename V::value_type;
};
template <class V>
requires std::is_arithmetic_v<V>
struct scalar_of<V> {
  using type = V;
};
template <class V>
using scalar_t = typename scalar_of<V>::type;

// ---- scalar math overloads: the generic version, always present ----

[[nodiscard]] inline float fma(float a, float b, float c) noexcept {
  return std::fma(a, b, c);
}
[[nodiscard]] inline double fma(double a, double b, double c) noexcept {
  return std::fma(a, b, c);
}
[[nodiscard]] inline float max(float a, float b) noexcept {
  return std::max(a, b);
}
[[nodiscard]] inline double max(double a, double b) noexcept {
  return std::max(a, b);
}
[[nodiscard]] inline float exp(float x) noexcept {
  return std::exp(x);
}
[[nodiscard]] inline double exp(double x) noexcept {
  return std::exp(x);
}
[[nodiscard]] inline float tanh(float x) noexcept {
  return std::tanh(x);
}
[[nodiscard]] inline double tanh(double x) noexcept {
  return std::tanh(x);
}
[[nodiscard]] inline float erf(float x) noexcept {
  return std::erf(x);
}
[[nodiscard]] inline double erf(double x) noexcept {
  return std::erf(x);
}

/// Asks for the cache line holding p ahead of its use: a hint, which never faults (p may be
/// anywhere) and does nothing on compilers without the builtin.
inline void prefetch(const void* p) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p);
#else
  (void)p;
#endif
}

/// prefetch(), for a line that is about to be written.
inline void prefetch_for_write(void* p) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p, 1);
#else
  (void)p;
#endif
}

#if defined(HEED_SIMD_SCALAR)

inline constexpr bool vectorized = false;
inline constexpr const char* arch_name = "scalar";
template <class T>
using batch = T;
template <class T>
inline constexpr std::size_t width = 1;
template <class T>
[[nodiscard]] inline T broadcast(T value) noexcept {
  return value;
}
template <class T>
[[nodiscard]] inline T load(const T* p) noexcept {
  return *p;
}
template <class T>
inline void store(T* p, T v) noexcept {
  *p = v;
}
template <class T>
[[nodiscard]] inline T reduce_add(T v) noexcept {
  return v;
}
template <class T>
[[nodiscard]] inline T reduce_max(T v) noexcept {
  return v;
}

#else

using arch = xsimd::default_arch;
inline constexpr bool vectorized = true;
inline constexpr const char* arch_name = arch::name();
template <class T>
using batch = xsimd::batch<T, arch>;
template <class T>
inline constexpr std::size_t width = batch<T>::size;

template <class T>
[[nodiscard]] inline batch<T> broadcast(T value) noexcept {
  return batch<T>(value);
}
template <class T>
[[nodiscard]] inline batch<T> load(const T* p) noexcept {
  return batch<T>::load_unaligned(p);
}
template <class T>
inline void store(T* p, const batch<T>& v) noexcept {
  v.store_unaligned(p);
}

template <class T>
[[nodiscard]] inline T reduce_add(const batch<T>& v) noexcept {
#if XSIMD_VERSION_MAJOR >= 9
  return xsimd::reduce_add(v);
#else
  return xsimd::hadd(v);
#endif
}

template <class T>
[[nodiscard]] inline T reduce_max(const batch<T>& v) noexcept {
#if XSIMD_VERSION_MAJOR >= 9
  return xsimd::reduce_max(v);
#else
  alignas(64) T lanes[batch<T>::size];
  v.store_aligned(lanes);
  return *std::max_element(lanes, lanes + batch<T>::size);
#endif
}

template <class T>
[[nodiscard]] inline batch<T> fma(const batch<T>& a, const batch<T>& b, const batch<T>& c) noexcept {
  return xsimd::fma(a, b, c);
}
template <class T>
[[nodiscard]] inline batch<T> max(const batch<T>& a, const batch<T>& b) noexcept {
  return xsimd::max(a, b);
}
template <class T>
[[nodiscard]] inline batch<T> exp(const batch<T>& x) noexcept {
  return xsimd::exp(x);
}
template <class T>
[[nodiscard]] inline batch<T> tanh(const batch<T>& x) noexcept {
  return xsimd::tanh(x);
}
template <class T>
[[nodiscard]] inline batch<T> erf(const batch<T>& x) noexcept {
  return xsimd::erf(x);
}

#endif

}  // namespace heed::simd
