#pragma once
// Rotary position embeddings (RoPE; Su et al. 2021, https://arxiv.org/abs/2104.09864): each pair
// of a head's first `dim` components is rotated by an angle proportional to the row's position,
//     θ_k = pos · base^(-2k / dim),   k = 0 .. dim/2 - 1
//     (a, b) → (a·cos θ_k - b·sin θ_k,  b·cos θ_k + a·sin θ_k)
// so that q·k depends on the positions only through their difference. Two conventions pair the
// components differently:
//   RotaryStyle::halves       (a, b) = (x[k], x[k + dim/2])   GPT-NeoX, Llama ("rotate_half")
//   RotaryStyle::interleaved  (a, b) = (x[2k], x[2k + 1])     GPT-J ("rotate_every_two")
// A `dim` smaller than the head dim rotates only the first `dim` components (GPT-NeoX's partial
// rotary); the others pass through.
//
// The angles are computed in double and rounded once to the accumulator type (float for float
// and 16-bit tensors), for positions [0, max_positions) when the Rotary is made; a later
// position is computed when a call meets it, never read from past the table. tests/golden/
// generate.py holds the reference definitions (PyTorch 1.13 has no RoPE) that the tests check.

#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "heed/core/error.hpp"
#include "heed/core/scalar.hpp"
#include "heed/core/tensor.hpp"

namespace heed {

/// Which components of a head form a rotated pair; see the top of this file.
enum class RotaryStyle { halves, interleaved };

/// The options of Rotary, named as the model configurations that use them name them.
struct RotaryOptions {
  index_t dim = 0;        ///< rotated components per head (even); 0: the whole head
  double base = 10000.0;  ///< θ's base (Llama 2: 10000; Llama 3: 500000)
  /// Which components are rotated together (halves: GPT-NeoX, Llama; interleaved: GPT-J).
  RotaryStyle style = RotaryStyle::halves;
  index_t max_positions = 2048;  ///< cos/sin precomputed for these positions
};

/// RoPE for heads of `head_dim` components of type Scalar; see the top of this file.
template <class Scalar = float>
class Rotary {
 public:
  using Acc = accumulator_t<Scalar>;  ///< the type cos and sin are computed and applied in

  Rotary() = default;
  /// ShapeError when dim is odd, negative or larger than head_dim, base is not > 0, or
  /// max_positions is negative or would make a table of more than 2^32 values.
  Rotary(index_t head_dim, const RotaryOptions& o) : options_(o), head_dim_(head_dim) {
    if (options_.dim == 0) options_.dim = head_dim;
    if (head_dim < 1 || options_.dim < 0 || options_.dim % 2 != 0 || options_.dim > head_dim)
      throw ShapeError("heed::Rotary: the rotary dim (" + std::to_string(o.dim) +
                       ") must be even and at most the head dim (" + std::to_string(head_dim) + ")");
    if (!(options_.base > 0.0) || options_.max_positions < 0)
      throw ShapeError("heed::Rotary: base must be > 0 and max_positions >= 0, got " + std::to_string(o.base) +
                       " and " + std::to_string(o.max_positions));
    const index_t pairs = options_.dim / 2;
    constexpr index_t max_table = index_t{1} << 32;  // cos and sin values each (16 GiB in float)
    if (pairs > 0 && options_.max_positions > max_table / pairs)
      throw ShapeError("heed::Rotary: max_positions " + std::to_string(o.max_positions) + " × " +
                       std::to_string(pairs) +
                       " pairs is more than the 2^32 cos/sin values the table may hold (positions past it are computed "
                       "on the fly: a smaller max_positions is enough)");
    inv_freq_.resize(static_cast<std::size_t>(pairs));
    for (index_t k = 0; k < pairs; ++k)
      inv_freq_[static_cast<std::size_t>(k)] =
          1.0 / std::pow(options_.base, static_cast<double>(2 * k) / static_cast<double>(options_.dim));
    cos_.resize(static_cast<std::size_t>(options_.max_positions * pairs));
    sin_.resize(cos_.size());
    for (index_t pos = 0; pos < options_.max_positions; ++pos) angles(pos, &cos_[pos * pairs], &sin_[pos * pairs]);
  }

  /// The options, with dim filled in (the head dim when 0 was given).
  [[nodiscard]] const RotaryOptions& options() const noexcept { return options_; }
  /// The components per head that apply() expects.
  [[nodiscard]] index_t head_dim() const noexcept { return head_dim_; }

