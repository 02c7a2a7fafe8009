#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <span>
#include <utility>
#include <vector>

#include "heed/core/error.hpp"
#include "heed/core/random.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/attention.hpp"
#include "heed/kernels/dynamic_mask.hpp"
#include "heed/kernels/gemm.hpp"
#include "heed/nn/kv_cache.hpp"
#include "heed/nn/linear.hpp"

// The one attention block behind every attention module (torch's MultiheadAttention, the
// seeds' classes, the encoder layer):
//
//   project   q = query W_qᵀ + b_q, k = key W_kᵀ + b_k, v = value W_vᵀ + b_v (one fused GEMM
//             when query, key and value are one tensor), seen as heads [B, H, L, hd] in place
//   extras    torch's add_bias_kv / add_zero_attn key and value rows
//   q/k step  a transform of the projected q and k heads (rotary positions), when given
//   cache     the new k and v appended to a store, the driver then reading all that is stored
//   attend    heed's driver: softmax(q kᵀ / sqrt(hd) + masks) v, Hq query heads over Hkv
//             key/value heads (query head h reads h / (Hq / Hkv))
//   merge     the heads' outputs written as [B, Lq, E] rows, then out = context W_oᵀ + b_o,
//             or out = skip + context W_oᵀ + b_o (a residual connection in the same GEMM)
//
// The adapters own the parameter names, translate their conventions into mask::Dynamic, and
// shape the result. One mask type and one score type: one copy of the driver per scalar type.
namespace heed::detail {

// The encoder's and decoder's layers (nn/detail/encoder_layer.hpp, decoder_layer.hpp): friends of
// nn::MultiheadAttention, whose masks they take made once per call.
template <class Scalar>
class EncoderLayer;
template <class Scalar>
class DecoderLayer;

// A step on the projected heads before attention: q [B, Hq, Lq, hd] and k [B, Hkv, Lk, hd],
// writable; row i of batch row b of q is at sequence position q_start[b] + i, of k at
// k_start[b] + i (with a cache, each row continues after its own length).
template <class Scalar>
struct QKTransform {
  virtual ~QKTransform() = default;
  virtual void apply(const TensorView<Scalar, 4>& q, const TensorView<Scalar, 4>& k, std::span<const index_t> q_start,
                     std::span<const index_t> k_start) const = 0;
};

// Where a call's keys and values go to be attended by later calls (a KV cache). `past(b)` is
// the positions batch row b holds before this call; `append` takes the new k and v
// [B, Hkv, L, hd], writes row b's after its past(b) positions, and returns views of everything
// stored ([B, Hkv, max_b(past(b)) + L, hd]). The block lets query i of row b see the keys
// j <= past(b) + (L - Lq) + i: whatever a row holds beyond that is never attended.
template <class Scalar>
struct KVStore {
  struct Views {
    TensorView<const Scalar, 4> k, v;
  };
  virtual ~KVStore() = default;
  virtual index_t past(index_t b) const = 0;
  virtual Views append(const TensorView<const Scalar, 4>& k, const TensorView<const Scalar, 4>& v) = 0;
};

// nn::KVCache seen as a KVStore.
template <class Scalar>
struct CacheStore final : KVStore<Scalar> {
  explicit CacheStore(nn::KVCache<Scalar>& c) : cache(c) {}
  index_t past(index_t b) const override { return cache.length(b); }
  typename KVStore<Scalar>::Views append(const TensorView<const Scalar, 4>& k,
                                         const TensorView<const Scalar, 4>& v) override {
    const auto r = cache.append(k, v);
    return {r.keys, r.values};
  }
  nn::KVCache<Scalar>& cache;
};

struct AttentionBlockOptions {
  index_t embed_dim = 0;
  index_t num_heads = 1;
  index_t num_kv_heads = 0;  // 0: num_heads; fewer is grouped-query attention
  index_t kdim = 0;          // 0: embed_dim
  index_t vdim = 0;          // 0: embed_dim
  bool bias = true;
  bool add_bias_kv = false;
  bool add_zero_attn = false;
  std::uint64_t seed = 0;
};

template <class Scalar>
struct BlockCall {
  bool need_weights = false;
  MaskedRows masked_rows = MaskedRows::zero;
  const QKTransform<Scalar>* qk_transform = nullptr;
  KVStore<Scalar>* kv_store = nullptr;
  // Residual form: out = skip + attention, both contiguous [B, Lq, E] (either may alias the
  // query, which is projected before anything is written); then the result is empty.
  const Scalar* skip = nullptr;
  Scalar* out = nullptr;
  AttentionStats* stats = nullptr;  // receives the driver's tile counts
};

template <class Scalar>
struct BlockResult {
  Tensor<Scalar, 3> output;   // [B, Lq, E]
  Tensor<Scalar, 4> weights;  // [B, Hq, Lq, Lk] with need_weights
};

template <class Scalar>
class AttentionBlock {
 public:
  AttentionBlock(const AttentionBlockOptions& o, std::string who) : options_(o), who_(std::move(who)) {
    if (options_.num_kv_heads == 0) options_.num_kv_heads = options_.num_heads;
    if (options_.kdim == 0) options_.kdim = options_.embed_dim;
    if (options_.vdim == 0) options_.vdim = options_.embed_dim;
    const index_t E = o.embed_dim, H = o.num_heads, Hkv = options_.num_kv_heads;
    if (E < 1 || H < 1 || E % H != 0)
      throw ShapeError(who_ + ": the embedding size (" + std::to_string(E) +
                       ") must be a positive multiple of the number of heads (" + std::to_string(H) + ")");
    if (Hkv < 1 || H % Hkv != 0)
      throw ShapeError(who_ + ": the key/value heads (" + std::to_string(Hkv) + ") must divide the query heads (" +
                       std::to_string(H) + ")");
    if (options_.kdim < 1 || options_.vdim < 1)
      throw ShapeError(who_ + ": kdim and vdim must be >= 1, got " + std::to_string(options_.kdim) + " and " +
                       std::to_string(options_.vdim));
    const index_t kv = kv_width();
    q_proj = nn::Linear<Scalar>({.in_features = E, .out_features = E, .bias = o.bias, .seed = o.seed});
    k_proj = nn::Linear<Scalar>({.in_features = options_.kdim, .out_features = kv, .bias = o.bias, .seed = o.seed + 2});
    v_proj = nn::Linear<Scalar>({.in_features = options_.vdim, .out_features = kv, .bias = o.bias, .seed = o.seed + 4});
    out_proj = nn::Linear<Scalar>({.in_features = E, .out_features = E, .bias = o.bias, .seed = o.seed + 6});
    if (o.add_bias_kv) {
      bias_k = randn<Scalar, 3>(Shape<3>{1, 1, kv}, o.seed + 8);
      bias_v = randn<Scalar, 3>(Shape<3>{1, 1, kv}, o.seed + 9);
    }
    pack();
  }

