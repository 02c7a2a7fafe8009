#pragma once
// Score policies: how the attention driver turns a query tile and a key tile into scores.
//   ScaledDot{scale}   s(q, k) = scale · qᵀk, scale = 1/sqrt(d) unless given (Vaswani et al. 2017)
//   Dot{}              s(q, k) = qᵀk (Luong et al. 2015)
//   Additive<T>{...}   s(q, k) = vᵀ tanh(W_q q + b_q + W_k k + b_k) (Bahdanau et al. 2015)
//
// A policy validates the shapes once (`check`, throwing ShapeError), then `bind`s the query
// and key tensors of one call into a scorer. The scorer's `scores` fills a row-major block of
// scores and checks nothing. Binding is where a policy does its per-call work: Additive
// projects every query and key once, so each tile costs only the tanh-and-dot over the
// hidden size, vectorized by the simd layer.
//
// Users may write their own policy: anything satisfying ScorePolicy<P, T> below.

#include <cmath>
#include <concepts>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

#include "heed/core/cast.hpp"
#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/tile_ref.hpp"
#include "heed/simd/kernel_table.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/kernels/detail/scorers.hpp"

namespace heed {

/// What the driver needs of a score policy for scalar T: `check` validates q [B, Hq, Lq, dq]
/// and k [B, Hkv, Lk, dk] (ShapeError); `bind` takes the call's q and k (unit stride in the
/// last dimension) and returns a scorer whose `scores(tile, out, ld)` writes the tile's
/// row-major [ni, nj] scores with leading dimension ld, checking nothing. Scores are in the
/// accumulator type (float for bfloat16 and half tensors). With grouped heads (Hq = G·Hkv)
/// query head h reads key head h / G. The tile may be wider than the call's block_k: the driver
/// asks for visited tiles that follow each other as one span of up to 512 keys.
template <class P, class T>
concept ScorePolicy = requires(const P& p, const TensorView<const T, 4>& q, const TensorView<const T, 4>& k,
                               const TileRef& t, accumulator_t<T>* s) {
  p.check(q.shape(), k.shape());
  p.template bind<T>(q, k).scores(t, s, index_t{});
};

/// What the driver calls on a bound scorer for every visited run of key tiles: `scores(tile,
/// out, ld)` writes the tile's row-major [ni, nj] scores (leading dimension ld) in the
/// accumulator type Acc. This is all a user-written scorer needs.
template <class S, class Acc>
concept TileScorer = requires(const S& s, const TileRef& tile, Acc* out, index_t ld) {
  s.scores(tile, out, ld);
};

/// A scorer that packs K before its tiles are scored (ScaledDot's and Dot's, into the panels of
/// the attention micro-kernel), and the driver's protocol with it:
///   packed_bytes()             bytes packed per (batch, key head) group; 0: this call packs nothing
///   prepare(threads, first, n) pack groups [first, first + n) on `threads` workers
///   reserve(first, n), pack(g) the same in two steps: room for the groups, then group g on any
///                              worker (the driver's workers each pack the groups they compute)
///   packed_keys(b, hk, j0, nj) where the packed keys [j0, j0 + nj) of (batch b, key head hk)
///                              lie, and their bytes ({nullptr, 0} where none are): what the
///                              driver asks ahead for
/// A tile is scored only after its group was packed. A scorer with packed_bytes() must have all
/// of them (heed's driver names the one that is missing); one without packs nothing.
template <class S>
concept PackingScorer = requires(S& s, const S& cs, int threads, index_t i) {
  { cs.packed_bytes() } -> std::convertible_to<index_t>;
  s.prepare(threads, i, i);
  s.reserve(i, i);
  s.pack(i);
  { cs.packed_keys(i, i, i, i).second } -> std::convertible_to<index_t>;
};

/// scale · qᵀk, with scale = 1/sqrt(d) unless given.
struct ScaledDot {
  std::optional<double> scale = std::nullopt;  ///< 1/sqrt(d) when not given

  /// ShapeError unless q and k have the same head dim.
  void check(const Shape<4>& q, const Shape<4>& k) const { detail::check_same_depth(q, k, "ScaledDot"); }

  /// The scorer for one call (used by the driver).
  template <class T>
  [[nodiscard]] detail::DotScorer<T> bind(const TensorView<const T, 4>& q, const TensorView<const T, 4>& k) const {
    const double d = static_cast<double>(q.size(3));
    return {q, k, static_cast<accumulator_t<T>>(scale ? *scale : (d > 0 ? 1.0 / std::sqrt(d) : 1.0))};
  }
};

/// qᵀk, unscaled: the scores grow with d and the softmax sharpens
/// (examples/attention_comparison.cpp shows it).
struct Dot {
  /// ShapeError unless q and k have the same head dim.
  void check(const Shape<4>& q, const Shape<4>& k) const { detail::check_same_depth(q, k, "Dot"); }

