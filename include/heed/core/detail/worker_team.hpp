#pragma once
#include "heed/core/detail/internal_header_check.hpp"

// heed's own persistent worker team: the threads behind parallel_for and run_team when
// neither OpenMP nor a program's executor runs them (docs/decisions.md, "heed's own worker
// team"). The caller is worker 0; workers 1.. are std::threads started on first use, grown to
// the largest team asked for, and joined when the process exits. Between jobs a worker spins
// for a short while (a decoder step's parallel loops follow one another within microseconds),
// then parks on a futex (std::atomic::wait). One job runs at a time: a second caller, or a
// parallel loop started inside a job, runs on its own thread alone.
//
// Lifetime: a fork()ed child starts without the parent's workers; the team forgets them in the
// child (pthread_atfork) and starts its own on the child's first parallel loop. After the team
// is destroyed at exit, a parallel loop (from a static object's destructor) runs on its caller.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif
#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#endif

namespace heed::detail {

// A hint to the core that this thread is spinning (x86's pause, AArch64's yield).
inline void spin_pause() noexcept {
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
  __builtin_ia32_pause();
#elif (defined(__GNUC__) || defined(__clang__)) && defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

// Set while this thread runs a share of a parallel job: a parallel loop inside it runs serially
// (work inside a worker never starts threads of its own, docs/design.md "Threads").
inline bool& in_parallel_job() noexcept {
  thread_local bool inside = false;
  return inside;
}

// Marks the calling thread as inside a job for its lifetime.
class ParallelJobScope {
 public:
  ParallelJobScope() noexcept : was_(in_parallel_job()) { in_parallel_job() = true; }
  ~ParallelJobScope() { in_parallel_job() = was_; }
  ParallelJobScope(const ParallelJobScope&) = delete;
  ParallelJobScope& operator=(const ParallelJobScope&) = delete;

 private:
  bool was_;
};

// The logical CPUs this process may run on (its affinity mask on Linux: a `taskset -c 1`
// process has one), at least 1; read once.
[[nodiscard]] inline int available_cpus() noexcept {
  static const int cpus = [] {
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
#endif
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }();
  return cpus;
}

class WorkerTeam {
 public:
  // run() on the process's team, or job(0, 1) on the caller once the team has been destroyed
  // (a parallel loop in a static object's destructor that runs after the team's).
  template <class Job>
  static void run_shared(int workers, Job& job) {
    if (closed().load(std::memory_order_acquire)) {
      ParallelJobScope scope;
      job(0, 1);
      return;
    }
    instance().run(workers, job);
  }

  // Runs job(worker, workers) once on each of `workers` workers at the same time, the caller
  // being worker 0, and returns when all have returned. When the team is busy (another
  // thread's job) the caller runs job(0, 1) alone. job must not throw.
  template <class Job>
  void run(int workers, Job& job) {
    std::unique_lock lock(busy_, std::try_to_lock);
    if (lock.owns_lock() && workers - 1 > static_cast<int>(threads_.size())) grow(workers - 1);
    // the OS may have refused some threads
    workers = lock.owns_lock() ? std::min(workers, static_cast<int>(threads_.size()) + 1) : 1;
    if (workers <= 1) {
      ParallelJobScope scope;
      job(0, 1);
      return;
    }
    call_ = [](void* j, int worker, int count) { (*static_cast<Job*>(j))(worker, count); };
    job_ = &job;
    pending_.store(workers - 1, std::memory_order_relaxed);
    const std::uint64_t state = state_.load(std::memory_order_relaxed);
    // seq_cst, as parked_: either a parking worker sees the new state, or this sees it parked
    state_.store(((state >> participants_bits) + 1) << participants_bits | static_cast<std::uint64_t>(workers),
                 std::memory_order_seq_cst);
    if (parked_.load(std::memory_order_seq_cst) > 0) state_.notify_all();
    {
      ParallelJobScope scope;
      job(0, workers);
    }
    wait_for_zero(pending_, workers <= cpus_);
  }

  WorkerTeam(const WorkerTeam&) = delete;
  WorkerTeam& operator=(const WorkerTeam&) = delete;

  ~WorkerTeam() {
    closed().store(true, std::memory_order_release);
    // a child forked while a job ran holds busy_ locked by a thread it does not have
    if (!busy_at_fork_) busy_.lock();
    const std::uint64_t state = state_.load(std::memory_order_relaxed);
    state_.store(((state >> participants_bits) + 1) << participants_bits | stop_participants,
                 std::memory_order_release);
    state_.notify_all();
    for (std::thread& thread : threads_) thread.join();
    if (!busy_at_fork_) busy_.unlock();
  }

 private:
  // state_ holds a job counter above participants_bits and the job's worker count below, in
  // one word, so that a worker learns both from one load and never reads the job's other
  // fields unless it takes part.
  static constexpr int participants_bits = 16;
  static constexpr std::uint64_t participants_mask = (std::uint64_t{1} << participants_bits) - 1;
  static constexpr std::uint64_t stop_participants = participants_mask;  // the team is closing

  static WorkerTeam& instance() {
    static WorkerTeam team;
    return team;
  }

  // Set by the destructor; an atomic<bool> is trivially destructible, so it outlives the team.
  static std::atomic<bool>& closed() noexcept {
    static std::atomic<bool> flag{false};
    return flag;
  }

  WorkerTeam() : cpus_(available_cpus()) {
#if defined(__unix__) || defined(__APPLE__)
    // registered once: the team is built once per process
    pthread_atfork(&before_fork, &after_fork_in_parent, &after_fork_in_child);
#endif
  }

  // fork(): no job may be in flight when the child's copy of the team is made, so the parent
  // holds busy_ across the fork when it can (a job running on another thread keeps it: that
  // child then runs every loop alone).
  static void before_fork() noexcept {
    if (closed().load(std::memory_order_acquire)) return;
    WorkerTeam& team = instance();
    team.locked_for_fork_ = team.busy_.try_lock();
  }
  static void after_fork_in_parent() noexcept {
    if (closed().load(std::memory_order_acquire)) return;
    WorkerTeam& team = instance();
    if (team.locked_for_fork_) team.busy_.unlock();
  }
  static void after_fork_in_child() noexcept {
    if (closed().load(std::memory_order_acquire)) return;
    WorkerTeam& team = instance();
    // The parent's workers do not exist here: their std::thread objects can be neither joined
    // nor destroyed (a joinable std::thread's destructor terminates), so they are moved where
    // nothing destroys them, without allocating.
    alignas(std::vector<std::thread>) static unsigned char forgotten[sizeof(std::vector<std::thread>)];
    new (forgotten) std::vector<std::thread>(std::move(team.threads_));
    team.parked_.store(0, std::memory_order_relaxed);
    team.pending_.store(0, std::memory_order_relaxed);
    if (team.locked_for_fork_)
      team.busy_.unlock();
    else
      team.busy_at_fork_ = true;  // try_lock fails from now on: every loop runs alone
  }

  // Starts workers up to `count` (the lock held), or as many as the OS gives.
  void grow(int count) {
    const std::uint64_t seen = state_.load(std::memory_order_relaxed);
    try {
      threads_.reserve(static_cast<std::size_t>(count));
      while (static_cast<int>(threads_.size()) < count) {
        const int index = static_cast<int>(threads_.size()) + 1;
        threads_.emplace_back([this, index, seen] { work(index, seen); });
      }
    } catch (...) {  // std::system_error when out of threads: run with those there are
    }
  }

  void work(int index, std::uint64_t seen) {
    for (;;) {
      const std::uint64_t state = wait_for_change(seen, index < cpus_);
      seen = state;
      const std::uint64_t participants = state & participants_mask;
      if (participants == stop_participants) return;
      if (static_cast<std::uint64_t>(index) >= participants) continue;
      {
        ParallelJobScope scope;
        call_(job_, index, static_cast<int>(participants));
      }
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
    }
  }

  // Spins for spin_time at most while done() is false; true if it became true meanwhile.
  template <class Done>
  static bool spin_until(Done done) {
    const auto until = std::chrono::steady_clock::now() + spin_time;
    for (int i = 1;; ++i) {
      if (done()) return true;
      spin_pause();
      if (i % 64 == 0 && std::chrono::steady_clock::now() > until) return false;
    }
  }

  // Spins while the next job is likely near (when the worker has a CPU of its own), then parks
  // until state_ leaves `seen`.
  std::uint64_t wait_for_change(std::uint64_t seen, bool spin) {
    std::uint64_t state = seen;
    if (spin && spin_until([&] { return (state = state_.load(std::memory_order_acquire)) != seen; })) return state;
    parked_.fetch_add(1, std::memory_order_seq_cst);
    while ((state = state_.load(std::memory_order_seq_cst)) == seen) state_.wait(seen, std::memory_order_seq_cst);
    parked_.fetch_sub(1, std::memory_order_relaxed);
    return state;  // the seq_cst load acquired the job's fields
  }

  // The caller's wait for its workers: they finish about when it does, so it spins first.
  static void wait_for_zero(std::atomic<int>& count, bool spin) {
    if (spin && spin_until([&] { return count.load(std::memory_order_acquire) == 0; })) return;
    for (int left; (left = count.load(std::memory_order_acquire)) != 0;) count.wait(left, std::memory_order_acquire);
  }

  // About what libgomp spins before it sleeps, bounded in time rather than in iterations.
  static constexpr std::chrono::microseconds spin_time{200};

  // Workers beyond the CPUs never spin: the thread spun for would be the one kept off a CPU.
  const int cpus_;
  std::mutex busy_;
  std::vector<std::thread> threads_;
  std::atomic<std::uint64_t> state_{0};
  std::atomic<int> parked_{0};
  std::atomic<int> pending_{0};
  void (*call_)(void*, int, int) = nullptr;
  void* job_ = nullptr;
  bool locked_for_fork_ = false;  // before_fork took busy_
  bool busy_at_fork_ = false;     // this is a child forked while busy_ was held
};

}  // namespace heed::detail
