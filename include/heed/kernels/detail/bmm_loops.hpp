#pragma once
#include "heed/core/detail/internal_header_check.hpp"
// The loop of heed::bmm and heed::baddbmm (kernels/bmm.hpp describes them): each product packs
// its b[i] and runs gemm_nt, with the scaling and the broadcast input in the GEMM's epilogue.

#include <string>

#include "heed/core/error.hpp"
#include "heed/core/parallel.hpp"
#include "heed/core/scalar.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/gemm.hpp"

namespace heed::detail {

// Multiply-adds per product below which a batch is spread over the workers one product each
// rather than each product over all of them (a GEMM this small cannot pay for a parallel region).
inline constexpr index_t bmm_split_work = index_t{1} << 20;

// out[i] = beta · input[i] + alpha · a[i] · b[i] (no input where beta is 0 or input is null), the
// shapes checked by the caller, on `threads_asked` workers (0: num_threads()); in_strides are input's strides over [B,
// n, p], 0 where it is broadcast.
template <class Scalar>
void bmm_into(const TensorView<const Scalar, 3>& a, const TensorView<const Scalar, 3>& b, Tensor<Scalar, 3>& out,
              const Scalar* input, const index_t (&in_strides)[3], double beta_value, double alpha_value,
              int threads_asked) {
  using Acc = accumulator_t<Scalar>;
  const index_t B = a.size(0), n = a.size(1), m = a.size(2), p = b.size(2);
  if (out.numel() == 0) return;
  Tensor<Scalar, 3> dense_a;
  const TensorView<const Scalar, 3> av = a.stride(2) == 1 ? a : contiguous(a, dense_a);
  const int threads = threads_asked > 0 ? threads_asked : num_threads();
  const bool by_batch = threads > 1 && B > 1 && (n * m * p < bmm_split_work || B >= 4 * threads || B % threads == 0);
  const bool plain = alpha_value == 1.0 && beta_value == 0.0;
  const Acc alpha = static_cast<Acc>(alpha_value), beta = static_cast<Acc>(beta_value);
  const auto product = [&](index_t i, int gemm_threads) {
    const PackedMatrix<Scalar> packed(b.data() + i * b.stride(0), p, m, b.stride(2), b.stride(1));
    Scalar* c = out.data() + i * n * p;
    const GemmOptions<Scalar> options{.threads = gemm_threads};
    if (plain) {
      gemm_nt(av.data() + i * av.stride(0), av.stride(1), n, packed, c, p, options);
      return;
    }
    const Scalar* in = input ? input + i * in_strides[0] : nullptr;
    gemm_nt(av.data() + i * av.stride(0), av.stride(1), n, packed, c, p, options,
            [&](auto* row, index_t r, index_t col0, index_t count) {
              if (!in || beta == Acc(0)) {
                for (index_t j = 0; j < count; ++j) row[j] = alpha * row[j];
              } else {
                const Scalar* from = in + r * in_strides[1] + col0 * in_strides[2];
                for (index_t j = 0; j < count; ++j)
                  row[j] = alpha * row[j] + beta * static_cast<Acc>(from[j * in_strides[2]]);
              }
            });
  };
  if (by_batch)
    parallel_for(B, threads, [&](index_t i, int) { product(i, 1); });
  else
    for (index_t i = 0; i < B; ++i) product(i, threads);
}

template <class Scalar>
void check_bmm_shapes(const char* name, const TensorView<const Scalar, 3>& a, const TensorView<const Scalar, 3>& b) {
  if (b.size(0) != a.size(0) || b.size(1) != a.size(2))
    throw ShapeError(std::string("heed::") + name + ": a [B, n, m] and b [B, m, p] expected, got a " +
                     to_string(a.shape()) + " and b " + to_string(b.shape()));
}

}  // namespace heed::detail
