#pragma once
// heed's parallel work on an Eigen::ThreadPool (or any Eigen::ThreadPoolInterface):
//
//   Eigen::ThreadPool pool(7);
//   heed::set_executor(std::make_shared<heed::EigenExecutor>(pool));  // pool outlives its use
//
// The caller takes part: run(n, task) schedules n - 1 closures and claims task indices itself
// as they do, so its n tasks finish even when every pool thread is busy (a pool thread that
// calls heed included): the caller then runs those no pool thread has started.

#include <atomic>
#include <memory>

#include <unsupported/Eigen/CXX11/ThreadPool>

#include "heed/core/executor.hpp"

namespace heed {

/// heed::Executor over an Eigen::ThreadPoolInterface: n tasks as n - 1 closures on the pool and
/// the caller, each claiming task indices until none is left.
class EigenExecutor final : public Executor {
 public:
  /// The pool must outlive every heed call that runs on this executor.
  explicit EigenExecutor(Eigen::ThreadPoolInterface& pool) noexcept : pool_(pool) {}

  /// The pool's threads and the caller.
  [[nodiscard]] int concurrency() const noexcept override { return pool_.NumThreads() + 1; }

  /// Runs task(i) for every i in [0, n) on the pool and the caller; returns when all have run.
  void run(int n, TaskRef task) override {
    // Closures that start after every index is claimed find none, and keep only `claims` alive.
    auto claims = std::make_shared<Claims>();
    const auto work = [claims, task, n] {
      for (int i; (i = claims->next.fetch_add(1, std::memory_order_relaxed)) < n;) {
        task(i);
        if (claims->done.fetch_add(1, std::memory_order_acq_rel) + 1 == n) claims->done.notify_all();
      }
    };
    for (int i = 1; i < n; ++i) pool_.Schedule(work);
    work();
    for (int done; (done = claims->done.load(std::memory_order_acquire)) != n;)
      claims->done.wait(done, std::memory_order_acquire);
  }

 private:
  struct Claims {
    std::atomic<int> next{0};  // the next task index to run
    std::atomic<int> done{0};  // tasks that have returned
  };

  Eigen::ThreadPoolInterface& pool_;
};

}  // namespace heed
