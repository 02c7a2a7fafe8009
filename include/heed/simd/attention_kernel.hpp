#pragma once
// The register level of the attention driver (kernels/detail/attention_tiles.hpp): the two
// products of a tile, S = scale · Q Kᵀ and O = c · O + P V, are one micro-kernel shape,
//
//   C[r, 0:NR] = alpha · Σ_kk A[r, kk] · B[kk, 0:NR]  (+ c_scale[r] · C[r, 0:NR])   r < MR
//
// with A read by rows (a query row of Q, a probability row of P: contiguous in kk, rows lda
// apart) and B by rows of NR values (a panel of packed Kᵀ, or NR columns of V's rows, ldb
// apart). An MR × NR block of C stays in registers (MR × 2 batches): MR broadcasts, 2 loads and
// 2·MR FMAs per kk, as in the GEMM micro-kernel (simd/gemm_kernel.hpp). Kᵀ is packed once per
// call into panels of NR keys (pack_kt), so neither Q, P nor V is ever copied.
//
// Storage and arithmetic are separate: A and B may be 16-bit (bfloat16, half) while C and the
// FMAs are in the accumulator type (float); B is widened as it is loaded (simd/convert.hpp).

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "heed/core/scalar.hpp"
#include "heed/core/shape.hpp"
#include "heed/simd/arch.hpp"
#include "heed/simd/convert.hpp"

