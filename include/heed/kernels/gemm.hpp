#pragma once
// C = A · Wᵀ (+ C) for nn.Linear: A [m, k] row-major, W [n, k] row-major (PyTorch's layout),
// with W packed once, when the weights are loaded. The structure is the BLIS/GotoBLAS one
// (Van Zee & van de Geijn, "BLIS: A Framework for Rapidly Instantiating BLAS Functionality", 2015):
//
//   for each block of MC rows (in parallel):
//     for each k block of KC:   pack A[rows, k block] into MR-row micro-panels (sized for L2)
//       for each NR-column panel of W:          (its KC × NR micro-panel stays in L1)
//         for each MR-row micro-panel:  simd::gemm_micro_kernel, an MR × NR tile of C
//
// This file is the blocking and the threads; the register level (tile sizes, packing of A,
// the micro-kernel) is heed/simd/gemm_kernel.hpp. Inside a model the C tiles and W panels
// usually come from L3, so each micro-tile of a panel prefetches a share of the next panel of W
// (the micro-kernel prefetches its own C tile). An epilogue other than bias and ReLU (which are
// applied in registers) runs on each tile row right after it is stored, while it is in L1.

#include <algorithm>
#include <cstddef>
#include <type_traits>
#include <vector>

#include "heed/core/parallel.hpp"
#include "heed/core/shape.hpp"
#include "heed/simd/gemm_kernel.hpp"

namespace heed {

/// W [n, k] packed for gemm_nt: for each NR-column panel, k rows of NR values (Wᵀ), the
/// columns past n zero; and the bias [n], if any, padded the same way. Built once; read by
/// every call.
template <class T>
class PackedMatrix {
 public:
  PackedMatrix() = default;
  /// Packs w [n, k] (row-major) and, if given, bias [n].
  PackedMatrix(const T* w, index_t n, index_t k, const T* bias = nullptr) : n_(n), k_(k) {
    constexpr index_t nr = simd::GemmTile<T>::nr;
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

  /// n: the rows of W, the columns of C.
  [[nodiscard]] index_t rows() const noexcept { return n_; }
  /// k: the depth of the product.
  [[nodiscard]] index_t cols() const noexcept { return k_; }
  /// True for a default-constructed (or 0 × k) matrix.
  [[nodiscard]] bool empty() const noexcept { return data_.empty(); }
  /// Panel p from depth k0 on: (k - k0) × NR values.
  [[nodiscard]] const T* panel(index_t p, index_t k0) const noexcept {
    return data_.data() + (p * k_ + k0) * simd::GemmTile<T>::nr;
  }
  /// The NR bias values of panel p, or nullptr without a bias.
  [[nodiscard]] const T* bias(index_t p) const noexcept {
    return bias_.empty() ? nullptr : bias_.data() + p * simd::GemmTile<T>::nr;
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

/// An epilogue that does nothing.
struct NoEpilogue {
  template <class T>
  void operator()(T*, index_t, index_t) const noexcept {}
};

/// C [m, n] = (C or D or 0) + A [m, k] · Wᵀ (+ bias, ReLU: see GemmOptions), W packed; A and C
/// row-major with leading dimensions lda, ldc. Then epilogue(row, col0, count) for every
/// finished segment c[i, col0 : col0 + count], while it is in L1 (e.g. GELU). Blocks of rows
/// run in parallel (each worker packs its own A block). The caller guarantees the shapes.
template <class T, class Epilogue = NoEpilogue>
void gemm_nt(const T* a, index_t lda, index_t m, const PackedMatrix<T>& w, T* c, index_t ldc,
             const GemmOptions<T>& options = {}, const Epilogue& epilogue = {}) {
  using Tile = simd::GemmTile<T>;
  constexpr index_t MR = Tile::mr, NR = Tile::nr, KC = Tile::kc, MC = Tile::mc;
  const index_t n = w.rows(), k = w.cols();
  const index_t panels = (n + NR - 1) / NR, row_blocks = (m + MC - 1) / MC;
  const int threads = options.threads > 0 ? options.threads : num_threads();
  parallel_for(row_blocks, static_cast<int>(std::min<index_t>(threads, row_blocks)), [&](index_t block, int) {
    // The packed A block lives as long as the thread: no allocation (and no page faults) per call.
    thread_local std::vector<T> packed;
    if (packed.size() < static_cast<std::size_t>(MC * KC + simd::pack_a_slack))
      packed.resize(static_cast<std::size_t>(MC * KC + simd::pack_a_slack));
    const index_t i0 = block * MC, mc = std::min(MC, m - i0);
    for (index_t k0 = 0; k0 < k || (k == 0 && k0 == 0); k0 += KC) {
      const index_t kc = std::min(KC, k - k0);
      simd::pack_a(a + i0 * lda + k0, lda, mc, kc, packed.data());
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
          if (p + 1 < panels) simd::prefetch_share(w.panel(p + 1, k0), kc * NR, ir / MR, tiles);
          simd::gemm_micro_kernel(kc, packed.data() + ir * kc, b, tile, ldc, tile_src, lds, last ? w.bias(p) : nullptr,
                                  last && options.relu, m_valid, n_valid);
          if constexpr (!std::is_same_v<Epilogue, NoEpilogue>)
            if (last)
              for (index_t r = 0; r < m_valid; ++r) epilogue(tile + r * ldc, p * NR, n_valid);
        }
      }
      if (k == 0) break;
    }
  });
}

}  // namespace heed
