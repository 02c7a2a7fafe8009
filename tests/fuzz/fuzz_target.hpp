#pragma once
// What every fuzz target shares: heed's errors are the expected answers to bad input, so a
// target catches heed::Error and nothing else. Anything else escaping (std::bad_alloc, an
// out-of-range from the standard library), a crash or a sanitizer report is a finding.
// Each target defines LLVMFuzzerTestOneInput; built with -fsanitize=fuzzer it is a libFuzzer
// binary (scripts/fuzz), built with replay_main.cpp it replays files (the corpus ctests).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "heed/core/error.hpp"

namespace heed::fuzz {

inline std::vector<std::byte> bytes_of(const std::uint8_t* data, std::size_t size) {
  std::vector<std::byte> bytes(size);
  if (size != 0) std::memcpy(bytes.data(), data, size);
  return bytes;
}

/// The input of the API targets (fuzz_attention, fuzz_modules) read as choices a few bits at a
/// time; past its end every read is 0.
class Bytes {
 public:
  Bytes(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  /// The next byte.
  unsigned byte() { return pos_ < size_ ? data_[pos_++] : 0u; }
  /// A value in [0, n) (0 for n <= 1).
  std::int64_t below(std::int64_t n) {
    return n <= 1 ? 0 : static_cast<std::int64_t>((byte() | (byte() << 8)) % static_cast<unsigned>(n));
  }
  /// A coin.
  bool flag() { return (byte() & 1u) != 0; }
  /// An offset or window: in [-small, small] mostly, sometimes an extreme a caller may pass on
  /// purpose (INT64_MAX as "unbounded", INT64_MIN, ±2^62, ±2^52).
  std::int64_t extreme(std::int64_t small) {
    constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max(),
                           min = std::numeric_limits<std::int64_t>::min();
    static constexpr std::int64_t far[] = {max,
                                           min,
                                           max - 1,
                                           min + 1,
                                           std::int64_t{1} << 62,
                                           -(std::int64_t{1} << 62),
                                           std::int64_t{1} << 52,
                                           -(std::int64_t{1} << 52),
                                           max / 2};
    if (byte() % 8 == 0) return far[byte() % (sizeof far / sizeof far[0])];
    return below(2 * small + 1) - small;
  }
  /// A size: in [0, small] mostly, sometimes 0, negative, or so large that its bytes overflow.
  std::int64_t size(std::int64_t small) {
    switch (byte() % 16) {
      case 0:
        return 0;
      case 1:
        return -1 - below(3);
      case 2:
        return std::numeric_limits<std::int64_t>::max() / (1 + below(2));
      default:
        return below(small + 1);
    }
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_, pos_ = 0;
};

/// Runs `body`, swallowing heed's own errors (the documented answer to malformed input).
template <class F>
int run(F&& body) {
  try {
    body();
  } catch (const heed::Error&) {
  }
  return 0;
}

}  // namespace heed::fuzz
