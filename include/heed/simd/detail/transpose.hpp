#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include "heed/core/shape.hpp"
#include "heed/simd/arch.hpp"

#if defined(HEED_SIMD_AVX512) || defined(HEED_SIMD_AVX2)
#include <immintrin.h>
#endif

// Blocks of 32-bit values transposed in registers: Kᵀ packed into the attention micro-kernel's
// panels (pack_kt, pack_kt_pairs in heed/simd/attention_kernel.hpp) and A into the GEMM's
// micro-panels (pack_a_panel in heed/simd/gemm_kernel.hpp). Every loop over the registers is
// unrolled by hand (HEED_UNROLL): gcc -O2 does not peel them by itself, kept the arrays on the
// stack and packed at 19-21 GB/s instead of 60 (BM_pack_kt, d = 64, AVX-512; docs/decisions.md).
namespace heed::detail::inline HEED_SIMD_LEVEL_NAMESPACE {

#if defined(HEED_SIMD_AVX512)
// A 16 × 16 block of 32-bit values (floats, or pairs of bfloat16) transposed in registers: r[i]
// holds row i before, column i after. Three rounds of shuffles: pairs of rows interleaved
// within 128-bit lanes, then pairs of pairs (four rows of one column per lane), then the lanes
// of four row groups gathered per column: 64 shuffles for 256 values, where moving them one by
// one costs a load and a store each.
HEED_ALWAYS_INLINE void transpose_in_registers(__m512 (&r)[16]) noexcept {
  __m512 t[16];
  HEED_UNROLL(8)
  for (int i = 0; i < 16; i += 2) {  // per lane L: [r_i[4L], r_i+1[4L], r_i[4L+1], r_i+1[4L+1]] and [.. +2, +3]
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  const auto pd = [](__m512 x) { return _mm512_castps_pd(x); };
  HEED_UNROLL(4)
  for (int i = 0; i < 16; i += 4) {  // r[i + m], lane L: column 4L + m of rows i .. i + 3
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(t[i]), pd(t[i + 2])));
    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(t[i]), pd(t[i + 2])));
    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(t[i + 1]), pd(t[i + 3])));
    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(t[i + 1]), pd(t[i + 3])));
  }
  HEED_UNROLL(4)
  for (int m = 0; m < 4; ++m) {  // column 4L + m: lane L of r[m], r[4 + m], r[8 + m], r[12 + m]
    const __m512 u0 = _mm512_shuffle_f32x4(r[m], r[4 + m], 0x88), u1 = _mm512_shuffle_f32x4(r[m], r[4 + m], 0xDD);
    const __m512 v0 = _mm512_shuffle_f32x4(r[8 + m], r[12 + m], 0x88);
    const __m512 v1 = _mm512_shuffle_f32x4(r[8 + m], r[12 + m], 0xDD);
    t[m] = _mm512_shuffle_f32x4(u0, v0, 0x88);
    t[4 + m] = _mm512_shuffle_f32x4(u1, v1, 0x88);
    t[8 + m] = _mm512_shuffle_f32x4(u0, v0, 0xDD);
    t[12 + m] = _mm512_shuffle_f32x4(u1, v1, 0xDD);
  }
  HEED_UNROLL(16)
  for (int i = 0; i < 16; ++i) r[i] = t[i];
}

inline constexpr index_t transpose_block = 16;  // rows and columns of transpose_32's block

// dst[c·ldd + r] = src[r·lds + c] for a transpose_block² block of 32-bit values, the strides in
// bytes.
inline void transpose_32(const void* src, index_t lds, void* dst, index_t ldd) noexcept {
  __m512 r[16];
  HEED_UNROLL(16)
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(static_cast<const char*>(src) + i * lds);
  transpose_in_registers(r);
  HEED_UNROLL(16)
  for (int i = 0; i < 16; ++i) _mm512_storeu_ps(static_cast<char*>(dst) + i * ldd, r[i]);
}
#elif defined(HEED_SIMD_AVX2)
// The 8 × 8 form on AVX2: the same two rounds within 128-bit lanes, then the lanes across rows.
HEED_ALWAYS_INLINE void transpose_in_registers(__m256 (&r)[8]) noexcept {
  __m256 t[8];
  HEED_UNROLL(4)
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  const auto pd = [](__m256 x) { return _mm256_castps_pd(x); };
  HEED_UNROLL(2)
  for (int i = 0; i < 8; i += 4) {  // r[i + m], lane L: column 4L + m of rows i .. i + 3
    r[i] = _mm256_castpd_ps(_mm256_unpacklo_pd(pd(t[i]), pd(t[i + 2])));
    r[i + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(pd(t[i]), pd(t[i + 2])));
    r[i + 2] = _mm256_castpd_ps(_mm256_unpacklo_pd(pd(t[i + 1]), pd(t[i + 3])));
    r[i + 3] = _mm256_castpd_ps(_mm256_unpackhi_pd(pd(t[i + 1]), pd(t[i + 3])));
  }
  HEED_UNROLL(4)
  for (int m = 0; m < 4; ++m) {
    t[m] = _mm256_permute2f128_ps(r[m], r[4 + m], 0x20);
    t[4 + m] = _mm256_permute2f128_ps(r[m], r[4 + m], 0x31);
  }
  HEED_UNROLL(8)
  for (int i = 0; i < 8; ++i) r[i] = t[i];
}

inline constexpr index_t transpose_block = 8;

inline void transpose_32(const void* src, index_t lds, void* dst, index_t ldd) noexcept {
  __m256 r[8];
  HEED_UNROLL(8)
  for (int i = 0; i < 8; ++i)
    r[i] = _mm256_loadu_ps(reinterpret_cast<const float*>(static_cast<const char*>(src) + i * lds));
  transpose_in_registers(r);
  HEED_UNROLL(8)
  for (int i = 0; i < 8; ++i) _mm256_storeu_ps(reinterpret_cast<float*>(static_cast<char*>(dst) + i * ldd), r[i]);
}
#endif

// The first `units` 32-bit values of NR rows (`lds` bytes apart) into a panel whose rows are
// the units: dst[u·NR + j] = src[j·lds + u] (units of 4 bytes); the number of units done, the
// rest left to the caller. 16 × 16 blocks on AVX-512, 8 × 8 on AVX2, none elsewhere.
template <index_t NR>
inline index_t transpose_panel_32(const void* src, index_t lds, index_t units, void* dst) noexcept {
#if defined(HEED_SIMD_AVX512) || defined(HEED_SIMD_AVX2)
  constexpr index_t block = transpose_block;
  if constexpr (NR % block == 0) {
    const index_t whole = units / block * block;
    for (index_t u0 = 0; u0 < whole; u0 += block)
      for (index_t j0 = 0; j0 < NR; j0 += block)
        transpose_32(static_cast<const char*>(src) + j0 * lds + u0 * 4, lds,
                     static_cast<char*>(dst) + (u0 * NR + j0) * 4, NR * 4);
    return whole;
  }
#endif
  (void)src, (void)lds, (void)units, (void)dst;
  return 0;
}

}  // namespace heed::detail::inline HEED_SIMD_LEVEL_NAMESPACE
