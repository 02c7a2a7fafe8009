// heed's parallel loops on an Eigen::ThreadPool, also when every pool thread is itself inside
// a heed call (the caller then runs the tasks no pool thread is free to start).
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <vector>

#include "heed/core/eigen_executor.hpp"
#include "heed/core/parallel.hpp"

namespace {

TEST(EigenExecutor, RunsEveryIndexOnceOnThePool) {
  Eigen::ThreadPool pool(3);
  heed::set_executor(std::make_shared<heed::EigenExecutor>(pool));
  std::vector<std::atomic<int>> hits(1000);
  std::atomic<int> bad_worker{0};
  heed::parallel_for(1000, 4, [&](heed::index_t i, int worker) {
    hits[static_cast<std::size_t>(i)]++;
    if (worker < 0 || worker >= 4) bad_worker++;
  });
  heed::set_executor(nullptr);
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  EXPECT_EQ(bad_worker.load(), 0);
}

TEST(EigenExecutor, PoolThreadsCallingHeedFinish) {
  Eigen::ThreadPool pool(2);
  heed::set_executor(std::make_shared<heed::EigenExecutor>(pool));
  std::atomic<int> total{0};
  Eigen::Barrier done(4);
  for (int t = 0; t < 4; ++t)  // more heed calls than pool threads, each from a pool thread
    pool.Schedule([&] {
      heed::parallel_for(64, 3, [&](heed::index_t, int) { total++; });
      done.Notify();
    });
  done.Wait();
  heed::set_executor(nullptr);
  EXPECT_EQ(total.load(), 4 * 64);
}

}  // namespace
