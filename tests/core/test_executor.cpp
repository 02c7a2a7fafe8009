// A program's own executor: heed runs its parallel loops as the executor's tasks, starts no
// thread of its own while one is set, and gives its own threads back when it is unset.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "heed/core/executor.hpp"
#include "heed/core/parallel.hpp"

namespace {

// Runs each call's tasks on threads of its own (task 0 on the caller), counting calls and tasks.
class CountingExecutor final : public heed::Executor {
 public:
  explicit CountingExecutor(int concurrency) : concurrency_(concurrency) {}
  [[nodiscard]] int concurrency() const noexcept override { return concurrency_; }
  void run(int n, heed::TaskRef task) override {
    ++calls;
    tasks += n;
    if (n > concurrency_) ++over_asked;
    std::vector<std::thread> threads;
    for (int i = 1; i < n; ++i) threads.emplace_back([task, i] { task(i); });
    task(0);
    for (auto& thread : threads) thread.join();
  }
  std::atomic<int> calls{0}, tasks{0}, over_asked{0};

 private:
  int concurrency_;
};

// Runs the tasks one after another on the caller, last first: heed's tasks must not wait for a
// task that has not started.
class OneThreadExecutor final : public heed::Executor {
 public:
  [[nodiscard]] int concurrency() const noexcept override { return 4; }
  void run(int n, heed::TaskRef task) override {
    for (int i = n - 1; i >= 0; --i) task(i);
  }
};

// Sets an executor for one test and unsets it at the end, whatever happens.
struct ExecutorScope {
  explicit ExecutorScope(std::shared_ptr<heed::Executor> executor) { heed::set_executor(std::move(executor)); }
  ~ExecutorScope() { heed::set_executor(nullptr); }
  ExecutorScope(const ExecutorScope&) = delete;
  ExecutorScope& operator=(const ExecutorScope&) = delete;
};

TEST(Executor, RunsParallelForAsItsTasks) {
  auto executor = std::make_shared<CountingExecutor>(3);
  const ExecutorScope scope(executor);
  EXPECT_EQ(heed::current_executor(), executor);
  std::vector<std::atomic<int>> hits(500);
  std::atomic<int> bad_worker{0};
  heed::parallel_for(500, 8, [&](heed::index_t i, int worker) {
    hits[static_cast<std::size_t>(i)]++;
    if (worker < 0 || worker >= 3) bad_worker++;  // never more workers than the executor runs
  });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  EXPECT_EQ(bad_worker.load(), 0);
  EXPECT_EQ(executor->calls.load(), 1);
  EXPECT_EQ(executor->tasks.load(), 3);
  EXPECT_EQ(executor->over_asked.load(), 0);
}

TEST(Executor, SetsTheDefaultWorkerCount) {
  const ExecutorScope scope(std::make_shared<CountingExecutor>(5));
  heed::set_num_threads(0);
  EXPECT_EQ(heed::num_threads(), 5);  // with or without OpenMP
  // set_num_threads keeps its meaning
  heed::set_num_threads(2);
  EXPECT_EQ(heed::num_threads(), 2);
  heed::set_num_threads(0);
}

TEST(Executor, OneWorkerAndOneIndexRunOnTheCaller) {
  auto executor = std::make_shared<CountingExecutor>(4);
  const ExecutorScope scope(executor);
  int calls = 0;
  heed::parallel_for(10, 1, [&](heed::index_t, int) { ++calls; });
  heed::parallel_for(1, 4, [&](heed::index_t, int) { ++calls; });
  EXPECT_EQ(calls, 11);
  EXPECT_EQ(executor->calls.load(), 0);
}

TEST(Executor, TeamWorkersWaitOnlyForStartedTasks) {
  // the driver's run_team pattern: a worker claims an item, publishes it, and the others wait
  // for the items claimed (so started) before them; on one thread, last task first
  const ExecutorScope scope(std::make_shared<OneThreadExecutor>());
  constexpr int items = 12;
  std::vector<std::atomic<bool>> ready(items);
  std::atomic<int> next{0}, helped{0};
  heed::detail::run_team(4, [&](int, int workers) {
    EXPECT_EQ(workers, 4);
    for (int i; (i = next.fetch_add(1)) < items;) ready[static_cast<std::size_t>(i)].store(true);
    for (int i = 0; i < items; ++i) {
      while (!ready[static_cast<std::size_t>(i)].load()) std::this_thread::yield();
      helped++;
    }
  });
  EXPECT_EQ(helped.load(), 4 * items);
}

TEST(Executor, UnsetGivesHeedsOwnThreadsBack) {
  auto executor = std::make_shared<CountingExecutor>(2);
  heed::set_executor(executor);
  heed::set_executor(nullptr);
  EXPECT_EQ(heed::current_executor(), nullptr);
  std::atomic<int> sum{0};
  heed::parallel_for(100, 2, [&](heed::index_t i, int) { sum += static_cast<int>(i); });
  EXPECT_EQ(sum.load(), 4950);
  EXPECT_EQ(executor->calls.load(), 0);
}

}  // namespace
