#pragma once
#include "heed/core/detail/internal_header_check.hpp"

// PyTorch's masks at a module's boundary: checked under the names the caller used (attn_mask,
// tgt_mask, memory_key_padding_mask, ...) with the shapes that argument can take, then
// translated into heed's typed masks (mask::Dynamic).

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "heed/core/error.hpp"
#include "heed/core/scalar.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/dynamic_mask.hpp"
#include "heed/nn/torch_mask.hpp"

namespace heed::detail {

// What the caller calls the masks and the dimensions, for the errors.
struct TorchMaskNames {
  const char* module;            // "TransformerDecoder" (the message says heed::nn::TransformerDecoder)
  const char* attn_mask;         // "tgt_mask"
  const char* key_padding_mask;  // "tgt_key_padding_mask"
  const char* heads = "H";       // "nhead"
  const char* queries = "L";     // the query length's name
  const char* keys = "S";        // the key length's name ("L" in self-attention)
};

[[noreturn]] inline void throw_mask_error(const TorchMaskNames& n, const std::string& what) {
  throw ShapeError("heed::nn::" + std::string(n.module) + ": " + what);
}

// ShapeError unless key_padding_mask is null or [B, Lk], and attn_mask null, [Lq, Lk],
// [1, Lq, Lk] or [B·H, Lq, Lk]; the message names the argument and the shapes it can take.
// (Strings are made only to throw: gcc 12 at -O3 warns falsely on some concatenations.)
inline void check_torch_masks(const TorchMaskNames& n, index_t B, index_t H, index_t Lq, index_t Lk,
                              const TensorView<const bool, 2>& key_padding_mask, const nn::TorchMask& attn_mask) {
  if (!key_padding_mask.is_null() && key_padding_mask.shape() != Shape<2>{B, Lk})
    throw_mask_error(n, std::string(n.key_padding_mask) + " has shape " + to_string(key_padding_mask.shape()) +
                            ", expected [B, " + n.keys + "] = " + to_string(Shape<2>{B, Lk}));
  if (attn_mask.is_null()) return;
  const Shape<3> s = attn_mask.shape();
  if ((s[0] != 1 && s[0] != B * H) || s[1] != Lq || s[2] != Lk) {
    const std::string lk = std::string(n.queries) + ", " + n.keys + "]";
    throw_mask_error(n, std::string(n.attn_mask) + " (" + attn_mask.type_name() + ") has shape " +
                            attn_mask.shape_string() + ", expected [" + lk + " = " + to_string(Shape<2>{Lq, Lk}) +
                            ", [B·" + n.heads + ", " + lk + " = " + to_string(Shape<3>{B * H, Lq, Lk}) + " or [1, " +
                            lk + " = " + to_string(Shape<3>{1, Lq, Lk}));
  }
}

// The element of a floating-point TorchMask in the accumulator type Acc.
template <class Acc, class T>
Acc mask_value(T x) noexcept {
  if constexpr (is_16bit_float_v<T>)
    return static_cast<Acc>(static_cast<float>(x));
  else
    return static_cast<Acc>(x);
}

// What a mask shared by every batch row and head ([Lq, Lk] or [1, Lq, Lk]) hides: nothing,
// exactly the causal triangle (key j hidden from query i iff j > i: true in a bool mask, -inf
// in a float one, and visible entries false or 0), or something else.
enum class MaskPattern { none, causal, other };

template <class T>
MaskPattern mask_pattern(const TensorView<const T, 3>& m) noexcept {
  if (m.size(0) != 1) return MaskPattern::other;
  bool none = true, causal = true;
  for (index_t i = 0; i < m.size(1) && (none || causal); ++i)
    for (index_t j = 0; j < m.size(2); ++j) {
      bool hidden, visible;
      if constexpr (std::is_same_v<T, bool>) {
        hidden = m(0, i, j);
        visible = !hidden;
      } else {
        const float x = mask_value<float>(m(0, i, j));
        hidden = x == -std::numeric_limits<float>::infinity();
        visible = x == 0.0f;
      }
      none = none && visible;
      causal = causal && (j > i ? hidden : visible);
    }
  return none ? MaskPattern::none : causal ? MaskPattern::causal : MaskPattern::other;
}

// attn_mask (checked by check_torch_masks) into `masks`, over Lk ≥ Lk0 keys: the extra
// columns (torch's bias_k and zero-attention keys) stay visible. A bool mask becomes
// mask::Allowed of its negation, a floating one mask::Bias; a mask shared by every row and
// head that hides nothing is dropped, and one that is the causal triangle becomes mask::Causal
// (when there are no extra columns), so its blocked tiles are skipped.
template <class Scalar>
void add_torch_mask(const nn::TorchMask& attn_mask, index_t B, index_t H, index_t Lk, mask::Dynamic<Scalar>& masks) {
  using Acc = accumulator_t<Scalar>;
  if (attn_mask.is_null()) return;
  attn_mask.visit([&](const auto& m) {
    using T = std::remove_const_t<typename std::remove_cvref_t<decltype(m)>::element_type>;
    const index_t n = m.size(0), Lq = m.size(1), Lk0 = m.size(2);
    const MaskPattern pattern = mask_pattern(m);
    if (pattern == MaskPattern::none) return;
    if (pattern == MaskPattern::causal && Lk == Lk0) {
      masks.causal.emplace();
      return;
    }
    const Shape<4> shape{n == 1 ? 1 : B, n == 1 ? 1 : H, Lq, Lk};
    if constexpr (std::is_same_v<T, bool>) {
      Tensor<bool, 4> allowed(shape, true);
      for (index_t i = 0; i < n; ++i)
        for (index_t r = 0; r < Lq; ++r)
          for (index_t j = 0; j < Lk0; ++j) allowed(i / H, i % H, r, j) = !m(i, r, j);
      masks.allowed.emplace(std::move(allowed));
    } else {
      Tensor<Acc, 4> bias(shape, Acc(0));
      for (index_t i = 0; i < n; ++i)
        for (index_t r = 0; r < Lq; ++r)
          for (index_t j = 0; j < Lk0; ++j) bias(i / H, i % H, r, j) = mask_value<Acc>(m(i, r, j));
      masks.bias.emplace(std::move(bias));
    }
  });
}

}  // namespace heed::detail
