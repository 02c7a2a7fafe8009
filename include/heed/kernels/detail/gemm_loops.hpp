#pragma once
#include "heed/core/detail/internal_header_check.hpp"
// The loops of heed::gemm_nt (kernels/gemm.hpp describes the blocking): one for float and
// double, which computes C in place, and one for 16-bit storage, which keeps each worker's block
// of C in float until the last k block. Packed is a PackedMatrix, Options a GemmOptions. The
// packing of A, the panels' micro-kernels and the rounding of C run through the level's table
// (simd::GemmKernels, heed/simd/kernel_table.hpp), whose blocking (mr, nr, kc, mc) they follow.

#include <algorithm>
#include <cstddef>
#include <type_traits>
#include <vector>

#include "heed/core/parallel.hpp"
#include "heed/core/scalar.hpp"
#include "heed/core/shape.hpp"
#include "heed/simd/gemm_kernel.hpp"
#include "heed/simd/kernel_table.hpp"

namespace heed {
struct NoEpilogue;
}

namespace heed::detail {

// epilogue(row, i, col0, count) where the epilogue takes C's row index i too, else
// epilogue(row, col0, count).
template <class Epilogue, class T>
void run_epilogue(const Epilogue& epilogue, T* row, index_t i, index_t col0, index_t count) {
  if constexpr (std::is_invocable_v<const Epilogue&, T*, index_t, index_t, index_t>)
    epilogue(row, i, col0, count);
  else
    epilogue(row, col0, count);
}

// C's rows in blocks for the GEMM's row loop (and for the feed-forward block, which runs both its
// GEMMs on one block at a time): blocks of MC rows, the last one taking a tail of fewer than
// MC / 4 rows with it. 197 rows (ViT-B's tokens) are one block, not 192 + 5: the block of 5 ran
// one micro-tile per panel of W, for which every panel came into L1 again.
struct RowBlocks {
  index_t rows, mc, count;

