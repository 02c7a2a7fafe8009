#pragma once
// HEED_ASSERT checks internal invariants (bounds behind a validated boundary). It is on in
// debug builds, off under NDEBUG, and a user may define it before including heed to route
// failures elsewhere. A user's bad input never reaches it: that gets an exception.

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/core/detail/assert_fail.hpp"

#ifndef HEED_ASSERT
#ifdef NDEBUG
#define HEED_ASSERT(condition) static_cast<void>(0)
#else
#define HEED_ASSERT(condition) \
  ((condition) ? static_cast<void>(0) : ::heed::detail::assert_fail(#condition, __FILE__, __LINE__))
#endif
#endif
