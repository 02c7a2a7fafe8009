// Fuzz target: the JSON reader. Parses a document and walks it, converting every number the
// ways heed's readers do (double, int64, uint64); each conversion may refuse with FormatError.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_target.hpp"
#include "heed/io/json.hpp"

namespace {

void walk(const heed::io::Json& value) {
  if (value.is_array()) {
    for (const auto& item : value.as_array()) walk(item);
  } else if (value.is_object()) {
    for (const auto& [key, member] : value.as_object()) walk(member);
  } else if (value.is_number()) {
    heed::fuzz::run([&] { (void)value.as_double(); });
    heed::fuzz::run([&] { (void)value.as_int64(); });
    heed::fuzz::run([&] { (void)value.as_uint64(); });
  } else if (value.is_string()) {
    (void)value.as_string();
  } else if (value.is_bool()) {
    (void)value.as_bool();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return heed::fuzz::run(
      [&] { walk(heed::io::Json::parse(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz input")); });
}
