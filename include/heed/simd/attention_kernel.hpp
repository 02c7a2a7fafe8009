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
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "heed/core/scalar.hpp"
#include "heed/core/shape.hpp"
#include "heed/simd/arch.hpp"
#include "heed/simd/convert.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/simd/detail/micro_kernel_parts.hpp"
#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/simd/detail/transpose.hpp"

#if defined(HEED_SIMD_AVX512_BF16)
#include <immintrin.h>
#endif

namespace heed::simd::inline HEED_SIMD_LEVEL_NAMESPACE {

/// The blocking of the attention micro-kernel for accumulator type Acc.
template <class Acc>
struct AttentionTile {
  static constexpr index_t nr = 2 * static_cast<index_t>(width<Acc>);  ///< columns of C per call (keys, value columns)
  static constexpr index_t mr = width<Acc> >= 16 ? 8 : 6;              ///< rows of C per call (queries)
};

/// attention_micro_kernel (below) over B rows in `runs` runs: run s has depths[s] rows from bs[s] (ldb
/// apart), matched with the next depths[s] columns of A (A's columns are side by side, B's runs
/// anywhere). O = c·O + P·V over a span of key tiles that are not adjacent, with one pass over C.
/// Inlined into the tile products (below), the grain of a call: a block's call would cost what a
/// few of its k steps do, and the tile's constant arguments (one run, no c_scale) would be lost.
template <class Acc, int Batches = 2, class TA, class TB>
HEED_ALWAYS_INLINE void attention_micro_kernel_runs(index_t runs, const index_t* depths, const TB* const* bs,
                                                    index_t ldb, const TA* a, index_t lda, index_t m_valid,
                                                    index_t n_valid, Acc* c, index_t ldc, const Acc* c_scale,
                                                    Acc alpha) noexcept {
  static_assert(std::is_same_v<accumulator_t<TA>, Acc> && std::is_same_v<accumulator_t<TB>, Acc>,
                "A and B widen to C's type");
  static_assert(Batches == 1 || Batches == 2, "a micro-kernel block is one or two vectors wide");
  constexpr auto MR = static_cast<std::size_t>(AttentionTile<Acc>::mr), NB = static_cast<std::size_t>(Batches);
  const TA* rows[MR];
  for (std::size_t r = 0; r < MR; ++r)  // padding rows repeat a valid one
    rows[r] = a + std::min(static_cast<index_t>(r), m_valid - 1) * lda;
  batch<Acc> acc[MR][NB];
  const batch<Acc> zero = broadcast(Acc(0));
  HEED_UNROLL(16)
  for (std::size_t r = 0; r < MR; ++r) HEED_UNROLL(2)
  for (std::size_t x = 0; x < NB; ++x) acc[r][x] = zero;
  for (index_t s = 0, a0 = 0; s < runs; a0 += depths[s++])
    heed::detail::micro_accumulate<Acc>(acc, rows, a0, depths[s], bs[s], ldb);
  heed::detail::micro_store<Acc>(acc, m_valid, n_valid, c, ldc, c_scale, alpha);
}

/// One MR × NR block: c[r, j] = alpha · Σ_{kk < depth} a[r · lda + kk] · b[kk · ldb + j]
/// (+ c_scale[r] · c[r, j] when c_scale is given; otherwise c is only written), for r < m_valid
/// and j < n_valid; nothing else of c is touched. Rows of A from m_valid on are not read; B must
/// have NR readable values in each of its `depth` rows. A and B hold Acc or a 16-bit type
/// widening to Acc (widened as they are read); C is Acc, the accumulator type. `Batches` is
/// NR in vectors: 2 (the full tile), or 1 for the last columns of a head dim that is not a
/// multiple of 2·width (d = 80 is two full blocks and one half block).
template <class Acc, int Batches = 2, class TA, class TB>
HEED_ALWAYS_INLINE void attention_micro_kernel(index_t depth, const TA* a, index_t lda, index_t m_valid, const TB* b,
                                               index_t ldb, index_t n_valid, Acc* c, index_t ldc, const Acc* c_scale,
                                               Acc alpha) noexcept {
  attention_micro_kernel_runs<Acc, Batches>(1, &depth, &b, ldb, a, lda, m_valid, n_valid, c, ldc, c_scale, alpha);
}

/// The products of a tile with a single query row (a decoding step), where the MR-row micro-kernel
/// would compute MR - 1 rows of padding. Scores: out[j] = alpha · Σ_kk q[kk] · k[j · ldk + kk] for
/// j < nj, a vector width of keys at a time (that many independent chains, their sums reduced
/// together), then four and one at a time.
template <class Acc, class TQ, class TK>
inline void attention_row_scores(index_t depth, const TQ* q, const TK* k, index_t ldk, index_t nj, Acc* out,
                                 Acc alpha) noexcept {
  constexpr index_t W = static_cast<index_t>(width<Acc>);
  const index_t full = depth / W * W;
  index_t j = 0;
  if constexpr (W > 1) {
    // W keys at a time: W independent chains, their W sums in one vector by reduce_add_rows
    for (; j + W <= nj; j += W) {
      const TK* kw = k + j * ldk;
      batch<Acc> acc[static_cast<std::size_t>(W)];
      HEED_UNROLL(16)  // fully, here and below: the accumulators stay in registers at -O2 too
      for (index_t u = 0; u < W; ++u) acc[u] = broadcast(Acc(0));
      for (index_t kk = 0; kk < full; kk += W) {
        const batch<Acc> qv = load_widened(q + kk);
        HEED_UNROLL(16)
        for (index_t u = 0; u < W; ++u) acc[u] = fma(qv, load_widened(kw + u * ldk + kk), acc[u]);
      }
      const batch<Acc> sums = reduce_add_rows(acc);
      if (full == depth) {
        store(out + j, sums * broadcast(alpha));
        continue;
      }
      alignas(64) Acc lanes[static_cast<std::size_t>(W)];
      store(lanes, sums);
      for (index_t u = 0; u < W; ++u) {
        for (index_t kk = full; kk < depth; ++kk)
          lanes[u] += static_cast<Acc>(q[kk]) * static_cast<Acc>(kw[u * ldk + kk]);
        out[j + u] = alpha * lanes[u];
      }
    }
  }
  for (; j + 4 <= nj; j += 4) {
    const TK* k0 = k + j * ldk;
    batch<Acc> a0 = broadcast(Acc(0)), a1 = a0, a2 = a0, a3 = a0;
    for (index_t kk = 0; kk < full; kk += W) {
      const batch<Acc> qv = load_widened(q + kk);
      a0 = fma(qv, load_widened(k0 + kk), a0);
      a1 = fma(qv, load_widened(k0 + ldk + kk), a1);
      a2 = fma(qv, load_widened(k0 + 2 * ldk + kk), a2);
      a3 = fma(qv, load_widened(k0 + 3 * ldk + kk), a3);
    }
    Acc s[4] = {reduce_add(a0), reduce_add(a1), reduce_add(a2), reduce_add(a3)};
    for (index_t kk = full; kk < depth; ++kk)
      for (index_t u = 0; u < 4; ++u) s[u] += static_cast<Acc>(q[kk]) * static_cast<Acc>(k0[u * ldk + kk]);
    for (index_t u = 0; u < 4; ++u) out[j + u] = alpha * s[u];
  }
  for (; j < nj; ++j) {
    const TK* kj = k + j * ldk;
    batch<Acc> a0 = broadcast(Acc(0));
    for (index_t kk = 0; kk < full; kk += W) a0 = fma(load_widened(q + kk), load_widened(kj + kk), a0);
    Acc s = reduce_add(a0);
    for (index_t kk = full; kk < depth; ++kk) s += static_cast<Acc>(q[kk]) * static_cast<Acc>(kj[kk]);
    out[j] = alpha * s;
  }
}

/// attention_rows_scores' block: QB query rows against the keys KB = W / QB at a time, W chains
/// (row i, key u in chain i·KB + u) whose sums reduce_add_rows reduces together; each load and
/// widening of a key's values serves the QB rows. Returns the keys it scored (a multiple of KB).
template <index_t QB, class Acc, class TQ, class TK>
HEED_ALWAYS_INLINE index_t attention_rows_scores_block(index_t depth, const TQ* q, index_t ldq, const TK* k,
                                                       index_t ldk, index_t nj, Acc* out, index_t ld,
                                                       Acc alpha) noexcept {
  constexpr index_t W = static_cast<index_t>(width<Acc>), KB = W / QB;
  const index_t full = depth / W * W;
  index_t j = 0;
  for (; j + KB <= nj; j += KB) {
    const TK* kj = k + j * ldk;
    batch<Acc> acc[static_cast<std::size_t>(W)];
    HEED_UNROLL(16)  // fully, here and below: the accumulators stay in registers at -O2 too
    for (index_t x = 0; x < W; ++x) acc[x] = broadcast(Acc(0));
    for (index_t kk = 0; kk < full; kk += W) {
      batch<Acc> kv[static_cast<std::size_t>(KB)];
      HEED_UNROLL(16)
      for (index_t u = 0; u < KB; ++u) kv[u] = load_widened(kj + u * ldk + kk);
      HEED_UNROLL(4)
      for (index_t i = 0; i < QB; ++i) {
        const batch<Acc> qv = load_widened(q + i * ldq + kk);
        HEED_UNROLL(16)
        for (index_t u = 0; u < KB; ++u) acc[i * KB + u] = fma(qv, kv[u], acc[i * KB + u]);
      }
    }
    alignas(64) Acc lanes[static_cast<std::size_t>(W)];
    if (full == depth) {  // each row's KB scores side by side in the scaled sums: copied as such
      store(lanes, reduce_add_rows(acc) * broadcast(alpha));
      HEED_UNROLL(4)
      for (index_t i = 0; i < QB; ++i) std::memcpy(out + i * ld + j, lanes + i * KB, sizeof lanes / QB);
      continue;
    }
    store(lanes, reduce_add_rows(acc));
    for (index_t i = 0; i < QB; ++i)
      for (index_t u = 0; u < KB; ++u) {
        Acc sum = lanes[i * KB + u];
        for (index_t kk = full; kk < depth; ++kk)
          sum += static_cast<Acc>(q[i * ldq + kk]) * static_cast<Acc>(kj[u * ldk + kk]);
        out[i * ld + j + u] = alpha * sum;
      }
  }
  return j;
}

/// attention_row_scores for nq query rows that read the same keys (a grouped-query head's query
/// heads in a decoding step, or a few query rows): row r at q + r·ldq, its scores at out + r·ld.
/// Four rows at a time share each load (and widening) of the keys' values (W/4 keys at a time);
/// the rows left over, and the keys past the last whole group, go row by row.
template <class Acc, class TQ, class TK>
inline void attention_rows_scores(index_t depth, const TQ* q, index_t ldq, index_t nq, const TK* k, index_t ldk,
                                  index_t nj, Acc* out, index_t ld, Acc alpha) noexcept {
  constexpr index_t W = static_cast<index_t>(width<Acc>), QB = W >= 4 ? 4 : 1;
  index_t r = 0;
  if constexpr (QB > 1) {
    for (; r + QB <= nq; r += QB) {
      const index_t done =
          attention_rows_scores_block<QB>(depth, q + r * ldq, ldq, k, ldk, nj, out + r * ld, ld, alpha);
      if (done < nj)
        for (index_t i = r; i < r + QB; ++i)
          attention_row_scores(depth, q + i * ldq, k + done * ldk, ldk, nj - done, out + i * ld + done, alpha);
    }
  }
  for (; r < nq; ++r) attention_row_scores(depth, q + r * ldq, k, ldk, nj, out + r * ld, alpha);
}

/// attention_row_pv's columns [c0, c0 + N·W): N vectors of o held in registers while V's nj rows
/// stream past.
template <index_t N, class Acc, class TV>
HEED_ALWAYS_INLINE void attention_row_pv_columns(index_t nj, const Acc* p, const TV* v, index_t ldv, Acc* o,
                                                 const Acc* c_scale, index_t c0) noexcept {
  constexpr index_t W = static_cast<index_t>(width<Acc>);
  const batch<Acc> zero = broadcast(Acc(0));
  batch<Acc> acc[static_cast<std::size_t>(N)];
  HEED_UNROLL(8)  // fully, here and below: the accumulators stay in registers at -O2 too
  for (index_t r = 0; r < N; ++r) acc[r] = c_scale ? load(o + c0 + r * W) * broadcast(*c_scale) : zero;
  for (index_t j = 0; j < nj; ++j) {
    const batch<Acc> pj = broadcast(p[j]);
    const TV* row = v + j * ldv + c0;
    HEED_UNROLL(8)
    for (index_t r = 0; r < N; ++r) acc[r] = fma(pj, load_widened(row + r * W), acc[r]);
  }
  HEED_UNROLL(8)
  for (index_t r = 0; r < N; ++r) store(o + c0 + r * W, acc[r]);
}

/// o[c] = (c_scale ? *c_scale · o[c] : 0) + Σ_{j < nj} p[j] · v[j · ldv + c] for c < dv: one query
/// row's P·V, up to eight vectors of columns at a time held in registers while V's rows stream
/// past, so that V is read once for a head of 8·W columns or fewer (d = 64 is 4 vectors on
/// AVX-512: one vector at a time, V was read four times and decoding ran 10% slower at v4 than
/// at v3; docs/decisions.md, "Every target at each level, on an Intel Xeon"). Each column sums
/// its rows in the same order whatever the chunk.
template <class Acc, class TV>
inline void attention_row_pv(index_t nj, const Acc* p, const TV* v, index_t ldv, index_t dv, Acc* o,
                             const Acc* c_scale) noexcept {
  constexpr index_t W = static_cast<index_t>(width<Acc>);
  index_t c0 = 0;
  for (; c0 + 8 * W <= dv; c0 += 8 * W) attention_row_pv_columns<8>(nj, p, v, ldv, o, c_scale, c0);
  if (c0 + 4 * W <= dv) {
    attention_row_pv_columns<4>(nj, p, v, ldv, o, c_scale, c0);
    c0 += 4 * W;
  }
  if (c0 + 2 * W <= dv) {
    attention_row_pv_columns<2>(nj, p, v, ldv, o, c_scale, c0);
    c0 += 2 * W;
  }
  if (c0 + W <= dv) {
    attention_row_pv_columns<1>(nj, p, v, ldv, o, c_scale, c0);
    c0 += W;
  }
  for (; c0 < dv; ++c0) {
    Acc sum = c_scale ? *c_scale * o[c0] : Acc(0);
    for (index_t j = 0; j < nj; ++j) sum += p[j] * static_cast<Acc>(v[j * ldv + c0]);
    o[c0] = sum;
  }
}

/// Kᵀ in panels of NR keys: out[p · depth · NR + kk · NR + j] = k[(p · NR + j) · ldk + kk] for the
/// `keys` rows of k, zero for the keys past them in the last panel, in k's own type (NR is the
/// accumulator type's). out holds ceil(keys / NR) · depth · NR values. Full float panels are
/// transposed in 16 × 16 blocks where the target has AVX-512, 8 × 8 on AVX2.
template <class Storage>
inline void pack_kt(const Storage* k, index_t ldk, index_t keys, index_t depth, Storage* out) noexcept {
  constexpr index_t NR = AttentionTile<accumulator_t<Storage>>::nr;
  for (index_t p = 0; p * NR < keys; ++p) {
    Storage* panel = out + p * depth * NR;
    const index_t n = std::min(NR, keys - p * NR);
    index_t done = 0;  // depths packed by register transposes
    if constexpr (sizeof(Storage) == 4)
      if (n == NR)
        done = detail::transpose_panel_32<NR>(k + p * NR * ldk, ldk * index_t{sizeof(Storage)}, depth, panel);
    for (index_t j = 0; j < n; ++j) {
      const Storage* row = k + (p * NR + j) * ldk;
      for (index_t kk = done; kk < depth; ++kk) panel[kk * NR + j] = row[kk];
    }
    for (index_t j = n; j < NR; ++j)
      for (index_t kk = 0; kk < depth; ++kk) panel[kk * NR + j] = Storage(0);
  }
}

// ---------------------------------------------------------------------------------------------
// bfloat16 pair products. AVX-512 BF16's vdpbf16ps multiplies two bfloat16 of A by two of B and
// adds both products to one float lane: 32 multiply-adds per instruction where a float FMA does
// 16, and B is read without widening. The pairs run along the summed dimension, so B is packed
// with that dimension's values two by two beside each other:
//   Kᵀ (S = Q Kᵀ, summed over the head dim):  pack_kt_pairs, depth in pairs, NR keys per panel
//   V  (O = P V,  summed over the keys):      pack_v_pairs, keys in pairs, NR columns per panel
// and A's rows (a query row, a probability row rounded to bfloat16) are read a pair (32 bits) at
// a time. Products are exact in float; the sums are float's, as in attention_micro_kernel, except
// that vdpbf16ps treats subnormal inputs and results as zero.

/// Keys (Kᵀ) or columns (V) per pair-packed panel: the float micro-kernel's NR.
inline constexpr index_t pair_panel = AttentionTile<float>::nr;

/// Kᵀ in panels of pair_panel keys with the depth in pairs: out[p·P·2NR + kp·2NR + 2j + e] =
/// k[(p·NR + j)·ldk + 2kp + e], P = ceil(depth / 2); zero past `keys` and past `depth`. A pair is
/// 32 bits in K's row and in the panel, so it is moved as one.
inline void pack_kt_pairs(const bfloat16* k, index_t ldk, index_t keys, index_t depth, bfloat16* out) noexcept {
  constexpr index_t NR = pair_panel;
  const index_t pairs = (depth + 1) / 2, whole = depth / 2;
  for (index_t p = 0; p * NR < keys; ++p) {
    bfloat16* panel = out + p * pairs * 2 * NR;
    const index_t n = std::min(NR, keys - p * NR);
    // whole pairs of full panels in 16 × 16 blocks on AVX-512, 8 × 8 on AVX2
    const index_t done = n == NR ? detail::transpose_panel_32<NR>(k + p * NR * ldk, ldk * 2, whole, panel) : 0;
    for (index_t j = 0; j < n; ++j) {
      const bfloat16* row = k + (p * NR + j) * ldk;
      for (index_t kp = done; kp < whole; ++kp)
        std::memcpy(panel + kp * 2 * NR + 2 * j, row + 2 * kp, 2 * sizeof(bfloat16));
      if (depth % 2 != 0) {
        panel[whole * 2 * NR + 2 * j] = row[depth - 1];
        panel[whole * 2 * NR + 2 * j + 1] = bfloat16(0.0f);
      }
    }
    for (index_t kp = 0; kp < pairs && n < NR; ++kp)  // the padding keys of the last panel
      std::fill(panel + kp * 2 * NR + 2 * n, panel + (kp + 1) * 2 * NR, bfloat16(0.0f));
  }
}

/// V in panels of pair_panel columns with the keys in pairs: out[cp·KP·2NR + jp·2NR + 2c + e] =
/// v[(2jp + e)·ldv + cp·NR + c], KP = ceil(keys / 2); zero past `keys` and past `cols`. Two rows
/// of a full panel are interleaved as 16-bit integers, which compilers vectorize. With
/// `panel_stride` > 0 the panels are that many values apart instead of KP·2NR: a range of keys
/// (from an even key) packed into its place in the panels of a longer V.
inline void pack_v_pairs(const bfloat16* v, index_t ldv, index_t keys, index_t cols, bfloat16* out,
                         index_t panel_stride = 0) noexcept {
  constexpr index_t NR = pair_panel;
  const index_t key_pairs = (keys + 1) / 2;
  if (panel_stride <= 0) panel_stride = key_pairs * 2 * NR;
  for (index_t cp = 0; cp * NR < cols; ++cp) {
    bfloat16* panel = out + cp * panel_stride;
    const index_t n = std::min(NR, cols - cp * NR);
    for (index_t jp = 0; jp < key_pairs; ++jp) {
      const bfloat16* r0 = v + 2 * jp * ldv + cp * NR;
      bfloat16* dst = panel + jp * 2 * NR;
      if (n == NR && 2 * jp + 1 < keys) {
        std::uint16_t a0[NR], a1[NR], both[2 * NR];
        std::memcpy(a0, r0, sizeof a0);
        std::memcpy(a1, r0 + ldv, sizeof a1);
        for (index_t c = 0; c < NR; ++c) both[2 * c] = a0[c], both[2 * c + 1] = a1[c];
        std::memcpy(dst, both, sizeof both);
        continue;
      }
      for (index_t c = 0; c < NR; ++c) {
        dst[2 * c] = c < n ? r0[c] : bfloat16(0.0f);
        dst[2 * c + 1] = c < n && 2 * jp + 1 < keys ? r0[ldv + c] : bfloat16(0.0f);
      }
    }
  }
}

/// The generic form of pair_micro_kernel: the same sums, widened value by value (tests check
/// the packed layouts with it on every target).
inline void pair_micro_kernel(index_t pairs, const bfloat16* a, index_t lda, index_t m_valid, const bfloat16* b,
                              index_t n_valid, float* c, index_t ldc, const float* c_scale, float alpha,
                              generic_isa) noexcept {
  constexpr index_t NR = pair_panel;
  for (index_t r = 0; r < m_valid; ++r)
    for (index_t j = 0; j < n_valid; ++j) {
      float sum = 0;
      for (index_t p = 0; p < pairs; ++p)
        sum += static_cast<float>(a[r * lda + 2 * p]) * static_cast<float>(b[p * 2 * NR + 2 * j]) +
               static_cast<float>(a[r * lda + 2 * p + 1]) * static_cast<float>(b[p * 2 * NR + 2 * j + 1]);
      float& out = c[r * ldc + j];
      out = c_scale ? alpha * sum + c_scale[r] * out : alpha * sum;
    }
}

#if defined(HEED_SIMD_AVX512_BF16)
/// One MR × NR block with vdpbf16ps: c[r, j] = alpha · Σ_p (a[r, 2p]·b[p, j, 0] + a[r, 2p+1]·b[p, j, 1])
/// (+ c_scale[r] · c[r, j]) for r < m_valid, j < n_valid. A's rows hold 2·pairs readable values
/// (lda apart); b is a pair-packed panel (pack_kt_pairs, pack_v_pairs) from its pair `0`.
inline void pair_micro_kernel(index_t pairs, const bfloat16* a, index_t lda, index_t m_valid, const bfloat16* b,
                              index_t n_valid, float* c, index_t ldc, const float* c_scale, float alpha,
                              avx512_bf16_isa) noexcept {
  constexpr index_t MR = AttentionTile<float>::mr, NR = pair_panel;
  const bfloat16* rows[static_cast<std::size_t>(MR)];
  for (index_t r = 0; r < MR; ++r) rows[r] = a + std::min(r, m_valid - 1) * lda;
  __m512 acc0[static_cast<std::size_t>(MR)], acc1[static_cast<std::size_t>(MR)];
  HEED_UNROLL(16)
  for (index_t r = 0; r < MR; ++r) acc0[r] = _mm512_setzero_ps(), acc1[r] = _mm512_setzero_ps();
  HEED_UNROLL(4)
  for (index_t p = 0; p < pairs; ++p) {
    const __m512i b0 = _mm512_loadu_si512(b + p * 2 * NR), b1 = _mm512_loadu_si512(b + p * 2 * NR + NR);
    HEED_UNROLL(16)
    for (index_t r = 0; r < MR; ++r) {
      std::uint32_t both;
      std::memcpy(&both, rows[r] + 2 * p, sizeof both);
      const __m512i ar = _mm512_set1_epi32(static_cast<int>(both));
      acc0[r] = _mm512_dpbf16_ps(acc0[r], (__m512bh)ar, (__m512bh)b0);
      acc1[r] = _mm512_dpbf16_ps(acc1[r], (__m512bh)ar, (__m512bh)b1);
    }
  }
  const __m512 va = _mm512_set1_ps(alpha);
  if (m_valid == MR && n_valid == NR) {
    HEED_UNROLL(16)  // the accumulators stay in registers (a loop spilled them to the stack first)
    for (index_t r = 0; r < MR; ++r) {
      float* row = c + r * ldc;
      if (c_scale) {
        const __m512 sc = _mm512_set1_ps(c_scale[r]);
        _mm512_storeu_ps(row, _mm512_fmadd_ps(acc0[r], va, _mm512_mul_ps(_mm512_loadu_ps(row), sc)));
        _mm512_storeu_ps(row + 16, _mm512_fmadd_ps(acc1[r], va, _mm512_mul_ps(_mm512_loadu_ps(row + 16), sc)));
      } else {
        _mm512_storeu_ps(row, _mm512_mul_ps(acc0[r], va));
        _mm512_storeu_ps(row + 16, _mm512_mul_ps(acc1[r], va));
      }
    }
    return;
  }
  alignas(64) float tile[static_cast<std::size_t>(MR * NR)];
  HEED_UNROLL(16)
  for (index_t r = 0; r < MR; ++r) {
    _mm512_store_ps(tile + r * NR, _mm512_mul_ps(acc0[r], va));
    _mm512_store_ps(tile + r * NR + 16, _mm512_mul_ps(acc1[r], va));
  }
  for (index_t r = 0; r < m_valid; ++r)
    for (index_t j = 0; j < n_valid; ++j) {
      float& out = c[r * ldc + j];
      out = c_scale ? tile[r * NR + j] + c_scale[r] * out : tile[r * NR + j];
    }
}
#endif

/// width<float> probabilities rounded to bfloat16 at p: the generic form (store_narrowed).
inline void store_probabilities(bfloat16* p, batch<float> x, generic_isa) noexcept {
  store_narrowed(p, x);
}

#if defined(HEED_SIMD_AVX512_BF16)
/// 16 probabilities rounded to bfloat16 in one vcvtneps2bf16 (nearest even; subnormals become
/// zero, which for a probability is below 2^-126 and changes nothing that rounding does not).
inline void store_probabilities(bfloat16* p, batch<float> x, avx512_bf16_isa) noexcept {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), (__m256i)_mm512_cvtneps_pbh(static_cast<__m512>(x)));
}
#endif

