#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <algorithm>

#include "heed/core/detail/executor_slot.hpp"
#include "heed/core/detail/worker_team.hpp"
#include "heed/core/executor.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace heed::detail {

// Runs job(worker, workers) once on each of up to `threads` workers at the same time, worker
// in [0, workers), on the program's executor if it set one, else on OpenMP where heed is built
// with it, else on heed's own worker team. Workers may be fewer than asked: the executor's
// concurrency, OpenMP's grant, a team busy with another caller's job, or a call made inside a
// job (which runs alone: work inside a worker starts no threads). job must not throw.
template <class Job>
void run_workers(int threads, Job& job) {
  if (threads > 1 && !in_parallel_job()) {
    if (executor_slot().set.load(std::memory_order_acquire)) {
      if (const std::shared_ptr<Executor> executor = current_executor()) {
        const int workers = std::min(threads, executor->concurrency());
        if (workers > 1) {
          auto task = [&job, workers](int worker) {
            const ParallelJobScope scope;
            job(worker, workers);
          };
          executor->run(workers, TaskRef(task));
          return;
        }
      }
    } else {
#if defined(_OPENMP)
#pragma omp parallel num_threads(threads)
      {
        const ParallelJobScope scope;
        job(omp_get_thread_num(), omp_get_num_threads());
      }
      return;
#else
      WorkerTeam::run_shared(threads, job);
      return;
#endif
    }
  }
  const ParallelJobScope scope;
  job(0, 1);
}

// run_workers for the driver: workers that claim shares of the work as they go and help one
// another, which parallel_for's independent iterations cannot express.
template <class Body>
void run_team(int threads, Body&& body) {
  run_workers(threads, body);
}

}  // namespace heed::detail
