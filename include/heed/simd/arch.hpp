#pragma once
// The one header that includes xsimd. It gives the rest of heed:
//   heed::simd::batch<T>   the widest register of T that the compile-time target has;
//   heed::simd::width<T>   its lane count;
//   load / store / broadcast, reduce_add / reduce_max, and the math functions, as
//   overloads for both T and batch<T>; prefetch hints;
//   the instruction-set tags (generic_isa, avx2_isa, avx512_isa, neon_isa) that arch-specific overloads
//   take, and target_isa, the tag of the compile-time target.
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

#include "heed/core/scalar.hpp"
#include "heed/simd/cpu.hpp"

#if !defined(HEED_SIMD_SCALAR)
#include <xsimd/xsimd.hpp>
#if defined(XSIMD_NO_SUPPORTED_ARCHITECTURE)
#define HEED_SIMD_SCALAR 1
#endif
#endif

namespace heed::simd::inline HEED_SIMD_LEVEL_NAMESPACE {

/// fma, max, exp, tanh and erf of scalars: the generic versions, always present, with the names
/// of the batch overloads below, so that one kernel body runs on T and on batch<T>.

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
/// The softmax's exp is exactly 0 below this argument: a score more than 64 (float) or 512
/// (double) below its row's maximum has weight 0, and no softmax value or intermediate is ever
/// subnormal. Subnormals cost a microcode assist per instruction on Intel cores, and partially
/// masked tiles are full of them (docs/decisions.md, "No subnormals in the softmax").
/// The floor keeps every weight normal after the division by the row's sum, which is at most the
/// number of keys (< 2^31): exp(-64) / 2^31 = 2^-123.3 > FLT_MIN = 2^-126, and it drops nothing
/// that float can hold beside the row's maximum (exp(-64) = 1.6e-28, float's epsilon 1.2e-7).
template <class T>
inline constexpr T softmax_floor = sizeof(T) > 4 ? T(-512) : T(-64);

/// exp(x) for the x <= 0 of a softmax (a score minus its row's maximum, -inf for a masked one,
/// NaN for a NaN), 0 for x < softmax_floor. Never called with x > 0.
[[nodiscard]] inline float softmax_exp(float x) noexcept {
  return x < softmax_floor<float> ? 0.0f : std::exp(x);
}
[[nodiscard]] inline double softmax_exp(double x) noexcept {
  return x < softmax_floor<double> ? 0.0 : std::exp(x);
}
/// y where x >= cut (or x is NaN), else 0.
template <class T>
requires std::is_floating_point_v<T>
[[nodiscard]] inline T zero_below(T x, T cut, T y) noexcept {
  return x < cut ? T(0) : y;
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

/// HEED_UNROLL(n) before a loop: gcc unrolls it n times (the micro-kernels' k loops); elsewhere,
/// and with HEED_NO_UNROLL defined (to measure the difference), it expands to nothing: clang
/// unrolls those loops by itself (docs/decisions.md, "gcc unrolls the micro-kernels' k loops by 8").
#if defined(__GNUC__) && !defined(__clang__) && !defined(HEED_NO_UNROLL)
#define HEED_PRAGMA(x) _Pragma(#x)
#define HEED_UNROLL(n) HEED_PRAGMA(GCC unroll n)
#else
#define HEED_UNROLL(n)
#endif

/// HEED_ALWAYS_INLINE before a helper whose callers keep its array arguments in registers (the
/// micro-kernels' accumulators): inlined whatever the optimizer's size heuristics say.
#if defined(__GNUC__) || defined(__clang__)
#define HEED_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define HEED_ALWAYS_INLINE inline
#endif

/// HEED_FLATTEN before a table entry (simd/detail/kernel_table_entries.hpp) whose callees
/// include xsimd's templates a compiler may keep out of line (its exp): every call in it is
/// inlined, so a level's object defines no xsimd symbol another level's code could link to
/// (ctest simd/dispatch_levels_own_their_symbols).
#if defined(__GNUC__) || defined(__clang__)
#define HEED_FLATTEN __attribute__((flatten))
#else
#define HEED_FLATTEN
#endif

/// HEED_KEEP(p): an empty statement the optimizer must keep, after a prefetch builtin (gcc and
/// clang only: the prefetches below are no-ops elsewhere). gcc 12 at -O2 deletes a loop whose
/// body only prefetches once it sits in a function of its own (the GEMM's loops that asked for
/// the next panel of W and for C's tile vanished from every -O2 build; -O3 kept some): the
/// prefetch builtin alone does not count as an effect. clang keeps them anyway.
#if defined(__GNUC__) || defined(__clang__)
#define HEED_KEEP(p) __asm__ volatile("" : : "r"(p))
#endif

/// Asks for the cache line holding p ahead of its use: a hint, which never faults (p may be
/// anywhere) and does nothing on compilers without the builtin.
inline void prefetch(const void* p) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p);
  HEED_KEEP(p);
#else
  (void)p;
#endif
}

