#pragma once
// parallel_for over an index range. The iterations are spread over workers with dynamic
// scheduling (each worker takes the next index when it is done with one), because attention
// tiles differ in cost (a causal mask blocks more tiles in the early rows). The workers are
// the program's executor's (heed/core/executor.hpp) when it set one, else OpenMP's where heed
// is built with it (HEED_OPENMP=ON, or -fopenmp), else heed's own worker team. Each call hands
// the body the index of the worker running it, so callers can give every worker its own
// scratch buffers.

#include <algorithm>
#include <atomic>

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

/// How many workers parallel_for uses when a call does not say: set_num_threads's number; else
/// the executor's concurrency where the program set one; else OpenMP's default where heed is
/// built with OpenMP; else OMP_NUM_THREADS, or the CPUs this process may run on.
[[nodiscard]] inline int num_threads() noexcept {
  const int chosen = detail::thread_setting().load(std::memory_order_relaxed);
  if (chosen > 0) return chosen;
  if (detail::executor_slot().set.load(std::memory_order_acquire)) {
    if (const std::shared_ptr<Executor> executor = current_executor()) return std::max(1, executor->concurrency());
  }
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return detail::default_threads(max_threads);
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
  if (threads > 1 && n > 1 && !detail::in_parallel_job()) {
#if defined(_OPENMP)
    if (!detail::executor_slot().set.load(std::memory_order_acquire)) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
      for (index_t i = 0; i < n; ++i) body(i, omp_get_thread_num());
      return;
    }
#endif
    std::atomic<index_t> next{0};
    auto job = [&](int worker, int) {
      for (index_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) body(i, worker);
    };
    detail::run_workers(static_cast<int>(std::min<index_t>(threads, n)), job);
    return;
  }
  for (index_t i = 0; i < n; ++i) body(i, 0);
}

namespace detail {

// Runs body(begin, end, worker) once per worker over contiguous shares of [0, n) that differ by
// one index at most: worker w of W takes [n·w/W, n·(w+1)/W). Where parallel_for hands indices to
// whichever worker comes free, here a share goes to the same worker on every call, so a loop run
// again and again over the same data (a decoding step's weights, each step) gives each worker the
// same part of it, which its caches may still hold. For iterations of equal cost only. threads as
// parallel_for takes it.
template <class Body>
void parallel_shares(index_t n, int threads, Body&& body) {
  threads = threads <= 0 ? num_threads() : std::min(threads, max_threads);
  threads = static_cast<int>(std::min<index_t>(threads, n));
  auto job = [&](int worker, int workers) {
    const index_t begin = n * worker / workers, end = n * (worker + 1) / workers;
    if (begin < end) body(begin, end, worker);
  };
  if (threads > 1) {
    run_workers(threads, job);
    return;
  }
  if (n > 0) body(index_t{0}, n, 0);
}

}  // namespace detail

}  // namespace heed