namespace heed::simd {

/// The blocking of the attention micro-kernel for scalar T.
template <class T>
struct AttentionTile {
  static constexpr index_t nr = 2 * static_cast<index_t>(width<T>);  ///< columns of C per call (keys, value columns)
  static constexpr index_t mr = width<T> >= 16 ? 8 : 6;              ///< rows of C per call (queries)
};

/// One MR × NR block: c[r, j] = alpha · Σ_{kk < depth} a[r · lda + kk] · b[kk · ldb + j]
/// (+ c_scale[r] · c[r, j] when c_scale is given; otherwise c is only written), for r < m_valid
/// and j < n_valid; nothing else of c is touched. Rows of A from m_valid on are not read; B must
/// have NR readable values in each of its `depth` rows. A and B hold T or T's accumulator type
/// T (16-bit values are widened as they are read); C is T, the accumulator type.
template <class T, class TA, class TB>
inline void attention_micro_kernel(index_t depth, const TA* a, index_t lda, index_t m_valid, const TB* b, index_t ldb,
                                   index_t n_valid, T* c, index_t ldc, const T* c_scale, T alpha) noexcept {
  static_assert(std::is_same_v<accumulator_t<TA>, T> && std::is_same_v<accumulator_t<TB>, T>,
                "A and B widen to C's type");
  constexpr index_t MR = AttentionTile<T>::mr, NR = AttentionTile<T>::nr, W = static_cast<index_t>(width<T>);
  const TA* rows[static_cast<std::size_t>(MR)];
  for (index_t r = 0; r < MR; ++r) rows[r] = a + std::min(r, m_valid - 1) * lda;  // padding rows repeat a valid one
  batch<T> acc0[static_cast<std::size_t>(MR)], acc1[static_cast<std::size_t>(MR)];
  const batch<T> zero = broadcast(T(0));
  for (index_t r = 0; r < MR; ++r) acc0[r] = zero, acc1[r] = zero;
  HEED_UNROLL(8)
  for (index_t kk = 0; kk < depth; ++kk) {
    const batch<T> b0 = load_widened(b + kk * ldb), b1 = load_widened(b + kk * ldb + W);
    HEED_UNROLL(16)  // fully: the accumulators stay in registers at -O2 too
    for (index_t r = 0; r < MR; ++r) {
      const batch<T> ar = broadcast(static_cast<T>(rows[r][kk]));
      acc0[r] = fma(ar, b0, acc0[r]);
      acc1[r] = fma(ar, b1, acc1[r]);
    }
  }
  const batch<T> va = broadcast(alpha);
  if (m_valid == MR && n_valid == NR) {
    for (index_t r = 0; r < MR; ++r) {
      T* row = c + r * ldc;
      if (c_scale) {
        const batch<T> s = broadcast(c_scale[r]);
        store(row, fma(acc0[r], va, load(row) * s));
        store(row + W, fma(acc1[r], va, load(row + W) * s));
      } else {
        store(row, acc0[r] * va);
        store(row + W, acc1[r] * va);
      }
    }
    return;
  }
  alignas(64) T tile[static_cast<std::size_t>(MR * NR)];
  for (index_t r = 0; r < MR; ++r) {
    store(tile + r * NR, acc0[r] * va);
    store(tile + r * NR + W, acc1[r] * va);
  }
  for (index_t r = 0; r < m_valid; ++r)
    for (index_t j = 0; j < n_valid; ++j) {
      T& out = c[r * ldc + j];
      out = c_scale ? tile[r * NR + j] + c_scale[r] * out : tile[r * NR + j];
    }
}

/// The products of a tile with a single query row (a decoding step), where the MR-row micro-kernel
/// would compute MR - 1 rows of padding. Scores: out[j] = alpha · Σ_kk q[kk] · k[j · ldk + kk] for
/// j < nj, a vector width of keys at a time (that many independent chains, their sums reduced
/// together), then four and one at a time.
template <class T, class TQ, class TK>
inline void attention_row_scores(index_t depth, const TQ* q, const TK* k, index_t ldk, index_t nj, T* out,
                                 T alpha) noexcept {
  constexpr index_t W = static_cast<index_t>(width<T>);
  const index_t full = depth / W * W;
  index_t j = 0;
  if constexpr (W > 1) {
    // W keys at a time: W independent chains, their W sums in one vector by reduce_add_rows
    for (; j + W <= nj; j += W) {
      const TK* kw = k + j * ldk;
      batch<T> acc[static_cast<std::size_t>(W)];
      HEED_UNROLL(16)  // fully, here and below: the accumulators stay in registers at -O2 too
      for (index_t u = 0; u < W; ++u) acc[u] = broadcast(T(0));
      for (index_t kk = 0; kk < full; kk += W) {
        const batch<T> qv = load_widened(q + kk);
        HEED_UNROLL(16)
        for (index_t u = 0; u < W; ++u) acc[u] = fma(qv, load_widened(kw + u * ldk + kk), acc[u]);
      }
      const batch<T> sums = reduce_add_rows(acc);
      if (full == depth) {
        store(out + j, sums * broadcast(alpha));
        continue;
      }
      alignas(64) T lanes[static_cast<std::size_t>(W)];
      store(lanes, sums);
      for (index_t u = 0; u < W; ++u) {
        for (index_t kk = full; kk < depth; ++kk) lanes[u] += static_cast<T>(q[kk]) * static_cast<T>(kw[u * ldk + kk]);
        out[j + u] = alpha * lanes[u];
      }
    }
  }
  for (; j + 4 <= nj; j += 4) {
    const TK* k0 = k + j * ldk;
    batch<T> a0 = broadcast(T(0)), a1 = a0, a2 = a0, a3 = a0;
    for (index_t kk = 0; kk < full; kk += W) {
      const batch<T> qv = load_widened(q + kk);
      a0 = fma(qv, load_widened(k0 + kk), a0);
      a1 = fma(qv, load_widened(k0 + ldk + kk), a1);
      a2 = fma(qv, load_widened(k0 + 2 * ldk + kk), a2);
      a3 = fma(qv, load_widened(k0 + 3 * ldk + kk), a3);
    }
    T s[4] = {reduce_add(a0), reduce_add(a1), reduce_add(a2), reduce_add(a3)};
    for (index_t kk = full; kk < depth; ++kk)
      for (index_t u = 0; u < 4; ++u) s[u] += static_cast<T>(q[kk]) * static_cast<T>(k0[u * ldk + kk]);
    for (index_t u = 0; u < 4; ++u) out[j + u] = alpha * s[u];
  }
  for (; j < nj; ++j) {
    const TK* kj = k + j * ldk;
    batch<T> a0 = broadcast(T(0));
    for (index_t kk = 0; kk < full; kk += W) a0 = fma(load_widened(q + kk), load_widened(kj + kk), a0);
    T s = reduce_add(a0);
    for (index_t kk = full; kk < depth; ++kk) s += static_cast<T>(q[kk]) * static_cast<T>(kj[kk]);
    out[j] = alpha * s;
  }
}

/// o[c] = (c_scale ? *c_scale · o[c] : 0) + Σ_{j < nj} p[j] · v[j · ldv + c] for c < dv: one query
/// row's P·V, eight vectors of columns at a time held in registers while V's rows stream past.
template <class T, class TV>
inline void attention_row_pv(index_t nj, const T* p, const TV* v, index_t ldv, index_t dv, T* o,
                             const T* c_scale) noexcept {
  constexpr index_t W = static_cast<index_t>(width<T>), CH = 8;
  const batch<T> zero = broadcast(T(0));
  index_t c0 = 0;
  for (; c0 + CH * W <= dv; c0 += CH * W) {
    batch<T> acc[CH];
    HEED_UNROLL(8)  // fully, here and below: the accumulators stay in registers at -O2 too
    for (index_t r = 0; r < CH; ++r) acc[r] = c_scale ? load(o + c0 + r * W) * broadcast(*c_scale) : zero;
    for (index_t j = 0; j < nj; ++j) {
      const batch<T> pj = broadcast(p[j]);
      const TV* row = v + j * ldv + c0;
      HEED_UNROLL(8)
      for (index_t r = 0; r < CH; ++r) acc[r] = fma(pj, load_widened(row + r * W), acc[r]);
    }
    HEED_UNROLL(8)
    for (index_t r = 0; r < CH; ++r) store(o + c0 + r * W, acc[r]);
  }
  for (; c0 + W <= dv; c0 += W) {
    batch<T> acc = c_scale ? load(o + c0) * broadcast(*c_scale) : zero;
    for (index_t j = 0; j < nj; ++j) acc = fma(broadcast(p[j]), load_widened(v + j * ldv + c0), acc);
    store(o + c0, acc);
  }
  for (; c0 < dv; ++c0) {
    T sum = c_scale ? *c_scale * o[c0] : T(0);
    for (index_t j = 0; j < nj; ++j) sum += p[j] * static_cast<T>(v[j * ldv + c0]);
    o[c0] = sum;
  }
}

/// Kᵀ in panels of NR keys: out[p · depth · NR + kk · NR + j] = k[(p · NR + j) · ldk + kk] for the
/// `keys` rows of k, zero for the keys past them in the last panel, in k's own type (NR is the
/// accumulator type's). out holds ceil(keys / NR) · depth · NR values.
template <class T>
inline void pack_kt(const T* k, index_t ldk, index_t keys, index_t depth, T* out) noexcept {
  constexpr index_t NR = AttentionTile<accumulator_t<T>>::nr;
  for (index_t p = 0; p * NR < keys; ++p) {
    T* panel = out + p * depth * NR;
    const index_t n = std::min(NR, keys - p * NR);
    for (index_t j = 0; j < n; ++j) {
      const T* row = k + (p * NR + j) * ldk;
      for (index_t kk = 0; kk < depth; ++kk) panel[kk * NR + j] = row[kk];
    }
    for (index_t j = n; j < NR; ++j)
      for (index_t kk = 0; kk < depth; ++kk) panel[kk * NR + j] = T(0);
  }
}

}  // namespace heed::simd
