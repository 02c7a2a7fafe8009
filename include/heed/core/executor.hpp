#pragma once
// A program's own threads for heed's parallel work. An inference server that runs its own
// pool hands it to heed with set_executor; from then on heed starts no thread of its own and
// runs every parallel loop's shares as tasks of that pool. Without one, heed runs them on its
// own worker team (or on OpenMP, where heed is built with it). heed/core/eigen_executor.hpp
// adapts an Eigen::ThreadPool.
//
//   class MyPool final : public heed::Executor {
//     int concurrency() const noexcept override { return threads_ + 1; }  // the caller helps
//     void run(int n, heed::TaskRef task) override { /* task(i) for i in [0, n), then wait */ }
//   };
//   heed::set_executor(std::make_shared<MyPool>(...));

#include <atomic>
#include <memory>
#include <mutex>
#include <utility>

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/core/detail/executor_slot.hpp"

namespace heed {

/// A reference to a callable `void(int)`: what an executor runs. Cheap to copy; it must not
/// outlive the run() call it was handed to.
class TaskRef {
 public:
  /// Refers to `task`, which must outlive this reference.
  template <class Task>
  explicit TaskRef(Task& task) noexcept : task_(&task), call_([](void* t, int i) { (*static_cast<Task*>(t))(i); }) {}

  /// Runs task i.
  void operator()(int i) const { call_(task_, i); }

 private:
  void* task_;
  void (*call_)(void*, int);
};

/// The interface heed runs its parallel work through when a program hands over its own pool.
class Executor {
 public:
  virtual ~Executor() = default;

  /// How many tasks may run at the same time, the calling thread included; heed asks run()
  /// for no more tasks than this (and no more than heed::num_threads()).
  [[nodiscard]] virtual int concurrency() const noexcept = 0;

  /// Runs task(i) once for every i in [0, n) and returns when all have returned. Tasks may
  /// run in any order, on any threads, the caller's included, and some one after another on
  /// the same thread: heed's tasks never wait for a task that has not started. n >= 2; the
  /// tasks do not throw. Called from any thread, also from several at once.
  virtual void run(int n, TaskRef task) = 0;
};

/// Hands heed a pool to run its parallel work on; nullptr gives heed's own threads back.
/// A call already running keeps the executor it started with.
inline void set_executor(std::shared_ptr<Executor> executor) {
  detail::ExecutorSlot& slot = detail::executor_slot();
  const std::lock_guard guard(slot.lock);
  slot.set.store(executor != nullptr, std::memory_order_release);
  std::swap(slot.executor, executor);  // the old one is released after the lock
}

/// The executor set with set_executor, or nullptr when heed uses its own threads.
[[nodiscard]] inline std::shared_ptr<Executor> current_executor() {
  detail::ExecutorSlot& slot = detail::executor_slot();
  if (!slot.set.load(std::memory_order_acquire)) return nullptr;
  const std::lock_guard guard(slot.lock);
  return slot.executor;
}

}  // namespace heed
