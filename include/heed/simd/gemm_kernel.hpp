#pragma once
// The register level of heed's GEMM (kernels/gemm.hpp does the blocking and the threads):
//   GemmTile<Storage>     the tile sizes: an MR × NR block of C in registers, KC-deep blocks;
//   pack_a                A's rows in MR-row micro-panels, k-major inside each;
//   gemm_micro_kernel     one MR × NR tile of C from a packed A micro-panel and a packed W panel.
//
// The micro-kernel is written once over simd::batch: MR × 2 accumulators, MR = 12 where there
// are 32 vector registers (AVX-512), 6 otherwise, NR = 2 batches; one rank-1 update per k costs
// NR/width loads, MR broadcasts and MR·NR/width FMAs. Edge tiles (rows past m, columns past n)
// are computed in full on zero padding and stored partially. The bias and ReLU are applied in
// registers before the store.
//
// pack_a has a generic version and, for float on AVX-512, an overload that transposes 12 × 16
// blocks in registers (the target_isa tag picks it; see simd/arch.hpp), with the register
// transpose that packs Kᵀ for the attention micro-kernel (simd/detail/transpose.hpp).
//
// 16-bit storage (bfloat16, half): the tiles are those of the accumulator type (float); pack_a
// widens A as it packs it, and the micro-kernel widens each row of the (16-bit) W panel as it
// loads it (simd::load_widened), so C is computed in float. kernels/gemm.hpp keeps that C in a
// float scratch until its last k block.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "heed/core/scalar.hpp"
#include "heed/core/shape.hpp"
#include "heed/simd/arch.hpp"
#include "heed/simd/convert.hpp"

#if defined(HEED_SIMD_AVX512)
#include <immintrin.h>
#endif

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/simd/detail/transpose.hpp"

namespace heed::simd::inline HEED_SIMD_LEVEL_NAMESPACE {

/// The blocking of heed's GEMM for storage type Storage (a 16-bit type blocks as its accumulator, float).
template <class Storage>
struct GemmTile {
  static constexpr std::size_t lanes = width<accumulator_t<Storage>>;  ///< accumulator values per vector
  static constexpr index_t nr = 2 * static_cast<index_t>(lanes);       ///< columns of C per micro-kernel
  static constexpr index_t mr = lanes >= 16 ? 12 : 6;                  ///< rows of C per micro-kernel
  static constexpr index_t kc = 192;                                   ///< depth of one block
  static constexpr index_t mc = 16 * mr;                               ///< rows of A packed at once
};

/// The bytes [begin, end) of the next panel of W that the `part`-th of `parts` micro-tiles of a
/// panel asks for while it runs (its equal share, in whole cache lines): by the time the next
/// panel's micro-tiles start, it is in the first-level cache.
struct PanelShare {
  const char* begin = nullptr;  ///< the share's first byte, at the start of a cache line
  const char* end = nullptr;    ///< one past its last byte
};

/// The share of the `part`-th of `parts` micro-tiles in the n values of the next panel `next`:
/// from the start of the line that holds value n·part/parts to value n·(part+1)/parts, so that the
/// shares cover the panel without a gap (tested by PanelShare.TheTilesSharesCoverTheNextPanelInWholeLines);
/// empty where there is no next panel (next null).
template <class T>
[[nodiscard]] inline PanelShare panel_share(const T* next, index_t n, index_t part, index_t parts) noexcept {
  if (next == nullptr) return {};
  constexpr index_t line = 64;
  const char* bytes = reinterpret_cast<const char*>(next);
  const index_t size = n * static_cast<index_t>(sizeof(T));
  return {bytes + size * part / parts / line * line, bytes + size * (part + 1) / parts};
}

/// A micro-kernel's prefetches, spread over its k loop: at each of `steps` steps (one per
/// `every` values of k) it asks for the next lines of its share of W's next panel (all of it
/// by the last step) and for one row of its C tile (and of the addend src), so that C's lines
/// are there for the stores after the k loop. Spread, not all at the kernel's start: when W
/// streams from memory (a model's weights do not fit the caches), a burst of 24 prefetches
/// waits for line fill buffers, and the core with it (9% of ViT-B's forward pass on an Intel
/// Xeon; docs/decisions.md, "The GEMM's prefetches spread over the k loop").
template <class T>
class TilePrefetcher {
 public:
  static constexpr index_t every = 8;  ///< values of k between two steps