  [[nodiscard]] const AttentionBlockOptions& options() const noexcept { return options_; }
  [[nodiscard]] index_t head_dim() const noexcept { return options_.embed_dim / options_.num_heads; }
  [[nodiscard]] index_t kv_width() const noexcept { return options_.num_kv_heads * head_dim(); }
  // Key columns added after the projected keys: bias_k, then a zero key.
  [[nodiscard]] index_t extra_keys() const noexcept {
    return (options_.add_bias_kv ? 1 : 0) + (options_.add_zero_attn ? 1 : 0);
  }

  // The parameters, set by the adapters' load(); call pack() after changing them.
  nn::Linear<Scalar> q_proj, k_proj, v_proj, out_proj;
  Tensor<Scalar, 3> bias_k, bias_v;  // [1, 1, Hkv·hd] with add_bias_kv

  // The q, k, v projections stacked into one E → E + 2·Hkv·hd packed matrix, for
  // self-attention in one GEMM; empty when kdim or vdim differ from E. Where each projection's
  // rows start at a panel boundary (E and Hkv·hd multiples of the GEMM's panel width), the three
  // Linears read their rows of the stacked panels (PackedMatrix::rows_view) instead of packed
  // copies of their own: ViT-B/16 holds, and packs, 85 MB less. pack() stacks the Linears' own
  // parameters (after the constructor, or loaders that set them one by one); set_projections()
  // sets and packs all three at once, packing nothing twice.
  void pack() {
    qkv_packed_ = PackedMatrix<Scalar>();
    if (!stackable() || q_proj.weight().empty()) return;  // empty: nn::load_new
    qkv_packed_ =
        stacked(q_proj.weight(), k_proj.weight(), v_proj.weight(), q_proj.bias(), k_proj.bias(), v_proj.bias());
    if (shareable()) {
      q_proj.use_packed(stacked_rows(0));
      k_proj.use_packed(stacked_rows(1));
      v_proj.use_packed(stacked_rows(2));
    }
  }

