#pragma once
// Loads and stores between a storage type and its accumulator type (heed/core/scalar.hpp):
//   load_widened(p)          width<A> values of T from p as a batch<A>, A = accumulator_t<T>
//   widen(x)                 one value of T as an A
// Kernels keep 16-bit tensors 16-bit in memory and widen each tile as they load it. The generic
// versions convert value by value; where the target has instructions for it, an overload beside
// them does it in registers: bfloat16 by zero-extending to 32 bits and shifting (its bits are
// the top half of a float's), half with F16C's vcvtph2ps.

#include <cstdint>
#include <type_traits>

#include "heed/core/scalar.hpp"
#include "heed/core/shape.hpp"
#include "heed/simd/arch.hpp"

#if defined(HEED_SIMD_AVX2) || defined(HEED_SIMD_AVX512)
#include <immintrin.h>
#endif

namespace heed::simd {

/// x in the accumulator type (exact: every bfloat16 and half is a float).
template <class T>
[[nodiscard]] inline accumulator_t<T> widen(T x) noexcept {
  return static_cast<accumulator_t<T>>(x);
}

/// width<A> values of T from p (any alignment), widened: the generic version.
template <class T>
[[nodiscard]] inline batch<accumulator_t<T>> load_widened(const T* p, generic_isa) noexcept {
  using A = accumulator_t<T>;
  if constexpr (std::is_same_v<A, T>) {
    return load(p);
  } else {
    alignas(64) A values[width<A>];
    for (std::size_t i = 0; i < width<A>; ++i) values[i] = static_cast<A>(p[i]);
    return load(values);
  }
}

#if defined(HEED_SIMD_AVX2) && !defined(HEED_SIMD_AVX512)
/// 8 bfloat16 → 8 floats: each 16-bit pattern becomes the top half of a 32-bit one.
[[nodiscard]] inline batch<float> load_widened(const bfloat16* p, avx2_isa) noexcept {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return batch<float>(_mm256_castsi256_ps(_mm256_slli_epi32(wide, 16)));
}
#if defined(__F16C__)
/// 8 half → 8 floats with F16C.
[[nodiscard]] inline batch<float> load_widened(const half* p, avx2_isa) noexcept {
  return batch<float>(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
#endif
#endif

#if defined(HEED_SIMD_AVX512)
/// 16 bfloat16 → 16 floats.
[[nodiscard]] inline batch<float> load_widened(const bfloat16* p, avx512_isa) noexcept {
  const __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return batch<float>(_mm512_castsi512_ps(_mm512_slli_epi32(wide, 16)));
}
/// 16 half → 16 floats.
[[nodiscard]] inline batch<float> load_widened(const half* p, avx512_isa) noexcept {
  return batch<float>(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
}
#endif

/// width<A> values of T from p, widened, on the compile-time target.
template <class T>
[[nodiscard]] inline batch<accumulator_t<T>> load_widened(const T* p) noexcept {
  if constexpr (std::is_same_v<accumulator_t<T>, T>)
    return load(p);
  else
    return load_widened(p, target_isa{});
}

}  // namespace heed::simd
