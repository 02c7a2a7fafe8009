#pragma once
// LearnedPositionalEmbedding: x + weight[:L], the trained alternative to sinusoidal encodings
// (BERT, GPT-2). State dict: weight [max_len, d_model] (an nn.Embedding indexed by position).

#include <string>
#include <type_traits>

#include "heed/core/error.hpp"
#include "heed/core/random.hpp"
#include "heed/core/tensor.hpp"
#include "heed/nn/weights.hpp"
#include "heed/simd/kernel_table.hpp"
#include "heed/simd/vector_ops.hpp"

namespace heed::nn {

/// The constructor options of LearnedPositionalEmbedding.
struct LearnedPositionalEmbeddingOptions {
  index_t max_len = 0;     ///< positions in the table
  index_t d_model = 0;     ///< the width of each position's vector
  std::uint64_t seed = 0;  ///< for the N(0, 1) initialization used until load()
};

/// Adds a trained table of position vectors: see the top of this file.
template <class Scalar = float>
class LearnedPositionalEmbedding {
 public:
  /// The table for `o`, N(0, 1) (from heed's seeded generator) until load().
  explicit LearnedPositionalEmbedding(const LearnedPositionalEmbeddingOptions& o) : options_(o) {
    if (o.max_len < 1 || o.d_model < 1)
      throw ShapeError("heed::nn::LearnedPositionalEmbedding: max_len and d_model must be >= 1, got " +
                       std::to_string(o.max_len) + " and " + std::to_string(o.d_model));
    weight_ = randn<Scalar, 2>(Shape<2>{o.max_len, o.d_model}, o.seed);
  }

  /// Loads the parameters through `from`, under PyTorch's state_dict names; FormatError or ShapeError names a missing
  /// or misshapen one.
  template <WeightSource S>
  void load(const Loader<S>& from) {
    weight_ = from.template take<Scalar, 2>("weight", {options_.max_len, options_.d_model});
  }
  /// Loads the parameters from a weight source (io::SafeTensors, TensorDict) under `prefix`, with PyTorch's state_dict
  /// names; with `load_options.strict`, a name under the prefix that nothing loaded is a FormatError.
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    load_module(*this, source, prefix, load_options);
  }

  /// x [B, L, d_model] + weight[:L]
  template <TensorLike X>
  [[nodiscard]] Tensor<Scalar, 3> operator()(const X& x) const {
    Tensor<Scalar, 3> out(as_view(x));
    if (out.size(2) != options_.d_model || out.size(1) > options_.max_len)
      throw ShapeError("heed::nn::LearnedPositionalEmbedding: x " + to_string(out.shape()) + " needs d_model " +
                       std::to_string(options_.d_model) + " and at most max_len " + std::to_string(options_.max_len) +
                       " positions");
    const index_t n = out.size(1) * options_.d_model;  // (0 for no positions: nothing to add)
    for (index_t b = 0; b < out.size(0) && n > 0; ++b) add_rows(weight_.data(), out.data() + b * n, n);
    return out;
  }

 private:
  // y += x: float and double at the level in use (simd::vector_kernels), 16-bit at the program's
  static void add_rows(const Scalar* x, Scalar* y, index_t n) noexcept {
    if constexpr (std::is_same_v<Scalar, float> || std::is_same_v<Scalar, double>)
      simd::vector_kernels<Scalar>().add(x, y, n);
    else
      simd::add(x, y, n);
  }
  LearnedPositionalEmbeddingOptions options_;
  Tensor<Scalar, 2> weight_;
};

}  // namespace heed::nn
