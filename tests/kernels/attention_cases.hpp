#pragma once
// Shared by the attention tests: random inputs, every mask in heed paired with the same mask
// written as a reference function, and a check of the driver against the reference.

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "heed/core/random.hpp"
#include "heed/kernels/attention.hpp"
#include "reference/attention.hpp"
#include "support/compare.hpp"

namespace heed::test {

enum class MaskKind {
  none,
  causal,
  causal_bottom_right,
  sliding_window,
  key_padding,
  allowed,
  bias,
  causal_and_padding
};
inline const char* name(MaskKind m) {
  constexpr const char* names[] = {"none",    "causal", "causal_bottom_right", "sliding_window", "key_padding",
                                   "allowed", "bias",   "causal_and_padding"};
  return names[static_cast<int>(m)];
}
inline constexpr MaskKind all_masks[] = {
    MaskKind::none,    MaskKind::causal, MaskKind::causal_bottom_right, MaskKind::sliding_window, MaskKind::key_padding,
    MaskKind::allowed, MaskKind::bias,   MaskKind::causal_and_padding};

enum class ScoreKind { scaled_dot, dot, additive };
inline const char* name(ScoreKind s) {
  constexpr const char* names[] = {"scaled_dot", "dot", "additive"};
  return names[static_cast<int>(s)];
}

struct Dims {
  index_t B, H, Lq, Lk, d, dv;
  index_t Hkv = 0;  // key/value heads; 0: H
  [[nodiscard]] index_t kv_heads() const { return Hkv > 0 ? Hkv : H; }
};

// Every tensor a case needs, in T and in double.
template <class T>
struct Inputs {
  Dims n;
  Tensor<T, 4> q, k, v;
  Tensor<bool, 2> padding;  // [B, Lk], true = ignore
  Tensor<bool, 4> allowed;  // [B, 1, Lq, Lk]
  Tensor<T, 4> bias;        // [1, H, Lq, Lk]
  index_t hidden = 12;
  Tensor<T, 2> wq, wk;
  Tensor<T, 1> v_score, bq, bk;

  explicit Inputs(Dims dims, std::uint64_t seed = 1)
      : n(dims),
        q(randn<T>({n.B, n.H, n.Lq, n.d}, seed)),
        k(randn<T>({n.B, n.kv_heads(), n.Lk, n.d}, seed + 1)),
        v(randn<T>({n.B, n.kv_heads(), n.Lk, n.dv}, seed + 2)),
        padding({n.B, n.Lk}),
        allowed({n.B, 1, n.Lq, n.Lk}),
        bias(randn<T>({1, n.H, n.Lq, n.Lk}, seed + 3)),
        wq(randn<T>({hidden, n.d}, seed + 4)),
        wk(randn<T>({hidden, n.d}, seed + 5)),
        v_score(randn<T>({hidden}, seed + 6)),
        bq(randn<T>({hidden}, seed + 7)),
        bk(randn<T>({hidden}, seed + 8)) {
    scale(wq, T(1) / std::sqrt(T(n.d)));
    scale(wk, T(1) / std::sqrt(T(n.d)));
    // batch 0: the last third of the keys is padding (never all of them); others: every 3rd key
    for (index_t b = 0; b < n.B; ++b)
      for (index_t j = 0; j < n.Lk; ++j) padding(b, j) = b == 0 ? (j >= n.Lk - n.Lk / 3 && j > 0) : (j % 3 == 2);
    const auto coin = uniform<double>({n.B, 1, n.Lq, n.Lk}, 0.0, 1.0, seed + 9);
    for (index_t i = 0; i < allowed.numel(); ++i) allowed.data()[i] = coin.data()[i] < 0.75;
    for (index_t i = 0; i < bias.numel(); i += 5) bias.data()[i] = -std::numeric_limits<T>::infinity();
  }

  static void scale(Tensor<T, 2>& w, T s) {
    for (index_t i = 0; i < w.numel(); ++i) w.data()[i] *= s;
  }

