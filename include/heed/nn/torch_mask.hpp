#pragma once
// TorchMask: a dense attention mask as PyTorch's modules take it (MultiheadAttention's
// attn_mask, TransformerEncoder's mask, TransformerDecoder's tgt_mask and memory_mask), in the
// shapes and element types PyTorch accepts:
//   bool, true = NOT allowed, or floating point (float, double, bfloat16, half), added to the
//   scores (-inf hides the key);
//   [L, S] for every batch row and head, or [B·H, L, S] (heed also takes [1, L, S]).
// So `nn.Transformer.generate_square_subsequent_mask(L)` (float [L, L], -inf above the
// diagonal) goes in as it is. The modules translate it at their boundary into heed's typed
// masks (mask::Allowed of the negation, mask::Bias); a mask that is exactly the causal triangle
// becomes mask::Causal, whose blocked tiles cost nothing.
//
// A TorchMask views the caller's tensor: the tensor must outlive the call it is passed to.

#include <cstddef>
#include <string>
#include <type_traits>
#include <variant>

#include "heed/core/scalar.hpp"
#include "heed/core/shape.hpp"
#include "heed/core/tensor.hpp"

namespace heed::nn {

/// The element types a TorchMask takes: bool or a floating-point type.
template <class T>
concept TorchMaskElement = std::is_same_v<T, bool> || is_floating_v<T>;

/// A PyTorch-style dense attention mask (see the top of this file): bool or floating point,
/// rank 2 or 3. Default-constructed: no mask.
class TorchMask {
 public:
  TorchMask() = default;

  /// Views `mask`, [L, S] or [N, L, S].
  template <class T, std::size_t Rank>
  requires(Rank == 2 || Rank == 3) &&
      TorchMaskElement<std::remove_const_t<T>> TorchMask(
          const TensorView<T, Rank>& mask) noexcept {  // NOLINT(google-explicit-constructor)
    using E = std::remove_const_t<T>;
    if (mask.is_null()) return;
    rank_ = Rank;
    if constexpr (Rank == 3)
      view_ = TensorView<const E, 3>(mask);
    else
      view_ = TensorView<const E, 3>(mask.data(), Shape<3>{1, mask.size(0), mask.size(1)},
                                     Shape<3>{0, mask.stride(0), mask.stride(1)});
  }

  /// Views `mask` (which must outlive the call), [L, S] or [N, L, S].
  template <class T, std::size_t Rank>
  requires(Rank == 2 || Rank == 3) &&
      TorchMaskElement<T> TorchMask(const Tensor<T, Rank>& mask) noexcept  // NOLINT(google-explicit-constructor)
      : TorchMask(mask.view()) {}

  /// True when no mask was given.
  [[nodiscard]] bool is_null() const noexcept { return rank_ == 0; }
  /// True for a bool mask (true = NOT allowed); false for a floating-point one (added).
  [[nodiscard]] bool is_bool() const noexcept { return std::holds_alternative<TensorView<const bool, 3>>(view_); }
  /// 2 or 3 as given; 0 when null.
  [[nodiscard]] std::size_t rank() const noexcept { return rank_; }
  /// The shape as rank 3: [1, L, S] for a rank-2 mask.
  [[nodiscard]] Shape<3> shape() const noexcept {
    return std::visit(
        [](const auto& v) {
          if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::monostate>)
            return Shape<3>{};
          else
            return v.shape();
        },
        view_);
  }
  /// The shape as given, e.g. "[4, 4]" or "[8, 4, 4]".
  [[nodiscard]] std::string shape_string() const {
    const Shape<3> s = shape();
    return rank_ == 2 ? to_string(Shape<2>{s[1], s[2]}) : to_string(s);
  }
  /// The element type's name: "bool", "float", "double", "bfloat16" or "half".
  [[nodiscard]] const char* type_name() const noexcept {
    constexpr const char* names[] = {"none", "bool", "float", "double", "bfloat16", "half"};
    return names[view_.index()];
  }

  /// f(TensorView<const T, 3>) with the mask's element type T; not for a null mask.
  template <class F>
  decltype(auto) visit(F&& f) const {
    return std::visit(
        [&](const auto& v) -> decltype(auto) {
          if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::monostate>)
            return f(TensorView<const bool, 3>());
          else
            return f(v);
        },
        view_);
  }

 private:
  std::variant<std::monostate, TensorView<const bool, 3>, TensorView<const float, 3>, TensorView<const double, 3>,
               TensorView<const bfloat16, 3>, TensorView<const half, 3>>
      view_;
  std::size_t rank_ = 0;
};

}  // namespace heed::nn
