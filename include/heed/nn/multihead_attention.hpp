#pragma once
// MultiheadAttention = torch.nn.MultiheadAttention(batch_first=True), inference only.
//   q = query W_qᵀ + b_q, k = key W_kᵀ + b_k, v = value W_vᵀ + b_v   (split into H heads)
//   o = softmax(q kᵀ / sqrt(E/H) + masks) v                           (heed's tiled driver)
//   y = concat_heads(o) W_oᵀ + b_o
// State dict: in_proj_weight [3E, E] and in_proj_bias [3E] (or q/k/v_proj_weight when kdim
// or vdim differ from E), out_proj.weight/.bias, bias_k/bias_v with add_bias_kv.
//
// PyTorch's mask conventions are translated here, at the boundary, into heed's typed masks:
// key_padding_mask (bool [B, Lk], true = ignore) → mask::KeyPadding; a bool attn_mask (true =
// NOT allowed, [Lq, Lk] or [B·H, Lq, Lk]) → mask::Allowed of its negation; a float attn_mask →
// mask::Bias; is_causal → mask::Causal.

#include <algorithm>
#include <optional>
#include <string>

#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/attention.hpp"
#include "heed/nn/linear.hpp"
#include "heed/nn/weights.hpp"

namespace heed::nn {

struct MultiheadAttentionOptions {
  index_t embed_dim = 0;
  index_t num_heads = 1;
  bool bias = true;
  bool add_bias_kv = false;
  bool add_zero_attn = false;
  index_t kdim = 0;  ///< 0: embed_dim
  index_t vdim = 0;  ///< 0: embed_dim
  std::uint64_t seed = 0;
};

/// The per-call options of MultiheadAttention, with PyTorch's names and conventions.
template <class Scalar>
struct MultiheadAttentionCall {
  TensorView<const bool, 2> key_padding_mask{};  ///< [B, Lk], true = ignore this key
  TensorView<const bool, 3> attn_mask{};         ///< [1 or B·H, Lq, Lk], true = NOT allowed
  TensorView<const Scalar, 3> attn_bias{};       ///< a float attn_mask: [1 or B·H, Lq, Lk], added
  bool need_weights = true;                      ///< PyTorch's default
  bool average_attn_weights = true;              ///< weights [B, 1, Lq, Lk] averaged over heads
  bool is_causal = false;
  MaskedRows masked_rows = MaskedRows::zero;  ///< MaskedRows::nan: PyTorch 1.13's fully masked rows
};

template <class Scalar>
struct MultiheadAttentionResult {
  Tensor<Scalar, 3> output;   ///< [B, Lq, E]
  Tensor<Scalar, 4> weights;  ///< [B, 1, Lq, Lk] averaged, [B, H, Lq, Lk] otherwise, empty without need_weights
};

template <class Scalar = float>
class MultiheadAttention {
 public:
  explicit MultiheadAttention(const MultiheadAttentionOptions& o) : options_(checked(o)) {
    const index_t E = o.embed_dim;
    q_proj_ = Linear<Scalar>({.in_features = E, .out_features = E, .bias = o.bias, .seed = o.seed});
    k_proj_ = Linear<Scalar>({.in_features = kdim(), .out_features = E, .bias = o.bias, .seed = o.seed + 2});
    v_proj_ = Linear<Scalar>({.in_features = vdim(), .out_features = E, .bias = o.bias, .seed = o.seed + 4});
    out_proj_ = Linear<Scalar>({.in_features = E, .out_features = E, .bias = o.bias, .seed = o.seed + 6});
    if (o.add_bias_kv) {
      bias_k_ = randn<Scalar, 3>(Shape<3>{1, 1, E}, o.seed + 8);
      bias_v_ = randn<Scalar, 3>(Shape<3>{1, 1, E}, o.seed + 9);
    }
    pack();
  }

  [[nodiscard]] const MultiheadAttentionOptions& options() const noexcept { return options_; }
  [[nodiscard]] index_t kdim() const noexcept { return options_.kdim > 0 ? options_.kdim : options_.embed_dim; }
  [[nodiscard]] index_t vdim() const noexcept { return options_.vdim > 0 ? options_.vdim : options_.embed_dim; }
  [[nodiscard]] index_t head_dim() const noexcept { return options_.embed_dim / options_.num_heads; }

