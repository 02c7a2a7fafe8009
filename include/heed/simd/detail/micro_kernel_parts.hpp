#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <cstddef>

#include "heed/core/shape.hpp"
#include "heed/simd/arch.hpp"
#include "heed/simd/convert.hpp"

// The two halves of the attention micro-kernels of heed/simd/attention_kernel.hpp, shared by
// its forms (one run of B rows, several runs).
namespace heed::detail::inline HEED_SIMD_LEVEL_NAMESPACE {

// acc[r][x] += Σ_{kk < depth} rows[r][a0 + kk] · b[kk · ldb + x·W, + W): depth rows of B, each
// multiplied by the next column of every A row from column a0 on.
template <class Acc, std::size_t NB, std::size_t MR, class TA, class TB>
HEED_ALWAYS_INLINE void micro_accumulate(simd::batch<Acc> (&acc)[MR][NB], const TA* const (&rows)[MR], index_t a0,
                                         index_t depth, const TB* b, index_t ldb) noexcept {
  constexpr auto W = static_cast<index_t>(simd::width<Acc>);
  HEED_UNROLL(8)
  for (index_t kk = 0; kk < depth; ++kk) {
    simd::batch<Acc> bv[NB];
    HEED_UNROLL(2)
    for (std::size_t x = 0; x < NB; ++x) bv[x] = simd::load_widened(b + kk * ldb + static_cast<index_t>(x) * W);
    HEED_UNROLL(16)  // fully: the accumulators stay in registers at -O2 too
    for (std::size_t r = 0; r < MR; ++r) {
      const simd::batch<Acc> ar = simd::broadcast(static_cast<Acc>(rows[r][a0 + kk]));
      HEED_UNROLL(2)
      for (std::size_t x = 0; x < NB; ++x) acc[r][x] = simd::fma(ar, bv[x], acc[r][x]);
    }
  }
}

// c[r, j] = alpha · acc[r, j] (+ c_scale[r] · c[r, j]) for r < m_valid, j < n_valid.
template <class Acc, std::size_t NB, std::size_t MR>
HEED_ALWAYS_INLINE void micro_store(const simd::batch<Acc> (&acc)[MR][NB], index_t m_valid, index_t n_valid, Acc* c,
                                    index_t ldc, const Acc* c_scale, Acc alpha) noexcept {
  constexpr auto W = static_cast<index_t>(simd::width<Acc>), NR = static_cast<index_t>(NB) * W;
  const simd::batch<Acc> va = simd::broadcast(alpha);
  if (n_valid == NR) {  // whole rows (fewer than MR of them at the end of a tile, or in a decode step)
    HEED_UNROLL(16)     // the accumulators stay in registers (a loop spilled them to the stack first)
    for (std::size_t r = 0; r < MR; ++r) {
      if (static_cast<index_t>(r) >= m_valid) continue;  // not break: an early exit keeps gcc -O2 from unrolling
      Acc* row = c + static_cast<index_t>(r) * ldc;
      HEED_UNROLL(2)
      for (std::size_t x = 0; x < NB; ++x) {
        Acc* dst = row + static_cast<index_t>(x) * W;
        if (c_scale)
          simd::store(dst, simd::fma(acc[r][x], va, simd::load(dst) * simd::broadcast(c_scale[r])));
        else
          simd::store(dst, acc[r][x] * va);
      }
    }
    return;
  }
  alignas(64) Acc tile[MR * static_cast<std::size_t>(NR)];
  HEED_UNROLL(16)
  for (std::size_t r = 0; r < MR; ++r) HEED_UNROLL(2)
  for (std::size_t x = 0; x < NB; ++x)
    simd::store(tile + static_cast<index_t>(r) * NR + static_cast<index_t>(x) * W, acc[r][x] * va);
  for (index_t r = 0; r < m_valid; ++r)
    for (index_t j = 0; j < n_valid; ++j) {
      Acc& out = c[r * ldc + j];
      out = c_scale ? tile[r * NR + j] + c_scale[r] * out : tile[r * NR + j];
    }
}

}  // namespace heed::detail::inline HEED_SIMD_LEVEL_NAMESPACE