  RowBlocks(index_t m, index_t MC) noexcept : rows(m), mc(MC), count(m / MC) {
    const index_t tail = m % MC;
    if (tail > 0 && (count == 0 || tail >= MC / 4)) ++count;
  }
  [[nodiscard]] index_t first(index_t block) const noexcept { return block * mc; }
  [[nodiscard]] index_t size(index_t block) const noexcept { return block + 1 == count ? rows - block * mc : mc; }
  // The most rows a block of MC holds: what a buffer for one block must take.
  [[nodiscard]] static constexpr index_t capacity(index_t MC) noexcept { return MC + MC / 4; }
};

// A worker's buffer for packed A: rows × kc values and the packing's slack, kept for the thread's
// life (no allocation, and no page faults, per call).
template <class T>
T* packed_a_buffer(index_t rows, index_t kc) {
  thread_local std::vector<T> packed;
  const auto size = static_cast<std::size_t>(rows * kc + simd::pack_a_slack);
  if (packed.size() < size) packed.resize(size);
  return packed.data();
}

// How many of W's panels one task takes of a row block of C: all where the row blocks alone keep
// `threads` workers busy; fewer where they are few (a prefill of 256 rows is 3 blocks of 96, which
// two workers would share 2 : 1), for about four tasks per worker, and never fewer than
// min_chunk_panels, so that packing the A block again costs little. A chunk's columns are
// computed exactly as in the whole row block: the split changes no bit.
[[nodiscard]] inline index_t gemm_chunk_panels(index_t row_blocks, index_t panels, int threads) noexcept {
  constexpr index_t min_chunk_panels = 4, tasks_per_worker = 4;
  if (threads <= 1 || row_blocks == 0) return std::max(min_chunk_panels, panels);  // one chunk (or no row)
  const index_t chunks = (tasks_per_worker * threads + row_blocks - 1) / row_blocks;
  return std::max({index_t{1}, min_chunk_panels, (panels + chunks - 1) / chunks});
}

// The one row of A of a decoding step's GEMV, packed for the single-row pair kernels once per
// call, every k block of it (block b at b · MR · KC), on the calling thread: the tasks that share
// W's panels then all read it, instead of each packing it again. Returns the caller's buffer.
template <class Packed, class Storage, class Pack>
Packed* pack_row_blocks(const Storage* a, index_t k, index_t MR, index_t KC, const Pack& pack) {
  const index_t blocks = std::max<index_t>(1, (k + KC - 1) / KC);
  Packed* packed = packed_a_buffer<Packed>(MR, blocks * KC);
  // in order: a block's spill past its end (pack_a_slack) lands in the next, packed after it
  for (index_t b = 0; b * KC < k; ++b) pack(a + b * KC, std::min(KC, k - b * KC), packed + b * MR * KC);
  return packed;
}

// The workers a one-row GEMV of n outputs over depth k uses: one per gemv_task_work multiply-adds
// at least (a worker's share below that costs about what starting and joining it does), at most
// `threads`.
inline constexpr index_t gemv_task_work = 32 * 1024;
[[nodiscard]] inline int gemv_workers(index_t n, index_t k, int threads) noexcept {
  return static_cast<int>(std::clamp<index_t>(n * k / gemv_task_work, 1, std::max(threads, 1)));
}

// gemm_nt for float and double with one row of A (a decoding step): the workers share W's
// panels (the one row block would give all the work to one of them), each worker the same
// contiguous share on every call (parallel_shares: a worker reads the same part of the weights at
// every step), and each panel runs on the single-row kernel, which reads the row as it is.
template <class Storage, class Packed, class Options, class Epilogue>
void gemm_nt_row(const Storage* a, const Packed& w, Storage* c, const Options& options, const Epilogue& epilogue,
                 int threads) {
  const simd::GemmKernels<Storage>& kernels = w.kernels();
  const index_t NR = kernels.nr, KC = kernels.kc;
  const index_t n = w.rows(), k = w.cols(), panels = (n + NR - 1) / NR;
  parallel_shares(panels, gemv_workers(n, k, threads), [&](index_t p_begin, index_t p_end, int) {
    for (index_t k0 = 0; k0 < k || (k == 0 && k0 == 0); k0 += KC) {
      const index_t kc = std::min(KC, k - k0);
      const bool last = k0 + KC >= k;
      const Storage* src = k0 > 0 || (options.accumulate && !options.addend) ? c : options.addend;
      for (index_t p = p_begin; p < p_end; ++p) {
        const index_t n_valid = std::min(NR, n - p * NR);
        kernels.row(kc, a + k0, w.panel(p, k0), c + p * NR, src ? src + p * NR : nullptr, last ? w.bias(p) : nullptr,
                    last && options.relu, n_valid);
        if constexpr (!std::is_same_v<Epilogue, NoEpilogue>)
          if (last) run_epilogue(epilogue, c + p * NR, 0, p * NR, n_valid);
      }
      if (k == 0) break;
    }
  });
}

// gemm_nt for float and double: C is computed in place, k block after k block.
template <class Storage, class Packed, class Options, class Epilogue>
void gemm_nt_native(const Storage* a, index_t lda, index_t m, const Packed& w, Storage* c, index_t ldc,
                    const Options& options, const Epilogue& epilogue) {
  const simd::GemmKernels<Storage>& kernels = w.kernels();
  const index_t NR = kernels.nr, KC = kernels.kc, MC = kernels.mc;
  const index_t n = w.rows(), k = w.cols();
  const index_t panels = (n + NR - 1) / NR;
  const RowBlocks blocks(m, MC);
  const int threads = options.threads > 0 ? options.threads : num_threads();
  if (m == 1) return gemm_nt_row(a, w, c, options, epilogue, threads);
  const index_t per_chunk = gemm_chunk_panels(blocks.count, panels, threads);
  const index_t chunks = std::max<index_t>(1, (panels + per_chunk - 1) / per_chunk), tasks = blocks.count * chunks;
  parallel_for(tasks, static_cast<int>(std::min<index_t>(threads, tasks)), [&](index_t task, int) {
    Storage* packed = packed_a_buffer<Storage>(RowBlocks::capacity(MC), KC);
    const index_t block = task / chunks, p_begin = (task % chunks) * per_chunk;
    const index_t p_end = std::min(panels, p_begin + per_chunk);
    const index_t i0 = blocks.first(block), mc = blocks.size(block);
    for (index_t k0 = 0; k0 < k || (k == 0 && k0 == 0); k0 += KC) {
      const index_t kc = std::min(KC, k - k0);
      kernels.pack_a(a + i0 * lda + k0, lda, mc, kc, packed);
      const bool last = k0 + KC >= k;
      // what the first k block adds to: the addend, C itself, or nothing; later blocks add to C
      const Storage* src = k0 > 0 || (options.accumulate && !options.addend) ? c : options.addend;
      const index_t lds = src == c ? ldc : options.ld_addend;
      for (index_t p = p_begin; p < p_end; ++p) {
        const index_t n_valid = std::min(NR, n - p * NR);
        Storage* block_c = c + i0 * ldc + p * NR;
        kernels.panel(kc, packed, mc, w.panel(p, k0), p + 1 < p_end ? w.panel(p + 1, k0) : nullptr, kc * NR, block_c,
                      ldc, src ? src + i0 * lds + p * NR : nullptr, lds, last ? w.bias(p) : nullptr,
                      last && options.relu, n_valid);
        if constexpr (!std::is_same_v<Epilogue, NoEpilogue>)
          if (last)
            for (index_t r = 0; r < mc; ++r) run_epilogue(epilogue, block_c + r * ldc, i0 + r, p * NR, n_valid);
      }
      if (k == 0) break;
    }
  });
}

// gemm_nt for 16-bit storage: the same blocking, with each worker's block of C in a float
// scratch [mc, panels · NR] from the first k block to the last.
// gemm_nt_widened with one row of A (a decoding step), as gemm_nt_row: each worker takes its
// share of W's panels, accumulates their columns of the row in float, 4 panels at a time (in the
// worker's own scratch), on the single-row kernel, then runs the epilogue on them and rounds
// them into C.
template <bool Pairs, class Storage, class Packed, class Options, class Epilogue>
void gemm_nt_widened_row(const Storage* a, const Packed& w, Storage* c, const Options& options,
                         const Epilogue& epilogue, int threads) {
  using Acc = accumulator_t<Storage>;
  const simd::GemmKernels<Storage>& kernels = w.kernels();
  const index_t MR = kernels.mr, NR = kernels.nr, KC = kernels.kc;
  constexpr index_t chunk = 4;  // panels per pass: 4 · NR columns of C in scratch
  const index_t n = w.rows(), k = w.cols(), panels = (n + NR - 1) / NR;
  const Storage* init = options.addend ? options.addend : options.accumulate ? c : nullptr;
  constexpr bool pairs = Pairs;  // bfloat16 on pair products: A packed in pairs, still 16-bit
  using PackedA = std::conditional_t<pairs, Storage, Acc>;
  // The pair kernels read A's row packed in pairs, every k block of it; the widened ones read the
  // row widened to float once, as it is.
  const PackedA* packed_row = nullptr;
  if constexpr (pairs) {
    packed_row = pack_row_blocks<PackedA>(a, k, MR, KC, [&](const Storage* from, index_t kc, PackedA* to) {
      kernels.pack_a_pairs(from, k, index_t{1}, kc, to);
    });
  } else {
    Acc* widened = packed_a_buffer<Acc>(1, k);
    simd::convert_kernels<Storage>().widen(a, widened, k);
    packed_row = widened;
  }
  const auto columns = [&](index_t p0, index_t p_end) {  // panels [p0, p_end), at most chunk of them
    thread_local std::vector<Acc> row;
    if (row.size() < static_cast<std::size_t>(chunk * NR)) row.resize(static_cast<std::size_t>(chunk * NR));
    const index_t j0 = p0 * NR, width = std::min(n, p_end * NR) - j0;
    if (init)
      for (index_t j = 0; j < width; ++j) row[std::size_t(j)] = static_cast<Acc>(init[j0 + j]);
    for (index_t k0 = 0; k0 < k || (k == 0 && k0 == 0); k0 += KC) {
      const index_t kc = std::min(KC, k - k0);
      const bool last = k0 + KC >= k, add = k0 > 0 || init;
      const PackedA* packed = packed_row + (pairs ? (k0 / KC) * MR * KC : k0);
      for (index_t p = p0; p < p_end; ++p) {
        Acc* tile = row.data() + (p - p0) * NR;
        if constexpr (pairs)
          kernels.pair_row(simd::pair_depth(kc), packed, w.panel(p, k0), tile, add ? tile : nullptr,
                           last ? w.bias(p) : nullptr, last && options.relu, std::min(NR, n - p * NR));
        else
          kernels.row(kc, packed, w.panel(p, k0), tile, add ? tile : nullptr, last ? w.bias(p) : nullptr,
                      last && options.relu, std::min(NR, n - p * NR));
      }
      if (k == 0) break;
    }
    if constexpr (!std::is_same_v<Epilogue, NoEpilogue>) run_epilogue(epilogue, row.data(), 0, j0, width);
    kernels.narrow(row.data(), c + j0, width);
  };
  parallel_shares(panels, gemv_workers(n, k, threads), [&](index_t p_begin, index_t p_end, int) {
    for (index_t p0 = p_begin; p0 < p_end; p0 += chunk) columns(p0, std::min(p_end, p0 + chunk));
  });
}

template <bool Pairs, class Storage, class Packed, class Options, class Epilogue>
void gemm_nt_widened(const Storage* a, index_t lda, index_t m, const Packed& w, Storage* c, index_t ldc,
                     const Options& options, const Epilogue& epilogue) {
  using Acc = accumulator_t<Storage>;
  const simd::GemmKernels<Storage>& kernels = w.kernels();
  const index_t NR = kernels.nr, KC = kernels.kc, MC = kernels.mc;
  const index_t n = w.rows(), k = w.cols();
  const index_t panels = (n + NR - 1) / NR, ld = panels * NR;
  const RowBlocks blocks(m, MC);
  const int threads = options.threads > 0 ? options.threads : num_threads();
  if (m == 1) return gemm_nt_widened_row<Pairs>(a, w, c, options, epilogue, threads);
  // what C starts from: the addend, C itself (accumulate), or zero
  const Storage* init = options.addend ? options.addend : options.accumulate ? c : nullptr;
  const index_t ld_init = options.addend ? options.ld_addend : ldc;
  constexpr bool pairs = Pairs;  // bfloat16 on pair products: A packed in pairs, still 16-bit
  using PackedA = std::conditional_t<pairs, Storage, Acc>;
  const index_t per_chunk = gemm_chunk_panels(blocks.count, panels, threads);
  const index_t chunks = std::max<index_t>(1, (panels + per_chunk - 1) / per_chunk), tasks = blocks.count * chunks;
  parallel_for(tasks, static_cast<int>(std::min<index_t>(threads, tasks)), [&](index_t task, int) {
    PackedA* packed = packed_a_buffer<PackedA>(RowBlocks::capacity(MC), KC);
    thread_local std::vector<Acc> scratch;
    const auto scratch_size = static_cast<std::size_t>(RowBlocks::capacity(MC) * ld);
    if (scratch.size() < scratch_size) scratch.resize(scratch_size);
    const index_t block = task / chunks, p_begin = (task % chunks) * per_chunk;
    const index_t p_end = std::min(panels, p_begin + per_chunk);
    const index_t i0 = blocks.first(block), mc = blocks.size(block);
    const index_t j0 = p_begin * NR, width = std::min(n, p_end * NR) - j0;  // this task's columns
    if (init)
      for (index_t r = 0; r < mc; ++r)
        for (index_t j = j0; j < j0 + width; ++j)
          scratch[std::size_t(r * ld + j)] = static_cast<Acc>(init[(i0 + r) * ld_init + j]);
    for (index_t k0 = 0; k0 < k || (k == 0 && k0 == 0); k0 += KC) {
      const index_t kc = std::min(KC, k - k0);
      const index_t depth = pairs ? simd::pair_depth(kc) : kc;  // of a packed micro-panel of A
      if constexpr (pairs)
        kernels.pack_a_pairs(a + i0 * lda + k0, lda, mc, kc, packed);
      else
        kernels.pack_a(a + i0 * lda + k0, lda, mc, kc, packed);
      const bool last = k0 + KC >= k;
      const bool add = k0 > 0 || init;
      for (index_t p = p_begin; p < p_end; ++p) {
        const Storage* next = p + 1 < p_end ? w.panel(p + 1, k0) : nullptr;
        Acc* tile = scratch.data() + p * NR;
        const Acc* bias = last ? w.bias(p) : nullptr;
        const index_t n_valid = std::min(NR, n - p * NR);
        if constexpr (pairs)
          kernels.pair_panel(depth, packed, mc, w.panel(p, k0), next, depth * NR, tile, ld, add ? tile : nullptr, ld,
                             bias, last && options.relu, n_valid);
        else
          kernels.panel(kc, packed, mc, w.panel(p, k0), next, kc * NR, tile, ld, add ? tile : nullptr, ld, bias,
                        last && options.relu, n_valid);
      }
      if (k == 0) break;
    }
    for (index_t r = 0; r < mc; ++r) {
      Acc* row = scratch.data() + r * ld + j0;
      if constexpr (!std::is_same_v<Epilogue, NoEpilogue>) run_epilogue(epilogue, row, i0 + r, j0, width);
      kernels.narrow(row, c + (i0 + r) * ldc + j0, width);
    }
  });
}

// gemm_nt_widened on the panels W was packed in: k in pairs (pair products) or not.
template <class Storage, class Packed, class Options, class Epilogue>
void gemm_nt_widened_any(const Storage* a, index_t lda, index_t m, const Packed& w, Storage* c, index_t ldc,
                         const Options& options, const Epilogue& epilogue) {
  if constexpr (std::is_same_v<Storage, bfloat16>) {
    if (w.pairs()) return gemm_nt_widened<true>(a, lda, m, w, c, ldc, options, epilogue);
  }
  gemm_nt_widened<false>(a, lda, m, w, c, ldc, options, epilogue);
}

}  // namespace heed::detail