  template <WeightSource S>
  void load(const Loader<S>& from) {
    const index_t E = options_.embed_dim;
    const bool packed = kdim() == E && vdim() == E;
    Tensor<Scalar, 1> in_bias;
    if (options_.bias) in_bias = from.template take<Scalar, 1>("in_proj_bias", {3 * E});
    auto bias_part = [&](index_t i) {
      return options_.bias ? Tensor<Scalar, 1>(in_bias.view().narrow(0, i * E, (i + 1) * E)) : Tensor<Scalar, 1>();
    };
    if (packed) {
      const auto w = from.template take<Scalar, 2>("in_proj_weight", {3 * E, E});
      q_proj_.set(Tensor<Scalar, 2>(w.view().narrow(0, 0, E)), bias_part(0));
      k_proj_.set(Tensor<Scalar, 2>(w.view().narrow(0, E, 2 * E)), bias_part(1));
      v_proj_.set(Tensor<Scalar, 2>(w.view().narrow(0, 2 * E, 3 * E)), bias_part(2));
    } else {
      q_proj_.set(from.template take<Scalar, 2>("q_proj_weight", {E, E}), bias_part(0));
      k_proj_.set(from.template take<Scalar, 2>("k_proj_weight", {E, kdim()}), bias_part(1));
      v_proj_.set(from.template take<Scalar, 2>("v_proj_weight", {E, vdim()}), bias_part(2));
    }
    out_proj_.load(from.child("out_proj."));
    if (options_.add_bias_kv) {
      bias_k_ = from.template take<Scalar, 3>("bias_k", {1, 1, E});
      bias_v_ = from.template take<Scalar, 3>("bias_v", {1, 1, E});
    }
    pack();
  }
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    load_module(*this, source, prefix, load_options);
  }

  /// query [B, Lq, E], key [B, Lk, kdim], value [B, Lk, vdim].
  template <TensorLike Q, TensorLike K, TensorLike V>
  [[nodiscard]] MultiheadAttentionResult<Scalar> operator()(const Q& query, const K& key, const V& value,
                                                            const MultiheadAttentionCall<Scalar>& call = {}) const {
    static_assert(rank_of<Q> == 3 && rank_of<K> == 3 && rank_of<V> == 3, "MultiheadAttention takes [B, L, E] tensors");
    return run(as_view(query), as_view(key), as_view(value), call, nullptr);
  }

  /// out = skip + self_attention(x) (no weights): an encoder layer's residual connection, the
  /// output projection's GEMM adding `skip` as it writes `out`. skip and out are [B, L, E]
  /// tensors (or views of them) with x's shape; either may be x itself: x is read (projected)
  /// before anything is written.
  template <TensorLike X>
  void add_self_attention(const X& x, const TensorView<const Scalar, 3>& skip, const TensorView<Scalar, 3>& out,
                          MultiheadAttentionCall<Scalar> call) const {
    const auto xv = as_view(x);
    const Shape<3> expected{xv.size(0), xv.size(1), options_.embed_dim};
    if (skip.shape() != expected || out.shape() != expected || !skip.is_contiguous() || !out.is_contiguous())
      throw ShapeError("heed::nn::MultiheadAttention: skip " + to_string(skip.shape()) + " and out " +
                       to_string(out.shape()) + " must be contiguous and match x " + to_string(xv.shape()));
    call.need_weights = false;
    const Residual residual{skip.data(), out.data()};
    (void)run(xv, xv, xv, call, &residual);
  }

 private:
  struct Residual {
    const Scalar* skip;  // [B, L, E], added to the output projection
    Scalar* out;         // [B, L, E]
  };

