#pragma once
// PyTorch fixtures written by tests/golden/generate.py. A missing fixture is an error, never
// a skipped test: the fixtures are committed, and a test that cannot find one must fail.

#include <filesystem>
#include <string>

#include "heed/core/error.hpp"
#include "heed/io/safetensors.hpp"

namespace heed::test {

inline std::filesystem::path golden_path(const std::string& name) {
  return std::filesystem::path(HEED_GOLDEN_DIR) / (name + ".safetensors");
}

/// Opens tests/golden/<name>.safetensors; throws IoError (failing the test) if it is absent.
inline io::SafeTensors golden(const std::string& name) {
  const auto path = golden_path(name);
  if (!std::filesystem::exists(path))
    throw IoError("golden fixture " + path.string() + " is missing: run tests/golden/generate.py");
  return io::SafeTensors::open(path);
}

}  // namespace heed::test
