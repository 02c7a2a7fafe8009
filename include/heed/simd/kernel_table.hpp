#pragma once
// The table of kernels the attention driver calls: the boundary between the templated driver
// (kernels/, with the masks and scorers a program defines) and the instruction-set-specific
// code below it (docs/design.md, "Instruction-set levels, and run-time dispatch").
//
//   AttentionKernels<Storage>     the entry points of one level for one storage type, and the
//                                 blocking they pack for (mr, nr): plain function pointers
//   attention_kernels<Storage>()  the table in use in this process
//
// Each entry computes a whole tile (or packs a range of keys), so the indirect call is paid once
// per tile, not per micro-kernel block. Today there is one level per translation unit, the one
// its compiler target gives (simd::compiled_level), and for bfloat16 on AVX-512 BF16 two tables
// of it: on pair products and widened to float, chosen per CPU (simd::bf16_pairs_chosen).

#include <type_traits>

#include "heed/core/scalar.hpp"
#include "heed/core/shape.hpp"
#include "heed/simd/cpu.hpp"

namespace heed::simd {

/// The softmax row pieces of one instruction-set level in the accumulator type Acc: what the
/// online softmax (heed/kernels/detail/online_softmax.hpp) and the weights' last rescaling do to
/// each row of scores, one call per row of a tile.
template <class Acc>
struct SoftmaxKernels {
  /// max_i x[i], -infinity for n == 0 (simd::max).
  Acc (*max)(const Acc* x, index_t n) noexcept;
  /// y[i] = exp(x[i] - shift), returning Σ y[i] (simd::exp_sum); x may be y.
  Acc (*exp_sum)(const Acc* x, Acc shift, Acc* y, index_t n) noexcept;
  /// x[i] = a · x[i] (simd::scale).
  void (*scale)(Acc a, Acc* x, index_t n) noexcept;
  /// x[i] = a · x[i] where x[i] >= cut, else 0 (simd::scale_above).
  void (*scale_above)(Acc a, Acc cut, Acc* x, index_t n) noexcept;
  /// exp_sum writing exp(x[i] - shift) rounded to bfloat16 into p (simd::exp_sum_rounded);
  /// float only (null for double).
  Acc (*exp_sum_rounded)(const Acc* x, Acc shift, bfloat16* p, index_t n) noexcept;
  /// p[i] = x[i] rounded to bfloat16 (simd::narrow); float only (null for double).
  void (*round)(const Acc* x, bfloat16* p, index_t n) noexcept;
};

/// The attention entry points of one instruction-set level for storage type Storage (the
/// accumulator type Acc is accumulator_t<Storage>). Every pointer is set, except the pair
/// entries of a table whose `pairs` is false.
template <class Storage>
struct AttentionKernels {
  using Acc = accumulator_t<Storage>;  ///< the accumulator type: scores, probabilities, O

  IsaLevel level;  ///< the level the entries were compiled at
  index_t mr;      ///< query rows of a micro-kernel block (AttentionTile<Acc>::mr)
  index_t nr;      ///< keys of a packed Kᵀ panel, columns of a pair-packed V panel
  bool pairs;      ///< bfloat16 on pair products (the pair entries below), not widened to float

  SoftmaxKernels<Acc> softmax;  ///< the softmax row pieces of the same level

  /// Kᵀ in panels of nr keys (simd::pack_kt).
  void (*pack_kt)(const Storage* k, index_t ldk, index_t keys, index_t depth, Storage* out) noexcept;
  /// scale · Q Kᵀ of one tile from packed panels (simd::attention_tile_scores); 16-bit queries
  /// are widened here, once per tile, into `widened` (ni × depth values; unused, and may be
  /// null, where Storage is Acc).
  void (*tile_scores)(index_t depth, const Storage* q, index_t ldq, index_t ni, const Storage* kt, index_t nj, Acc* out,
                      index_t ld, Acc scale, Acc* widened) noexcept;
  /// scale · q Kᵀ of nq query rows (row r at q + r·ldq, its scores at out + r·ld) against keys
  /// read in place, the rows sharing each load of a key (simd::attention_rows_scores).
  void (*rows_scores)(index_t depth, const Storage* q, index_t ldq, index_t nq, const Storage* k, index_t ldk,
                      index_t nj, Acc* out, index_t ld, Acc scale) noexcept;
  /// O = c · O + Σ_r P_r V_r over a span's runs of keys (simd::attention_tile_pv).
  void (*tile_pv)(const Acc* p, index_t ldp, index_t ni, index_t runs, const index_t* keys, const Storage* const* v,
                  index_t ldv, index_t dv, Acc* o, const Acc* c, const Acc* ones) noexcept;