  /// For a tile of m_valid rows of c (and of src, unless null or c) of nr values each and a
  /// share of the next panel, asked for over `steps` calls of step().
  TilePrefetcher(PanelShare share, index_t steps, T* c, index_t ldc, const T* src, index_t lds, index_t m_valid,
                 index_t nr) noexcept
      : share_(share.begin),
        size_(share.end - share.begin),
        c_(c),
        src_(src),
        ldc_(ldc),
        lds_(lds),
        rows_(m_valid),
        nr_(nr) {
    const index_t lines = (size_ + line - 1) / line;
    per_step_ = (lines + std::max<index_t>(1, steps) - 1) / std::max<index_t>(1, steps);
  }

  /// One step: the next lines of the share, the next row of C.
  void step() noexcept {
    for (index_t i = 0; i < per_step_ && asked_ < size_; ++i, asked_ += line) prefetch(share_ + asked_);
    if (row_ < rows_) {
      if (src_) {
        prefetch(src_ + row_ * lds_);
        prefetch(src_ + row_ * lds_ + nr_ - 1);
      }
      if (src_ != c_) {
        prefetch_for_write(c_ + row_ * ldc_);
        prefetch_for_write(c_ + row_ * ldc_ + nr_ - 1);
      }
      ++row_;
    }
  }

