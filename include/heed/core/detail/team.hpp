#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace heed::detail {

// Runs body(worker, workers) once on each of up to `threads` workers at the same time, worker in
// [0, workers); workers may be fewer than asked (OpenMP may grant fewer, and without OpenMP
// there is one). For work that parallel_for's independent iterations cannot express: workers
// that claim shares of the work as they go and help one another. The body must not throw.
template <class Body>
void run_team(int threads, Body&& body) {
#if defined(_OPENMP)
  if (threads > 1) {
#pragma omp parallel num_threads(threads)
    body(omp_get_thread_num(), omp_get_num_threads());
    return;
  }
#endif
  (void)threads;
  body(0, 1);
}

}  // namespace heed::detail
