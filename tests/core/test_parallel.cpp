#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "heed/core/parallel.hpp"

namespace {

TEST(ParallelFor, VisitsEveryIndexOnceWithValidWorkers) {
  for (int threads : {1, 2, 4}) {
    std::vector<std::atomic<int>> hits(1000);
    std::atomic<int> bad_worker{0};
    heed::parallel_for(1000, threads, [&](heed::index_t i, int worker) {
      hits[static_cast<std::size_t>(i)]++;
      if (worker < 0 || worker >= threads) bad_worker++;
    });
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
    EXPECT_EQ(bad_worker.load(), 0);
  }
}

TEST(RunTeam, WorkersClaimSharesOfOneJob) {
  // the driver's pattern: workers claim items from a shared counter until none is left
  for (int threads : {1, 2, 3}) {
    std::vector<std::atomic<int>> hits(100), ran(4);
    std::atomic<int> next{0}, bad_worker{0}, team_size{0};
    heed::detail::run_team(threads, [&](int worker, int workers) {
      if (worker < 0 || worker >= workers || workers > threads) bad_worker++;
      ran[static_cast<std::size_t>(worker)]++;
      team_size = workers;
      for (int i; (i = next.fetch_add(1)) < 100;) hits[static_cast<std::size_t>(i)]++;
    });
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
    EXPECT_EQ(bad_worker.load(), 0);
    for (int w = 0; w < 4; ++w) EXPECT_EQ(ran[static_cast<std::size_t>(w)].load(), w < team_size ? 1 : 0) << w;
  }
}

TEST(ParallelShares, EachWorkerTakesItsContiguousShareOnEveryCall) {
  // worker w of W takes [n·w/W, n·(w+1)/W): every index once, the same share at every call
  for (const heed::index_t n : {0, 1, 2, 3, 7, 12, 1000}) {
    for (const int threads : {1, 2, 3, 5}) {
      std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n)), owner(static_cast<std::size_t>(n));
      std::atomic<int> wrong{0};
      for (int call = 0; call < 3; ++call) {
        heed::detail::parallel_shares(n, threads, [&](heed::index_t begin, heed::index_t end, int worker) {
          const auto workers = static_cast<heed::index_t>(std::min<heed::index_t>(threads, n));
          // fewer workers than asked may run (a busy team): then worker 0 takes everything
          const bool alone = begin == 0 && end == n && worker == 0;
          if (!alone && (begin != n * worker / workers || end != n * (worker + 1) / workers)) wrong++;
          if (begin >= end) wrong++;
          for (heed::index_t i = begin; i < end; ++i) {
            hits[static_cast<std::size_t>(i)]++;
            if (call == 0) owner[static_cast<std::size_t>(i)] = worker;
            if (call > 0 && !alone && owner[static_cast<std::size_t>(i)] != worker) wrong++;
          }
        });
      }
      for (auto& h : hits) EXPECT_EQ(h.load(), 3) << "n " << n << ", threads " << threads;
      EXPECT_EQ(wrong.load(), 0) << "n " << n << ", threads " << threads;
    }
  }
}

TEST(ParallelFor, NumThreadsIsSettable) {
  heed::set_num_threads(1);
  EXPECT_EQ(heed::num_threads(), 1);
  heed::set_num_threads(0);
  EXPECT_GE(heed::num_threads(), 1);
}

TEST(ParallelFor, EmptyRangeDoesNothing) {
  int calls = 0;
  heed::parallel_for(0, 2, [&](heed::index_t, int) { ++calls; });
  EXPECT_EQ(calls, 0);
}

}  // namespace

namespace {

// Whether two workers of one parallel loop ran at the same time: each waits (a few seconds at
// most) for the other to arrive. run_two(task) runs task() on each of two workers.
template <class RunTwo>
bool two_workers_meet(RunTwo run_two) {
  std::atomic<int> arrived{0};
  std::atomic<bool> met{true};
  run_two([&] {
    arrived.fetch_add(1);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (arrived.load() < 2) {
      if (std::chrono::steady_clock::now() > until) {
        met = false;
        return;
      }
      std::this_thread::yield();
    }
  });
  return met.load();
}

TEST(ParallelFor, TwoThreadsRunAtOnceWithOrWithoutOpenMP) {
  // heed's own team (or OpenMP's) runs the shares on two threads even on one CPU
  EXPECT_TRUE(
      two_workers_meet([](const auto& task) { heed::parallel_for(2, 2, [&](heed::index_t, int) { task(); }); }));
}

TEST(ParallelShares, RunsOnTwoThreadsAtOnce) {
  EXPECT_TRUE(two_workers_meet([](const auto& task) {
    heed::detail::parallel_shares(2, 2, [&](heed::index_t, heed::index_t, int) { task(); });
  }));
}

TEST(ParallelFor, DefaultIsEveryCpuOfTheProcess) {
  // without set_num_threads, OMP_NUM_THREADS or OpenMP's own default, as many workers as CPUs
  // the process may run on; OpenMP builds report OpenMP's default, the others the same number
  heed::set_num_threads(0);
  if (std::getenv("OMP_NUM_THREADS") == nullptr) {  // NOLINT(concurrency-mt-unsafe)
    EXPECT_EQ(heed::num_threads(), heed::detail::available_cpus());
  }
  EXPECT_GE(heed::detail::available_cpus(), 1);
}

TEST(ParallelFor, ANestedLoopRunsOnItsWorkerAlone) {
  std::vector<std::atomic<int>> hits(8 * 50);
  std::atomic<int> nested_workers_not_zero{0};
  std::set<std::thread::id> outer_threads;
  std::mutex lock;
  heed::parallel_for(8, 4, [&](heed::index_t i, int) {
    {
      const std::lock_guard guard(lock);
      outer_threads.insert(std::this_thread::get_id());
    }
    const auto self = std::this_thread::get_id();
    heed::parallel_for(50, 4, [&](heed::index_t j, int worker) {
      if (worker != 0 || std::this_thread::get_id() != self) nested_workers_not_zero++;
      hits[static_cast<std::size_t>(i * 50 + j)]++;
    });
  });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  EXPECT_EQ(nested_workers_not_zero.load(), 0);
  EXPECT_GE(outer_threads.size(), 1U);
}

TEST(ParallelFor, ManyCallerThreadsShareTheTeam) {
  // 8 threads each run parallel loops at once: one of them has the team, the others run
  // alone; every loop visits each of its indices once
  std::atomic<int> wrong{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 8; ++t)
    callers.emplace_back([&] {
      for (int call = 0; call < 50; ++call) {
        std::vector<int> hits(97, 0);
        std::mutex lock;
        heed::parallel_for(97, 3, [&](heed::index_t i, int worker) {
          if (worker < 0 || worker >= 3) wrong++;
          const std::lock_guard guard(lock);
          hits[static_cast<std::size_t>(i)]++;
        });
        for (int h : hits)
          if (h != 1) wrong++;
      }
    });
  for (auto& caller : callers) caller.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(ParallelFor, ShortLoopsOneAfterAnother) {
  // a decoder step's pattern: many short loops in a row, the workers hot between them
  std::atomic<heed::index_t> sum{0};
  for (int call = 0; call < 2000; ++call) heed::parallel_for(4, 2, [&](heed::index_t i, int) { sum += i; });
  EXPECT_EQ(sum.load(), heed::index_t{2000} * 6);
}

}  // namespace