  /// Kᵀ in panels of nr keys with the depth in pairs (simd::pack_kt_pairs); set where `pairs`.
  void (*pack_kt_pairs)(const bfloat16* k, index_t ldk, index_t keys, index_t depth, bfloat16* out) noexcept;
  /// V in panels of nr columns with the keys in pairs (simd::pack_v_pairs); set where `pairs`.
  void (*pack_v_pairs)(const bfloat16* v, index_t ldv, index_t keys, index_t cols, bfloat16* out,
                       index_t panel_stride) noexcept;
  /// tile_scores on pair products (simd::pair_tile_scores); set where `pairs`.
  void (*pair_tile_scores)(index_t pairs, const bfloat16* q, index_t ldq, index_t ni, const bfloat16* kt, index_t nj,
                           float* out, index_t ld, float scale) noexcept;
  /// O = c · O + P V of one run of keys on pair products (simd::pair_tile_pv); set where `pairs`.
  void (*pair_tile_pv)(index_t pairs, const bfloat16* p, index_t lda, index_t ni, const bfloat16* v,
                       index_t panel_stride, index_t dv, float* o, const float* c) noexcept;
};

/// The GEMM entry points of one instruction-set level for storage type Storage (heed::gemm_nt,
/// kernels/gemm.hpp; the accumulator type Acc is accumulator_t<Storage>), and the blocking they
/// pack for. The grain is one NR-column panel of W against a block of up to mc packed rows of A
/// (or one row): a panel is mc · nr · kc multiply-adds, and the driver runs the epilogue on the
/// panel's rows after it, while they are in cache.
template <class Storage>
struct GemmKernels {
  using Acc = accumulator_t<Storage>;  ///< the accumulator type: packed A (unless pairs), C's blocks

  IsaLevel level;  ///< the level the entries were compiled at
  index_t mr;      ///< rows of C per micro-kernel (GemmTile<Storage>::mr)
  index_t nr;      ///< columns of C per micro-kernel, of a packed panel of W
  index_t kc;      ///< depth of one block
  index_t mc;      ///< rows of A packed at once
  bool pairs;      ///< bfloat16 on pair products (W and A packed with k in pairs), not widened

  /// A[rows, 0 : kc] → micro-panels of mr rows in Acc (simd::pack_a).
  void (*pack_a)(const Storage* a, index_t lda, index_t rows, index_t kc, Acc* out) noexcept;
  /// c = src + A · B (+ bias, ReLU) for rows [0, m) of packed A (micro-panels of mr · kc) and one
  /// panel B of W (kc × nr), columns < n_valid (simd::gemm_micro_kernel over the rows); each
  /// micro-kernel asks for its share of the `next_size` values of the next panel `next`, if any.
  void (*panel)(index_t kc, const Acc* a, index_t m, const Storage* b, const Storage* next, index_t next_size, Acc* c,
                index_t ldc, const Acc* src, index_t lds, const Acc* bias, bool relu, index_t n_valid) noexcept;
  /// panel for a single row of A, its kc values read as they are (not packed; simd::gemm_row_kernel);
  /// src may be c.
  void (*row)(index_t kc, const Acc* a, const Storage* b, Acc* c, const Acc* src, const Acc* bias, bool relu,
              index_t n_valid) noexcept;
  /// C's float row rounded to Storage (simd::narrow); 16-bit Storage only (null otherwise).
  void (*narrow)(const Acc* row, Storage* out, index_t n) noexcept;

