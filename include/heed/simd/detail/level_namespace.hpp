#pragma once
#include "heed/core/detail/internal_header_check.hpp"

// The instruction-set level of this translation unit's code, from its compiler target:
//   HEED_SIMD_LEVEL            the heed::IsaLevel it runs (scalar, baseline, v3, v4, v4_bf16, neon)
//   HEED_SIMD_LEVEL_NAMESPACE  the inline namespace that simd/ puts its code in
//   HEED_SIMD_LEVEL_TABLES     the function that returns the level's kernel tables, defined by
//                              heed/simd/dispatch_level.ipp in a program that carries several levels
// Every function of simd/ is compiled into heed::simd::HEED_SIMD_LEVEL_NAMESPACE (and its
// internal helpers into heed::detail::HEED_SIMD_LEVEL_NAMESPACE), so that the same inline
// function compiled for two targets in one program is two symbols: otherwise the linker keeps one
// of the copies, for every caller, and a baseline caller may run AVX-512 code (docs/design.md,
// "Instruction-set levels, and run-time dispatch"). Targets that are not one of heed's levels
// but change the width of xsimd's batches (AVX or AVX2 without FMA, AVX-512 F without the rest of
// x86-64-v4) get namespaces of their own; the SSE levels between SSE2 and SSE4.2 share baseline's.

#if defined(HEED_SIMD_SCALAR)
#define HEED_SIMD_LEVEL scalar
#define HEED_SIMD_LEVEL_NAMESPACE level_scalar
#elif defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
#if defined(__AVX512BF16__)
#define HEED_SIMD_LEVEL v4_bf16
#define HEED_SIMD_LEVEL_NAMESPACE level_v4_bf16
#else
#define HEED_SIMD_LEVEL v4
#define HEED_SIMD_LEVEL_NAMESPACE level_v4
#endif
#elif defined(__AVX512F__)
#if defined(__AVX2__) && defined(__FMA__)
#define HEED_SIMD_LEVEL v3
#else
#define HEED_SIMD_LEVEL baseline
#endif
#define HEED_SIMD_LEVEL_NAMESPACE level_avx512f_partial
#elif defined(__AVX2__) && defined(__FMA__)
#define HEED_SIMD_LEVEL v3
#define HEED_SIMD_LEVEL_NAMESPACE level_v3
#elif defined(__AVX__)
#define HEED_SIMD_LEVEL baseline
#define HEED_SIMD_LEVEL_NAMESPACE level_avx_without_fma
#elif defined(__aarch64__) && defined(__ARM_NEON)
#define HEED_SIMD_LEVEL neon
#define HEED_SIMD_LEVEL_NAMESPACE level_neon
#elif defined(__x86_64__) || defined(_M_X64)
#define HEED_SIMD_LEVEL baseline
#define HEED_SIMD_LEVEL_NAMESPACE level_baseline
#else
#define HEED_SIMD_LEVEL scalar
#define HEED_SIMD_LEVEL_NAMESPACE level_generic
#endif

#define HEED_SIMD_PASTE_(a, b) a##b
#define HEED_SIMD_PASTE(a, b) HEED_SIMD_PASTE_(a, b)
#define HEED_SIMD_LEVEL_TABLES HEED_SIMD_PASTE(tables_, HEED_SIMD_LEVEL_NAMESPACE)
