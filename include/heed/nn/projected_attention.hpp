#pragma once
// The one implementation behind the seeds' attention classes (seed 000 §2.1, §3.1, §3.2):
// four nn.Linear(d_model, d_model) — w_q, w_k, w_v and an output projection — around heed's
// attention driver, returning the output and the per-head weights [B, H, Lq, Lk] as the seeds
// do. MultiHeadAttention, SelfAttention and CrossAttention differ only in the output
// projection's name and in how their masks read; each is a thin class over this one.

#include <string>

#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/attention.hpp"
#include "heed/nn/linear.hpp"
#include "heed/nn/weights.hpp"

namespace heed::nn {

struct SeedAttentionOptions {
  index_t d_model = 0;
  index_t n_heads = 1;
  std::uint64_t seed = 0;
};

/// What the seeds' attention classes return: output [B, Lq, d_model], weights [B, H, Lq, Lk].
template <class Scalar>
struct SeedAttentionResult {
  Tensor<Scalar, 3> output;
  Tensor<Scalar, 4> weights;
};

namespace detail {

template <class Scalar>
class ProjectedAttention {
 public:
  ProjectedAttention(const SeedAttentionOptions& o, std::string out_name, const char* who)
      : options_(checked(o, who)), out_name_(std::move(out_name)), who_(who) {
    const LinearOptions lin{.in_features = o.d_model, .out_features = o.d_model, .seed = o.seed};
    w_q_ = Linear<Scalar>(lin);
    w_k_ = Linear<Scalar>({.in_features = o.d_model, .out_features = o.d_model, .seed = o.seed + 2});
    w_v_ = Linear<Scalar>({.in_features = o.d_model, .out_features = o.d_model, .seed = o.seed + 4});
    w_o_ = Linear<Scalar>({.in_features = o.d_model, .out_features = o.d_model, .seed = o.seed + 6});
  }

  [[nodiscard]] const SeedAttentionOptions& options() const noexcept { return options_; }

  template <WeightSource S>
  void load(const Loader<S>& from) {
    w_q_.load(from.child("w_q."));
    w_k_.load(from.child("w_k."));
    w_v_.load(from.child("w_v."));
    w_o_.load(from.child(out_name_));
  }
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    load_module(*this, source, prefix, load_options);
  }

  /// query [B, Lq, d], key and value [B, Lk, d]; mask is a heed mask policy.
  template <class Mask>
  [[nodiscard]] SeedAttentionResult<Scalar> run(const TensorView<const Scalar, 3>& query,
                                                const TensorView<const Scalar, 3>& key,
                                                const TensorView<const Scalar, 3>& value, const Mask& mask,
                                                MaskedRows masked_rows) const {
    const index_t d = options_.d_model, H = options_.n_heads, hd = d / H;
    if (query.size(2) != d || key.size(2) != d || value.size(2) != d || key.size(0) != query.size(0) ||
        value.size(0) != query.size(0) || key.size(1) != value.size(1))
      throw ShapeError(std::string("heed::nn::") + who_ + ": expects [B, L, " + std::to_string(d) +
                       "] inputs of one batch (query " + to_string(query.shape()) + ", key " + to_string(key.shape()) +
                       ", value " + to_string(value.shape()) + ")");
    const index_t B = query.size(0), Lq = query.size(1), Lk = key.size(1);
    Tensor<Scalar, 3> q = w_q_(query), k = w_k_(key), v = w_v_(value);
    const auto heads = [&](Tensor<Scalar, 3>& t) {
      return t.view().template reshape<4>({B, t.size(1), H, hd}).transpose(1, 2);
    };
    Tensor<Scalar, 3> context({B, Lq, d}, uninitialized);
    SeedAttentionResult<Scalar> r{{}, Tensor<Scalar, 4>({B, H, Lq, Lk})};
    attention_into<Scalar>(heads(context), r.weights.view(), heads(q), heads(k), heads(v), ScaledDot{}, mask,
                           {.masked_rows = masked_rows});
    r.output = w_o_(context);
    return r;
  }

 private:
  static const SeedAttentionOptions& checked(const SeedAttentionOptions& o, const char* who) {
    if (o.d_model < 1 || o.n_heads < 1 || o.d_model % o.n_heads != 0)
      throw ShapeError(std::string("heed::nn::") + who + ": d_model (" + std::to_string(o.d_model) +
                       ") must be a positive multiple of n_heads (" + std::to_string(o.n_heads) + ")");
    return o;
  }

  SeedAttentionOptions options_;
  std::string out_name_;
  const char* who_;
  Linear<Scalar> w_q_, w_k_, w_v_, w_o_;
};

}  // namespace detail
}  // namespace heed::nn
