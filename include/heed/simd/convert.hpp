#pragma once
// Loads and stores between a storage type and its accumulator type (heed/core/scalar.hpp):
//   load_widened(p)          width<A> values of Storage from p as a batch<A>, A = accumulator_t<Storage>
//   widen(x)                 one value of Storage as an A
//   store_narrowed(p, x)     a batch<float> rounded to nearest (ties to even) into width values of Storage
//   narrow(src, dst, n)      n floats rounded into Storage, vector by vector
// Kernels keep 16-bit tensors 16-bit in memory and widen each tile as they load it. The generic
// versions convert value by value; where the target has instructions for it, an overload beside
// them does it in registers: bfloat16 by zero-extending to 32 bits and shifting (its bits are
// the top half of a float's), half with F16C's vcvtph2ps on x86-64 and fcvtl on AArch64.

#include <cstdint>
#include <type_traits>

#include "heed/core/cast.hpp"
#include "heed/core/scalar.hpp"
#include "heed/core/shape.hpp"
#include "heed/simd/arch.hpp"

#if defined(HEED_SIMD_AVX2) || defined(HEED_SIMD_AVX512)
#include <immintrin.h>
#endif
#if defined(HEED_SIMD_BASELINE_SSE2)
#include <emmintrin.h>
#endif
#if defined(HEED_SIMD_NEON)
#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/simd/detail/neon_bits.hpp"
#endif

namespace heed::simd::inline HEED_SIMD_LEVEL_NAMESPACE {

/// x in the accumulator type (exact: every bfloat16 and half is a float).
template <class Storage>
[[nodiscard]] inline accumulator_t<Storage> widen(Storage x) noexcept {
  return static_cast<accumulator_t<Storage>>(x);
}

/// width<A> values of Storage from p (any alignment), widened: the generic version.
template <class Storage>
[[nodiscard]] inline batch<accumulator_t<Storage>> load_widened(const Storage* p, generic_isa) noexcept {
  using A = accumulator_t<Storage>;
  if constexpr (std::is_same_v<A, Storage>) {
    return load(p);
  } else {
    alignas(64) A values[width<A>];
    for (std::size_t i = 0; i < width<A>; ++i) values[i] = static_cast<A>(p[i]);
    return load(values);
  }
}

#if defined(HEED_SIMD_BASELINE_SSE2)
/// 4 bfloat16 → 4 floats on baseline x86-64 (SSE2): each 16-bit pattern interleaved with a zero
/// below it. Value by value, bfloat16 attention ran at 0.23× fp32 on this level (docs/decisions.md,
/// "Every target at each level, on Zen 3").
[[nodiscard]] inline batch<float> load_widened(const bfloat16* p, generic_isa) noexcept {
  static_assert(width<float> == 4);
  const __m128i four = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return batch<float>(_mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), four)));
}

/// 4 half → 4 floats on baseline x86-64 (no F16C): exponent and mantissa shifted into place and
/// the exponent rebased (15 → 127; an infinity or NaN to 255); a zero or subnormal half as
/// 2^-14 · (1 + m/1024) less 2^-14, a difference of normal floats, so exact even where the
/// caller flushes subnormals (DAZ/FTZ); then the sign. Eigen's scalar conversion, four at a time.
[[nodiscard]] inline batch<float> load_widened(const half* p, generic_isa) noexcept {
  static_assert(width<float> == 4);
  const __m128i h = _mm_unpacklo_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)), _mm_setzero_si128());
  const __m128i shifted_exp = _mm_set1_epi32(0x7c00 << 13);
  __m128i o = _mm_slli_epi32(_mm_and_si128(h, _mm_set1_epi32(0x7fff)), 13);
  const __m128i exp = _mm_and_si128(o, shifted_exp);
  o = _mm_add_epi32(o, _mm_set1_epi32((127 - 15) << 23));
  o = _mm_add_epi32(o, _mm_and_si128(_mm_cmpeq_epi32(exp, shifted_exp), _mm_set1_epi32((128 - 16) << 23)));
  const __m128i tiny = _mm_cmpeq_epi32(exp, _mm_setzero_si128());
  const __m128 rebased = _mm_sub_ps(_mm_castsi128_ps(_mm_add_epi32(o, _mm_set1_epi32(1 << 23))),
                                    _mm_castsi128_ps(_mm_set1_epi32(113 << 23)));
  o = _mm_or_si128(_mm_and_si128(tiny, _mm_castps_si128(rebased)), _mm_andnot_si128(tiny, o));
  o = _mm_or_si128(o, _mm_slli_epi32(_mm_and_si128(h, _mm_set1_epi32(0x8000)), 16));
  return batch<float>(_mm_castsi128_ps(o));
}
#endif

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

#if defined(HEED_SIMD_NEON)
/// 4 bfloat16 → 4 floats: widened to 32 bits and shifted into the top half in one shll.
[[nodiscard]] inline batch<float> load_widened(const bfloat16* p, neon_isa) noexcept {
  return batch<float>(vreinterpretq_f32_u32(vshll_n_u16(detail::neon_load_u16x4(p), 16)));
}
/// 4 half → 4 floats with fcvtl (base AArch64).
[[nodiscard]] inline batch<float> load_widened(const half* p, neon_isa) noexcept {
  return batch<float>(vcvt_f32_f16(vreinterpret_f16_u16(detail::neon_load_u16x4(p))));
}
#endif

/// width<A> values of Storage from p, widened, on the compile-time target.
template <class Storage>
[[nodiscard]] inline batch<accumulator_t<Storage>> load_widened(const Storage* p) noexcept {
  if constexpr (std::is_same_v<accumulator_t<Storage>, Storage>)
    return load(p);
  else
    return load_widened(p, target_isa{});
}