  /// The scorer for one call (used by the driver).
  template <class T>
  [[nodiscard]] detail::DotScorer<T> bind(const TensorView<const T, 4>& q, const TensorView<const T, 4>& k) const {
    return {q, k, accumulator_t<T>(1)};
  }
};

/// Bahdanau's additive score vᵀ tanh(W_q q + b_q + W_k k + b_k). W_q [hidden, dq] and
/// W_k [hidden, dk] are nn.Linear weights, so dq and dk may differ; the biases may be empty.
/// A constant added to every score (the bias of the seed's `score` Linear) does not change
/// the softmax and is not needed.
template <class Scalar = float>
struct Additive {
  TensorView<const Scalar, 2> w_q;    ///< W_q [hidden, dq]
  TensorView<const Scalar, 2> w_k;    ///< W_k [hidden, dk]
  TensorView<const Scalar, 1> v;      ///< v [hidden]
  TensorView<const Scalar, 1> b_q{};  ///< b_q [hidden], or empty
  TensorView<const Scalar, 1> b_k{};  ///< b_k [hidden], or empty

  /// ShapeError naming every shape when W_q, W_k, v, the biases and the depths of q and k disagree.
  void check(const Shape<4>& q, const Shape<4>& k) const {
    const index_t hidden = v.size(0);
    auto fail = [&](const std::string& what) {
      throw ShapeError("heed::Additive: " + what + " (q " + to_string(q) + ", k " + to_string(k) + ", w_q " +
                       to_string(w_q.shape()) + ", w_k " + to_string(w_k.shape()) + ", v " + to_string(v.shape()) +
                       ")");
    };
    if (w_q.size(0) != hidden || w_k.size(0) != hidden) fail("w_q, w_k and v disagree on the hidden size");
    if (w_q.size(1) != q[3])
      fail("w_q has " + std::to_string(w_q.size(1)) + " columns, the query depth is " + std::to_string(q[3]));
    if (w_k.size(1) != k[3])
      fail("w_k has " + std::to_string(w_k.size(1)) + " columns, the key depth is " + std::to_string(k[3]));
    if (!b_q.empty() && b_q.size(0) != hidden) fail("b_q has " + std::to_string(b_q.size(0)) + " entries");
    if (!b_k.empty() && b_k.size(0) != hidden) fail("b_k has " + std::to_string(b_k.size(0)) + " entries");
  }

  /// The scorer for one call (used by the driver).
  template <class T>
  [[nodiscard]] detail::AdditiveScorer<accumulator_t<T>> bind(const TensorView<const T, 4>& q,
                                                              const TensorView<const T, 4>& k) const {
    static_assert(std::is_same_v<T, Scalar>, "Additive<Scalar> scores tensors of the same Scalar");
    return {project(q, w_q, b_q), project(k, w_k, b_k), cast<accumulator_t<T>>(v)};
  }

 private:
  // x [B, H, L, din] → x Wᵀ + b: [B, H, L, hidden] in the accumulator type, one vectorized dot
  // per (row, hidden unit): O(L · hidden · din), small beside the O(Lq · Lk · hidden)
  // tanh-and-dots it prepares.
  using Acc = accumulator_t<Scalar>;
  static Tensor<Acc, 4> project(const TensorView<const Scalar, 4>& x, const TensorView<const Scalar, 2>& w,
                                const TensorView<const Scalar, 1>& bias) {
    const index_t hidden = w.size(0), din = w.size(1);
    const Tensor<Scalar, 2> wd(w);  // dense rows
    const auto dot = [] {           // in the accumulator type, at the level in use
      if constexpr (std::is_same_v<Acc, Scalar>)
        return simd::vector_kernels<Acc>().dot;
      else
        return simd::convert_kernels<Scalar>().dot;
    }();
    Tensor<Acc, 4> out({x.size(0), x.size(1), x.size(2), hidden}, uninitialized);
    if (out.numel() == 0) return out;  // (no hidden unit: the scores are vᵀ tanh(·) of nothing, 0)
    for (index_t b = 0; b < x.size(0); ++b)
      for (index_t h = 0; h < x.size(1); ++h)
        for (index_t i = 0; i < x.size(2); ++i) {
          const Scalar* row = din > 0 ? &x(b, h, i, 0) : nullptr;  // (an empty row: the dot is 0)
          Acc* o = &out(b, h, i, 0);
          for (index_t u = 0; u < hidden; ++u)
            o[u] = dot(row, wd.data() + u * din, din) + (bias.empty() ? Acc(0) : Acc(bias(u)));
        }
    return out;
  }
};

}  // namespace heed
