#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <cstdint>

#include "heed/nn/detail/encoder_layer.hpp"

namespace heed::detail {

// The seed's layer: pre-norm, GELU, LayerNorm's default eps; its feed-forward names.
inline EncoderLayerConfig seed_layer(index_t d_model, index_t n_heads, index_t d_ff, std::uint64_t seed) {
  return {.d_model = d_model,
          .nhead = n_heads,
          .dim_feedforward = d_ff,
          .activation = nn::Activation::gelu,
          .norm_first = true,
          .seed = seed};
}
inline constexpr EncoderNames seed_names{.linear1 = "ffn.0.", .linear2 = "ffn.3."};

}  // namespace heed::detail