/// prefetch() into the second-level cache (and the levels below it), not the first: for a line
/// needed some microseconds from now, which should not evict what the current loop reads.
inline void prefetch_l2(const void* p) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p, 0, 2);
  HEED_KEEP(p);
#else
  (void)p;
#endif
}

/// prefetch(), for a line that is about to be written.
inline void prefetch_for_write(void* p) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p, 1);
  HEED_KEEP(p);
#else
  (void)p;
#endif
}

/// Tags for overloads written for one instruction set. A faster overload takes a more derived
/// tag, so a call with `target_isa{}` picks the most specific one that was compiled (the
/// pattern of xsimd's requires_arch): a generic version always exists beside it.
struct generic_isa {};
struct avx2_isa : generic_isa {};  ///< AVX2 and FMA
struct avx512_isa : avx2_isa {};   ///< AVX-512 F, BW, DQ, VL (x86-64-v4)
/// AVX-512 with BF16 (Zen 4 and later, Cooper Lake, Sapphire Rapids and later): vdpbf16ps
/// multiplies pairs of bfloat16 and adds both products to a float lane.
struct avx512_bf16_isa : avx512_isa {};
struct neon_isa : generic_isa {};  ///< AArch64's Advanced SIMD (NEON), which every AArch64 CPU has

#if defined(HEED_SIMD_SCALAR)
/// The instruction set of the compile-time target, as a tag.
using target_isa = generic_isa;
#elif defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
#define HEED_SIMD_AVX512 1
#if defined(__AVX512BF16__)
#define HEED_SIMD_AVX512_BF16 1
using target_isa = avx512_bf16_isa;  ///< the target has AVX-512 (F, BW, DQ, VL) and AVX-512 BF16
#else
using target_isa = avx512_isa;  ///< the target has AVX-512 (F, BW, DQ, VL)
#endif
#elif defined(__AVX2__) && defined(__FMA__)
#define HEED_SIMD_AVX2 1
using target_isa = avx2_isa;  ///< the target has AVX2 and FMA
#elif defined(__aarch64__) && defined(__ARM_NEON)
#define HEED_SIMD_NEON 1
using target_isa = neon_isa;  ///< AArch64 with NEON (xsimd's neon64)
#else
using target_isa = generic_isa;  ///< neither
#if (defined(__x86_64__) || defined(_M_X64)) && defined(__SSE2__) && !defined(__AVX__)
#define HEED_SIMD_BASELINE_SSE2 1  // baseline x86-64 (to v2): xsimd's 4-float SSE batches
#endif
#if (defined(__x86_64__) || defined(_M_X64)) && !defined(HEED_ALLOW_BASELINE_ISA) && \
    !defined(HEED_DISPATCH_LEVEL_UNIT) && !defined(HEED_DISPATCH)
