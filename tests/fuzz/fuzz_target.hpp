#pragma once
// What every fuzz target shares: heed's errors are the expected answers to bad input, so a
// target catches heed::Error and nothing else. Anything else escaping (std::bad_alloc, an
// out-of-range from the standard library), a crash or a sanitizer report is a finding.
// Each target defines LLVMFuzzerTestOneInput; built with -fsanitize=fuzzer it is a libFuzzer
// binary (scripts/fuzz), built with replay_main.cpp it replays files (the corpus ctests).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "heed/core/error.hpp"

namespace heed::fuzz {

inline std::vector<std::byte> bytes_of(const std::uint8_t* data, std::size_t size) {
  std::vector<std::byte> bytes(size);
  if (size != 0) std::memcpy(bytes.data(), data, size);
  return bytes;
}

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