  /// Rotates x [B, H, L, head_dim] in place: row i of batch row b is at position start[b] + i
  /// (a KV cache's rows continue from their own lengths). ShapeError when x's last dimension is
  /// not head_dim, start has not B entries or one is negative.
  void apply(const TensorView<Scalar, 4>& x, std::span<const index_t> start) const {
    if (x.size(3) != head_dim_ || static_cast<index_t>(start.size()) != x.size(0))
      throw ShapeError("heed::Rotary: x " + to_string(x.shape()) + " must be [B, H, L, " + std::to_string(head_dim_) +
                       "] with a start position per batch row (" + std::to_string(start.size()) + " given)");
    for (const index_t s : start)
      if (s < 0 || s > std::numeric_limits<index_t>::max() - x.size(2))
        throw ShapeError("heed::Rotary: start positions must be >= 0 and leave room for the " +
                         std::to_string(x.size(2)) + " positions of x, got " + std::to_string(s));
    rotate(x, start);
  }
  /// The same with every batch row starting at `start`.
  void apply(const TensorView<Scalar, 4>& x, index_t start = 0) const {
    const std::vector<index_t> starts(static_cast<std::size_t>(std::max<index_t>(x.size(0), 0)), start);
    apply(x, starts);
  }

  /// apply() without its checks, for the modules that have validated their shapes.
  void rotate(const TensorView<Scalar, 4>& x, std::span<const index_t> start) const {
    const index_t pairs = options_.dim / 2;
    if (pairs == 0) return;   // nothing rotates (a default-constructed Rotary, or dim 0)
    std::vector<Acc> beyond;  // cos and sin of a position past the table
    for (index_t b = 0; b < x.size(0); ++b)
      for (index_t i = 0; i < x.size(2); ++i) {
        const index_t pos = start[static_cast<std::size_t>(b)] + i;
        const Acc *c, *s;
        if (pos < options_.max_positions) {
          c = &cos_[static_cast<std::size_t>(pos * pairs)];
          s = &sin_[static_cast<std::size_t>(pos * pairs)];
        } else {
          beyond.resize(static_cast<std::size_t>(2 * pairs));
          angles(pos, beyond.data(), beyond.data() + pairs);
          c = beyond.data();
          s = beyond.data() + pairs;
        }
        for (index_t h = 0; h < x.size(1); ++h) {
          Scalar* row = &x(b, h, i, 0);
          const index_t step = x.stride(3);
          const bool halves = options_.style == RotaryStyle::halves;
          if (step == 1 && halves)  // the common layouts get loops with constant strides, which vectorize
            rotate_pairs<1>(row, row + pairs, 1, c, s, pairs);
          else if (step == 1)
            rotate_pairs<2>(row, row + 1, 2, c, s, pairs);
          else
            rotate_pairs<0>(row, row + (halves ? pairs : 1) * step, (halves ? 1 : 2) * step, c, s, pairs);
        }
      }
  }

 private:
  void angles(index_t pos, Acc* c, Acc* s) const {
    for (std::size_t k = 0; k < inv_freq_.size(); ++k) {
      const double theta = static_cast<double>(pos) * inv_freq_[k];
      c[k] = static_cast<Acc>(std::cos(theta));
      s[k] = static_cast<Acc>(std::sin(theta));
    }
  }
  // (a[k·stride], b[k·stride]) rotated by θ_k, k < n, computed in Acc and rounded once; Stride
  // is the stride when known at compile time (0: the run-time `stride`).
  template <index_t Stride>
  static void rotate_pairs(Scalar* a, Scalar* b, index_t stride, const Acc* c, const Acc* s, index_t n) noexcept {
    const index_t st = Stride > 0 ? Stride : stride;
    for (index_t k = 0; k < n; ++k) {
      const Acc x1 = static_cast<Acc>(a[k * st]), x2 = static_cast<Acc>(b[k * st]);
      a[k * st] = static_cast<Scalar>(x1 * c[k] - x2 * s[k]);
      b[k * st] = static_cast<Scalar>(x2 * c[k] + x1 * s[k]);
    }
  }

  RotaryOptions options_;
  index_t head_dim_ = 0;
  std::vector<double> inv_freq_;
  std::vector<Acc> cos_, sin_;  // [max_positions, dim / 2]
};

}  // namespace heed
