#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <atomic>
#include <memory>
#include <mutex>

namespace heed {
class Executor;
}

namespace heed::detail {

// Where heed::set_executor keeps the program's executor.
struct ExecutorSlot {
  std::mutex lock;
  std::shared_ptr<Executor> executor;
  std::atomic<bool> set{false};  // the fast path of every parallel loop reads only this
};

inline ExecutorSlot& executor_slot() noexcept {
  static ExecutorSlot slot;
  return slot;
}

}  // namespace heed::detail