  MultiheadAttentionResult<Scalar> run(const TensorView<const Scalar, 3>& qv, const TensorView<const Scalar, 3>& kv,
                                       const TensorView<const Scalar, 3>& vv,
                                       const MultiheadAttentionCall<Scalar>& call, const Residual* residual) const {
    const index_t B = qv.size(0), Lq = qv.size(1), Lk0 = kv.size(1), E = options_.embed_dim, H = options_.num_heads;
    const auto shapes = [&] {
      return " (query " + to_string(qv.shape()) + ", key " + to_string(kv.shape()) + ", value " +
             to_string(vv.shape()) + ")";
    };
    if (qv.size(2) != E || kv.size(2) != kdim() || vv.size(2) != vdim())
      throw ShapeError("heed::nn::MultiheadAttention: expects embed_dim " + std::to_string(E) + ", kdim " +
                       std::to_string(kdim()) + ", vdim " + std::to_string(vdim()) + shapes());
    if (kv.size(0) != B || vv.size(0) != B || vv.size(1) != Lk0)
      throw ShapeError("heed::nn::MultiheadAttention: batch or key lengths differ" + shapes());

    // Extra key columns: bias_k/bias_v, then a zero key/value (add_zero_attn). Masks get a
    // visible column for each, as PyTorch pads them.
    const index_t extra = (options_.add_bias_kv ? 1 : 0) + (options_.add_zero_attn ? 1 : 0);
    const index_t Lk = Lk0 + extra, hd = head_dim();
    // [B, L, E] rows with row stride `ld` → the [B, H, L, hd] view of them
    const auto heads = [&](Scalar* data, index_t L, index_t ld) {
      return TensorView<Scalar, 4>(data, {B, H, L, hd}, {L * ld, hd, ld, 1});
    };
    Tensor<Scalar, 3> q, k, v, qkv;
    TensorView<const Scalar, 4> qh, kh, vh;
    if (extra == 0 && !qkv_proj_.weight().empty() && same(qv, kv) && same(qv, vv)) {
      // Self-attention: one GEMM against the packed [3E, E] in_proj_weight, then strided views.
      qkv = qkv_proj_(qv);
      qh = heads(qkv.data(), Lq, 3 * E);
      kh = heads(qkv.data() + E, Lq, 3 * E);
      vh = heads(qkv.data() + 2 * E, Lq, 3 * E);
    } else {
      q = q_proj_(qv);
      k = Tensor<Scalar, 3>({B, Lk, E});
      v = Tensor<Scalar, 3>({B, Lk, E});
      project_into(k_proj_, kv, k, bias_k_);
      project_into(v_proj_, vv, v, bias_v_);
      qh = heads(q.data(), Lq, E);
      kh = heads(k.data(), Lk, E);
      vh = heads(v.data(), Lk, E);
    }
    Tensor<Scalar, 3> context({B, Lq, E}, uninitialized);
    Tensor<Scalar, 4> weights;
    if (call.need_weights) weights = Tensor<Scalar, 4>({B, H, Lq, Lk});
    const AttentionOptions options{.masked_rows = call.masked_rows};

    with_masks(call, B, Lq, Lk0, extra, [&](const auto& mask) {
      attention_into<Scalar>(heads(context.data(), Lq, E), weights.view(), qh, kh, vh, ScaledDot{}, mask, options);
    });

    MultiheadAttentionResult<Scalar> r;
    if (residual) {
      out_proj_.rows_add(TensorView<const Scalar, 2>(context.data(), {B * Lq, E}), residual->skip,
                         TensorView<Scalar, 2>(residual->out, {B * Lq, E}));
      return r;
    }
    r.output = out_proj_(context);
    if (call.need_weights && call.average_attn_weights) {
      r.weights = Tensor<Scalar, 4>({B, 1, Lq, Lk});
      for (index_t b = 0; b < B; ++b)
        for (index_t h = 0; h < H; ++h)
          simd::axpy(Scalar(1) / Scalar(H), &weights(b, h, 0, 0), &r.weights(b, 0, 0, 0), Lq * Lk);
    } else {
      r.weights = std::move(weights);
    }
    return r;
  }

  static const MultiheadAttentionOptions& checked(const MultiheadAttentionOptions& o) {
    if (o.embed_dim < 1 || o.num_heads < 1 || o.embed_dim % o.num_heads != 0)
      throw ShapeError("heed::nn::MultiheadAttention: embed_dim (" + std::to_string(o.embed_dim) +
                       ") must be a positive multiple of num_heads (" + std::to_string(o.num_heads) + ")");
    return o;
  }

  // Views of one and the same tensor: self-attention.
  template <class A, class B>
  static bool same(const A& a, const B& b) noexcept {
    return static_cast<const void*>(a.data()) == static_cast<const void*>(b.data()) && a.shape() == b.shape() &&
           a.strides() == b.strides();
  }

  // The q, k, v projections stacked into one E → 3E Linear (in_proj_weight's own layout), for
  // self-attention; left empty when kdim or vdim differ from E.
  void pack() {
    const index_t E = options_.embed_dim;
    if (kdim() != E || vdim() != E) return;
    Tensor<Scalar, 2> w({3 * E, E});
    Tensor<Scalar, 1> b;
    if (options_.bias) b = Tensor<Scalar, 1>({3 * E});
    const Linear<Scalar>* parts[] = {&q_proj_, &k_proj_, &v_proj_};
    for (index_t i = 0; i < 3; ++i) {
      std::copy_n(parts[i]->weight().data(), E * E, w.data() + i * E * E);
      if (options_.bias) std::copy_n(parts[i]->bias().data(), E, b.data() + i * E);
    }
    qkv_proj_ = Linear<Scalar>({.in_features = E, .out_features = 3 * E, .bias = options_.bias});
    qkv_proj_.set(std::move(w), std::move(b));
  }

