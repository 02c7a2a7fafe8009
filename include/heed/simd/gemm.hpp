#pragma once
// C = A · Wᵀ (+ C) for nn.Linear: A [m, k] row-major, W [n, k] row-major (PyTorch's layout),
// with W packed once, when the weights are loaded. The structure is the BLIS/GotoBLAS one:
//
//   for each block of MC rows (in parallel):
//     for each k block of KC:   pack A[rows, k block] into MR-row micro-panels (sized for L2)
//       for each NR-column panel of W:          (its KC × NR micro-panel stays in L1)
//         for each MR-row micro-panel:  the micro-kernel: an MR × NR tile of C in registers,
//                                       one rank-1 update per k (NR/width loads, MR broadcasts,
//                                       MR·NR/width FMAs)
//
// C and W come from L3 inside a model (the other layers' data pushes them out of L2), so the
// micro-kernel prefetches its C tile before its k loop, and each micro-tile of a panel
// prefetches a share of the next panel of W: 13% off a TransformerEncoderLayer (B 8, L 128).
//
// The micro-kernel is written once over simd::batch: MR × 2 accumulators, MR = 12 where there
// are 32 vector registers (AVX-512), 6 otherwise, NR = 2 batches. Edge tiles (rows past m,
// columns past n) are computed in full on zero padding and stored partially. The bias and
// ReLU are applied in registers before the last store; another epilogue (GELU) runs on each
// tile row right after it, while the row is in L1, instead of another pass over C.

#include <algorithm>
#include <cstddef>
#include <type_traits>
#include <vector>

#include "heed/core/parallel.hpp"
#include "heed/core/shape.hpp"
#include "heed/simd/arch.hpp"

#if defined(__AVX512F__) && !defined(HEED_SIMD_SCALAR)
#include <immintrin.h>
#endif

namespace heed::simd {

template <class T>
struct GemmTile {
  static constexpr index_t nr = 2 * static_cast<index_t>(width<T>);  ///< columns of C per micro-kernel
  static constexpr index_t mr = width<T> >= 16 ? 12 : 6;             ///< rows of C per micro-kernel
  static constexpr index_t kc = 192;                                 ///< depth of one block
  static constexpr index_t mc = 16 * mr;                             ///< rows of A packed at once
};

/// W [n, k] packed for gemm_nt: for each NR-column panel, k rows of NR values (Wᵀ), the
/// columns past n zero; and the bias [n], if any, padded the same way. Built once; read by
/// every call.
template <class T>
class PackedMatrix {
 public:
  PackedMatrix() = default;
  PackedMatrix(const T* w, index_t n, index_t k, const T* bias = nullptr) : n_(n), k_(k) {
    constexpr index_t nr = GemmTile<T>::nr;
    const index_t panels = (n + nr - 1) / nr;
    data_.assign(static_cast<std::size_t>(panels * k * nr), T(0));
    if (bias) {
      bias_.assign(static_cast<std::size_t>(panels * nr), T(0));
      std::copy(bias, bias + n, bias_.begin());
    }
    for (index_t p = 0; p < panels; ++p)
      for (index_t j = 0; j < nr && p * nr + j < n; ++j) {
        const T* row = w + (p * nr + j) * k;
        T* dst = data_.data() + p * k * nr + j;
        for (index_t kk = 0; kk < k; ++kk) dst[kk * nr] = row[kk];
      }
  }

  [[nodiscard]] index_t rows() const noexcept { return n_; }
  [[nodiscard]] index_t cols() const noexcept { return k_; }
  [[nodiscard]] bool empty() const noexcept { return data_.empty(); }
  /// Panel p from depth k0 on: (k - k0) × NR values.
  [[nodiscard]] const T* panel(index_t p, index_t k0) const noexcept {
    return data_.data() + (p * k_ + k0) * GemmTile<T>::nr;
  }
  /// The NR bias values of panel p, or nullptr without a bias.
  [[nodiscard]] const T* bias(index_t p) const noexcept {
    return bias_.empty() ? nullptr : bias_.data() + p * GemmTile<T>::nr;
  }

