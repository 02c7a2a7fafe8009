#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <atomic>

namespace heed::detail {

// The process-wide default worker count behind heed::num_threads / set_num_threads;
// 0 means all that the hardware offers.
inline std::atomic<int>& thread_setting() noexcept {
  static std::atomic<int> threads{0};
  return threads;
}

}  // namespace heed::detail
