#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "heed/core/detail/worker_team.hpp"

namespace heed::detail {

// The process-wide default worker count behind heed::num_threads / set_num_threads;
// 0 means all that the hardware offers.
inline std::atomic<int>& thread_setting() noexcept {
  static std::atomic<int> threads{0};
  return threads;
}

// The default without OpenMP: OMP_NUM_THREADS's first number where it is set (as OpenMP reads
// it), at most `most`; else the CPUs this process may run on. Read once.
[[nodiscard]] inline int default_threads(int most) noexcept {
  static const int threads = [most] {
    const char* env = std::getenv("OMP_NUM_THREADS");  // NOLINT(concurrency-mt-unsafe): read once
    const long n = env != nullptr ? std::strtol(env, nullptr, 10) : 0;
    return n > 0 ? static_cast<int>(std::min<long>(n, most)) : available_cpus();
  }();
  return threads;
}

}  // namespace heed::detail