// A user's build without -march=native (or x86-64-v3/v4) runs heed's kernels on SSE2, several
// times slower (README, "Use it"): say so once per translation unit rather than be slow silently.
// Not with heed_dispatch (HEED_DISPATCH): attention, the GEMMs and the row operations run at the
// CPU's best level there (simd/kernel_table.hpp).
// gcc shows this even through -isystem, clang does not: the run-time notice of simd/cpu.hpp
// covers both.
#pragma message( \
    "heed: compiled for baseline x86-64 (no AVX2/FMA), so its kernels use SSE2 and run several times slower; compile with -march=native or -march=x86-64-v3 (or define HEED_ALLOW_BASELINE_ISA to silence this)")
#endif
#endif

/// True where bfloat16 attention tiles and GEMMs run on AVX-512 BF16 pair products (vdpbf16ps:
/// simd/attention_kernel.hpp, simd/gemm_kernel.hpp).
inline constexpr bool bf16_pair_products =
#if defined(HEED_SIMD_AVX512_BF16)
    true;
#else
    false;
#endif

/// True where Storage's products can run on pair products in this build: bfloat16 where
/// bf16_pair_products holds.
template <class Storage>
inline constexpr bool pairs_compiled_for = std::is_same_v<Storage, bfloat16>&& bf16_pair_products;

/// True where Storage's products run on pair products in this process: compiled for them
/// (pairs_compiled_for) and chosen for this CPU (bf16_pairs_chosen, simd/cpu.hpp). What the
/// attention scorer, its value product and PackedMatrix each decide once, when they are made.
template <class Storage>
[[nodiscard]] inline bool pairs_in_use() noexcept {
  if constexpr (pairs_compiled_for<Storage>)
    return bf16_pairs_chosen();
  else
    return false;
}

#if defined(HEED_SIMD_SCALAR)

/// False with the scalar fallback (batch<T> is T).
inline constexpr bool vectorized = false;
/// The xsimd architecture's name ("avx512bw", "fma3+avx2", ...), or "scalar".
inline constexpr const char* arch_name = "scalar";
/// The widest register of T: T itself in the scalar fallback.
template <class T>
using batch = T;
/// Lanes of batch<T>.
template <class T>
inline constexpr std::size_t width = 1;
/// A batch with every lane `value`.
template <class T>
[[nodiscard]] inline T broadcast(T value) noexcept {
  return value;
}
/// width<T> values from p (any alignment).
template <class T>
[[nodiscard]] inline T load(const T* p) noexcept {
  return *p;
}
/// width<T> values to p (any alignment).
template <class T>
inline void store(T* p, T v) noexcept {
  *p = v;
}
/// The sum of the lanes.
template <class T>
[[nodiscard]] inline T reduce_add(T v) noexcept {
  return v;
}
/// The largest lane.
template <class T>
[[nodiscard]] inline T reduce_max(T v) noexcept {
  return v;
}
/// Lane i: the sum of the lanes of rows[i], for width<T> rows (one row here).
template <class T>
[[nodiscard]] inline T reduce_add_rows(const T* rows) noexcept {
  return rows[0];
}

#else

/// The xsimd architecture heed's batches use: the widest the compile-time target has.
using arch = xsimd::default_arch;
inline constexpr bool vectorized = true;                ///< batches have several lanes
inline constexpr const char* arch_name = arch::name();  ///< e.g. "fma3+avx2", "avx512bw"
/// The widest register of T.
template <class T>
using batch = xsimd::batch<T, arch>;
/// Lanes of batch<T>.
template <class T>
inline constexpr std::size_t width = batch<T>::size;

/// A batch with every lane `value`.
template <class T>
[[nodiscard]] inline batch<T> broadcast(T value) noexcept {
  return batch<T>(value);
}
/// width<T> values from p (any alignment).
template <class T>
[[nodiscard]] inline batch<T> load(const T* p) noexcept {
  return batch<T>::load_unaligned(p);
}
/// width<T> values to p (any alignment).
template <class T>
inline void store(T* p, const batch<T>& v) noexcept {
  v.store_unaligned(p);
}