  // rows of x projected into out[:, :L0], then bias_kv's row, then a zero row.
  template <class X>
  void project_into(const Linear<Scalar>& proj, const X& x, Tensor<Scalar, 3>& out,
                    const Tensor<Scalar, 3>& bias_kv) const {
    const index_t B = out.size(0), L0 = x.size(1), E = options_.embed_dim;
    Tensor<Scalar, 3> storage;
    const auto dense = contiguous(x, storage);
    for (index_t b = 0; b < B; ++b) {
      proj.rows(TensorView<const Scalar, 2>(&dense(b, 0, 0), {L0, x.size(2)}),
                TensorView<Scalar, 2>(&out(b, 0, 0), {L0, E}));
      if (options_.add_bias_kv) std::copy_n(bias_kv.data(), E, &out(b, L0, 0));
      // the add_zero_attn row is already zero
    }
  }

  // Builds heed's typed masks from PyTorch's, padded for the extra key columns, and calls f(mask).
  template <class F>
  void with_masks(const MultiheadAttentionCall<Scalar>& call, index_t B, index_t Lq, index_t Lk0, index_t extra,
                  F&& f) const {
    const index_t H = options_.num_heads, Lk = Lk0 + extra;
    const auto fail = [&](const std::string& what, const std::string& shape) {
      throw ShapeError("heed::nn::MultiheadAttention: " + what + " has shape " + shape + ", expected " +
                       (what == "key_padding_mask"
                            ? to_string(Shape<2>{B, Lk0})
                            : "[" + std::to_string(Lq) + ", " + std::to_string(Lk0) + "] or [" + std::to_string(B * H) +
                                  ", " + std::to_string(Lq) + ", " + std::to_string(Lk0) + "]"));
    };
    std::optional<mask::KeyPadding> padding;
    if (!call.key_padding_mask.is_null()) {
      if (call.key_padding_mask.shape() != Shape<2>{B, Lk0})
        fail("key_padding_mask", to_string(call.key_padding_mask.shape()));
      Tensor<bool, 2> pad({B, Lk});  // extra columns visible
      for (index_t b = 0; b < B; ++b)
        for (index_t j = 0; j < Lk0; ++j) pad(b, j) = call.key_padding_mask(b, j);
      padding.emplace(std::move(pad));
    }
    // attn_mask (bool, true = not allowed) or attn_bias (float) → [B|1, H|1, Lq, Lk]
    const auto expand = [&](const auto& m, auto fill, auto convert, const char* what) {
      using T = std::remove_cvref_t<decltype(fill)>;
      const index_t n = m.size(0);
      if ((n != 1 && n != B * H) || m.size(1) != Lq || m.size(2) != Lk0) fail(what, to_string(m.shape()));
      Tensor<T, 4> out(Shape<4>{n == 1 ? 1 : B, n == 1 ? 1 : H, Lq, Lk}, fill);
      for (index_t i = 0; i < n; ++i)
        for (index_t r = 0; r < Lq; ++r)
          for (index_t j = 0; j < Lk0; ++j) out(i / H, i % H, r, j) = convert(m(i, r, j));
      return out;
    };
    auto run = [&](const auto& attn) {
      const auto causal = [&](const auto& with_padding) {
        if (call.is_causal)
          f(mask::all(with_padding, attn, mask::Causal{}));
        else
          f(mask::all(with_padding, attn));
      };
      if (padding)
        causal(*padding);
      else
        causal(mask::None{});
    };
    const bool has_bool = !call.attn_mask.is_null();
    const bool has_float = !call.attn_bias.is_null();
    if (has_bool && has_float)
      throw ShapeError("heed::nn::MultiheadAttention: give attn_mask (bool) or attn_bias (float), not both");
    if (has_bool) {
      run(mask::Allowed{expand(
          call.attn_mask, true, [](bool hidden) { return !hidden; }, "attn_mask")});
    } else if (has_float) {
      run(mask::Bias<Scalar>{expand(
          call.attn_bias, Scalar(0), [](Scalar x) { return x; }, "attn_bias")});
    } else {
      run(mask::None{});
    }
  }

  MultiheadAttentionOptions options_;
  Linear<Scalar> q_proj_, k_proj_, v_proj_, out_proj_;
  Linear<Scalar> qkv_proj_;  // q, k, v stacked, for self-attention
  Tensor<Scalar, 3> bias_k_, bias_v_;
};

}  // namespace heed::nn