  /// A[rows, 0 : kc] → micro-panels with k in pairs (simd::pack_a_pairs); set where `pairs`.
  void (*pack_a_pairs)(const bfloat16* a, index_t lda, index_t rows, index_t kc, bfloat16* out) noexcept;
  /// panel on pair products, a's micro-panels `depth` = pair_depth(kc) deep (simd::gemm_pair_micro_kernel
  /// over the rows); set where `pairs`.
  void (*pair_panel)(index_t depth, const bfloat16* a, index_t m, const bfloat16* b, const bfloat16* next,
                     index_t next_size, float* c, index_t ldc, const float* src, index_t lds, const float* bias,
                     bool relu, index_t n_valid) noexcept;
  /// row on pair products (simd::gemm_pair_row_kernel); set where `pairs`.
  void (*pair_row)(index_t depth, const bfloat16* a, const bfloat16* b, float* c, const float* src, const float* bias,
                   bool relu, index_t n_valid) noexcept;
};

/// The vector ops the modules run on rows of T (float or double) at one level (simd/vector_ops.hpp
/// describes each): the grain is a row, hundreds to thousands of values, so a call through the
/// table costs nothing measurable.
template <class T>
struct VectorKernels {
  IsaLevel level;  ///< the level the entries were compiled at

  T (*dot)(const T* x, const T* y, index_t n) noexcept;                   ///< Σ x·y
  void (*axpy)(T a, const T* x, T* y, index_t n) noexcept;                ///< y += a·x
  void (*add)(const T* x, T* y, index_t n) noexcept;                      ///< y += x
  void (*multiply)(const T* x, const T* y, T* z, index_t n) noexcept;     ///< z = x·y
  T (*tanh_dot)(const T* a, const T* b, const T* v, index_t n) noexcept;  ///< Σ v·tanh(a + b)
  /// (x - mean) / sqrt(var + eps) · w + b; w, b may be null; y may be x
  void (*layer_norm)(const T* x, T* y, const T* w, const T* b, T eps, index_t n) noexcept;
  /// x / sqrt(mean(x²) + eps) · w; w may be null; y may be x
  void (*rms_norm)(const T* x, T* y, const T* w, T eps, index_t n) noexcept;
  void (*relu)(const T* x, T* y, index_t n) noexcept;       ///< max(x, 0); y may be x
  void (*sigmoid)(const T* x, T* y, index_t n) noexcept;    ///< 1 / (1 + exp(-x)); y may be x
  void (*silu)(const T* x, T* y, index_t n) noexcept;       ///< x · sigmoid(x); y may be x
  void (*gelu)(const T* x, T* y, index_t n) noexcept;       ///< GELU, erf form; y may be x
  void (*gelu_tanh)(const T* x, T* y, index_t n) noexcept;  ///< GELU, tanh form; y may be x
};

/// Rows of a 16-bit Storage (half or bfloat16) to float and back, and their dot product in float,
/// at one level (simd/convert.hpp, simd/vector_ops.hpp).
template <class Storage>
struct ConvertKernels {
  IsaLevel level;                                                        ///< the level compiled at
  void (*widen)(const Storage* x, float* y, index_t n) noexcept;         ///< y = float(x)
  void (*narrow)(const float* x, Storage* y, index_t n) noexcept;        ///< y = x rounded to nearest even
  float (*dot)(const Storage* x, const Storage* y, index_t n) noexcept;  ///< Σ x·y in float
};

/// The passes of the vision modules over NCHW planes of Storage at one level
/// (simd/vision_ops.hpp describes each): the grain is a sample's planes, so a call through the
/// table costs nothing measurable.
template <class Storage>
struct VisionKernels {
  using Acc = accumulator_t<Storage>;  ///< the accumulator type: sums, maxima, gates

  IsaLevel level;        ///< the level the entries were compiled at
  index_t conv_rows;     ///< output rows of conv2d_plane's step
  index_t conv_columns;  ///< output columns of conv2d_plane's step (the padded rows hold whole steps)

