#pragma once
// The one attention driver (DESIGN.md §2). Every attention in heed, from the functional
// scaled_dot_product_attention to the Transformer encoder, runs through attention_into().
//
// For each (batch, head, query tile), in parallel:
//     m = -inf, l = 0, O = 0                       running max, running sum, accumulator
//     for each key tile the mask does not block:   blocked tiles cost nothing
//         S = score(Q_tile, K_tile)                 one GEMM (dot) or tanh-and-dot (additive)
//         mask.apply(S)                             only on partially masked tiles
//         m_new = max(m, rowmax S); P = exp(S - m_new)
//         l = l·exp(m - m_new) + rowsum P; O = O·exp(m - m_new) + P·V_tile
//     O = O / l                                     l == 0: the row was fully masked
// This is FlashAttention-2's loop order (Dao 2023, https://arxiv.org/abs/2307.08691) with the
// online softmax of Milakov & Gimelshein (https://arxiv.org/abs/1805.02867): memory stays
// O(tile) whatever the sequence length, unless the caller asks for the weights.
//
// With weights requested, each visited tile's P = exp(S - m_at_that_time) is written to the
// weights row together with m_at_that_time; once the row is done, every segment is rescaled
// by exp(m_then - m_final) / l. One pass, no recomputation.

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "heed/core/error.hpp"
#include "heed/core/parallel.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/mask.hpp"
#include "heed/kernels/score.hpp"
#include "heed/kernels/softmax.hpp"

