#pragma once
// parallel_for over an index range. With OpenMP (configure with HEED_OPENMP=ON, or compile
// with -fopenmp) the iterations are spread over threads with dynamic scheduling, because
// attention tiles differ in cost (a causal mask blocks more tiles in the early rows); without
// it the loop runs serially. Each call hands the body the index of the worker running it, so
// callers can give every worker its own scratch buffers.

#include <algorithm>

#include <Eigen/Core>

#include "heed/core/shape.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/core/detail/team.hpp"
#include "heed/core/detail/thread_setting.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace heed {

/// The most workers one call uses: a larger num_threads (set_num_threads, an options struct's
/// num_threads) means this many.
inline constexpr int max_threads = 1024;

/// How many workers parallel_for uses when a call does not say (1 without OpenMP).
[[nodiscard]] inline int num_threads() noexcept {
#if defined(_OPENMP)
  const int chosen = detail::thread_setting().load(std::memory_order_relaxed);
  return chosen > 0 ? chosen : omp_get_max_threads();
#else
  return 1;
#endif
}

/// Sets the default worker count, like torch.set_num_threads; n <= 0 restores the default.
/// It caps the GEMMs heed hands to Eigen too (Eigen::setNbThreads), so one thread means one.
inline void set_num_threads(int n) noexcept {
  n = std::clamp(n, 0, max_threads);
  detail::thread_setting().store(n, std::memory_order_relaxed);
  Eigen::setNbThreads(n);
}

/// Runs body(i, worker) for every i in [0, n); worker is in [0, threads). threads <= 0 means
/// num_threads(). The body must not throw.
template <class Body>
void parallel_for(index_t n, int threads, Body&& body) {
  threads = threads <= 0 ? num_threads() : std::min(threads, max_threads);
#if defined(_OPENMP)
  if (threads > 1 && n > 1) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (index_t i = 0; i < n; ++i) body(i, omp_get_thread_num());
    return;
  }
#endif
  for (index_t i = 0; i < n; ++i) body(i, 0);
}

}  // namespace heed