  // Sets q_proj, k_proj and v_proj (Linear::set's ShapeErrors) and stacks them.
  void set_projections(Tensor<Scalar, 2> q, Tensor<Scalar, 1> bq, Tensor<Scalar, 2> k, Tensor<Scalar, 1> bk,
                       Tensor<Scalar, 2> v, Tensor<Scalar, 1> bv) {
    const index_t E = options_.embed_dim, kv = kv_width();
    const bool shapes = q.shape() == Shape<2>{E, E} && k.shape() == Shape<2>{kv, E} && v.shape() == Shape<2>{kv, E};
    if (!stackable() || !shareable() || !shapes) {  // each Linear packs its own copy, then pack() stacks them
      q_proj.set(std::move(q), std::move(bq));
      k_proj.set(std::move(k), std::move(bk));
      v_proj.set(std::move(v), std::move(bv));
      pack();
      return;
    }
    qkv_packed_ = stacked(q, k, v, bq, bk, bv);  // pack()'s work, from the new parameters
    q_proj.set(std::move(q), std::move(bq), stacked_rows(0));
    k_proj.set(std::move(k), std::move(bk), stacked_rows(1));
    v_proj.set(std::move(v), std::move(bv), stacked_rows(2));
  }

  // query [B, Lq, E], key [B, Lk, kdim], value [B, Lk, vdim]: checked here (ShapeError naming
  // all three); the masks are checked by the driver against [B, Hq, Lq, Lk + extras], or with a
  // store [B, Hq, Lq, max_b(past(b)) + Lk], to which the block adds the per-row causal mask.
  BlockResult<Scalar> forward(const TensorView<const Scalar, 3>& query, const TensorView<const Scalar, 3>& key,
                              const TensorView<const Scalar, 3>& value, mask::Dynamic<Scalar> masks,
                              const BlockCall<Scalar>& call) const {
    const index_t B = query.size(0), Lq = query.size(1), Lk0 = key.size(1), E = options_.embed_dim;
    const index_t H = options_.num_heads, Hkv = options_.num_kv_heads, hd = head_dim(), kv = kv_width();
    const auto shapes = [&] {
      return " (query " + to_string(query.shape()) + ", key " + to_string(key.shape()) + ", value " +
             to_string(value.shape()) + ")";
    };
    if (query.size(2) != E || key.size(2) != options_.kdim || value.size(2) != options_.vdim)
      throw ShapeError(who_ + ": expects embed_dim " + std::to_string(E) + ", kdim " + std::to_string(options_.kdim) +
                       ", vdim " + std::to_string(options_.vdim) + shapes());
    if (key.size(0) != B || value.size(0) != B || value.size(1) != Lk0)
      throw ShapeError(who_ + ": batch or key lengths differ" + shapes());
    // With a cache or rotary positions the queries are the last Lq of the new keys' positions:
    // more queries than new keys would have positions before the call's first (before 0).
    if ((call.kv_store || call.qk_transform) && Lq > Lk0)
      throw ShapeError(who_ + ": with a cache or rotary positions the queries are the last of the new keys' " +
                       "positions, so the query may not be longer than the key" + shapes());

    const index_t Lk = Lk0 + extra_keys();
    // rows of `width` values with row stride `ld` → the [B, heads, L, hd] view of them
    const auto as_heads = [&](Scalar* data, index_t heads, index_t L, index_t ld) {
      return TensorView<Scalar, 4>(data, {B, heads, L, hd}, {L * ld, hd, ld, 1});
    };
    Tensor<Scalar, 3> q, k, v, qkv;
    TensorView<Scalar, 4> qh, kh, vh;
    if (extra_keys() == 0 && !qkv_packed_.empty() && same(query, key) && same(query, value)) {
      Tensor<Scalar, 3> storage;
      const auto dense = contiguous(query, storage);
      qkv = Tensor<Scalar, 3>({B, Lq, E + 2 * kv}, uninitialized);  // [B, L, E + 2·kv], then strided views
      if (qkv.numel() > 0) gemm_nt(dense.data(), E, B * Lq, qkv_packed_, qkv.data(), E + 2 * kv);
      const index_t ld = E + 2 * kv;
      Scalar* rows = qkv.data();  // null without rows (B or L is 0): no offset into it then
      qh = as_heads(rows, H, Lq, ld);
      kh = as_heads(rows ? rows + E : rows, Hkv, Lq, ld);
      vh = as_heads(rows ? rows + E + kv : rows, Hkv, Lq, ld);
    } else {
      q = q_proj(query);
      k = Tensor<Scalar, 3>({B, Lk, kv});
      v = Tensor<Scalar, 3>({B, Lk, kv});
      project_with_extras(k_proj, key, k, bias_k);
      project_with_extras(v_proj, value, v, bias_v);
      qh = as_heads(q.data(), H, Lq, E);
      kh = as_heads(k.data(), Hkv, Lk, kv);
      vh = as_heads(v.data(), Hkv, Lk, kv);
    }
    // positions: row b's new keys start at past(b), its queries are the last Lq of them
    std::vector<index_t> k_start(static_cast<std::size_t>(B), 0), q_start(static_cast<std::size_t>(B), Lk0 - Lq);
    if (call.kv_store)
      for (index_t b = 0; b < B; ++b) {
        k_start[static_cast<std::size_t>(b)] = call.kv_store->past(b);
        q_start[static_cast<std::size_t>(b)] += call.kv_store->past(b);
      }
    if (call.qk_transform) call.qk_transform->apply(qh, kh.slice(2, 0, Lk0), q_start, k_start);
    TensorView<const Scalar, 4> keys = kh, values = vh;
    if (call.kv_store) {
      const auto stored = call.kv_store->append(kh, vh);
      keys = stored.k;
      values = stored.v;
      masks.causal_per_row.emplace(mask::CausalPerRow{std::move(q_start)});
    }

    return attend_and_merge(qh, keys, values, masks, call);
  }