  /// The mean of each of `planes` planes, first to last or last to first (simd::plane_means).
  void (*plane_means)(const Storage* x, index_t planes, index_t plane, Acc* means, bool last_first) noexcept;
  /// Mean and max over the channels of x_c (· scale[c] where scale is not null)
  /// (simd::mean_max_over_channels).
  void (*mean_max_over_channels)(const Storage* x, const Acc* scale, index_t C, index_t plane, Acc* mean,
                                 Acc* max) noexcept;
  /// y = channel[c] · x · spatial[j], either factor may be null (simd::gate_planes).
  void (*gate_planes)(const Storage* x, Storage* y, index_t C, index_t plane, const Acc* channel,
                      const Acc* spatial) noexcept;
  /// One output plane of a stride-1 convolution on Acc values from zero-padded input planes
  /// (simd::conv2d_plane).
  void (*conv2d_plane)(const Acc* padded, index_t Hp, index_t Wp, const Acc* w, Acc bias, index_t Cin, index_t kh,
                       index_t kw, Acc* out, index_t Ho, index_t Wo) noexcept;
};

/// The attention tables of one level, as a program built with heed_dispatch (HEED_DISPATCH)
/// carries them, one per level (heed/simd/dispatch_level.ipp).
struct LevelTables {
  IsaLevel level;                                ///< the level they were compiled at
  AttentionKernels<float> f32;                   ///< float storage
  AttentionKernels<double> f64;                  ///< double storage
  AttentionKernels<half> f16;                    ///< half storage, widened to float
  AttentionKernels<bfloat16> bf16;               ///< bfloat16 storage, widened to float
  const AttentionKernels<bfloat16>* bf16_pairs;  ///< bfloat16 on pair products; null where the level has none
  GemmKernels<float> gemm_f32;                   ///< the GEMM on float
  GemmKernels<double> gemm_f64;                  ///< the GEMM on double
  GemmKernels<half> gemm_f16;                    ///< the GEMM on half, widened to float
  GemmKernels<bfloat16> gemm_bf16;               ///< the GEMM on bfloat16, widened to float
  const GemmKernels<bfloat16>* gemm_bf16_pairs;  ///< the GEMM on bfloat16 pair products; null where none
  VectorKernels<float> vector_f32;               ///< the vector ops on float
  VectorKernels<double> vector_f64;              ///< the vector ops on double
  ConvertKernels<half> convert_f16;              ///< half rows to float and back
  ConvertKernels<bfloat16> convert_bf16;         ///< bfloat16 rows to float and back
  VisionKernels<float> vision_f32;               ///< the vision passes on float
  VisionKernels<double> vision_f64;              ///< the vision passes on double
  VisionKernels<half> vision_f16;                ///< the vision passes on half, in float
  VisionKernels<bfloat16> vision_bf16;           ///< the vision passes on bfloat16, in float

  /// The table for Storage; bfloat16 on pair products where `pairs` and the level has them.
  template <class Storage>
  [[nodiscard]] const AttentionKernels<Storage>& get(bool pairs) const noexcept {
    if constexpr (std::is_same_v<Storage, float>) {
      return f32;
    } else if constexpr (std::is_same_v<Storage, double>) {
      return f64;
    } else if constexpr (std::is_same_v<Storage, half>) {
      return f16;
    } else {
      static_assert(std::is_same_v<Storage, bfloat16>, "attention stores float, double, half or bfloat16");
      return pairs && bf16_pairs ? *bf16_pairs : bf16;
    }
  }

  /// The GEMM table for Storage; bfloat16 on pair products where `pairs` and the level has them.
  template <class Storage>
  [[nodiscard]] const GemmKernels<Storage>& gemm(bool pairs) const noexcept {
    if constexpr (std::is_same_v<Storage, float>) {
      return gemm_f32;
    } else if constexpr (std::is_same_v<Storage, double>) {
      return gemm_f64;
    } else if constexpr (std::is_same_v<Storage, half>) {
      return gemm_f16;
    } else {
      static_assert(std::is_same_v<Storage, bfloat16>, "the GEMM stores float, double, half or bfloat16");
      return pairs && gemm_bf16_pairs ? *gemm_bf16_pairs : gemm_bf16;
    }
  }