  // Calls f(heed_mask, reference_mask_fn).
  template <class F>
  void with_mask(MaskKind kind, F&& f) const {
    using reference::hidden;
    const index_t offset = n.Lk - n.Lq;
    const auto& pad = padding;
    const auto& ok = allowed;
    const auto& add = bias;
    switch (kind) {
      case MaskKind::none:
        return f(mask::None{}, reference::no_mask);
      case MaskKind::causal:
        return f(mask::Causal{}, [](index_t, index_t, index_t i, index_t j) { return j <= i ? 0.0 : hidden; });
      case MaskKind::causal_bottom_right:
        return f(mask::Causal{offset},
                 [offset](index_t, index_t, index_t i, index_t j) { return j <= i + offset ? 0.0 : hidden; });
      case MaskKind::sliding_window:
        return f(mask::SlidingWindow{.left = 5, .right = 2},
                 [](index_t, index_t, index_t i, index_t j) { return (j >= i - 5 && j <= i + 2) ? 0.0 : hidden; });
      case MaskKind::key_padding:
        return f(mask::KeyPadding{pad},
                 [&pad](index_t b, index_t, index_t, index_t j) { return pad(b, j) ? hidden : 0.0; });
      case MaskKind::allowed:
        return f(mask::Allowed{ok},
                 [&ok](index_t b, index_t, index_t i, index_t j) { return ok(b, 0, i, j) ? 0.0 : hidden; });
      case MaskKind::bias:
        return f(mask::Bias{add}, [&add](index_t, index_t h, index_t i, index_t j) { return double(add(0, h, i, j)); });
      case MaskKind::causal_and_padding:
        return f(mask::all(mask::Causal{}, mask::KeyPadding{pad}),
                 [&pad](index_t b, index_t, index_t i, index_t j) { return (j <= i && !pad(b, j)) ? 0.0 : hidden; });
    }
  }

  // Calls f(heed_score_policy, reference_score_fn).
  template <class F>
  void with_score(ScoreKind kind, const Tensor<double, 4>& q_d, const Tensor<double, 4>& k_d,
                  const Tensor<double, 2>& wq_d, const Tensor<double, 2>& wk_d, const Tensor<double, 1>& v_d,
                  const Tensor<double, 1>& bq_d, const Tensor<double, 1>& bk_d, F&& f) const {
    switch (kind) {
      case ScoreKind::scaled_dot:
        return f(ScaledDot{}, reference::scaled_dot(q_d, k_d, 1.0 / std::sqrt(double(n.d))));
      case ScoreKind::dot:
        return f(Dot{}, reference::scaled_dot(q_d, k_d, 1.0));
      case ScoreKind::additive:
        return f(Additive<T>{.w_q = wq, .w_k = wk, .v = v_score, .b_q = bq, .b_k = bk},
                 reference::additive(q_d, k_d, wq_d, wk_d, v_d, bq_d, bk_d));
    }
  }
};

template <class T>
constexpr Tolerance attention_tolerance() {
  if constexpr (sizeof(T) >= 8)
    return {1e-10, 1e-11};
  else
    return {2e-4, 2e-5};
}

// Runs heed and the reference on one configuration and compares output and weights.
template <class T>
void expect_matches_reference(const Inputs<T>& in, ScoreKind score_kind, MaskKind mask_kind, AttentionOptions options) {
  SCOPED_TRACE(std::string("score ") + name(score_kind) + ", mask " + name(mask_kind) + ", dims [" +
               std::to_string(in.n.B) + ", " + std::to_string(in.n.H) + "/" + std::to_string(in.n.kv_heads()) +
               ", Lq " + std::to_string(in.n.Lq) + ", Lk " + std::to_string(in.n.Lk) + ", d " + std::to_string(in.n.d) +
               ", dv " + std::to_string(in.n.dv) + "], weights " + std::to_string(options.need_weights) + ", threads " +
               std::to_string(options.num_threads) + ", blocks " + std::to_string(options.block_q) + "x" +
               std::to_string(options.block_k));
  const auto qd = reference::to_double(in.q), kd = reference::to_double(in.k), vd = reference::to_double(in.v);
  const auto wq = reference::to_double(in.wq), wk = reference::to_double(in.wk);
  const auto vs = reference::to_double(in.v_score), bq = reference::to_double(in.bq), bk = reference::to_double(in.bk);
  in.with_score(score_kind, qd, kd, wq, wk, vs, bq, bk, [&](const auto& score, const reference::ScoreFn& ref_score) {
    in.with_mask(mask_kind, [&](const auto& mask, const reference::MaskFn& ref_mask) {
      const auto expected =
          reference::attention(qd, kd, vd, ref_score, ref_mask, options.masked_rows == MaskedRows::nan);
      const auto got = attention(in.q, in.k, in.v, score, mask, options);
      EXPECT_TRUE(all_close(got.output, expected.output, attention_tolerance<T>()));
      if (options.need_weights) {
        EXPECT_TRUE(all_close(got.weights, expected.weights, attention_tolerance<T>()));
      } else {
        EXPECT_TRUE(got.weights.empty());
      }
    });
  });
}

}  // namespace heed::test
