#pragma once
// Positional encodings (PositionalEncoding in examples/train/common.py). Sinusoidal (Vaswani et al. 2017):
//   PE[pos, 2i] = sin(pos / 10000^(2i/d)),  PE[pos, 2i+1] = cos(pos / 10000^(2i/d))
// computed as the seed does (div_term = exp(2i · -ln(10000)/d), in float), so the buffer `pe`
// [1, max_len, d] matches the seed's to the last bit where libm agrees; `load` can also take
// the buffer from a state_dict. LearnedPositionalEmbedding adds rows of a trained table.

#include <cmath>
#include <string>
#include <type_traits>

#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/nn/weights.hpp"
#include "heed/simd/kernel_table.hpp"
#include "heed/simd/vector_ops.hpp"

namespace heed::nn {

/// The constructor options of PositionalEncoding.
struct PositionalEncodingOptions {
  index_t d_model = 0;     ///< the model width
  index_t max_len = 5000;  ///< positions precomputed
};

/// The sinusoidal positional encoding: see the top of this file.
template <class Scalar = float>
class PositionalEncoding {
 public:
  /// The table for `o`, as the seed computes it; ShapeError unless d_model and max_len are >= 1.
  explicit PositionalEncoding(const PositionalEncodingOptions& o) : options_(o), pe_({1, o.max_len, o.d_model}) {
    if (o.d_model < 1 || o.max_len < 1)
      throw ShapeError("heed::nn::PositionalEncoding: d_model and max_len must be >= 1, got " +
                       std::to_string(o.d_model) + " and " + std::to_string(o.max_len));
    const float log_base = -std::log(10000.0f) / static_cast<float>(o.d_model);
    for (index_t pos = 0; pos < o.max_len; ++pos)
      for (index_t i = 0; 2 * i < o.d_model; ++i) {
        const float div_term = std::exp(static_cast<float>(2 * i) * log_base);
        const float angle = static_cast<float>(pos) * div_term;
        pe_(0, pos, 2 * i) = static_cast<Scalar>(std::sin(angle));
        if (2 * i + 1 < o.d_model) pe_(0, pos, 2 * i + 1) = static_cast<Scalar>(std::cos(angle));
      }
  }

  /// The table [1, max_len, d_model].
  [[nodiscard]] const Tensor<Scalar, 3>& pe() const noexcept { return pe_; }

  /// Takes the registered buffer `pe` when the source has it (it is in the seed's state_dict).
  template <WeightSource S>
  void load(const Loader<S>& from) {
    if (from.has("pe")) pe_ = from.template take<Scalar, 3>("pe", {1, options_.max_len, options_.d_model});
  }
  /// load(Loader) from `source` under `prefix` (strict: unused names under it are an error).
  template <WeightSource S>
  void load(const S& source, const std::string& prefix = "", LoadOptions load_options = {}) {
    load_module(*this, source, prefix, load_options);
  }

  /// x [B, L, d] + pe[:, :L] (dropout is the identity at inference).
  void add_to(Tensor<Scalar, 3>& x) const {
    check(x.shape());
    const index_t L = x.size(1), d = x.size(2);
    for (index_t b = 0; b < x.size(0) && L > 0; ++b) add_rows(pe_.data(), x.data() + b * L * d, L * d);
  }

  /// x [B, L, d_model] plus the table's first L positions; ShapeError for another width or L > max_len.
  template <TensorLike X>
  [[nodiscard]] Tensor<Scalar, 3> operator()(const X& x) const {
    Tensor<Scalar, 3> out(as_view(x));
    add_to(out);
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
  void check(const Shape<3>& s) const {
    if (s[2] != options_.d_model || s[1] > options_.max_len)
      throw ShapeError("heed::nn::PositionalEncoding: x " + to_string(s) + " needs d_model " +
                       std::to_string(options_.d_model) + " and at most max_len " + std::to_string(options_.max_len) +
                       " positions");
  }

  PositionalEncodingOptions options_;
  Tensor<Scalar, 3> pe_;
};

}  // namespace heed::nn
