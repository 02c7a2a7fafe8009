#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <string>
#include <utility>

#include <Eigen/Core>

#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/kernels/tile_ref.hpp"
#include "heed/simd/vector_ops.hpp"

// The bound forms of the score policies of heed/kernels/score.hpp: what `bind` returns for one
// call's q and k, and the driver calls per tile. With grouped heads (k has Hq / group heads),
// query head h reads key head h / group in place.
namespace heed::detail {

// scale · Q_tile K_tileᵀ as one GEMM on Eigen maps of the views (no copies).
template <class T>
class DotScorer {
 public:
  DotScorer(TensorView<const T, 4> q, TensorView<const T, 4> k, T scale)
      : q_(q), k_(k), scale_(scale), group_(q.size(1) / std::max<index_t>(k.size(1), 1)) {}

  void scores(const TileRef& t, T* out, index_t ld) const {
    using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    using ConstMap = Eigen::Map<const RowMajor, Eigen::Unaligned, Eigen::OuterStride<>>;
    const index_t d = q_.size(3);
    const ConstMap qt(&q_(t.b, t.h, t.i0, 0), t.ni, d, Eigen::OuterStride<>(q_.stride(2)));
    const ConstMap kt(&k_(t.b, t.h / group_, t.j0, 0), t.nj, d, Eigen::OuterStride<>(k_.stride(2)));
    Eigen::Map<RowMajor, Eigen::Unaligned, Eigen::OuterStride<>> s(out, t.ni, t.nj, Eigen::OuterStride<>(ld));
    s.noalias() = scale_ * (qt * kt.transpose());
  }

 private:
  TensorView<const T, 4> q_, k_;
  T scale_;
  index_t group_;
};

// Projected queries and keys, then vᵀ tanh(q' + k') per pair.
template <class T>
class AdditiveScorer {
 public:
  AdditiveScorer(Tensor<T, 4> q_proj, Tensor<T, 4> k_proj, Tensor<T, 1> v)
      : q_proj_(std::move(q_proj)),
        k_proj_(std::move(k_proj)),
        v_(std::move(v)),
        group_(q_proj_.size(1) / std::max<index_t>(k_proj_.size(1), 1)) {}

  void scores(const TileRef& t, T* out, index_t ld) const {
    const index_t hidden = v_.size(0);
    const T* v = v_.data();
    for (index_t i = 0; i < t.ni; ++i) {
      const T* qp = &q_proj_(t.b, t.h, t.i0 + i, 0);
      for (index_t j = 0; j < t.nj; ++j)
        out[i * ld + j] = simd::tanh_dot(qp, &k_proj_(t.b, t.h / group_, t.j0 + j, 0), v, hidden);
    }
  }

 private:
  Tensor<T, 4> q_proj_, k_proj_;  // [B, H, L, hidden]
  Tensor<T, 1> v_;                // a dense copy: read contiguously in the hot loop
  index_t group_;
};

inline void check_same_depth(const Shape<4>& q, const Shape<4>& k, const char* who) {
  if (q[3] != k[3])
    throw ShapeError(std::string("heed::") + who + ": query depth " + std::to_string(q[3]) + " (q " + to_string(q) +
                     ") differs from key depth " + std::to_string(k[3]) + " (k " + to_string(k) + ")");
}

}  // namespace heed::detail
