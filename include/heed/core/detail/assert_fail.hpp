#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <cstdio>
#include <cstdlib>

namespace heed::detail {

// What HEED_ASSERT calls on failure (heed/core/assert.hpp).
[[noreturn]] inline void assert_fail(const char* condition, const char* file, int line) noexcept {
  std::fprintf(stderr, "heed: internal assertion `%s` failed at %s:%d\n", condition, file, line);
  std::abort();
}

}  // namespace heed::detail
