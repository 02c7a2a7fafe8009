#pragma once
// The activations of the Transformer feed-forward blocks, applied in place on contiguous data.

#include <string>
#include <type_traits>

#include "heed/core/error.hpp"
#include "heed/core/shape.hpp"
#include "heed/simd/kernel_table.hpp"
#include "heed/simd/vector_ops.hpp"

namespace heed::nn {

/// The activations of the Transformer feed-forward block, with torch.nn's definitions.
enum class Activation {
  relu,       ///< torch.nn.ReLU / F.relu
  gelu,       ///< torch.nn.GELU(): x/2 (1 + erf(x/√2)) — TransformerEncoderLayer's "gelu"
  gelu_tanh,  ///< torch.nn.GELU(approximate="tanh")
  silu,       ///< torch.nn.SiLU / F.silu: x / (1 + exp(-x)), the gate of SwiGLU
};

/// x[i] = a(x[i]) for n contiguous values, vectorized (simd/vector_ops.hpp): float and double at
/// the level in use (simd::vector_kernels), 16-bit values at the program's own level.
template <class T>
void apply_activation(Activation a, T* x, index_t n) noexcept {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    const simd::VectorKernels<T>& ops = simd::vector_kernels<T>();
    switch (a) {
      case Activation::relu:
        return ops.relu(x, x, n);
      case Activation::gelu:
        return ops.gelu(x, x, n);
      case Activation::gelu_tanh:
        return ops.gelu_tanh(x, x, n);
      case Activation::silu:
        return ops.silu(x, x, n);
    }
    return;
  }
  switch (a) {
    case Activation::relu:
      return simd::relu(x, x, n);
    case Activation::gelu:
      return simd::gelu(x, x, n);
    case Activation::gelu_tanh:
      return simd::gelu_tanh(x, x, n);
    case Activation::silu:
      return simd::silu(x, x, n);
  }
}

/// "relu", "gelu", "gelu_tanh", "silu" (the spellings of PyTorch's activation strings).
inline Activation activation_from_name(const std::string& name) {
  if (name == "relu") return Activation::relu;
  if (name == "gelu") return Activation::gelu;
  if (name == "gelu_tanh") return Activation::gelu_tanh;
  if (name == "silu") return Activation::silu;
  throw FormatError("heed::nn: unknown activation \"" + name + "\" (relu, gelu, gelu_tanh, silu)");
}

}  // namespace heed::nn
