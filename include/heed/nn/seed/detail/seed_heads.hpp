#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <string>

#include "heed/core/tensor.hpp"
#include "heed/nn/detail/attention_block.hpp"
#include "heed/nn/seed/multi_head_options.hpp"
#include "heed/nn/weights.hpp"

namespace heed::detail {

// What the seeds' MultiHeadAttention, SelfAttention and CrossAttention share: four
// nn.Linear(d_model, d_model) named w_q, w_k, w_v and `out_name` around the attention block,
// returning the output and the per-head weights as the seeds do.
template <class Scalar>
class SeedHeads {
 public:
  SeedHeads(const nn::seed::MultiHeadOptions& o, std::string out_name, const char* who)
      : options_(o),
        out_name_(std::move(out_name)),
        block_({.embed_dim = o.d_model, .num_heads = o.n_heads, .seed = o.seed},
               std::string("heed::nn::seed::") + who) {}

  [[nodiscard]] const nn::seed::MultiHeadOptions& options() const noexcept { return options_; }

  template <nn::WeightSource S>
  void load(const nn::Loader<S>& from) {
    block_.q_proj.load(from.child("w_q."));
    block_.k_proj.load(from.child("w_k."));
    block_.v_proj.load(from.child("w_v."));
    block_.out_proj.load(from.child(out_name_));
    block_.pack();
  }
  template <nn::WeightSource S>
  void load(const S& source, const std::string& prefix = "", nn::LoadOptions load_options = {}) {
    nn::load_module(*this, source, prefix, load_options);
  }

 protected:
  nn::seed::MultiHeadResult<Scalar> run(const TensorView<const Scalar, 3>& query,
                                        const TensorView<const Scalar, 3>& key,
                                        const TensorView<const Scalar, 3>& value, const mask::Dynamic<Scalar>& masks,
                                        MaskedRows masked_rows) const {
    auto r = block_.forward(query, key, value, masks, {.need_weights = true, .masked_rows = masked_rows});
    return {std::move(r.output), std::move(r.weights)};
  }

 private:
  nn::seed::MultiHeadOptions options_;
  std::string out_name_;
  AttentionBlock<Scalar> block_;
};

}  // namespace heed::detail