/// p[i] = exp(x[i] - shift) rounded to bfloat16 for i < n, returning Σ_i exp(x[i] - shift) of the
/// unrounded values: a softmax step whose probabilities go to pair products.
inline float exp_sum_rounded(const float* x, float shift, bfloat16* p, index_t n) noexcept {
  constexpr index_t W = static_cast<index_t>(width<float>);
  index_t i = 0;
  float total = 0;
  if (n >= W) {
    const batch<float> vshift = broadcast(shift);
    batch<float> acc = broadcast(0.0f);
    for (; i + W <= n; i += W) {
      const batch<float> e = softmax_exp(load(x + i) - vshift);
      store_probabilities(p + i, e, target_isa{});
      acc = acc + e;
    }
    total = reduce_add(acc);
  }
  for (; i < n; ++i) {
    const float e = softmax_exp(x[i] - shift);
    p[i] = bfloat16(e);
    total += e;
  }
  return total;
}

/// pair_micro_kernel on the compile-time target.
inline void pair_micro_kernel(index_t pairs, const bfloat16* a, index_t lda, index_t m_valid, const bfloat16* b,
                              index_t n_valid, float* c, index_t ldc, const float* c_scale, float alpha) noexcept {
  pair_micro_kernel(pairs, a, lda, m_valid, b, n_valid, c, ldc, c_scale, alpha, target_isa{});
}

