// Fuzz target: the .npy reader. Parses the header, then reads the array at ranks 1 to 4 as float,
// double and bfloat16 (a rank other than the file's is a ShapeError, also exercised).
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz/fuzz_target.hpp"
#include "heed/io/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto bytes = heed::fuzz::bytes_of(data, size);
  const std::span<const std::byte> view(bytes);
  using heed::io::npy_from_bytes;
  heed::fuzz::run([&] { (void)npy_from_bytes<float, 1>(view, "fuzz input"); });
  heed::fuzz::run([&] { (void)npy_from_bytes<float, 2>(view, "fuzz input"); });
  heed::fuzz::run([&] { (void)npy_from_bytes<double, 3>(view, "fuzz input"); });
  heed::fuzz::run([&] { (void)npy_from_bytes<heed::bfloat16, 4>(view, "fuzz input"); });
  return 0;
}
