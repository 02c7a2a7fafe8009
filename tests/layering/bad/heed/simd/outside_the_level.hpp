#pragma once
// Planted for ctest layering/detects_simd_code_outside_its_level: simd code that every level would
// compile to the same symbols.

namespace heed::simd {
inline int twice(int x) {
  return 2 * x;
}
}  // namespace heed::simd
