#pragma once
// C = A · Wᵀ (+ C) for nn.Linear: A [m, k] row-major, W [n, k] row-major (PyTorch's layout),
// with W packed once, when the weights are loaded. The structure is the BLIS/GotoBLAS one
// (Van Zee & van de Geijn, "BLIS: A Framework for Rapidly Instantiating BLAS Functionality", 2015):
//
//   for each block of MC rows (in parallel; the last block takes a tail of fewer than MC/4 rows with it):
//     for each k block of KC:   pack A[rows, k block] into MR-row micro-panels (sized for L2)
//       for each NR-column panel of W:          (its KC × NR micro-panel stays in L1)
//         for each MR-row micro-panel:  simd::gemm_micro_kernel, an MR × NR tile of C
//
// This file is the interface (its loops are in kernels/detail/gemm_loops.hpp); the register level (tile sizes, packing
// of A, the micro-kernel) is heed/simd/gemm_kernel.hpp. Inside a model the C tiles and W panels usually come from L3 or
// memory, so each micro-kernel asks for a share of the next panel of W and for its own C tile, a line or two at a time
// over its k loop (simd::TilePrefetcher).
// An epilogue other than bias and ReLU (which are applied in registers) runs on each tile row right after it is stored,
// while it is in L1.
//
// 16-bit storage (bfloat16, half): A, W and C are 16-bit in memory and the product is float.
// W stays 16-bit in its packed panels (half the memory of float weights) and is widened as the
// micro-kernel loads it; A is widened as it is packed; each worker keeps its block of C in a
// float scratch over all k blocks, runs the epilogue on its float rows and rounds each value
// once, at the end. The bias is kept in float. Where the target has AVX-512 BF16
// (simd::bf16_pair_products), bfloat16 is not widened at all: W's panels hold k in pairs, A is
// packed in pairs, and the micro-kernel multiplies pairs with vdpbf16ps (simd/gemm_kernel.hpp).

#include <algorithm>
#include <cstddef>
#include <memory>
#include <type_traits>
#include <vector>

#include "heed/core/scalar.hpp"
#include "heed/core/shape.hpp"
#include "heed/core/tensor.hpp"
#include "heed/simd/gemm_kernel.hpp"
#include "heed/simd/kernel_table.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/kernels/detail/gemm_loops.hpp"

namespace heed {

/// W [n, k] packed for gemm_nt: for each NR-column panel, k rows of NR values (Wᵀ), the
/// columns past n zero; and the bias [n], if any, padded the same way and in the accumulator
/// type (float for a 16-bit W). Built once; read by every call. A bfloat16 W packed where pair
/// products run (`pairs()`: compiled for them and chosen for this CPU, simd::bf16_pairs_chosen)
/// keeps k in pairs instead: panel[(kk / 2) · 2NR + 2j + kk % 2], k padded to even with a zero.
template <class Storage>
class PackedMatrix {
 public:
  using Acc = accumulator_t<Storage>;  ///< the type of the bias and of the arithmetic (float for 16-bit Storage)
  PackedMatrix() = default;
  /// Packs w [n, k] (row-major) and, if given, bias [n], for the GEMM kernels in use
  /// (simd::gemm_kernels: their panel width, and whether bfloat16 runs on pair products).
  PackedMatrix(const Storage* w, index_t n, index_t k, const Storage* bias = nullptr)
      : PackedMatrix(w, n, k, k, 1, bias) {}

  /// Packs W [n, k] read with strides, W[j, kk] = w[j · row_stride + kk · col_stride], and the
  /// bias if given: e.g. the Wᵀ of a row-major B [k, n] (row_stride 1, col_stride n), so that
  /// gemm_nt computes C = A · B (heed::bmm).
  PackedMatrix(const Storage* w, index_t n, index_t k, index_t row_stride, index_t col_stride,
               const Storage* bias = nullptr)
      : kernels_(&simd::gemm_kernels<Storage>()),
        n_(n),
        k_(k),
        pairs_(kernels_->pairs),
        depth_(pairs_ ? simd::pair_depth(k) : k) {
    const index_t nr = kernels_->nr;
    const index_t panels = (n + nr - 1) / nr;
    // Only what the copies below leave unwritten is zeroed: the last panel's columns past n, or
    // everything where pairs (k padded to even); a ViT-B-sized model loads ~10% faster.
    auto data = std::make_shared<Tensor<Storage, 1>>(Shape<1>{panels * depth_ * nr}, uninitialized);
    if (pairs_)
      std::fill_n(data->data(), data->numel(), Storage(0));
    else if (panels > 0 && n % nr != 0)
      std::fill_n(data->data() + (panels - 1) * depth_ * nr, depth_ * nr, Storage(0));
    if (bias) {
      bias_.assign(static_cast<std::size_t>(panels * nr), Acc(0));
      std::transform(bias, bias + n, bias_.begin(), [](Storage b) { return static_cast<Acc>(b); });
    }
    for (index_t p = 0; p < panels && k > 0; ++p) {  // k = 0: nothing to copy (w may be null)
      const index_t width = std::min(nr, n - p * nr);
      Storage* panel = data->data() + p * depth_ * nr;
      const Storage* first = w + p * nr * row_stride;  // W[p · nr, 0]
      if (pairs_) {
        for (index_t j = 0; j < width; ++j)
          for (index_t kk = 0; kk < k; ++kk)
            panel[(kk / 2) * 2 * nr + 2 * j + kk % 2] = first[j * row_stride + kk * col_stride];
      } else if (row_stride == 1) {  // W's columns are dense (the Wᵀ of a row-major B): nr values per kk
        for (index_t kk = 0; kk < k; ++kk) std::copy_n(first + kk * col_stride, width, panel + kk * nr);
      } else {
        for (index_t j = 0; j < width; ++j)
          for (index_t kk = 0; kk < k; ++kk) panel[kk * nr + j] = first[j * row_stride + kk * col_stride];
      }
    }
    data_ = std::move(data);
  }