  /// The vector ops on T (float or double).
  template <class T>
  [[nodiscard]] const VectorKernels<T>& vector() const noexcept {
    if constexpr (std::is_same_v<T, float>) {
      return vector_f32;
    } else {
      static_assert(std::is_same_v<T, double>, "the vector ops run on float or double");
      return vector_f64;
    }
  }

  /// The conversions of Storage (half or bfloat16) rows.
  template <class Storage>
  [[nodiscard]] const ConvertKernels<Storage>& convert() const noexcept {
    if constexpr (std::is_same_v<Storage, half>) {
      return convert_f16;
    } else {
      static_assert(std::is_same_v<Storage, bfloat16>, "the conversions are of half or bfloat16");
      return convert_bf16;
    }
  }

  /// The vision passes on Storage.
  template <class Storage>
  [[nodiscard]] const VisionKernels<Storage>& vision() const noexcept {
    if constexpr (std::is_same_v<Storage, float>) {
      return vision_f32;
    } else if constexpr (std::is_same_v<Storage, double>) {
      return vision_f64;
    } else if constexpr (std::is_same_v<Storage, half>) {
      return vision_f16;
    } else {
      static_assert(std::is_same_v<Storage, bfloat16>, "the vision passes store float, double, half or bfloat16");
      return vision_bf16;
    }
  }
};

#if defined(HEED_DISPATCH)
/// The tables of each level a program built with heed_dispatch carries (simd::dispatch_levels),
/// each defined by a translation unit of its own level (heed/simd/dispatch_level.ipp).
#if defined(__aarch64__) || defined(_M_ARM64)
const LevelTables* tables_level_neon() noexcept;
#else
#if defined(HEED_DISPATCH_SCALAR)
const LevelTables* tables_level_scalar() noexcept;
#endif
const LevelTables* tables_level_baseline() noexcept;
const LevelTables* tables_level_v3() noexcept;
const LevelTables* tables_level_v4() noexcept;
const LevelTables* tables_level_v4_bf16() noexcept;
#endif
#endif

}  // namespace heed::simd

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/simd/detail/kernel_table_entries.hpp"

#if defined(HEED_DISPATCH_LEVEL_UNIT)
// Only in a level's own translation unit: the table takes the address of every entry of every
// storage type, so any other translation unit would instantiate them all (about 1 s of each
// test's compile at -O2).
namespace heed::simd::inline HEED_SIMD_LEVEL_NAMESPACE {

/// This translation unit's level's tables (what heed/simd/dispatch_level.ipp hands out).
inline constexpr LevelTables level_tables = {
    .level = compiled_level,
    .f32 = detail::attention_kernels_here<float, false>,
    .f64 = detail::attention_kernels_here<double, false>,
    .f16 = detail::attention_kernels_here<half, false>,
    .bf16 = detail::attention_kernels_here<bfloat16, false>,
    .bf16_pairs = bf16_pair_products ? &detail::attention_kernels_here<bfloat16, true> : nullptr,
    .gemm_f32 = detail::gemm_kernels_here<float, false>,
    .gemm_f64 = detail::gemm_kernels_here<double, false>,
    .gemm_f16 = detail::gemm_kernels_here<half, false>,
    .gemm_bf16 = detail::gemm_kernels_here<bfloat16, false>,
    .gemm_bf16_pairs = bf16_pair_products ? &detail::gemm_kernels_here<bfloat16, true> : nullptr,
    .vector_f32 = detail::vector_kernels_here<float>,
    .vector_f64 = detail::vector_kernels_here<double>,
    .convert_f16 = detail::convert_kernels_here<half>,
    .convert_bf16 = detail::convert_kernels_here<bfloat16>,
    .vision_f32 = detail::vision_kernels_here<float>,
    .vision_f64 = detail::vision_kernels_here<double>,
    .vision_f16 = detail::vision_kernels_here<half>,
    .vision_bf16 = detail::vision_kernels_here<bfloat16>,
};

}  // namespace heed::simd::inline HEED_SIMD_LEVEL_NAMESPACE
#endif

#if defined(HEED_DISPATCH)