// ---------------------------------------------------------------------------------------------
// The tile products: the attention driver's entry points into this layer (kernels/detail/
// scorers.hpp, value_product.hpp, attention_decode.hpp). Each call computes a whole tile, up to
// block_q × block_k (96 × 256 by default), out of micro-kernel calls: the grain at which a
// run-time choice of instruction set can put one indirect call between the driver and the
// kernels without it being measurable (docs/design.md, "Instruction-set levels, and run-time
// dispatch").

/// The most runs of keys attention_tile_pv takes in one call.
inline constexpr index_t max_pv_runs = 16;

/// out[i, j] = scale · Σ_kk q[i, kk] · Kᵀ[kk, j] for i < ni, j < nj: the scores of one tile. q holds
/// ni rows of `depth` values, ldq apart (16-bit queries are widened by the caller, once per tile);
/// kt is the tile's part of pack_kt's panels (from its first key, a multiple of NR); out's rows
/// are ld apart. Panel by panel: a panel of Kᵀ (depth × NR) stays in L1 while every block of MR
/// query rows reads it.
template <class Acc, class TQ, class TK>
inline void attention_tile_scores(index_t depth, const TQ* q, index_t ldq, index_t ni, const TK* kt, index_t nj,
                                  Acc* out, index_t ld, Acc scale) noexcept {
  constexpr index_t MR = AttentionTile<Acc>::mr, NR = AttentionTile<Acc>::nr;
  for (index_t jp = 0; jp < nj; jp += NR)
    for (index_t ir = 0; ir < ni; ir += MR)
      attention_micro_kernel<Acc>(depth, q + ir * ldq, ldq, std::min(MR, ni - ir), kt + jp * depth, NR,
                                  std::min(NR, nj - jp), out + ir * ld + jp, ld, nullptr, scale);
}

