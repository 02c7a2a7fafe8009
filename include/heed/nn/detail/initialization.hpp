#pragma once
#include "heed/core/detail/internal_header_check.hpp"

// Whether the module constructors on this thread draw their initial parameters. nn::load_new
// turns it off while it constructs a module whose parameters load() then replaces, every one of
// them: Linear and Conv2d (and what is built of them) leave their parameters empty then, which
// for a ViT-B-sized model saves longer than the load itself (docs/decisions.md).
namespace heed::detail {

inline bool& skip_initialization() noexcept {
  thread_local bool skip = false;
  return skip;
}

// Constructors skip their initialization while one of these lives (on this thread).
class WithoutInitialization {
 public:
  WithoutInitialization() noexcept : previous_(skip_initialization()) { skip_initialization() = true; }
  ~WithoutInitialization() { skip_initialization() = previous_; }
  WithoutInitialization(const WithoutInitialization&) = delete;
  WithoutInitialization& operator=(const WithoutInitialization&) = delete;

 private:
  bool previous_;
};

}  // namespace heed::detail
