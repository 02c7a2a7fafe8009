#pragma once
// The element types heed's tensors hold: the arithmetic types, and two 16-bit floating-point
// storage types, Eigen's (re-exported here):
//   heed::bfloat16   8 exponent bits, 7 mantissa bits (float's range, 2^-8 relative precision)
//   heed::half       IEEE binary16: 5 exponent bits, 10 mantissa bits (up to 65504, 2^-11)
// Storage and arithmetic are separate: kernels keep 16-bit tensors 16-bit in memory and compute
// in accumulator_t<T> (float for the 16-bit types and float, double for double).

#include <type_traits>

#include <Eigen/Core>

namespace heed {

/// Brain floating point (bfloat16): float's exponent, a 7-bit mantissa.
using bfloat16 = Eigen::bfloat16;
/// IEEE 754 binary16.
using half = Eigen::half;

/// True for bfloat16 and half.
template <class T>
inline constexpr bool is_16bit_float_v = std::is_same_v<T, bfloat16> || std::is_same_v<T, half>;

/// True for the floating-point element types: float, double, long double, bfloat16, half.
template <class T>
inline constexpr bool is_floating_v = std::is_floating_point_v<T> || is_16bit_float_v<T>;

/// True for every element type a Tensor may hold: the arithmetic types, bfloat16 and half.
template <class T>
inline constexpr bool is_scalar_v = std::is_arithmetic_v<T> || is_16bit_float_v<T>;

/// The type heed computes in for storage type T: float for bfloat16, half and float; T itself
/// for the other arithmetic types (double stays double).
template <class T>
using accumulator_t = std::conditional_t<is_16bit_float_v<T>, float, T>;

}  // namespace heed
