// The lifetime of heed's own worker team (core/detail/worker_team.hpp): a fork()ed child runs
// parallel loops on workers of its own, and a parallel loop in a static object's destructor that
// runs after the team's still runs. Both test the team, so an OpenMP build skips them.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>

#include "heed/core/parallel.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <sys/wait.h>
#include <unistd.h>
#endif

namespace {

// True when `workers` workers of one run_team job run at the same time (each waits, up to 10 s,
// for the others to arrive), and job(worker, workers) ran once per worker.
bool workers_meet(int workers) {
  std::atomic<int> arrived{0}, ran{0};
  std::atomic<bool> met{true};
  heed::detail::run_team(workers, [&](int, int count) {
    ++ran;
    if (count != workers) met = false;
    ++arrived;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (arrived.load() < count && met.load())
      if (std::chrono::steady_clock::now() > until) met = false;
  });
  return met.load() && ran.load() == workers;
}

// Σ i over [0, n) on `threads` workers.
long long parallel_sum(heed::index_t n, int threads) {
  std::atomic<long long> sum{0};
  heed::parallel_for(n, threads, [&](heed::index_t i, int) { sum += i; });
  return sum.load();
}

// Destroyed after the team (built before it, at static initialization): its parallel loop runs
// on the caller then. Before the team knew it was gone, that loop waited forever for workers
// already joined; the ctest's timeout fails the test then, and a wrong sum exits with status 3.
// (An OpenMP build runs no loop there: its runtime may already be torn down.)
struct LoopAtExit {
  ~LoopAtExit() {
#if !defined(_OPENMP)
    if (parallel_sum(1000, 2) != 999 * 1000 / 2) std::_Exit(3);
#endif
  }
} loop_at_exit;

TEST(WorkerTeam, TwoWorkersMeet) {
#if defined(_OPENMP)
  GTEST_SKIP() << "OpenMP runs the loops of this build";
#endif
  EXPECT_TRUE(workers_meet(2));
  EXPECT_EQ(parallel_sum(1000, 2), 999 * 1000 / 2);
}

TEST(WorkerTeam, ForkedChildRunsOnWorkersOfItsOwn) {
#if defined(_OPENMP) || !(defined(__unix__) || defined(__APPLE__))
  GTEST_SKIP() << "heed's team with fork() only";
#else
  ASSERT_TRUE(workers_meet(2));  // the parent's team has a worker now
  const pid_t child = fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    alarm(20);  // a child that waits for its parent's workers dies of SIGALRM
    const bool ok = workers_meet(2) && parallel_sum(1000, 2) == 999 * 1000 / 2;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child was killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(workers_meet(2)) << "the parent's team after the fork";
#endif
}

}  // namespace