  // key [B, S, kdim] and value [B, S, vdim] projected once, [B, S, Hkv·hd] each, to be attended
  // by forward_projected from many calls (a decoder's memory). The caller has checked the shapes.
  std::pair<Tensor<Scalar, 3>, Tensor<Scalar, 3>> project_kv(const TensorView<const Scalar, 3>& key,
                                                             const TensorView<const Scalar, 3>& value) const {
    return {k_proj(key), v_proj(value)};
  }

  // forward() with keys and values from project_kv: query [B, Lq, E] is projected, the keys and
  // values are read as they are (no extras, no store). The caller has checked the shapes.
  BlockResult<Scalar> forward_projected(const TensorView<const Scalar, 3>& query, const Tensor<Scalar, 3>& k,
                                        const Tensor<Scalar, 3>& v, const mask::Dynamic<Scalar>& masks,
                                        const BlockCall<Scalar>& call) const {
    const index_t B = query.size(0), Lq = query.size(1), S = k.size(1), E = options_.embed_dim, hd = head_dim();
    const index_t H = options_.num_heads, Hkv = options_.num_kv_heads, kv = kv_width();
    Tensor<Scalar, 3> q = q_proj(query);
    const TensorView<const Scalar, 4> qh(q.data(), {B, H, Lq, hd}, {Lq * E, hd, E, 1});
    const TensorView<const Scalar, 4> kh(k.data(), {B, Hkv, S, hd}, {S * kv, hd, kv, 1});
    const TensorView<const Scalar, 4> vh(v.data(), {B, Hkv, S, hd}, {S * kv, hd, kv, 1});
    return attend_and_merge(qh, kh, vh, masks, call);
  }

 private:
  // Views of one and the same tensor: self-attention.
  template <class A, class C>
  static bool same(const A& a, const C& c) noexcept {
    return static_cast<const void*>(a.data()) == static_cast<const void*>(c.data()) && a.shape() == c.shape() &&
           a.strides() == c.strides();
  }