namespace heed {

/// Tiles the driver visited, by what the mask said of them (for tests and tuning).
struct AttentionStats {
  index_t open = 0;
  index_t partial = 0;
  index_t blocked = 0;  ///< skipped: no scores, no exp, no GEMM
};

struct AttentionOptions {
  bool need_weights = false;                  ///< also return the probabilities [B, H, Lq, Lk]
  MaskedRows masked_rows = MaskedRows::zero;  ///< a fully masked row gives 0 (default) or NaN (PyTorch 1.13)
  int num_threads = 0;                        ///< 0: heed::num_threads()
  index_t block_q = 0;                        ///< query rows per tile; 0: 256
  index_t block_k = 0;                        ///< keys per tile; 0: 256
  AttentionStats* stats = nullptr;            ///< when set, receives the tile counts
};

/// output [.., Lq, dv]; weights [.., Lq, Lk] with need_weights, else empty.
template <class Scalar, std::size_t Rank>
struct AttentionResult {
  Tensor<Scalar, Rank> output;
  Tensor<Scalar, Rank> weights;
};

namespace kernels {

inline constexpr index_t default_block_q = 256;
inline constexpr index_t default_block_k = 256;

template <class T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// One worker's buffers, reused across its tiles.
template <class T>
struct AttentionScratch {
  RowMatrix<T> scores;  // [block_q, block_k]
  RowMatrix<T> acc;     // [block_q, dv]
  std::vector<OnlineSoftmax<T>> rows;
  std::vector<T> m_at;  // [block_q, key tiles]: the running max when a tile was written
  AttentionStats stats;
};

/// The driver. All shapes have been validated by the caller; q, k, v have unit stride in
/// their last dimension; out is [B, H, Lq, dv]; weights is empty or [B, H, Lq, Lk], zeroed.
template <class T, class Scorer, class Mask>
void attention_tiles(const TensorView<T, 4>& out, const TensorView<T, 4>& weights, const TensorView<const T, 4>& v,
                     const Scorer& scorer, const Mask& mask, const AttentionOptions& options) {
  const index_t B = out.size(0), H = out.size(1), Lq = out.size(2), dv = out.size(3), Lk = v.size(2);
  const index_t bq = options.block_q > 0 ? options.block_q : default_block_q;
  const index_t bk = options.block_k > 0 ? options.block_k : default_block_k;
  const index_t q_tiles = (Lq + bq - 1) / bq;
  const index_t k_tiles = (Lk + bk - 1) / bk;
  const bool with_weights = !weights.empty();
  const int threads = std::max(1, options.num_threads > 0 ? options.num_threads : num_threads());

  std::vector<AttentionScratch<T>> scratch(static_cast<std::size_t>(threads));
  for (auto& s : scratch) {
    s.scores.resize(bq, bk);
    s.acc.resize(bq, dv);
    s.rows.resize(static_cast<std::size_t>(bq));
    if (with_weights) s.m_at.resize(static_cast<std::size_t>(bq * k_tiles));
  }

  parallel_for(B * H * q_tiles, threads, [&](index_t task, int worker) {
    AttentionScratch<T>& s = scratch[static_cast<std::size_t>(worker)];
    const index_t b = task / (H * q_tiles), h = (task / q_tiles) % H, i0 = (task % q_tiles) * bq;
    const index_t ni = std::min(bq, Lq - i0);
    T* S = s.scores.data();
    const index_t ld = bk;
    s.acc.topRows(ni).setZero();
    std::fill(s.rows.begin(), s.rows.begin() + ni, OnlineSoftmax<T>{});
    if (with_weights) std::fill(s.m_at.begin(), s.m_at.end(), -std::numeric_limits<T>::infinity());

    for (index_t jt = 0; jt < k_tiles; ++jt) {
      const index_t j0 = jt * bk, nj = std::min(bk, Lk - j0);
      const mask::TileRef tile{b, h, i0, ni, j0, nj};
      const mask::Tile kind = mask.classify(tile);
      if (kind == mask::Tile::blocked) {
        ++s.stats.blocked;
        continue;
      }
      ++(kind == mask::Tile::open ? s.stats.open : s.stats.partial);
      scorer.scores(b, h, i0, ni, j0, nj, S, ld);
      if (kind == mask::Tile::partial) mask.apply(tile, S, ld);

      for (index_t i = 0; i < ni; ++i) {
        T* row = S + i * ld;
        const T correction = s.rows[static_cast<std::size_t>(i)].update(row, nj);  // row := exp(row - m_new)
        if (correction != T(1)) s.acc.row(i) *= correction;
        if (with_weights) {
          std::copy(row, row + nj, &weights(b, h, i0 + i, j0));
          s.m_at[static_cast<std::size_t>(i * k_tiles + jt)] = s.rows[static_cast<std::size_t>(i)].m;
        }
      }
      // O += P · V_tile
      using ConstMap = Eigen::Map<const RowMatrix<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
      const ConstMap p(S, ni, nj, Eigen::OuterStride<>(ld));
      const ConstMap vt(&v(b, h, j0, 0), nj, dv, Eigen::OuterStride<>(v.stride(2)));
      s.acc.topRows(ni).noalias() += p * vt;
    }

    for (index_t i = 0; i < ni; ++i) {
      const OnlineSoftmax<T>& state = s.rows[static_cast<std::size_t>(i)];
      const T norm = state.normalizer(options.masked_rows);
      T* o = &out(b, h, i0 + i, 0);
      const index_t os = out.stride(3);
      for (index_t c = 0; c < dv; ++c) o[c * os] = s.acc(i, c) * norm;
      if (!with_weights) continue;
      T* w = &weights(b, h, i0 + i, 0);
      if (!(state.l > T(0))) {  // fully masked: the row is all fill (0 is already there)
        if (options.masked_rows == MaskedRows::nan) std::fill(w, w + Lk, norm);
        continue;
      }
      for (index_t jt = 0; jt < k_tiles; ++jt) {
        const T m_then = s.m_at[static_cast<std::size_t>(i * k_tiles + jt)];
        if (m_then == -std::numeric_limits<T>::infinity()) continue;  // blocked, or nothing visible yet
        const index_t j0 = jt * bk, nj = std::min(bk, Lk - j0);
        simd::scale(std::exp(m_then - state.m) * norm, w + j0, nj);
      }
    }
  });

  if (options.stats) {
    *options.stats = {};
    for (const auto& s : scratch) {
      options.stats->open += s.stats.open;
      options.stats->partial += s.stats.partial;
      options.stats->blocked += s.stats.blocked;
    }
  }
}

// A view with unit stride in the last dimension: the view itself, or a dense copy kept in `storage`.
template <class T>
TensorView<const T, 4> unit_inner(const TensorView<const T, 4>& x, Tensor<T, 4>& storage) {
  if (x.stride(3) == 1 || x.size(3) <= 1) return x;
  storage = Tensor<T, 4>(x);
  return storage.view();
}

// [B, L, d] seen as [B, 1, L, d].
template <class T, std::size_t Rank>
TensorView<T, 4> as_heads(const TensorView<T, Rank>& x) {
  if constexpr (Rank == 4) {
    return x;
  } else {
    static_assert(Rank == 3, "attention takes [B, H, L, d] or [B, L, d] tensors");
    return {x.data(), {x.size(0), 1, x.size(1), x.size(2)}, {x.stride(0), 0, x.stride(1), x.stride(2)}};
  }
}

}  // namespace kernels

/// The validated entry point that modules use: writes softmax(score(q, k) + mask) · v into
/// `out` [B, H, Lq, dv] (any strides, e.g. a transposed [B, Lq, H, dv] buffer) and, when
/// `weights` is non-empty, the probabilities into it ([B, H, Lq, Lk]).
template <class T, class Score, class Mask>
requires ScorePolicy<Score, T> && mask::MaskPolicy<Mask, T>
void attention_into(const TensorView<T, 4>& out, const TensorView<T, 4>& weights, const TensorView<const T, 4>& q,
                    const TensorView<const T, 4>& k, const TensorView<const T, 4>& v, const Score& score,
                    const Mask& mask, const AttentionOptions& options = {}) {
  static_assert(std::is_floating_point_v<T>, "attention needs float or double tensors");
  const auto fail = [&](const std::string& what) {
    throw ShapeError("heed::attention: " + what + " (q " + to_string(q.shape()) + ", k " + to_string(k.shape()) +
                     ", v " + to_string(v.shape()) + ")");
  };
  if (k.size(0) != q.size(0) || v.size(0) != q.size(0)) fail("batch sizes differ");
  if (k.size(1) != q.size(1) || v.size(1) != q.size(1)) fail("head counts differ");
  if (k.size(2) != v.size(2)) fail("k and v have different lengths");
  score.check(q.shape(), k.shape());
  const Shape<4> dims{q.size(0), q.size(1), q.size(2), k.size(2)};
  mask.check(dims);
  const Shape<4> out_shape{q.size(0), q.size(1), q.size(2), v.size(3)};
  if (out.shape() != out_shape) fail("output is " + to_string(out.shape()) + ", expected " + to_string(out_shape));
  if (!weights.empty() && weights.shape() != dims)
    fail("weights are " + to_string(weights.shape()) + ", expected " + to_string(dims));
  if (options.block_q < 0 || options.block_k < 0) fail("negative block size");
  if (out.numel() == 0 && weights.empty()) return;

  Tensor<T, 4> q_dense, k_dense, v_dense;
  const auto qd = kernels::unit_inner(q, q_dense);
  const auto kd = kernels::unit_inner(k, k_dense);
  const auto vd = kernels::unit_inner(v, v_dense);
  const auto scorer = score.template bind<T>(qd, kd);
  kernels::attention_tiles(out, weights, vd, scorer, mask, options);
}

/// softmax(score(q, k) + mask) · v for q [B, H, Lq, d], k [B, H, Lk, d], v [B, H, Lk, dv] (or
/// the same without H). Returns the output and, with {.need_weights = true}, the weights.
template <TensorLike Q, TensorLike K, TensorLike V, class Score = ScaledDot, class Mask = mask::None>
[[nodiscard]] auto attention(const Q& q, const K& k, const V& v, const Score& score = {}, const Mask& mask = {},
                             const AttentionOptions& options = {}) {
  using T = scalar_of<Q>;
  constexpr std::size_t Rank = rank_of<Q>;
  static_assert(std::is_same_v<scalar_of<K>, T> && std::is_same_v<scalar_of<V>, T>,
                "q, k and v must have one scalar type");
  static_assert(rank_of<K> == Rank && rank_of<V> == Rank, "q, k and v must have the same rank");
  static_assert(Rank == 3 || Rank == 4, "attention takes [B, H, L, d] or [B, L, d] tensors");
  const auto q4 = kernels::as_heads(as_view(q));
  const auto k4 = kernels::as_heads(as_view(k));
  const auto v4 = kernels::as_heads(as_view(v));

  AttentionResult<T, Rank> result;
  auto shaped = [](index_t b, index_t h, index_t rows, index_t cols) {
    if constexpr (Rank == 4)
      return Shape<4>{b, h, rows, cols};
    else
      return Shape<3>{b, rows, cols};
  };
  // Output and weights are allocated only once the shapes are known to agree; their heads
  // dimension must not be computed from unchecked inputs, so validate first.
  if (k4.size(0) != q4.size(0) || v4.size(0) != q4.size(0) || k4.size(1) != q4.size(1) || v4.size(1) != q4.size(1))
    throw ShapeError("heed::attention: batch or head counts differ (q " + to_string(as_view(q).shape()) + ", k " +
                     to_string(as_view(k).shape()) + ", v " + to_string(as_view(v).shape()) + ")");
  result.output = Tensor<T, Rank>(shaped(q4.size(0), q4.size(1), q4.size(2), v4.size(3)));
  if (options.need_weights) result.weights = Tensor<T, Rank>(shaped(q4.size(0), q4.size(1), q4.size(2), k4.size(2)));
  attention_into(kernels::as_heads(result.output.view()),
                 options.need_weights ? kernels::as_heads(result.weights.view()) : TensorView<T, 4>{}, q4, k4, v4,
                 score, mask, options);
  return result;
}

/// softmax(q kᵀ / sqrt(d) + mask) · v, like torch.nn.functional.scaled_dot_product_attention
/// (with heed's typed masks: pass mask::Allowed for SDPA's boolean attn_mask).
template <TensorLike Q, TensorLike K, TensorLike V, class Mask = mask::None>
[[nodiscard]] auto scaled_dot_product_attention(const Q& q, const K& k, const V& v, const Mask& mask = {},
                                                AttentionOptions options = {}) {
  options.need_weights = false;
  return attention(q, k, v, ScaledDot{}, mask, options).output;
}

}  // namespace heed