/// The sum of the lanes.
template <class T>
[[nodiscard]] inline T reduce_add(const batch<T>& v) noexcept {
#if XSIMD_VERSION_MAJOR >= 9
  return xsimd::reduce_add(v);
#else
  return xsimd::hadd(v);
#endif
}

/// Lane i: the sum of the lanes of rows[i], for width<T> rows (xsimd's haddp: a transpose of
/// pairwise adds, cheaper than width<T> separate reduce_add calls).
template <class T>
[[nodiscard]] inline batch<T> reduce_add_rows(const batch<T>* rows, generic_isa) noexcept {
  return xsimd::haddp(rows);
}

#if defined(__AVX512F__) && defined(__AVX512DQ__)
#include <immintrin.h>
// xsimd 8.1's AVX-512 haddp returns wrong sums (tests/simd/test_vector_ops.cpp, ReduceAddRows,
// fails with it on an AVX-512 machine), so on AVX-512 heed folds each row to 256 bits and sums
// eight rows at a time with AVX's horizontal adds.
[[nodiscard]] HEED_ALWAYS_INLINE batch<float> reduce_add_rows(const batch<float>* rows, avx512_isa) noexcept {
  __m256 folded[16];
  HEED_UNROLL(16)  // fully: at -O2 gcc kept `folded` (and the caller's rows) on the stack otherwise
  for (int r = 0; r < 16; ++r) {
    const __m512 row = rows[r];
    folded[r] = _mm256_add_ps(_mm512_castps512_ps256(row), _mm512_extractf32x8_ps(row, 1));
  }
  // lane i: the sum of the 8 lanes of r[i], i < 8
  const auto sum_rows8 = [](const __m256* r) {
    const __m256 s0123 = _mm256_hadd_ps(_mm256_hadd_ps(r[0], r[1]), _mm256_hadd_ps(r[2], r[3]));
    const __m256 s4567 = _mm256_hadd_ps(_mm256_hadd_ps(r[4], r[5]), _mm256_hadd_ps(r[6], r[7]));
    // s0123 = [lanes 0-3 of rows 0-3 | lanes 4-7 of rows 0-3], each summed; the same for 4-7
    return _mm256_add_ps(_mm256_permute2f128_ps(s0123, s4567, 0x20), _mm256_permute2f128_ps(s0123, s4567, 0x31));
  };
  return batch<float>(_mm512_insertf32x8(_mm512_castps256_ps512(sum_rows8(folded)), sum_rows8(folded + 8), 1));
}

[[nodiscard]] HEED_ALWAYS_INLINE batch<double> reduce_add_rows(const batch<double>* rows, avx512_isa) noexcept {
  __m256d folded[8];
  HEED_UNROLL(8)
  for (int r = 0; r < 8; ++r) {
    const __m512d row = rows[r];
    folded[r] = _mm256_add_pd(_mm512_castpd512_pd256(row), _mm512_extractf64x4_pd(row, 1));
  }
  // lane i: the sum of the 4 lanes of r[i], i < 4
  const auto sum_rows4 = [](const __m256d* r) {
    const __m256d s01 = _mm256_hadd_pd(r[0], r[1]), s23 = _mm256_hadd_pd(r[2], r[3]);
    return _mm256_add_pd(_mm256_permute2f128_pd(s01, s23, 0x20), _mm256_permute2f128_pd(s01, s23, 0x31));
  };
  return batch<double>(_mm512_insertf64x4(_mm512_castpd256_pd512(sum_rows4(folded)), sum_rows4(folded + 4), 1));
}
#endif

template <class T>
[[nodiscard]] HEED_ALWAYS_INLINE batch<T> reduce_add_rows(const batch<T>* rows) noexcept {
  return reduce_add_rows(rows, target_isa{});
}

