#pragma once
#include "heed/core/detail/internal_header_check.hpp"

// The entries of simd::AttentionKernels at the translation unit's own level, and the choice of
// the table in use: included by heed/simd/kernel_table.hpp after the table's type.

#include <algorithm>
#include <type_traits>

#include "heed/core/scalar.hpp"
#include "heed/core/shape.hpp"
#include "heed/simd/arch.hpp"
#include "heed/simd/attention_kernel.hpp"
#include "heed/simd/convert.hpp"
#include "heed/simd/gemm_kernel.hpp"
#include "heed/simd/cpu.hpp"
#include "heed/simd/vector_ops.hpp"
#include "heed/simd/vision_ops.hpp"

namespace heed::detail::inline HEED_SIMD_LEVEL_NAMESPACE {

template <class Storage>
inline void tile_scores_entry(index_t depth, const Storage* q, index_t ldq, index_t ni, const Storage* kt, index_t nj,
                              accumulator_t<Storage>* out, index_t ld, accumulator_t<Storage> scale,
                              accumulator_t<Storage>* widened) noexcept {
  if constexpr (std::is_same_v<Storage, accumulator_t<Storage>>) {
    simd::attention_tile_scores(depth, q, ldq, ni, kt, nj, out, ld, scale);
  } else {
    // 16-bit queries are widened once per tile (ni × depth values, a fraction 1/nj of the
    // tile's work) rather than at each of the micro-kernel's broadcasts
    for (index_t i = 0; i < ni; ++i) simd::widen(q + i * ldq, widened + i * depth, depth);
    simd::attention_tile_scores(depth, widened, depth, ni, kt, nj, out, ld, scale);
  }
}

// HEED_FLATTEN: at -O1 without it, half's scalar widening of the row's tail (Eigen's
// half_to_float) stayed out of line in the baseline level's object.
template <class Storage>
HEED_FLATTEN inline void rows_scores_entry(index_t depth, const Storage* q, index_t ldq, index_t nq, const Storage* k,
                                           index_t ldk, index_t nj, accumulator_t<Storage>* out, index_t ld,
                                           accumulator_t<Storage> scale) noexcept {
  simd::attention_rows_scores(depth, q, ldq, nq, k, ldk, nj, out, ld, scale);
}

template <class Storage>
inline void tile_pv_entry(const accumulator_t<Storage>* p, index_t ldp, index_t ni, index_t runs, const index_t* keys,
                          const Storage* const* v, index_t ldv, index_t dv, accumulator_t<Storage>* o,
                          const accumulator_t<Storage>* c, const accumulator_t<Storage>* ones) noexcept {
  simd::attention_tile_pv<accumulator_t<Storage>, Storage>(p, ldp, ni, runs, keys, v, ldv, dv, o, c, ones);
}

// The softmax entries are HEED_FLATTEN: their exps are xsimd's templates, which a compiler may
// keep out of line (g++ 12 at -O1 with sanitizers does for float, at -O2 for double).
template <class Acc>
HEED_FLATTEN inline Acc max_entry(const Acc* x, index_t n) noexcept {
  return simd::max(x, n);
}

template <class Acc>
HEED_FLATTEN inline void scale_entry(Acc a, Acc* x, index_t n) noexcept {
  simd::scale(a, x, n);
}

template <class Acc>
HEED_FLATTEN inline void scale_above_entry(Acc a, Acc cut, Acc* x, index_t n) noexcept {
  simd::scale_above(a, cut, x, n);
}

HEED_FLATTEN inline float exp_sum_rounded_entry(const float* x, float shift, bfloat16* p, index_t n) noexcept {
  return simd::exp_sum_rounded(x, shift, p, n);
}

HEED_FLATTEN inline void round_entry(const float* x, bfloat16* p, index_t n) noexcept {
  simd::narrow(x, p, n);
}

template <class Acc>
HEED_FLATTEN inline Acc exp_sum_entry(const Acc* x, Acc shift, Acc* y, index_t n) noexcept {
  return simd::exp_sum(x, shift, y, n);
}

/// The softmax row pieces of this translation unit's level (the bfloat16 ones for float only).
template <class Acc>
constexpr simd::SoftmaxKernels<Acc> softmax_kernels_of() noexcept {
  simd::SoftmaxKernels<Acc> k{.max = &max_entry<Acc>,
                              .exp_sum = &exp_sum_entry<Acc>,
                              .scale = &scale_entry<Acc>,
                              .scale_above = &scale_above_entry<Acc>,
                              .exp_sum_rounded = nullptr,
                              .round = nullptr};
  if constexpr (std::is_same_v<Acc, float>) {
    k.exp_sum_rounded = &exp_sum_rounded_entry;
    k.round = &round_entry;
  }
  return k;
}

/// The table of this translation unit's level; `with_pairs` fills the pair entries (bfloat16
/// where the level has AVX-512 BF16).
template <class Storage, bool with_pairs>
inline constexpr simd::AttentionKernels<Storage> attention_kernels_here = {
    .level = simd::compiled_level,
    .mr = simd::AttentionTile<accumulator_t<Storage>>::mr,
    .nr = simd::AttentionTile<accumulator_t<Storage>>::nr,
    .pairs = with_pairs,
    .softmax = softmax_kernels_of<accumulator_t<Storage>>(),
    .pack_kt = &simd::pack_kt<Storage>,
    .tile_scores = &tile_scores_entry<Storage>,
    .rows_scores = &rows_scores_entry<Storage>,
    .tile_pv = &tile_pv_entry<Storage>,
    .pack_kt_pairs = with_pairs ? &simd::pack_kt_pairs : nullptr,
    .pack_v_pairs = with_pairs ? &simd::pack_v_pairs : nullptr,
    .pair_tile_scores = with_pairs ? &simd::pair_tile_scores : nullptr,
    .pair_tile_pv = with_pairs ? &simd::pair_tile_pv : nullptr,
};

template <class Storage>
inline void gemm_panel_entry(index_t kc, const accumulator_t<Storage>* a, index_t m, const Storage* b,
                             const Storage* next, index_t next_size, accumulator_t<Storage>* c, index_t ldc,
                             const accumulator_t<Storage>* src, index_t lds, const accumulator_t<Storage>* bias,
                             bool relu, index_t n_valid) noexcept {
  using Acc = accumulator_t<Storage>;
  constexpr index_t MR = simd::GemmTile<Storage>::mr;
  const index_t tiles = (m + MR - 1) / MR;
  for (index_t ir = 0; ir < m; ir += MR) {
    simd::gemm_micro_kernel<Acc, Storage>(kc, a + ir * kc, b, c + ir * ldc, ldc, src ? src + ir * lds : nullptr, lds,
                                          bias, relu, std::min(MR, m - ir), n_valid,
                                          simd::panel_share(next, next_size, ir / MR, tiles));
  }
}

template <class Storage>
inline void gemm_row_entry(index_t kc, const accumulator_t<Storage>* a, const Storage* b, accumulator_t<Storage>* c,
                           const accumulator_t<Storage>* src, const accumulator_t<Storage>* bias, bool relu,
                           index_t n_valid) noexcept {
  simd::gemm_row_kernel<accumulator_t<Storage>, Storage>(kc, a, b, c, src, bias, relu, n_valid);
}

template <class Storage>
inline void gemm_narrow_entry(const float* row, Storage* out, index_t n) noexcept {
  simd::narrow(row, out, n);
}

// GemmKernels::narrow: the rounding of C's float rows for 16-bit storage, none for float and double.
template <class Storage>
constexpr auto gemm_narrow_of() noexcept {
  if constexpr (is_16bit_float_v<Storage>)
    return &gemm_narrow_entry<Storage>;
  else
    return static_cast<void (*)(const Storage*, Storage*, index_t) noexcept>(nullptr);
}

inline void gemm_pair_panel_entry(index_t depth, const bfloat16* a, index_t m, const bfloat16* b, const bfloat16* next,
                                  index_t next_size, float* c, index_t ldc, const float* src, index_t lds,
                                  const float* bias, bool relu, index_t n_valid) noexcept {
  constexpr index_t MR = simd::GemmTile<bfloat16>::mr;
  const index_t tiles = (m + MR - 1) / MR;
  for (index_t ir = 0; ir < m; ir += MR) {
    simd::gemm_pair_micro_kernel(depth / 2, a + ir * depth, b, c + ir * ldc, ldc, src ? src + ir * lds : nullptr, lds,
                                 bias, relu, std::min(MR, m - ir), n_valid,
                                 simd::panel_share(next, next_size, ir / MR, tiles));
  }
}

inline void gemm_pair_row_entry(index_t depth, const bfloat16* a, const bfloat16* b, float* c, const float* src,
                                const float* bias, bool relu, index_t n_valid) noexcept {
  simd::gemm_pair_row_kernel(depth / 2, a, b, c, src, bias, relu, n_valid);
}

/// The GEMM table of this translation unit's level; `with_pairs` fills the pair entries.
template <class Storage, bool with_pairs>
inline constexpr simd::GemmKernels<Storage> gemm_kernels_here = {
    .level = simd::compiled_level,
    .mr = simd::GemmTile<Storage>::mr,
    .nr = simd::GemmTile<Storage>::nr,
    .kc = simd::GemmTile<Storage>::kc,
    .mc = simd::GemmTile<Storage>::mc,
    .pairs = with_pairs,
    .pack_a = &simd::pack_a<Storage>,
    .panel = &gemm_panel_entry<Storage>,
    .row = &gemm_row_entry<Storage>,
    .narrow = gemm_narrow_of<Storage>(),
    .pack_a_pairs = with_pairs ? &simd::pack_a_pairs : nullptr,
    .pair_panel = with_pairs ? &gemm_pair_panel_entry : nullptr,
    .pair_row = with_pairs ? &gemm_pair_row_entry : nullptr,
};

// Function f as a table entry of its own: HEED_FLATTEN, so that everything f calls (xsimd's
// transcendental functions above all) is inlined into the level's own symbol (docs/design.md,
// step 3), where a plain &f could leave xsimd's templates out of line in the level's object.
template <auto f>
struct flattened;
template <class R, class... Args, R (*f)(Args...) noexcept>
struct flattened<f> {
  HEED_FLATTEN static R call(Args... args) noexcept { return f(args...); }
};

/// The vector ops of this translation unit's level.
template <class T>
inline constexpr simd::VectorKernels<T> vector_kernels_here = {
    .level = simd::compiled_level,
    .dot = &flattened<&simd::dot<T>>::call,
    .axpy = &flattened<&simd::axpy<T>>::call,
    .add = &flattened<&simd::add<T>>::call,
    .multiply = &flattened<&simd::multiply<T>>::call,
    .tanh_dot = &flattened<&simd::tanh_dot<T>>::call,
    .layer_norm = &flattened<&simd::layer_norm<T>>::call,
    .rms_norm = &flattened<&simd::rms_norm<T>>::call,
    .relu = &flattened<&simd::relu<T>>::call,
    .sigmoid = &flattened<&simd::sigmoid<T>>::call,
    .silu = &flattened<&simd::silu<T>>::call,
    .gelu = &flattened<&simd::gelu<T>>::call,
    .gelu_tanh = &flattened<&simd::gelu_tanh<T>>::call,
};

/// The 16-bit conversions of this translation unit's level.
template <class Storage>
inline constexpr simd::ConvertKernels<Storage> convert_kernels_here = {
    .level = simd::compiled_level,
    // (simd::widen also names the one-value conversion: the row's is picked by its type)
    .widen = &flattened<static_cast<void (*)(const Storage*, float*, index_t) noexcept>(&simd::widen<Storage>)>::call,
    .narrow = &flattened<&simd::narrow<Storage>>::call,
    .dot = &flattened<&simd::dot_widened<Storage>>::call,
};

/// The vision passes of this translation unit's level.
template <class Storage>
inline constexpr simd::VisionKernels<Storage> vision_kernels_here = {
    .level = simd::compiled_level,
    .conv_rows = simd::conv_rows<accumulator_t<Storage>>,
    .conv_columns = simd::conv_columns<accumulator_t<Storage>>,
    .plane_means = &flattened<&simd::plane_means<Storage>>::call,
    .mean_max_over_channels = &flattened<&simd::mean_max_over_channels<Storage>>::call,
    .gate_planes = &flattened<&simd::gate_planes<Storage>>::call,
    .conv2d_plane = &flattened<&simd::conv2d_plane<accumulator_t<Storage>>>::call,
};

template <class Storage>
[[nodiscard]] inline const simd::AttentionKernels<Storage>* choose_attention_kernels() noexcept {
  const simd::AttentionKernels<Storage>* chosen = &attention_kernels_here<Storage, false>;
  if constexpr (simd::pairs_compiled_for<Storage>) {
    if (simd::bf16_pairs_chosen()) chosen = &attention_kernels_here<Storage, true>;
  }
#if defined(__GNUC__)
  // The table is a run-time choice, as it will be when a program carries several levels: the
  // driver's calls stay indirect, and what they cost is measured (docs/decisions.md, "A table
  // of kernels").
  asm("" : "+r"(chosen));
#endif
  return chosen;
}

template <class Storage>
[[nodiscard]] inline const simd::GemmKernels<Storage>* choose_gemm_kernels() noexcept {
  const simd::GemmKernels<Storage>* chosen = &gemm_kernels_here<Storage, false>;
  if constexpr (simd::pairs_compiled_for<Storage>) {
    if (simd::bf16_pairs_chosen()) chosen = &gemm_kernels_here<Storage, true>;
  }
  return chosen;
}

}  // namespace heed::detail::inline HEED_SIMD_LEVEL_NAMESPACE
