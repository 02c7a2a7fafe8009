#pragma once
// Embedding = torch.nn.Embedding: token ids [B, L] → vectors [B, L, dim]. State dict: weight
// [num_embeddings, dim]. An id outside [0, num_embeddings) is a ShapeError naming it and its
// position. padding_idx only matters for training (its row is zero at initialization); as in
// PyTorch it lies in [-num_embeddings, num_embeddings), a negative one counting from the end
// (options() reports it made non-negative), and anything else is a ShapeError.

#include <cstdint>
#include <optional>
#include <string>

#include "heed/core/error.hpp"
#include "heed/core/random.hpp"
#include "heed/core/tensor.hpp"
#include "heed/nn/weights.hpp"

namespace heed::nn {

/// The constructor options of Embedding, with torch.nn.Embedding's names.
struct EmbeddingOptions {
  index_t num_embeddings = 0;                         ///< rows of the table (the vocabulary)
  index_t embedding_dim = 0;                          ///< the width of each row
  std::optional<index_t> padding_idx = std::nullopt;  ///< its row starts at zero; negative: counted from the end
  std::uint64_t seed = 0;                             ///< for the N(0, 1) initialization used until load()
};

/// torch.nn.Embedding: see the top of this file.
template <class Scalar = float>
class Embedding {
 public:
  Embedding() = default;
  /// The table for `o`, N(0, 1) as PyTorch initializes it (from heed's seeded generator) until load().
  explicit Embedding(const EmbeddingOptions& o) : options_(o) {
    if (o.num_embeddings < 1 || o.embedding_dim < 1)
      throw ShapeError("heed::nn::Embedding: num_embeddings and embedding_dim must be >= 1, got " +
                       std::to_string(o.num_embeddings) + " and " + std::to_string(o.embedding_dim));
    if (o.padding_idx) {  // PyTorch: within [-num_embeddings, num_embeddings), a negative one counts from the end
      const index_t p = *o.padding_idx;
      if (p < -o.num_embeddings || p >= o.num_embeddings)
        throw ShapeError("heed::nn::Embedding: padding_idx " + std::to_string(p) + " is outside [-" +
                         std::to_string(o.num_embeddings) + ", " + std::to_string(o.num_embeddings) + ")");
      options_.padding_idx = p < 0 ? p + o.num_embeddings : p;
    }
    weight_ = randn<Scalar, 2>(Shape<2>{o.num_embeddings, o.embedding_dim}, o.seed);  // N(0, 1), as PyTorch
    if (options_.padding_idx) std::fill_n(&weight_(*options_.padding_idx, 0), o.embedding_dim, Scalar(0));
  }

  /// The options it was built with.
  [[nodiscard]] const EmbeddingOptions& options() const noexcept { return options_; }

  /// Loads the parameters through `from`, under PyTorch's state_dict names; FormatError or ShapeError names a missing
  /// or misshapen one.
  template <WeightSource S>
  void load(const Loader<S>& from) {
    weight_ = from.template take<Scalar, 2>("weight", {options_.num_embeddings, options_.embedding_dim});
  }
  /// load(Loader) from `source` under `prefix` (strict: unused names under it are an error).
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    load_module(*this, source, prefix, load_options);
  }

  /// ids [B, L] (any integer type) → [B, L, dim], each row scaled by `scale`.
  template <TensorLike Ids>
  [[nodiscard]] Tensor<Scalar, 3> operator()(const Ids& ids, Scalar scale = Scalar(1)) const {
    static_assert(std::is_integral_v<scalar_of<Ids>> && rank_of<Ids> == 2, "Embedding takes integer ids [B, L]");
    const auto v = as_view(ids);
    Tensor<Scalar, 3> out({v.size(0), v.size(1), options_.embedding_dim}, uninitialized);
    for (index_t b = 0; b < v.size(0); ++b)
      for (index_t t = 0; t < v.size(1); ++t) {
        const auto id = static_cast<index_t>(v(b, t));
        if (id < 0 || id >= options_.num_embeddings)
          throw ShapeError("heed::nn::Embedding: token id " + std::to_string(id) + " at [" + std::to_string(b) + ", " +
                           std::to_string(t) + "] is outside the vocabulary of " +
                           std::to_string(options_.num_embeddings));
        const Scalar* row = &weight_(id, 0);
        Scalar* o = &out(b, t, 0);
        for (index_t c = 0; c < options_.embedding_dim; ++c) o[c] = row[c] * scale;
      }
    return out;
  }

 private:
  EmbeddingOptions options_;
  Tensor<Scalar, 2> weight_;
};

}  // namespace heed::nn