 private:
  index_t n_ = 0, k_ = 0;
  std::vector<T> data_, bias_;
};

/// What gemm_nt does besides the product: add to C, or to another matrix of C's shape (a
/// residual connection: C = D + A·Wᵀ without copying D into C first), and after the last k
/// block add the bias (when W was packed with one) and apply ReLU, in registers.
template <class T>
struct GemmOptions {
  bool accumulate = false;    ///< C += A·Wᵀ (ignored when there is an addend)
  const T* addend = nullptr;  ///< C = addend + A·Wᵀ: row-major [m, n] with leading dimension ld_addend (may be C)
  index_t ld_addend = 0;
  bool relu = false;
  int threads = 0;  ///< as parallel_for takes it (0: heed::num_threads())
};

namespace detail {

// One MR × NR tile: c[r, j] = (src ? src[r, j] : 0) + sum_kk a[kk · MR + r] · b[kk · NR + j]
// (+ bias[j], then max(·, 0) if relu) for kk < kc; src has leading dimension lds and may be c.
// Only rows < m_valid and columns < n_valid are read from src and written.
template <class T>
inline void gemm_micro_kernel(index_t kc, const T* a, const T* b, T* c, index_t ldc, const T* src, index_t lds,
                              const T* bias, bool relu, index_t m_valid, index_t n_valid) noexcept {
  constexpr index_t MR = GemmTile<T>::mr, NR = GemmTile<T>::nr, W = static_cast<index_t>(width<T>);
  // The tile of C (and of the addend) is needed only after the k loop, and it is usually in L3
  // by then: ask for its lines now, so that the loads at the end do not wait for them.
  for (index_t r = 0; r < m_valid; ++r) {
    if (src) {
      prefetch(src + r * lds);
      prefetch(src + r * lds + NR - 1);
    }
    if (src != c) {
      prefetch_for_write(c + r * ldc);
      prefetch_for_write(c + r * ldc + NR - 1);
    }
  }
  batch<T> acc0[static_cast<std::size_t>(MR)], acc1[static_cast<std::size_t>(MR)];
  const batch<T> zero = broadcast(T(0));
  const batch<T> init0 = bias ? load(bias) : zero, init1 = bias ? load(bias + W) : zero;
  for (index_t r = 0; r < MR; ++r) acc0[r] = init0, acc1[r] = init1;
  for (index_t kk = 0; kk < kc; ++kk) {
    const batch<T> b0 = load(b + kk * NR), b1 = load(b + kk * NR + W);
    const T* ak = a + kk * MR;
    for (index_t r = 0; r < MR; ++r) {
      const batch<T> ar = broadcast(ak[r]);
      acc0[r] = fma(ar, b0, acc0[r]);
      acc1[r] = fma(ar, b1, acc1[r]);
    }
  }
  if (m_valid == MR && n_valid == NR) {
    for (index_t r = 0; r < MR; ++r) {
      T* row = c + r * ldc;
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
  alignas(64) T tile[static_cast<std::size_t>(MR * NR)];
  for (index_t r = 0; r < MR; ++r) {
    store(tile + r * NR, acc0[r]);
    store(tile + r * NR + W, acc1[r]);
  }
  for (index_t r = 0; r < m_valid; ++r)
    for (index_t j = 0; j < n_valid; ++j) {
      const T value = (src ? src[r * lds + j] : T(0)) + tile[r * NR + j];
      c[r * ldc + j] = relu && value < T(0) ? T(0) : value;
    }
}

// Share `part` of `parts` of the prefetches for the n values from p on: each micro-tile of a
// panel fetches its share of the next panel of W, which is otherwise read from L3 on first use.
template <class T>
inline void prefetch_share(const T* p, index_t n, index_t part, index_t parts) noexcept {
  constexpr index_t line = 64;
  const char* bytes = reinterpret_cast<const char*>(p);
  const index_t size = n * static_cast<index_t>(sizeof(T));
  const index_t from = size * part / parts / line * line, to = size * (part + 1) / parts;
  for (index_t offset = from; offset < to; offset += line) prefetch(bytes + offset);
}

#if defined(__AVX512F__) && !defined(HEED_SIMD_SCALAR)
// 12 rows × 16 columns of A, transposed in registers and stored as 16 columns of 12 values:
// out[j · 12 + r] = a[r · lda + j]. Each 16-wide store spills 4 values past its column; the
// next column's store overwrites them, and the last one's land in the next micro-panel (or in
// the buffer's slack, pack_a_slack). About twice the scalar loop's speed (docs/decisions.md).
inline void transpose_12x16(const float* a, index_t lda, float* out) noexcept {
  __m512 r[16], t[16];
  for (int i = 0; i < 12; ++i) r[i] = _mm512_loadu_ps(a + i * lda);
  for (int i = 12; i < 16; ++i) r[i] = _mm512_setzero_ps();
  for (int i = 0; i < 16; i += 2) {  // pairs of rows interleaved
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  const auto pd = [](__m512 x) { return _mm512_castps_pd(x); };
  for (int i = 0; i < 16; i += 4) {  // then pairs of pairs: 4 rows of one column per 128-bit lane
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(t[i]), pd(t[i + 2])));
    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(t[i]), pd(t[i + 2])));
    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(t[i + 1]), pd(t[i + 3])));
    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(t[i + 1]), pd(t[i + 3])));
  }
  for (int j = 0; j < 4; ++j) {  // then the four row groups' lanes gathered per column
    const __m512 b0 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x44), b1 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xEE);
    const __m512 b2 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x44);
    const __m512 b3 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xEE);
    t[j] = _mm512_shuffle_f32x4(b0, b2, 0x88);
    t[4 + j] = _mm512_shuffle_f32x4(b0, b2, 0xDD);
    t[8 + j] = _mm512_shuffle_f32x4(b1, b3, 0x88);
    t[12 + j] = _mm512_shuffle_f32x4(b1, b3, 0xDD);
  }
  for (int j = 0; j < 16; ++j) _mm512_storeu_ps(out + j * 12, t[j]);
}
#endif