  /// Rows [first, first + n) of W (and of the bias) as a matrix of their own that shares these
  /// panels: no copy (e.g. the query projection inside stacked q/k/v weights). `first` must be a
  /// multiple of the panel width (kernels().nr) and the rows within rows(); the caller checks.
  [[nodiscard]] PackedMatrix rows_view(index_t first, index_t n) const {
    PackedMatrix view = *this;
    const index_t nr = kernels_->nr;
    view.n_ = n;
    view.first_panel_ = first_panel_ + first / nr;
    if (!bias_.empty()) view.bias_.assign(bias_.begin() + first, bias_.begin() + first + (n + nr - 1) / nr * nr);
    return view;
  }

  /// n: the rows of W, the columns of C.
  [[nodiscard]] index_t rows() const noexcept { return n_; }
  /// k: the depth of the product.
  [[nodiscard]] index_t cols() const noexcept { return k_; }
  /// True when a bias was packed with W.
  [[nodiscard]] bool has_bias() const noexcept { return !bias_.empty(); }
  /// True when the panels hold k in pairs for simd::gemm_pair_micro_kernel.
  [[nodiscard]] bool pairs() const noexcept { return pairs_; }
  /// True for a default-constructed (or 0 × k, or n × 0) matrix.
  [[nodiscard]] bool empty() const noexcept { return !data_ || n_ == 0 || depth_ == 0; }
  /// Panel p from depth k0 on: (k - k0) × NR values.
  [[nodiscard]] const Storage* panel(index_t p, index_t k0) const noexcept {
    const Storage* base = data_ ? data_->data() : nullptr;  // null without values (k = 0): no offset then
    return base ? base + ((first_panel_ + p) * depth_ + k0) * kernels_->nr : nullptr;  // k0 is even where pairs
  }
  /// The NR bias values of panel p, or nullptr without a bias.
  [[nodiscard]] const Acc* bias(index_t p) const noexcept {
    return bias_.empty() ? nullptr : bias_.data() + p * kernels_->nr;
  }
  /// The GEMM kernels the panels were packed for (simd::gemm_kernels when W was packed).
  [[nodiscard]] const simd::GemmKernels<Storage>& kernels() const noexcept { return *kernels_; }

 private:
  const simd::GemmKernels<Storage>* kernels_ = &simd::gemm_kernels<Storage>();
  index_t n_ = 0, k_ = 0;
  bool pairs_ = false;
  index_t depth_ = 0;        // k, or k rounded up to even where pairs
  index_t first_panel_ = 0;  // where a rows_view starts in the shared panels
  // The panels, shared by the copies and rows_views of this matrix (never written after packing).
  std::shared_ptr<const Tensor<Storage, 1>> data_;
  std::vector<Acc> bias_;
};

/// What gemm_nt does besides the product: add to C, or to another matrix of C's shape (a
/// residual connection: C = D + A·Wᵀ without copying D into C first), and after the last k
/// block add the bias (when W was packed with one) and apply ReLU, in registers.
template <class Storage>
struct GemmOptions {
  bool accumulate = false;          ///< C += A·Wᵀ (ignored when there is an addend)
  const Storage* addend = nullptr;  ///< C = addend + A·Wᵀ: row-major [m, n] with leading dimension ld_addend (may be C)
  index_t ld_addend = 0;            ///< the leading dimension of addend
  bool relu = false;                ///< max(0, ·) applied to the result
  int threads = 0;                  ///< as parallel_for takes it (0: heed::num_threads())
};

/// An epilogue that does nothing.
struct NoEpilogue {
  /// Does nothing to the tile.
  template <class T>
  void operator()(T*, index_t, index_t) const noexcept {}
};

/// C [m, n] = (C or D or 0) + A [m, k] · Wᵀ (+ bias, ReLU: see GemmOptions), W packed; A and C
/// row-major with leading dimensions lda, ldc. Then epilogue(row, col0, count) for every
/// finished segment c[i, col0 : col0 + count], while it is in L1 (e.g. GELU), or
/// epilogue(row, i, col0, count) where the epilogue takes the row index too; for a 16-bit Storage
/// the epilogue sees the float row before it is rounded (row is a float*). Blocks of rows run
/// in parallel (each worker packs its own A block). The caller guarantees the shapes.
template <class Storage, class Epilogue = NoEpilogue>
void gemm_nt(const Storage* a, index_t lda, index_t m, const PackedMatrix<Storage>& w, Storage* c, index_t ldc,
             const GemmOptions<Storage>& options = {}, const Epilogue& epilogue = {}) {
  if constexpr (is_16bit_float_v<Storage>)
    detail::gemm_nt_widened_any(a, lda, m, w, c, ldc, options, epilogue);
  else
    detail::gemm_nt_native(a, lda, m, w, c, ldc, options, epilogue);
}

}  // namespace heed
