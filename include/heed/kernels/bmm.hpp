#pragma once
// Batched matrix products with torch.bmm's and torch.baddbmm's semantics, on heed's GEMM
// (kernels/gemm.hpp):
//
//   bmm(a, b)                          out[i] = a[i] · b[i]                 a [B, n, m], b [B, m, p]
//   baddbmm(input, a, b, {beta, alpha}) out[i] = beta · input[i] + alpha · a[i] · b[i]
//
// input broadcasts to [B, n, p] as in PyTorch (rank 1 to 3, dimensions of 1 stretched); with
// beta = 0 it is not read, so NaN and infinity in it do not reach the output. b[i] is packed for
// the GEMM as it is read (any strides: a transposed view such as Kᵀ costs no copy), a[i] is read
// in place when its rows are dense. The scaling and the addition run in the GEMM's epilogue, on
// each row while it is in L1, in the accumulator type: a 16-bit output is rounded once, as
// PyTorch's CPU baddbmm rounds it. Seed 002's first tip ("torch.baddbmm instead of a loop of
// per-matrix products") holds here too: one call spreads the batch over the workers, where a
// loop of small products gives each product to all of them (benchmarks/kernels/bench_bmm.cpp).

#include <string>
#include <type_traits>

#include "heed/core/error.hpp"
#include "heed/core/scalar.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/gemm.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/kernels/detail/bmm_loops.hpp"

namespace heed {

/// The scalars of heed::baddbmm, as torch.baddbmm's keyword arguments.
struct BaddbmmOptions {
  double beta = 1.0;   ///< the weight of input; 0: input is not read (NaN in it does not propagate)
  double alpha = 1.0;  ///< the weight of the product
  int threads = 0;     ///< as parallel_for takes it (0: heed::num_threads())
};

/// torch.bmm: a [B, n, m] · b [B, m, p] → [B, n, p], each product on heed's GEMM. a and b may be
/// strided views (b is packed as it is read; a is copied only when its rows are not dense).
/// ShapeError naming both shapes when the batches or the inner dimensions differ.
template <TensorLike A, TensorLike B>
[[nodiscard]] Tensor<scalar_of<A>, 3> bmm(const A& a, const B& b, int threads = 0) {
  using Scalar = scalar_of<A>;
  static_assert(rank_of<A> == 3 && rank_of<B> == 3, "heed::bmm takes [B, n, m] and [B, m, p] tensors");
  static_assert(std::is_same_v<Scalar, scalar_of<B>>, "heed::bmm: a and b must have one scalar type");
  const TensorView<const Scalar, 3> av = as_view(a), bv = as_view(b);
  detail::check_bmm_shapes("bmm", av, bv);
  Tensor<Scalar, 3> out({av.size(0), av.size(1), bv.size(2)}, uninitialized);
  const index_t none[3] = {0, 0, 0};
  detail::bmm_into(av, bv, out, static_cast<const Scalar*>(nullptr), none, 0.0, 1.0, threads);
  return out;
}

/// torch.baddbmm: beta · input + alpha · a · b → [B, n, p], for a [B, n, m], b [B, m, p] and an
/// input that broadcasts to [B, n, p] (rank 1 to 3; with beta = 0 it is not read). A 16-bit
/// result is rounded once. ShapeError naming the shapes when a and b do not chain or input does
/// not broadcast.
template <TensorLike I, TensorLike A, TensorLike B>
[[nodiscard]] Tensor<scalar_of<A>, 3> baddbmm(const I& input, const A& a, const B& b, const BaddbmmOptions& o = {}) {
  using Scalar = scalar_of<A>;
  constexpr std::size_t R = rank_of<I>;
  static_assert(rank_of<A> == 3 && rank_of<B> == 3, "heed::baddbmm takes [B, n, m] and [B, m, p] tensors");
  static_assert(R >= 1 && R <= 3, "heed::baddbmm: input must have rank 1 to 3 (it broadcasts to [B, n, p])");
  static_assert(std::is_same_v<Scalar, scalar_of<B>> && std::is_same_v<Scalar, scalar_of<I>>,
                "heed::baddbmm: input, a and b must have one scalar type");
  const TensorView<const Scalar, 3> av = as_view(a), bv = as_view(b);
  const TensorView<const Scalar, R> iv = as_view(input);
  detail::check_bmm_shapes("baddbmm", av, bv);
  const Shape<3> shape{av.size(0), av.size(1), bv.size(2)};
  index_t strides[3] = {0, 0, 0};
  for (std::size_t d = 3 - R; d < 3; ++d) {
    const std::size_t e = d - (3 - R);
    if (iv.size(e) == shape[d])
      strides[d] = shape[d] == 1 ? 0 : iv.stride(e);
    else if (iv.size(e) != 1)
      throw ShapeError("heed::baddbmm: input " + to_string(iv.shape()) + " does not broadcast to the product's shape " +
                       to_string(shape) + " (a " + to_string(av.shape()) + ", b " + to_string(bv.shape()) + ")");
  }
  Tensor<Scalar, 3> out(shape, uninitialized);
  detail::bmm_into(av, bv, out, o.beta == 0.0 ? nullptr : iv.data(), strides, o.beta, o.alpha, o.threads);
  return out;
}

}  // namespace heed