  // x's rows projected into out[:, :L0], then bias_kv's row, then a zero row (add_zero_attn).
  void project_with_extras(const nn::Linear<Scalar>& proj, const TensorView<const Scalar, 3>& x, Tensor<Scalar, 3>& out,
                           const Tensor<Scalar, 3>& bias_kv) const {
    const index_t B = out.size(0), L0 = x.size(1), width = out.size(2);
    Tensor<Scalar, 3> storage;
    const auto dense = contiguous(x, storage);
    for (index_t b = 0; b < B; ++b) {
      Scalar* rows = out.data() + b * out.size(1) * width;  // (null + 0 when out is empty)
      if (L0 > 0 && width > 0)
        proj.rows(TensorView<const Scalar, 2>(dense.data() + b * L0 * x.size(2), {L0, x.size(2)}),
                  TensorView<Scalar, 2>(rows, {L0, width}));
      if (options_.add_bias_kv) std::copy_n(bias_kv.data(), width, rows + L0 * width);
    }
  }

  // attend: the heads' outputs as [B, Lq, E] rows, then the output projection (or its
  // residual form).
  BlockResult<Scalar> attend_and_merge(const TensorView<const Scalar, 4>& qh, const TensorView<const Scalar, 4>& keys,
                                       const TensorView<const Scalar, 4>& values, const mask::Dynamic<Scalar>& masks,
                                       const BlockCall<Scalar>& call) const {
    const index_t B = qh.size(0), H = qh.size(1), Lq = qh.size(2), E = options_.embed_dim;
    Tensor<Scalar, 3> context({B, Lq, E}, uninitialized);
    BlockResult<Scalar> r;
    if (call.need_weights) r.weights = Tensor<Scalar, 4>({B, H, Lq, keys.size(2)});
    attention_into<Scalar>(TensorView<Scalar, 4>(context.data(), {B, H, Lq, head_dim()}, {Lq * E, head_dim(), E, 1}),
                           r.weights.view(), qh, keys, values, ScaledDot{}, masks,
                           {.masked_rows = call.masked_rows, .stats = call.stats});
    if (call.out) {
      out_proj.rows_add(TensorView<const Scalar, 2>(context.data(), {B * Lq, E}), call.skip,
                        TensorView<Scalar, 2>(call.out, {B * Lq, E}));
    } else {
      r.output = out_proj(context);
    }
    return r;
  }

  AttentionBlockOptions options_;
  std::string who_;
  PackedMatrix<Scalar> qkv_packed_;  // the stacked q/k/v projection (pack())

  [[nodiscard]] bool stackable() const noexcept {
    return options_.kdim == options_.embed_dim && options_.vdim == options_.embed_dim;
  }
  // Each projection's rows start at a panel of the stacked matrix.
  [[nodiscard]] bool shareable() const {
    const index_t nr = simd::gemm_kernels<Scalar>().nr;
    return options_.embed_dim % nr == 0 && kv_width() % nr == 0;
  }
  // Projection i's rows of the stacked panels (0: q, 1: k, 2: v).
  [[nodiscard]] PackedMatrix<Scalar> stacked_rows(int i) const {
    const index_t E = options_.embed_dim, kv = kv_width();
    return i == 0 ? qkv_packed_.rows_view(0, E) : qkv_packed_.rows_view(E + (i - 1) * kv, kv);
  }
  // q, k, v [rows, E] (and their biases, all or none) packed as one matrix.
  PackedMatrix<Scalar> stacked(const Tensor<Scalar, 2>& q, const Tensor<Scalar, 2>& k, const Tensor<Scalar, 2>& v,
                               const Tensor<Scalar, 1>& bq, const Tensor<Scalar, 1>& bk,
                               const Tensor<Scalar, 1>& bv) const {
    const index_t E = options_.embed_dim, n = q.size(0) + k.size(0) + v.size(0);
    Tensor<Scalar, 2> w({n, E}, uninitialized);
    Tensor<Scalar, 1> b;
    if (options_.bias) b = Tensor<Scalar, 1>({n}, uninitialized);
    index_t row = 0;
    for (const auto& [weight, bias] : {std::pair{&q, &bq}, std::pair{&k, &bk}, std::pair{&v, &bv}}) {
      std::copy_n(weight->data(), weight->numel(), w.data() + row * E);
      if (options_.bias) std::copy_n(bias->data(), bias->numel(), b.data() + row);
      row += weight->size(0);
    }
    return PackedMatrix<Scalar>(w.data(), n, E, options_.bias ? b.data() : nullptr);
  }
};

}  // namespace heed::detail