 private:
  static constexpr index_t line = 64;
  const char* share_;  // the share's first byte; asked_ of its size_ bytes asked for so far
  index_t size_, asked_ = 0;
  T* c_;
  const T* src_;
  index_t ldc_, lds_, rows_, nr_;
  index_t row_ = 0, per_step_ = 0;
};

/// gemm_micro_kernel for a single row of C (a decoding step's GEMV): the same result from the
/// row's kc values a[0, kc) read as they are (no packed micro-panel: no MR - 1 rows of padding to
/// write and skip), its k loop split over four chains of accumulators so that the FMAs do not
/// wait on each other.
template <class Acc, class B = Acc>
inline void gemm_row_kernel(index_t kc, const Acc* a, const B* b, Acc* c, const Acc* src, const Acc* bias, bool relu,
                            index_t n_valid) noexcept {
  constexpr index_t NR = GemmTile<Acc>::nr, W = static_cast<index_t>(width<Acc>);
  const batch<Acc> zero = broadcast(Acc(0));
  batch<Acc> acc[8] = {zero, zero, zero, zero, zero, zero, zero, zero};
  index_t kk = 0;
  for (; kk + 4 <= kc; kk += 4) {
    HEED_UNROLL(4)  // fully: the accumulators stay in registers at -O2 too
    for (index_t u = 0; u < 4; ++u) {
      const batch<Acc> ak = broadcast(a[kk + u]);
      acc[2 * u] = fma(ak, load_widened(b + (kk + u) * NR), acc[2 * u]);
      acc[2 * u + 1] = fma(ak, load_widened(b + (kk + u) * NR + W), acc[2 * u + 1]);
    }
  }
  for (; kk < kc; ++kk) {
    const batch<Acc> ak = broadcast(a[kk]);
    acc[0] = fma(ak, load_widened(b + kk * NR), acc[0]);
    acc[1] = fma(ak, load_widened(b + kk * NR + W), acc[1]);
  }
  batch<Acc> lo = (acc[0] + acc[2]) + (acc[4] + acc[6]), hi = (acc[1] + acc[3]) + (acc[5] + acc[7]);
  if (bias) {
    lo = lo + load(bias);
    hi = hi + load(bias + W);
  }
  alignas(64) Acc row[static_cast<std::size_t>(NR)];
  store(row, lo);
  store(row + W, hi);
  for (index_t j = 0; j < n_valid; ++j) {
    const Acc value = (src ? src[j] : Acc(0)) + row[j];
    c[j] = relu && value < Acc(0) ? Acc(0) : value;
  }
}

/// One MR × NR tile: c[r, j] = (src ? src[r, j] : 0) + sum_kk a[kk · MR + r] · b[kk · NR + j]
/// (+ bias[j], then max(·, 0) if relu) for kk < kc; src has leading dimension lds and may be c.
/// Only rows < m_valid and columns < n_valid are read from src and written. Acc is the
/// accumulator type; b may be stored in a 16-bit type B, widened as it is loaded. While it runs
/// it asks for `ahead` (its share of W's next panel) and for its tile of C (TilePrefetcher).
template <class Acc, class B = Acc>
inline void gemm_micro_kernel(index_t kc, const Acc* a, const B* b, Acc* c, index_t ldc, const Acc* src, index_t lds,
                              const Acc* bias, bool relu, index_t m_valid, index_t n_valid,
                              PanelShare ahead = {}) noexcept {
  static_assert(std::is_same_v<accumulator_t<B>, Acc>,
                "the W panel must be stored as Acc or as a 16-bit type widening to Acc");
  constexpr index_t MR = GemmTile<Acc>::mr, NR = GemmTile<Acc>::nr, W = static_cast<index_t>(width<Acc>);
  constexpr index_t every = TilePrefetcher<Acc>::every;
  TilePrefetcher<Acc> prefetcher(ahead, (kc + every - 1) / every, c, ldc, src, lds, m_valid, NR);
  batch<Acc> acc0[static_cast<std::size_t>(MR)], acc1[static_cast<std::size_t>(MR)];
  const batch<Acc> zero = broadcast(Acc(0));
  const batch<Acc> init0 = bias ? load(bias) : zero, init1 = bias ? load(bias + W) : zero;
  for (index_t r = 0; r < MR; ++r) acc0[r] = init0, acc1[r] = init1;
  for (index_t k0 = 0; k0 < kc; k0 += every) {
    prefetcher.step();
    const index_t k_end = std::min(kc, k0 + every);
    HEED_UNROLL(8)
    for (index_t kk = k0; kk < k_end; ++kk) {  // c += a[:, kk] · b[kk, :]
      const batch<Acc> b0 = load_widened(b + kk * NR), b1 = load_widened(b + kk * NR + W);
      const Acc* ak = a + kk * MR;
      HEED_UNROLL(16)  // fully: the accumulators stay in registers at -O2 too
      for (index_t r = 0; r < MR; ++r) {
        const batch<Acc> ar = broadcast(ak[r]);
        acc0[r] = fma(ar, b0, acc0[r]);
        acc1[r] = fma(ar, b1, acc1[r]);
      }
    }
  }
  if (m_valid == MR && n_valid == NR) {
    for (index_t r = 0; r < MR; ++r) {
      Acc* row = c + r * ldc;
      if (src) {
        acc0[r] = acc0[r] + load(src + r * lds);
        acc1[r] = acc1[r] + load(src + r * lds + W);
      }
      if (relu) {
        acc0[r] = max(acc0[r], zero);
        acc1[r] = max(acc1[r], zero);
      }
      store(row, acc0[r]);
      store(row + W, acc1[r]);
    }
    return;
  }
  alignas(64) Acc tile[static_cast<std::size_t>(MR * NR)];
  for (index_t r = 0; r < MR; ++r) {
    store(tile + r * NR, acc0[r]);
    store(tile + r * NR + W, acc1[r]);
  }
  for (index_t r = 0; r < m_valid; ++r)
    for (index_t j = 0; j < n_valid; ++j) {
      const Acc value = (src ? src[r * lds + j] : Acc(0)) + tile[r * NR + j];
      c[r * ldc + j] = relu && value < Acc(0) ? Acc(0) : value;
    }
}

/// Values past the end of its output that pack_a may write (the AVX-512 transpose's spill):
/// a buffer for pack_a holds rows rounded up to MR, times kc, plus this many.
inline constexpr index_t pack_a_slack = 16;

/// One micro-panel: rows [0, mr) of a (leading dimension lda), depth [0, kc), stored k-major
/// as out[kk · MR + r], rows mr..MR-1 zero, widened to the accumulator type. The generic version.
template <class Storage>
inline void pack_a_panel(const Storage* a, index_t lda, index_t mr, index_t kc, accumulator_t<Storage>* out,
                         generic_isa) noexcept {
  // A partial panel is zeroed whole first, then its rows written. Zeroing rows mr..MR-1 column by
  // column is a memset of a few values per column, which gcc's tuning for AMD Zen 3
  // (-march=znver3) emits as `rep stosd`: packing a decoding step's one row took 4× as long as with
  // generic tuning (docs/decisions.md, "Zen 3: -march=native slower than x86-64-v3").
  constexpr index_t MR = GemmTile<Storage>::mr;
  if (mr < MR)  // a plain loop, not std::fill_n: a level object defines no std:: symbol of its own
    for (index_t i = 0; i < kc * MR; ++i) out[i] = accumulator_t<Storage>(0);
  for (index_t kk = 0; kk < kc; ++kk)
    for (index_t r = 0; r < mr; ++r) out[kk * MR + r] = widen(a[r * lda + kk]);
}

#if defined(HEED_SIMD_AVX512)
/// The float micro-panel on AVX-512 (MR = 12): full panels go through 12 × 16 blocks
/// transposed in registers (four zero rows make them 16 × 16); each 16-wide store spills 4 values
/// past its column, which the next column's store overwrites (the last one's land in the next
/// micro-panel or in pack_a_slack). Partial panels and the k tail take the generic loop.
inline void pack_a_panel(const float* a, index_t lda, index_t mr, index_t kc, float* out, avx512_isa) noexcept {
  static_assert(GemmTile<float>::mr == 12);
  index_t kk0 = 0;
  if (mr == 12)
    for (; kk0 + 16 <= kc; kk0 += 16) {
      const float* src = a + kk0;
      float* dst = out + kk0 * 12;
      __m512 r[16];
      for (int i = 0; i < 12; ++i) r[i] = _mm512_loadu_ps(src + i * lda);
      for (int i = 12; i < 16; ++i) r[i] = _mm512_setzero_ps();
      detail::transpose_in_registers(r);
      for (int j = 0; j < 16; ++j) _mm512_storeu_ps(dst + j * 12, r[j]);
    }
  pack_a_panel(a + kk0, lda, mr, kc - kk0, out + kk0 * 12, generic_isa{});
}
#endif

/// A[rows, 0 : kc] (leading dimension lda) → MR-row micro-panels, one after another, each
/// k-major (zero rows past `rows`), in the accumulator type: what gemm_micro_kernel reads as `a`.
template <class Storage>
inline void pack_a(const Storage* a, index_t lda, index_t rows, index_t kc, accumulator_t<Storage>* out) noexcept {
  constexpr index_t MR = GemmTile<Storage>::mr;
  for (index_t i0 = 0; i0 < rows; i0 += MR, out += kc * MR)
    pack_a_panel(a + i0 * lda, lda, std::min(MR, rows - i0), kc, out, target_isa{});
}

// ---------------------------------------------------------------------------------------------
// bfloat16 pair products (AVX-512 BF16's vdpbf16ps, described in simd/attention_kernel.hpp):
// where simd::bf16_pair_products holds, a bfloat16 PackedMatrix keeps k in pairs inside each
// panel (w[j, 2p], w[j, 2p + 1] side by side), A's micro-panels are packed the same way
// (pack_a_pairs, still 16-bit), and gemm_pair_micro_kernel computes the float tile of C with
// 2·MR·NR multiply-adds per pair step. An odd k is padded with a zero.

/// Values of k a pair-packed block of kc holds: kc rounded up to even.
[[nodiscard]] constexpr index_t pair_depth(index_t kc) noexcept {
  return (kc + 1) / 2 * 2;
}

/// A[rows, 0 : kc] (leading dimension lda) → MR-row micro-panels of pair_depth(kc) · MR values,
/// each out[(kk / 2) · 2MR + 2r + kk % 2] = a[r, kk], zero past `rows` and past kc.
inline void pack_a_pairs(const bfloat16* a, index_t lda, index_t rows, index_t kc, bfloat16* out) noexcept {
  constexpr index_t MR = GemmTile<float>::mr;
  const index_t depth = pair_depth(kc), whole = kc / 2;  // pairs in all, pairs without padding
  for (index_t i0 = 0; i0 < rows; i0 += MR, out += depth * MR) {
    const index_t mr = std::min(MR, rows - i0);
    for (index_t r = 0; r < mr; ++r) {  // a row's pairs are 32 bits each: copied as such
      const bfloat16* row = a + (i0 + r) * lda;
      for (index_t p = 0; p < whole; ++p) std::memcpy(out + p * 2 * MR + 2 * r, row + 2 * p, 2 * sizeof(bfloat16));
      if (kc % 2 != 0) {
        out[whole * 2 * MR + 2 * r] = row[kc - 1];
        out[whole * 2 * MR + 2 * r + 1] = bfloat16(0.0f);
      }
    }
    for (index_t r = mr; r < MR; ++r)
      for (index_t p = 0; p < depth / 2; ++p) out[p * 2 * MR + 2 * r] = out[p * 2 * MR + 2 * r + 1] = bfloat16(0.0f);
  }
}

/// The generic form of gemm_pair_micro_kernel: the same sums, value by value.
inline void gemm_pair_micro_kernel(index_t pairs, const bfloat16* a, const bfloat16* b, float* c, index_t ldc,
                                   const float* src, index_t lds, const float* bias, bool relu, index_t m_valid,
                                   index_t n_valid, PanelShare /*ahead*/, generic_isa) noexcept {
  constexpr index_t MR = GemmTile<float>::mr, NR = GemmTile<float>::nr;
  for (index_t r = 0; r < m_valid; ++r)
    for (index_t j = 0; j < n_valid; ++j) {
      float sum = bias ? bias[j] : 0.0f;
      for (index_t p = 0; p < pairs; ++p)
        sum += static_cast<float>(a[p * 2 * MR + 2 * r]) * static_cast<float>(b[p * 2 * NR + 2 * j]) +
               static_cast<float>(a[p * 2 * MR + 2 * r + 1]) * static_cast<float>(b[p * 2 * NR + 2 * j + 1]);
      const float value = (src ? src[r * lds + j] : 0.0f) + sum;
      c[r * ldc + j] = relu && value < 0.0f ? 0.0f : value;
    }
}

#if defined(HEED_SIMD_AVX512_BF16)
/// gemm_micro_kernel on pair products: c[r, j] = (src ? src[r, j] : 0) + Σ_kk a[r, kk]·w[j, kk]
/// (+ bias[j], then max(·, 0) if relu) over `pairs` pairs of k, a from pack_a_pairs, b a
/// pair-packed PackedMatrix panel; rows < m_valid and columns < n_valid are read and written.
inline void gemm_pair_micro_kernel(index_t pairs, const bfloat16* a, const bfloat16* b, float* c, index_t ldc,
                                   const float* src, index_t lds, const float* bias, bool relu, index_t m_valid,
                                   index_t n_valid, PanelShare ahead, avx512_bf16_isa) noexcept {
  constexpr index_t MR = GemmTile<float>::mr, NR = GemmTile<float>::nr;
  static_assert(NR == 32, "two vectors of 16 floats per row of C");
  constexpr index_t every = TilePrefetcher<float>::every / 2;  // pairs between two prefetch steps
  TilePrefetcher<float> prefetcher(ahead, (pairs + every - 1) / every, c, ldc, src, lds, m_valid, NR);
  const __m512 init0 = bias ? _mm512_loadu_ps(bias) : _mm512_setzero_ps();
  const __m512 init1 = bias ? _mm512_loadu_ps(bias + 16) : _mm512_setzero_ps();
  __m512 acc0[static_cast<std::size_t>(MR)], acc1[static_cast<std::size_t>(MR)];
  for (index_t r = 0; r < MR; ++r) acc0[r] = init0, acc1[r] = init1;
  for (index_t p0 = 0; p0 < pairs; p0 += every) {
    prefetcher.step();
    const index_t p_end = std::min(pairs, p0 + every);
    HEED_UNROLL(4)
    for (index_t p = p0; p < p_end; ++p) {
      const __m512i b0 = _mm512_loadu_si512(b + p * 2 * NR), b1 = _mm512_loadu_si512(b + p * 2 * NR + NR);
      const bfloat16* ap = a + p * 2 * MR;
      HEED_UNROLL(16)
      for (index_t r = 0; r < MR; ++r) {
        std::uint32_t both;
        std::memcpy(&both, ap + 2 * r, sizeof both);
        const __m512i ar = _mm512_set1_epi32(static_cast<int>(both));
        acc0[r] = _mm512_dpbf16_ps(acc0[r], (__m512bh)ar, (__m512bh)b0);
        acc1[r] = _mm512_dpbf16_ps(acc1[r], (__m512bh)ar, (__m512bh)b1);
      }
    }
  }
  const __m512 zero = _mm512_setzero_ps();
  if (m_valid == MR && n_valid == NR) {
    for (index_t r = 0; r < MR; ++r) {
      if (src) {
        acc0[r] = _mm512_add_ps(acc0[r], _mm512_loadu_ps(src + r * lds));
        acc1[r] = _mm512_add_ps(acc1[r], _mm512_loadu_ps(src + r * lds + 16));
      }
      if (relu) {
        acc0[r] = _mm512_max_ps(acc0[r], zero);
        acc1[r] = _mm512_max_ps(acc1[r], zero);
      }
      _mm512_storeu_ps(c + r * ldc, acc0[r]);
      _mm512_storeu_ps(c + r * ldc + 16, acc1[r]);
    }
    return;
  }
  alignas(64) float tile[static_cast<std::size_t>(MR * NR)];
  for (index_t r = 0; r < MR; ++r) {
    _mm512_store_ps(tile + r * NR, acc0[r]);
    _mm512_store_ps(tile + r * NR + 16, acc1[r]);
  }
  for (index_t r = 0; r < m_valid; ++r)
    for (index_t j = 0; j < n_valid; ++j) {
      const float value = (src ? src[r * lds + j] : 0.0f) + tile[r * NR + j];
      c[r * ldc + j] = relu && value < 0.0f ? 0.0f : value;
    }
}
#endif

/// gemm_row_kernel on pair products (one row of C, a decoding step's GEMV): a from pack_a_pairs
/// (row 0 of its micro-panel), b a pair-packed panel; four chains of pairs, summed at the end.
inline void gemm_pair_row_kernel(index_t pairs, const bfloat16* a, const bfloat16* b, float* c, const float* src,
                                 const float* bias, bool relu, index_t n_valid) noexcept {
  constexpr index_t NR = GemmTile<float>::nr;
#if defined(HEED_SIMD_AVX512_BF16)
  constexpr index_t MR = GemmTile<float>::mr;
  __m512 acc[8];
  for (auto& x : acc) x = _mm512_setzero_ps();
  index_t p = 0;
  const auto step = [&](index_t q, int chain) {
    std::uint32_t both;
    std::memcpy(&both, a + q * 2 * MR, sizeof both);
    const __m512i ar = _mm512_set1_epi32(static_cast<int>(both));
    acc[2 * chain] = _mm512_dpbf16_ps(acc[2 * chain], (__m512bh)ar, (__m512bh)_mm512_loadu_si512(b + q * 2 * NR));
    acc[2 * chain + 1] =
        _mm512_dpbf16_ps(acc[2 * chain + 1], (__m512bh)ar, (__m512bh)_mm512_loadu_si512(b + q * 2 * NR + NR));
  };
  for (; p + 4 <= pairs; p += 4)
    for (int u = 0; u < 4; ++u) step(p + u, u);
  for (; p < pairs; ++p) step(p, 0);
  __m512 lo = _mm512_add_ps(_mm512_add_ps(acc[0], acc[2]), _mm512_add_ps(acc[4], acc[6]));
  __m512 hi = _mm512_add_ps(_mm512_add_ps(acc[1], acc[3]), _mm512_add_ps(acc[5], acc[7]));
  if (bias) {
    lo = _mm512_add_ps(lo, _mm512_loadu_ps(bias));
    hi = _mm512_add_ps(hi, _mm512_loadu_ps(bias + 16));
  }
  alignas(64) float row[static_cast<std::size_t>(NR)];
  _mm512_store_ps(row, lo);
  _mm512_store_ps(row + 16, hi);
  for (index_t j = 0; j < n_valid; ++j) {
    const float value = (src ? src[j] : 0.0f) + row[j];
    c[j] = relu && value < 0.0f ? 0.0f : value;
  }
#else
  gemm_pair_micro_kernel(pairs, a, b, c, NR, src, NR, bias, relu, 1, n_valid, PanelShare{}, generic_isa{});
#endif
}

/// gemm_pair_micro_kernel on the compile-time target.
inline void gemm_pair_micro_kernel(index_t pairs, const bfloat16* a, const bfloat16* b, float* c, index_t ldc,
                                   const float* src, index_t lds, const float* bias, bool relu, index_t m_valid,
                                   index_t n_valid, PanelShare ahead = {}) noexcept {
  gemm_pair_micro_kernel(pairs, a, b, c, ldc, src, lds, bias, relu, m_valid, n_valid, ahead, target_isa{});
}

}  // namespace heed::simd::inline HEED_SIMD_LEVEL_NAMESPACE
