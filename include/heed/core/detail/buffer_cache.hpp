#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "heed/core/shape.hpp"

namespace heed::detail {

inline constexpr std::size_t tensor_alignment = 64;

// Buffers of 4 MiB and more are aligned to 2 MiB and, on Linux, offered to transparent huge
// pages (madvise MADV_HUGEPAGE; the system default is often "madvise"). Their first touch then
// faults once per 2 MiB instead of once per 4 KiB (docs/decisions.md, "Long sequences, second
// part", has the measurement). Where huge pages are off, madvise does nothing.
inline constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;
inline constexpr std::size_t huge_page_threshold = std::size_t{4} << 20;

constexpr std::size_t buffer_alignment(std::size_t bytes) noexcept {
  return bytes >= huge_page_threshold ? huge_page_bytes : tensor_alignment;
}

inline void* allocate_buffer(std::size_t bytes) {
  void* p = ::operator new (bytes, std::align_val_t{buffer_alignment(bytes)});
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (bytes >= huge_page_threshold) ::madvise(p, bytes, MADV_HUGEPAGE);  // advice: failure changes nothing
#endif
  return p;
}

inline void free_buffer(void* p, std::size_t bytes) noexcept {
  ::operator delete (p, std::align_val_t{buffer_alignment(bytes)});
}

// Tensors of 256 KiB and more are recycled through a small per-thread cache. A large buffer
// freed and allocated again comes back from the kernel as fresh pages, each of which faults on
// first touch; a model that calls the same shapes over and over would pay that on every call
// (docs/decisions.md has the measurement). The cache keeps at most 8 blocks and 64 MiB per
// thread, matches sizes exactly, and frees everything when the thread ends.
class BlockCache {
 public:
  static constexpr std::size_t min_bytes = std::size_t{256} << 10;
  static constexpr std::size_t max_bytes = std::size_t{64} << 20;

  BlockCache() = default;
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;
  ~BlockCache() {
    for (Block& b : blocks_) release(b);
    state().destroyed = true;
  }

  // The calling thread's cache, or nullptr once it has been destroyed (at thread exit).
  static BlockCache* current() noexcept {
    if (state().destroyed) return nullptr;
    thread_local BlockCache cache;
    return &cache;
  }

  void* take(std::size_t bytes) noexcept {
    for (Block& b : blocks_)
      if (b.ptr && b.bytes == bytes) {
        total_ -= bytes;
        return std::exchange(b.ptr, nullptr);
      }
    return nullptr;
  }

  // Keeps p for reuse; false when it does not fit (the caller frees it).
  bool give(void* p, std::size_t bytes) noexcept {
    if (bytes < min_bytes || bytes > max_bytes) return false;
    for (Block& b : blocks_)
      if (total_ + bytes > max_bytes) release(b);
    for (Block& b : blocks_)
      if (!b.ptr) {
        b = {p, bytes};
        total_ += bytes;
        return true;
      }
    return false;
  }

 private:
  struct Block {
    void* ptr = nullptr;
    std::size_t bytes = 0;
  };
  struct State {  // trivially destructible: still readable after the cache is gone
    bool destroyed = false;
  };
  static State& state() noexcept {
    thread_local State s;
    return s;
  }
  void release(Block& b) noexcept {
    if (!b.ptr) return;
    free_buffer(b.ptr, b.bytes);
    total_ -= b.bytes;
    b.ptr = nullptr;
  }

  Block blocks_[8];
  std::size_t total_ = 0;
};

struct AlignedDelete {
  std::size_t bytes = 0;
  void operator()(void* p) const noexcept {
    if (bytes >= BlockCache::min_bytes)
      if (BlockCache* cache = BlockCache::current(); cache && cache->give(p, bytes)) return;
    free_buffer(p, bytes);
  }
};

// `count` Scalars, 64-byte aligned (2 MiB from 4 MiB on), zero-filled when asked (all-zero bytes are 0 for every
// scalar type heed uses).
template <class Scalar>
std::unique_ptr<Scalar, AlignedDelete> aligned_storage(index_t count, bool zero) {
  if (count == 0) return nullptr;
  const auto bytes = static_cast<std::size_t>(count) * sizeof(Scalar);
  void* raw = nullptr;
  if (bytes >= BlockCache::min_bytes)
    if (BlockCache* cache = BlockCache::current()) raw = cache->take(bytes);
  if (!raw) raw = allocate_buffer(bytes);
  if (zero) std::memset(raw, 0, bytes);
  return std::unique_ptr<Scalar, AlignedDelete>(static_cast<Scalar*>(raw), AlignedDelete{bytes});
}

}  // namespace heed::detail
