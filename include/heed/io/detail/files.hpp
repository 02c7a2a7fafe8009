#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <cerrno>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

#include "heed/core/error.hpp"

// Opening and writing files for heed's readers and writers: the IoError names the file and the
// system's reason ("No such file or directory", "Permission denied").
namespace heed::detail {

/// "<who>: cannot <doing> <path>: <reason of err>" (no reason when err is 0).
[[nodiscard]] inline IoError io_error(std::string_view who, std::string_view doing, const std::filesystem::path& path,
                                      int err) {
  std::string message = std::string(who) + ": cannot " + std::string(doing) + " " + path.string();
  if (err != 0) message += ": " + std::generic_category().message(err);
  return IoError(message);
}

/// Writes size bytes to a new (or truncated) file at path.
inline void write_file(const std::filesystem::path& path, const void* data, std::size_t size, std::string_view who) {
  errno = 0;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw io_error(who, "create", path, errno);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.flush();
  if (!out) throw io_error(who, "write", path, errno);
}

}  // namespace heed::detail