/// attention_tile_scores on pair products: q's rows hold 2·pairs bfloat16 values (ldq apart; an
/// odd depth padded with a zero), kt is the tile's part of pack_kt_pairs' panels.
inline void pair_tile_scores(index_t pairs, const bfloat16* q, index_t ldq, index_t ni, const bfloat16* kt, index_t nj,
                             float* out, index_t ld, float scale) noexcept {
  constexpr index_t MR = AttentionTile<float>::mr, NR = pair_panel;
  for (index_t jp = 0; jp < nj; jp += NR)
    for (index_t ir = 0; ir < ni; ir += MR)
      pair_micro_kernel(pairs, q + ir * ldq, ldq, std::min(MR, ni - ir), kt + jp * 2 * pairs, std::min(NR, nj - jp),
                        out + ir * ld + jp, ld, nullptr, scale);
}

/// O[0:ni, :] = c · O + Σ_r P_r V_r over the runs of keys of a span of tiles (at most
/// max_pv_runs): P_r is the next keys[r] columns of P [ni, Σ keys] (side by side, leading
/// dimension ldp), V_r keys[r] rows from v[r] (ldv apart, in V's storage type Storage), O [ni, dv]
/// (leading dimension dv), c per row (nullptr: O = Σ P_r V_r); ones is a row of ones (only read
/// when several runs meet a single row). The micro-kernel keeps each block of O in registers
/// across the runs: one pass over O per span, not one per run. Full NR-wide column blocks first,
/// then a half-width block where one vector of columns is left (d = 80, 96, ...), the last
/// dv % (NR / 2) columns on a plain loop.
template <class Acc, class Storage>
inline void attention_tile_pv(const Acc* p, index_t ldp, index_t ni, index_t runs, const index_t* keys,
                              const Storage* const* v, index_t ldv, index_t dv, Acc* o, const Acc* c,
                              const Acc* ones) noexcept {
  constexpr index_t MR = AttentionTile<Acc>::mr, NR = AttentionTile<Acc>::nr, W = NR / 2;
  if (ni == 1) {  // one row: run by run, the later runs adding to O
    for (index_t r = 0, col = 0; r < runs; col += keys[r++])
      attention_row_pv(keys[r], p + col, v[r], ldv, dv, o, r == 0 ? c : ones);
    return;
  }
  const Storage* at[max_pv_runs];  // the runs' rows from column c0 on
  const auto columns = [&](index_t c0) {
    for (index_t r = 0; r < runs; ++r) at[r] = v[r] + c0;
  };
  index_t full = dv / NR * NR;
  for (index_t c0 = 0; c0 < full; c0 += NR) {
    columns(c0);
    for (index_t ir = 0; ir < ni; ir += MR)
      attention_micro_kernel_runs<Acc>(runs, keys, at, ldv, p + ir * ldp, ldp, std::min(MR, ni - ir), NR,
                                       o + ir * dv + c0, dv, c ? c + ir : nullptr, Acc(1));
  }
  if (dv - full >= W) {
    columns(full);
    for (index_t ir = 0; ir < ni; ir += MR)
      attention_micro_kernel_runs<Acc, 1>(runs, keys, at, ldv, p + ir * ldp, ldp, std::min(MR, ni - ir), W,
                                          o + ir * dv + full, dv, c ? c + ir : nullptr, Acc(1));
    full += W;
  }
  for (index_t i = 0; i < ni; ++i)
    for (index_t col = full; col < dv; ++col) {
      Acc sum = c ? c[i] * o[i * dv + col] : Acc(0);
      for (index_t r = 0, k0 = 0; r < runs; k0 += keys[r++])
        for (index_t j = 0; j < keys[r]; ++j) sum += p[i * ldp + k0 + j] * static_cast<Acc>(v[r][j * ldv + col]);
      o[i * dv + col] = sum;
    }
}

/// o[0:ni, 0:dv] = c · O + P V on pair products for one run of keys: p holds ni rows of
/// 2·pairs probabilities rounded to bfloat16 (lda apart), v the run's part of pack_v_pairs'
/// panels (from its first key pair; column panel cp at v + cp · panel_stride), o's rows are dv
/// apart, c per row (nullptr: O = P V).
inline void pair_tile_pv(index_t pairs, const bfloat16* p, index_t lda, index_t ni, const bfloat16* v,
                         index_t panel_stride, index_t dv, float* o, const float* c) noexcept {
  constexpr index_t MR = AttentionTile<float>::mr, NR = pair_panel;
  for (index_t cp = 0; cp * NR < dv; ++cp)
    for (index_t ir = 0; ir < ni; ir += MR)
      pair_micro_kernel(pairs, p + ir * lda, lda, std::min(MR, ni - ir), v + cp * panel_stride,
                        std::min(NR, dv - cp * NR), o + ir * dv + cp * NR, dv, c ? c + ir : nullptr, 1.0f);
}

}  // namespace heed::simd::inline HEED_SIMD_LEVEL_NAMESPACE
