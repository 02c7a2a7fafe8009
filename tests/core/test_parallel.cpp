#include <gtest/gtest.h>

#include <atomic>
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
