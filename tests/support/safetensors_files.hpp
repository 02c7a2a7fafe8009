#pragma once
// Hand-made safetensors files for the reader's tests: a header as written, then zero bytes.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "heed/io/safetensors.hpp"

namespace heed::test {

/// The 8-byte little-endian header length, `header` byte for byte, then `data_bytes` zero bytes.
inline std::vector<std::byte> file_with_header(const std::string& header, std::size_t data_bytes) {
  std::vector<std::byte> out(8 + header.size() + data_bytes, std::byte{0});
  const std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<std::byte>((n >> (8 * i)) & 0xFF);
  std::memcpy(out.data() + 8, header.data(), header.size());
  return out;
}

/// Asserts that the bytes are rejected with a FormatError naming the file and containing `needle`.
inline void expect_rejected(const std::vector<std::byte>& bytes, const std::string& needle) {
  try {
    (void)io::SafeTensors::from_bytes(bytes, "bad.safetensors");
    ADD_FAILURE() << "accepted; expected an error mentioning " << needle;
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad.safetensors"), std::string::npos) << e.what();
  }
}

}  // namespace heed::test