/// The largest lane.
template <class T>
[[nodiscard]] inline T reduce_max(const batch<T>& v) noexcept {
#if XSIMD_VERSION_MAJOR >= 9
  return xsimd::reduce_max(v);
#else
  // A loop, not std::max_element: a level's object must not define std's templates.
  alignas(64) T lanes[batch<T>::size];
  v.store_aligned(lanes);
  T largest = lanes[0];
  for (std::size_t i = 1; i < batch<T>::size; ++i) {
    if (largest < lanes[i]) largest = lanes[i];
  }
  return largest;
#endif
}

/// fma, max, exp, tanh and erf lane by lane (xsimd's; tests/simd states their accuracy).
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
  if constexpr (std::is_same_v<T, double>) {
    // xsimd's double exp converts x to int64 lane by lane where the target has no vector
    // conversion (SSE2, AVX2), which is undefined for ±inf (UBSan; found by
    // tests/fuzz/fuzz_attention.cpp on a masked score) and for NaN (clang's UBSan,
    // float-cast-overflow). Clamped to ±800, past where exp rounds to 0 and overflows to inf,
    // the results are the same; a NaN lane is computed as 0 and put back after.
    const batch<T> lo(T(-800)), hi(T(800)), zero(T(0));
    const auto is_nan = x != x;
    const batch<T> clamped = xsimd::select(x < lo, lo, xsimd::select(x > hi, hi, x));
    return xsimd::select(is_nan, x, xsimd::exp(xsimd::select(is_nan, zero, clamped)));
  } else {
    return xsimd::exp(x);
  }
}
/// y where x >= cut (or x is NaN), else 0, lane by lane.
template <class T>
[[nodiscard]] inline batch<T> zero_below(const batch<T>& x, const batch<T>& cut, const batch<T>& y) noexcept {
  return xsimd::select(x < cut, batch<T>(T(0)), y);
}
template <class T>
[[nodiscard]] inline batch<T> tanh(const batch<T>& x) noexcept {
  return xsimd::tanh(x);
}
template <class T>
[[nodiscard]] inline batch<T> erf(const batch<T>& x) noexcept {
  return xsimd::erf(x);
}

/// exp(x) lane by lane for x <= 0, -inf and NaN (NaN): a softmax's exp(score - max), 0 below
/// softmax_floor<T>. The exp runs on x clamped to the floor, so that nothing it computes
/// underflows, and the lanes below it are set to 0 after (a NaN compares false: it stays).
template <class T>
[[nodiscard]] inline batch<T> softmax_exp(const batch<T>& x, generic_isa) noexcept {
  const batch<T> floor(softmax_floor<T>);
  return zero_below(x, floor, exp(xsimd::select(x < floor, floor, x)));
}

#if defined(__AVX512F__) && defined(__AVX512DQ__)
/// On AVX-512: n = round(x·log2 e), r = x - n·ln 2 in two steps (Cody & Waite), e^r by Cephes'
/// expf polynomial, then vscalefps for r·2^n. Above the floor 2^n is normal (n >= -93) and no
/// range tests or blends of a general exp are needed; the lanes below it are zeroed by the
/// vscalefps's mask. tests/simd/test_vector_ops checks it against std::exp over [-64, 0].
[[nodiscard]] inline batch<float> softmax_exp(const batch<float>& x, avx512_isa) noexcept {
  const __m512 floor = _mm512_set1_ps(softmax_floor<float>);
  const __mmask16 kept = _mm512_cmp_ps_mask(x, floor, _CMP_NLT_UQ);  // x >= floor, or NaN
  const __m512 v = _mm512_max_ps(floor, x);                          // a NaN x is the second operand: kept
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(v, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), v);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return batch<float>(_mm512_maskz_scalef_ps(kept, p, n));
}
#endif

template <class T>
[[nodiscard]] inline batch<T> softmax_exp(const batch<T>& x) noexcept {
  return softmax_exp(x, target_isa{});
}

#endif

}  // namespace heed::simd::inline HEED_SIMD_LEVEL_NAMESPACE