/// x rounded to Storage (nearest, ties to even, as heed::convert) into p (any alignment): the generic version.
template <class Storage>
inline void store_narrowed(Storage* p, batch<float> x, generic_isa) noexcept {
  alignas(64) float values[width<float>];
  store(values, x);
  for (std::size_t i = 0; i < width<float>; ++i) p[i] = heed::convert<Storage>(values[i]);
}

#if defined(HEED_SIMD_AVX2) && !defined(HEED_SIMD_AVX512)
/// 8 floats → 8 bfloat16: add 0x7FFF plus the lowest kept bit (ties to even) and keep the top
/// 16 bits; a NaN keeps its top bits with the quiet bit set, so it stays a NaN.
inline void store_narrowed(bfloat16* p, batch<float> x, avx2_isa) noexcept {
  const __m256 v = x;
  const __m256i bits = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  __m256i rounded = _mm256_add_epi32(bits, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF)));
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  rounded = _mm256_blendv_epi8(rounded, _mm256_or_si256(bits, _mm256_set1_epi32(0x00400000)), nan);
  const __m256i top = _mm256_srli_epi32(rounded, 16);              // 8 × 32-bit, each < 2^16
  const __m256i packed = _mm256_packus_epi32(top, top);            // per 128-bit lane: a0-3 a0-3 | a4-7 a4-7
  const __m256i ordered = _mm256_permute4x64_epi64(packed, 0x08);  // a0-3 a4-7 in the low 128 bits
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(ordered));
}
#if defined(__F16C__)
/// 8 floats → 8 half with F16C (round to nearest even).
inline void store_narrowed(half* p, batch<float> x, avx2_isa) noexcept {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(static_cast<__m256>(x), _MM_FROUND_TO_NEAREST_INT));
}
#endif
#endif

#if defined(HEED_SIMD_AVX512)
/// 16 floats → 16 bfloat16, rounded as the AVX2 version: add 0x7FFF plus the lowest kept bit,
/// keep the top 16 bits (vpmovdw); a NaN keeps its top bits with the quiet bit set. Not
/// vcvtneps2bf16, which flushes subnormals to zero where heed::convert keeps them.
inline void store_narrowed(bfloat16* p, batch<float> x, avx512_isa) noexcept {
  const __m512 v = x;
  const __m512i bits = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF)));
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  const __m512i kept = _mm512_mask_or_epi32(rounded, nan, bits, _mm512_set1_epi32(0x00400000));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(_mm512_srli_epi32(kept, 16)));
}
/// 16 floats → 16 half with AVX-512's vcvtps2ph (round to nearest even).
inline void store_narrowed(half* p, batch<float> x, avx512_isa) noexcept {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                      _mm512_cvtps_ph(static_cast<__m512>(x), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
#endif

#if defined(HEED_SIMD_NEON)
/// 4 floats → 4 bfloat16, rounded as the AVX2 version: add 0x7FFF plus the lowest kept bit, keep
/// the top 16 bits; a NaN keeps its top bits with the quiet bit set.
inline void store_narrowed(bfloat16* p, batch<float> x, neon_isa) noexcept {
  const float32x4_t v = x;
  const uint32x4_t bits = vreinterpretq_u32_f32(v);
  const uint32x4_t lsb = vandq_u32(vshrq_n_u32(bits, 16), vdupq_n_u32(1));
  const uint32x4_t rounded = vaddq_u32(bits, vaddq_u32(lsb, vdupq_n_u32(0x7FFF)));
  const uint32x4_t ordered = vceqq_f32(v, v);  // all ones unless NaN
  const uint32x4_t kept = vbslq_u32(ordered, rounded, vorrq_u32(bits, vdupq_n_u32(0x00400000)));
  detail::neon_store_u16x4(p, vshrn_n_u32(kept, 16));
}
/// 4 floats → 4 half with fcvtn (round to nearest even: AArch64's default rounding mode).
inline void store_narrowed(half* p, batch<float> x, neon_isa) noexcept {
  detail::neon_store_u16x4(p, vreinterpret_u16_f16(vcvt_f16_f32(x)));
}
#endif

/// x rounded into width<float> values of Storage at p, on the compile-time target.
template <class Storage>
inline void store_narrowed(Storage* p, batch<float> x) noexcept {
  if constexpr (std::is_same_v<Storage, float>)
    store(p, x);
  else
    store_narrowed(p, x, target_isa{});
}

/// dst[i] = src[i] in the accumulator type (exact) for i < n.
template <class Storage>
inline void widen(const Storage* src, accumulator_t<Storage>* dst, index_t n) noexcept {
  using A = accumulator_t<Storage>;
  constexpr index_t W = static_cast<index_t>(width<A>);
  index_t i = 0;
  for (; i + W <= n; i += W) store(dst + i, load_widened(src + i));
  for (; i < n; ++i) dst[i] = static_cast<A>(src[i]);
}

/// dst[i] = src[i] rounded to Storage (nearest, ties to even) for i < n.
template <class Storage>
inline void narrow(const float* src, Storage* dst, index_t n) noexcept {
  constexpr index_t W = static_cast<index_t>(width<float>);
  index_t i = 0;
  for (; i + W <= n; i += W) store_narrowed(dst + i, load(src + i));
  for (; i < n; ++i) dst[i] = heed::convert<Storage>(src[i]);
}

}  // namespace heed::simd::inline HEED_SIMD_LEVEL_NAMESPACE
