#pragma once
#include "heed/core/detail/internal_header_check.hpp"

// Four 16-bit values (bfloat16 or half objects) as a NEON register and back, for the AArch64
// overloads of simd/convert.hpp. memcpy, not a pointer cast: the objects are not uint16_t.
#include <cstdint>
#include <cstring>

#include <arm_neon.h>

namespace heed::detail::inline HEED_SIMD_LEVEL_NAMESPACE {

[[nodiscard]] inline uint16x4_t neon_load_u16x4(const void* p) noexcept {
  std::uint64_t bits;
  std::memcpy(&bits, p, sizeof bits);
  return vcreate_u16(bits);
}

inline void neon_store_u16x4(void* p, uint16x4_t v) noexcept {
  const std::uint64_t bits = vget_lane_u64(vreinterpret_u64_u16(v), 0);
  std::memcpy(p, &bits, sizeof bits);
}

}  // namespace heed::detail::inline HEED_SIMD_LEVEL_NAMESPACE