namespace heed::simd::inline dispatched {

/// The tables of the level this process runs (simd::dispatch_level), found once.
[[nodiscard]] inline const LevelTables& dispatched_tables() noexcept {
  static const LevelTables* const tables = [] {
    switch (dispatch_level()) {
#if defined(__aarch64__) || defined(_M_ARM64)
      case IsaLevel::neon:
        return tables_level_neon();
#else
      case IsaLevel::v4_bf16:
        return tables_level_v4_bf16();
      case IsaLevel::v4:
        return tables_level_v4();
      case IsaLevel::v3:
        return tables_level_v3();
#if defined(HEED_DISPATCH_SCALAR)
      case IsaLevel::scalar:
        return tables_level_scalar();
#endif
#endif
      default:
#if defined(__aarch64__) || defined(_M_ARM64)
        return tables_level_neon();
#else
        return tables_level_baseline();
#endif
    }
  }();
  return *tables;
}

/// The attention kernels in use in this process for Storage: the dispatched level's.
template <class Storage>
[[nodiscard]] inline const AttentionKernels<Storage>& attention_kernels() noexcept {
  static const AttentionKernels<Storage>& chosen = dispatched_tables().get<Storage>(bf16_pairs_chosen());
  return chosen;
}

/// The GEMM kernels in use in this process for Storage: the dispatched level's.
template <class Storage>
[[nodiscard]] inline const GemmKernels<Storage>& gemm_kernels() noexcept {
  static const GemmKernels<Storage>& chosen = dispatched_tables().gemm<Storage>(bf16_pairs_chosen());
  return chosen;
}

/// The vector ops in use in this process on T (float or double): the dispatched level's.
template <class T>
[[nodiscard]] inline const VectorKernels<T>& vector_kernels() noexcept {
  static const VectorKernels<T>& chosen = dispatched_tables().vector<T>();
  return chosen;
}

/// The conversions in use in this process of Storage (half or bfloat16): the dispatched level's.
template <class Storage>
[[nodiscard]] inline const ConvertKernels<Storage>& convert_kernels() noexcept {
  static const ConvertKernels<Storage>& chosen = dispatched_tables().convert<Storage>();
  return chosen;
}

/// The vision passes in use in this process on Storage: the dispatched level's.
template <class Storage>
[[nodiscard]] inline const VisionKernels<Storage>& vision_kernels() noexcept {
  static const VisionKernels<Storage>& chosen = dispatched_tables().vision<Storage>();
  return chosen;
}

}  // namespace heed::simd::inline dispatched

#else

namespace heed::simd::inline HEED_SIMD_LEVEL_NAMESPACE {

/// The attention kernels in use in this process for Storage, chosen on first use: this
/// translation unit's level's.
template <class Storage>
[[nodiscard]] inline const AttentionKernels<Storage>& attention_kernels() noexcept {
  static const AttentionKernels<Storage>* const chosen = detail::choose_attention_kernels<Storage>();
  return *chosen;
}

/// The GEMM kernels in use in this process for Storage, chosen on first use: this translation
/// unit's level's.
template <class Storage>
[[nodiscard]] inline const GemmKernels<Storage>& gemm_kernels() noexcept {
  static const GemmKernels<Storage>* const chosen = detail::choose_gemm_kernels<Storage>();
  return *chosen;
}

/// The vector ops on T (float or double): this translation unit's level's.
template <class T>
[[nodiscard]] inline const VectorKernels<T>& vector_kernels() noexcept {
  return detail::vector_kernels_here<T>;
}

/// The conversions of Storage (half or bfloat16) rows: this translation unit's level's.
template <class Storage>
[[nodiscard]] inline const ConvertKernels<Storage>& convert_kernels() noexcept {
  return detail::convert_kernels_here<Storage>;
}

/// The vision passes on Storage: this translation unit's level's.
template <class Storage>
[[nodiscard]] inline const VisionKernels<Storage>& vision_kernels() noexcept {
  return detail::vision_kernels_here<Storage>;
}

}  // namespace heed::simd::inline HEED_SIMD_LEVEL_NAMESPACE

#endif