// Values past its end that pack_a may write (transpose_12x16's spill).
inline constexpr index_t pack_a_slack = 16;

// A[rows, k0 : k0 + kc] → MR-row micro-panels, kk-major inside each (zero rows past `rows`).
template <class T>
inline void pack_a(const T* a, index_t lda, index_t rows, index_t kc, T* out) noexcept {
  constexpr index_t MR = GemmTile<T>::mr;
  for (index_t i0 = 0; i0 < rows; i0 += MR) {
    const index_t mr = std::min(MR, rows - i0);
    index_t kk0 = 0;
#if defined(__AVX512F__) && !defined(HEED_SIMD_SCALAR)
    if constexpr (std::is_same_v<T, float> && MR == 12)
      if (mr == MR)
        for (; kk0 + 16 <= kc; kk0 += 16) transpose_12x16(a + i0 * lda + kk0, lda, out + kk0 * MR);
#endif
    for (index_t kk = kk0; kk < kc; ++kk) {
      for (index_t r = 0; r < mr; ++r) out[kk * MR + r] = a[(i0 + r) * lda + kk];
      for (index_t r = mr; r < MR; ++r) out[kk * MR + r] = T(0);
    }
    out += kc * MR;
  }
}

}  // namespace detail

/// An epilogue that does nothing.
struct NoEpilogue {
  template <class T>
  void operator()(T*, index_t, index_t) const noexcept {}
};

/// C [m, n] = (C or D or 0) + A [m, k] · Wᵀ (+ bias, ReLU: see GemmOptions), W packed; A and C row-major
/// with leading dimensions lda, ldc. Then epilogue(row, col0, count) for every finished segment
/// c[i, col0 : col0 + count], while it is in L1 (e.g. GELU). Blocks of rows run in parallel
/// (each worker packs its own A block).
template <class T, class Epilogue = NoEpilogue>
void gemm_nt(const T* a, index_t lda, index_t m, const PackedMatrix<T>& w, T* c, index_t ldc,
             const GemmOptions<T>& options = {}, const Epilogue& epilogue = {}) {
  using Tile = GemmTile<T>;
  constexpr index_t MR = Tile::mr, NR = Tile::nr, KC = Tile::kc, MC = Tile::mc;
  const index_t n = w.rows(), k = w.cols();
  const index_t panels = (n + NR - 1) / NR, row_blocks = (m + MC - 1) / MC;
  const int threads = options.threads > 0 ? options.threads : num_threads();
  parallel_for(row_blocks, static_cast<int>(std::min<index_t>(threads, row_blocks)), [&](index_t block, int) {
    // The packed A block lives as long as the thread: no allocation (and no page faults) per call.
    thread_local std::vector<T> packed;
    if (packed.size() < static_cast<std::size_t>(MC * KC + detail::pack_a_slack))
      packed.resize(static_cast<std::size_t>(MC * KC + detail::pack_a_slack));
    const index_t i0 = block * MC, mc = std::min(MC, m - i0);
    for (index_t k0 = 0; k0 < k || (k == 0 && k0 == 0); k0 += KC) {
      const index_t kc = std::min(KC, k - k0);
      detail::pack_a(a + i0 * lda + k0, lda, mc, kc, packed.data());
      const bool last = k0 + KC >= k;
      // what the first k block adds to: the addend, C itself, or nothing; later blocks add to C
      const T* src = k0 > 0 || (options.accumulate && !options.addend) ? c : options.addend;
      const index_t lds = src == c ? ldc : options.ld_addend;
      const index_t tiles = (mc + MR - 1) / MR;
      for (index_t p = 0; p < panels; ++p) {
        const T* b = w.panel(p, k0);
        const index_t n_valid = std::min(NR, n - p * NR);
        for (index_t ir = 0; ir < mc; ir += MR) {
          T* tile = c + (i0 + ir) * ldc + p * NR;
          const T* tile_src = src ? src + (i0 + ir) * lds + p * NR : nullptr;
          const index_t m_valid = std::min(MR, mc - ir);
          if (p + 1 < panels) detail::prefetch_share(w.panel(p + 1, k0), kc * NR, ir / MR, tiles);
          detail::gemm_micro_kernel(kc, packed.data() + ir * kc, b, tile, ldc, tile_src, lds,
                                    last ? w.bias(p) : nullptr, last && options.relu, m_valid, n_valid);
          if constexpr (!std::is_same_v<Epilogue, NoEpilogue>)
            if (last)
              for (index_t r = 0; r < m_valid; ++r) epilogue(tile + r * ldc, p * NR, n_valid);
        }
      }
      if (k == 0) break;
    }
  });
}

}  // namespace heed::simd
