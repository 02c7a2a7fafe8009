#pragma once
// as_matrix: the only bridge from heed's views to Eigen. A rank-2 view becomes a row-major
// Eigen::Map with both strides, so a slice of a [B, L, H, d] tensor is a matrix without a copy.

#include <type_traits>

#include <Eigen/Core>

#include "heed/core/tensor.hpp"
#include "heed/core/tensor_view.hpp"

namespace heed {

/// The Eigen::Map that as_matrix returns: row-major, with both strides dynamic.
template <class Scalar>
using MatrixMap =
    Eigen::Map<std::conditional_t<
                   std::is_const_v<Scalar>,
                   const Eigen::Matrix<std::remove_const_t<Scalar>, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>,
                   Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>,
               Eigen::Unaligned, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;

/// A rank-2 view as an Eigen matrix (rows = dimension 0), sharing its storage.
template <class Scalar>
[[nodiscard]] MatrixMap<Scalar> as_matrix(const TensorView<Scalar, 2>& view) noexcept {
  return MatrixMap<Scalar>(view.data(), view.size(0), view.size(1),
                           Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(view.stride(0), view.stride(1)));
}

/// A rank-2 tensor as an Eigen matrix, sharing its storage.
template <class Scalar>
[[nodiscard]] MatrixMap<Scalar> as_matrix(Tensor<Scalar, 2>& tensor) noexcept {
  return as_matrix(tensor.view());
}

/// A read-only rank-2 tensor as a read-only Eigen matrix.
template <class Scalar>
[[nodiscard]] MatrixMap<const Scalar> as_matrix(const Tensor<Scalar, 2>& tensor) noexcept {
  return as_matrix(tensor.view());
}

}  // namespace heed
