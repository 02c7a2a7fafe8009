#pragma once
#include "heed/core/detail/internal_header_check.hpp"
// The loops of heed::gemm_nt (kernels/gemm.hpp describes the blocking): one for float and
// double, which computes C in place, and one for 16-bit storage, which keeps each worker's block
// of C in float until the last k block. Packed is a PackedMatrix, Options a GemmOptions.

#include <algorithm>
#include <cstddef>
#include <type_traits>
#include <vector>

#include "heed/core/cast.hpp"
#include "heed/core/parallel.hpp"
#include "heed/core/scalar.hpp"
#include "heed/core/shape.hpp"
#include "heed/simd/convert.hpp"
#include "heed/simd/gemm_kernel.hpp"

namespace heed {
struct NoEpilogue;
}

namespace heed::detail {

// gemm_nt for float and double with one row of A (a decoding step): the workers share W's
// panels (the one row block would give all the work to one of them), and each panel runs on the
// single-row kernel.
template <class Storage, class Packed, class Options, class Epilogue>
void gemm_nt_row(const Storage* a, const Packed& w, Storage* c, const Options& options, const Epilogue& epilogue,
                 int threads) {
  using Tile = simd::GemmTile<Storage>;
  constexpr index_t MR = Tile::mr, NR = Tile::nr, KC = Tile::kc;
  constexpr index_t chunk = 4;  // panels per task: 4 · NR columns of C
  const index_t n = w.rows(), k = w.cols(), panels = (n + NR - 1) / NR, chunks = (panels + chunk - 1) / chunk;
  parallel_for(chunks, static_cast<int>(std::min<index_t>(threads, chunks)), [&](index_t task, int) {
    thread_local std::vector<Storage> packed;
    if (packed.size() < static_cast<std::size_t>(MR * KC + simd::pack_a_slack))
      packed.resize(static_cast<std::size_t>(MR * KC + simd::pack_a_slack));
    const index_t p_end = std::min(panels, (task + 1) * chunk);
    for (index_t k0 = 0; k0 < k || (k == 0 && k0 == 0); k0 += KC) {
      const index_t kc = std::min(KC, k - k0);
      simd::pack_a(a + k0, k, index_t{1}, kc, packed.data());
      const bool last = k0 + KC >= k;
      const Storage* src = k0 > 0 || (options.accumulate && !options.addend) ? c : options.addend;
      for (index_t p = task * chunk; p < p_end; ++p) {
        const index_t n_valid = std::min(NR, n - p * NR);
        simd::gemm_row_kernel(kc, packed.data(), w.panel(p, k0), c + p * NR, src ? src + p * NR : nullptr,
                              last ? w.bias(p) : nullptr, last && options.relu, n_valid);
        if constexpr (!std::is_same_v<Epilogue, NoEpilogue>)
          if (last) epilogue(c + p * NR, p * NR, n_valid);
      }
      if (k == 0) break;
    }
  });
}

// gemm_nt for float and double: C is computed in place, k block after k block.
template <class Storage, class Packed, class Options, class Epilogue>
void gemm_nt_native(const Storage* a, index_t lda, index_t m, const Packed& w, Storage* c, index_t ldc,
                    const Options& options, const Epilogue& epilogue) {
  using Tile = simd::GemmTile<Storage>;
  constexpr index_t MR = Tile::mr, NR = Tile::nr, KC = Tile::kc, MC = Tile::mc;
  const index_t n = w.rows(), k = w.cols();
  const index_t panels = (n + NR - 1) / NR, row_blocks = (m + MC - 1) / MC;
  const int threads = options.threads > 0 ? options.threads : num_threads();
  if (m == 1) return gemm_nt_row(a, w, c, options, epilogue, threads);
  parallel_for(row_blocks, static_cast<int>(std::min<index_t>(threads, row_blocks)), [&](index_t block, int) {
    // The packed A block lives as long as the thread: no allocation (and no page faults) per call.
    thread_local std::vector<Storage> packed;
    if (packed.size() < static_cast<std::size_t>(MC * KC + simd::pack_a_slack))
      packed.resize(static_cast<std::size_t>(MC * KC + simd::pack_a_slack));
    const index_t i0 = block * MC, mc = std::min(MC, m - i0);
    for (index_t k0 = 0; k0 < k || (k == 0 && k0 == 0); k0 += KC) {
      const index_t kc = std::min(KC, k - k0);
      simd::pack_a(a + i0 * lda + k0, lda, mc, kc, packed.data());
      const bool last = k0 + KC >= k;
      // what the first k block adds to: the addend, C itself, or nothing; later blocks add to C
      const Storage* src = k0 > 0 || (options.accumulate && !options.addend) ? c : options.addend;
      const index_t lds = src == c ? ldc : options.ld_addend;
      const index_t tiles = (mc + MR - 1) / MR;
      for (index_t p = 0; p < panels; ++p) {
        const Storage* b = w.panel(p, k0);
        const index_t n_valid = std::min(NR, n - p * NR);
        for (index_t ir = 0; ir < mc; ir += MR) {
          Storage* tile = c + (i0 + ir) * ldc + p * NR;
          const Storage* tile_src = src ? src + (i0 + ir) * lds + p * NR : nullptr;
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

// gemm_nt for 16-bit storage: the same blocking, with each worker's block of C in a float
// scratch [mc, panels · NR] from the first k block to the last.
// gemm_nt_widened with one row of A (a decoding step), as gemm_nt_row: the workers share W's
// panels, each chunk of panels accumulates its columns of the row in float (in the worker's own
// scratch) on the single-row kernel, then runs the epilogue on them and rounds them into C.
template <bool Pairs, class Storage, class Packed, class Options, class Epilogue>
void gemm_nt_widened_row(const Storage* a, const Packed& w, Storage* c, const Options& options,
                         const Epilogue& epilogue, int threads) {
  using Acc = accumulator_t<Storage>;
  using Tile = simd::GemmTile<Storage>;
  constexpr index_t MR = Tile::mr, NR = Tile::nr, KC = Tile::kc;
  constexpr index_t chunk = 4;  // panels per task: 4 · NR columns of C
  const index_t n = w.rows(), k = w.cols(), panels = (n + NR - 1) / NR, chunks = (panels + chunk - 1) / chunk;
  const Storage* init = options.addend ? options.addend : options.accumulate ? c : nullptr;
  constexpr bool pairs = Pairs;  // bfloat16 on pair products: A packed in pairs, still 16-bit
  using PackedA = std::conditional_t<pairs, Storage, Acc>;
  parallel_for(chunks, static_cast<int>(std::min<index_t>(threads, chunks)), [&](index_t task, int) {
    thread_local std::vector<PackedA> packed;
    thread_local std::vector<Acc> row;
    if (packed.size() < static_cast<std::size_t>(MR * KC + simd::pack_a_slack))
      packed.resize(static_cast<std::size_t>(MR * KC + simd::pack_a_slack));
    if (row.size() < static_cast<std::size_t>(chunk * NR)) row.resize(static_cast<std::size_t>(chunk * NR));
    const index_t p0 = task * chunk, p_end = std::min(panels, p0 + chunk), j0 = p0 * NR;
    const index_t width = std::min(n, p_end * NR) - j0;
    if (init)
      for (index_t j = 0; j < width; ++j) row[std::size_t(j)] = static_cast<Acc>(init[j0 + j]);
    for (index_t k0 = 0; k0 < k || (k == 0 && k0 == 0); k0 += KC) {
      const index_t kc = std::min(KC, k - k0);
      const bool last = k0 + KC >= k, add = k0 > 0 || init;
      if constexpr (pairs) {
        simd::pack_a_pairs(a + k0, k, index_t{1}, kc, packed.data());
        for (index_t p = p0; p < p_end; ++p) {
          Acc* tile = row.data() + (p - p0) * NR;
          simd::gemm_pair_row_kernel(simd::pair_depth(kc) / 2, packed.data(), w.panel(p, k0), tile,
                                     add ? tile : nullptr, last ? w.bias(p) : nullptr, last && options.relu,
                                     std::min(NR, n - p * NR));
        }
      } else {
        simd::pack_a(a + k0, k, index_t{1}, kc, packed.data());
        for (index_t p = p0; p < p_end; ++p) {
          Acc* tile = row.data() + (p - p0) * NR;
          simd::gemm_row_kernel(kc, packed.data(), w.panel(p, k0), tile, add ? tile : nullptr,
                                last ? w.bias(p) : nullptr, last && options.relu, std::min(NR, n - p * NR));
        }
      }
      if (k == 0) break;
    }
    if constexpr (!std::is_same_v<Epilogue, NoEpilogue>) epilogue(row.data(), j0, width);
    simd::narrow(row.data(), c + j0, width);
  });
}

template <bool Pairs, class Storage, class Packed, class Options, class Epilogue>
void gemm_nt_widened(const Storage* a, index_t lda, index_t m, const Packed& w, Storage* c, index_t ldc,
                     const Options& options, const Epilogue& epilogue) {
  using Acc = accumulator_t<Storage>;
  using Tile = simd::GemmTile<Storage>;
  constexpr index_t MR = Tile::mr, NR = Tile::nr, KC = Tile::kc, MC = Tile::mc;
  const index_t n = w.rows(), k = w.cols();
  const index_t panels = (n + NR - 1) / NR, row_blocks = (m + MC - 1) / MC, ld = panels * NR;
  const int threads = options.threads > 0 ? options.threads : num_threads();
  if (m == 1) return gemm_nt_widened_row<Pairs>(a, w, c, options, epilogue, threads);
  // what C starts from: the addend, C itself (accumulate), or zero
  const Storage* init = options.addend ? options.addend : options.accumulate ? c : nullptr;
  const index_t ld_init = options.addend ? options.ld_addend : ldc;
  constexpr bool pairs = Pairs;  // bfloat16 on pair products: A packed in pairs, still 16-bit
  using PackedA = std::conditional_t<pairs, Storage, Acc>;
  parallel_for(row_blocks, static_cast<int>(std::min<index_t>(threads, row_blocks)), [&](index_t block, int) {
    thread_local std::vector<PackedA> packed;
    thread_local std::vector<Acc> scratch;
    if (packed.size() < static_cast<std::size_t>(MC * KC + simd::pack_a_slack))
      packed.resize(static_cast<std::size_t>(MC * KC + simd::pack_a_slack));
    if (scratch.size() < static_cast<std::size_t>(MC * ld)) scratch.resize(static_cast<std::size_t>(MC * ld));
    const index_t i0 = block * MC, mc = std::min(MC, m - i0);
    if (init)
      for (index_t r = 0; r < mc; ++r)
        for (index_t j = 0; j < n; ++j)
          scratch[std::size_t(r * ld + j)] = static_cast<Acc>(init[(i0 + r) * ld_init + j]);
    for (index_t k0 = 0; k0 < k || (k == 0 && k0 == 0); k0 += KC) {
      const index_t kc = std::min(KC, k - k0);
      const index_t depth = pairs ? simd::pair_depth(kc) : kc;  // of a packed micro-panel of A
      if constexpr (pairs)
        simd::pack_a_pairs(a + i0 * lda + k0, lda, mc, kc, packed.data());
      else
        simd::pack_a(a + i0 * lda + k0, lda, mc, kc, packed.data());
      const bool last = k0 + KC >= k;
      const bool add = k0 > 0 || init;
      const index_t tiles = (mc + MR - 1) / MR;
      for (index_t p = 0; p < panels; ++p) {
        const Storage* b = w.panel(p, k0);
        const index_t n_valid = std::min(NR, n - p * NR);
        for (index_t ir = 0; ir < mc; ir += MR) {
          Acc* tile = scratch.data() + ir * ld + p * NR;
          if (p + 1 < panels) simd::prefetch_share(w.panel(p + 1, k0), depth * NR, ir / MR, tiles);
          if constexpr (pairs)
            simd::gemm_pair_micro_kernel(depth / 2, packed.data() + ir * depth, b, tile, ld, add ? tile : nullptr, ld,
                                         last ? w.bias(p) : nullptr, last && options.relu, std::min(MR, mc - ir),
                                         n_valid);
          else
            simd::gemm_micro_kernel(kc, packed.data() + ir * kc, b, tile, ld, add ? tile : nullptr, ld,
                                    last ? w.bias(p) : nullptr, last && options.relu, std::min(MR, mc - ir), n_valid);
        }
      }
      if (k == 0) break;
    }
    for (index_t r = 0; r < mc; ++r) {
      Acc* row = scratch.data() + r * ld;
      if constexpr (!std::is_same_v<Epilogue, NoEpilogue>) epilogue(row, index_t(0), n);
      Storage* out = c + (i0 + r) * ldc;
      simd::narrow(row, out, n);
    }
  });
}

// gemm_nt_widened on the panels W was packed in: k in pairs (pair products) or not.
template <class Storage, class Packed, class Options, class Epilogue>
void gemm_nt_widened_any(const Storage* a, index_t lda, index_t m, const Packed& w, Storage* c, index_t ldc,
                         const Options& options, const Epilogue& epilogue) {
  if constexpr (Packed::can_pair) {
    if (w.pairs()) return gemm_nt_widened<true>(a, lda, m, w, c, ldc, options, epilogue);
  }
  gemm_nt_widened<false>(a, lda, m, w, c, ldc, options, epilogue);
}

}  // namespace heed::detail
