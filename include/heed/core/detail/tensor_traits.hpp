#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <cstddef>
#include <type_traits>

namespace heed {
template <class Scalar, std::size_t Rank>
class Tensor;
template <class Scalar, std::size_t Rank>
class TensorView;
}  // namespace heed

namespace heed::detail {

// What heed::TensorLike, scalar_of and rank_of read (heed/core/tensor.hpp).
template <class T>
struct tensor_traits {
  static constexpr bool is_tensor = false;
};
template <class Scalar, std::size_t Rank>
struct tensor_traits<Tensor<Scalar, Rank>> {
  static constexpr bool is_tensor = true;
  using scalar = Scalar;
  static constexpr std::size_t rank = Rank;
};
template <class Scalar, std::size_t Rank>
struct tensor_traits<TensorView<Scalar, Rank>> {
  static constexpr bool is_tensor = true;
  using scalar = std::remove_const_t<Scalar>;
  static constexpr std::size_t rank = Rank;
};

}  // namespace heed::detail
