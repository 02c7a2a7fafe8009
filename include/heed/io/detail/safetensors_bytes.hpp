#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "heed/core/error.hpp"
#include "heed/core/scalar.hpp"
#include "heed/io/detail/files.hpp"

// Byte-level helpers of the safetensors reader and writer: little-endian loads and stores,
// dtype conversion, and the file's bytes (mapped or read).
namespace heed::detail {

template <class T>
[[nodiscard]] inline T load_le(const std::byte* p) noexcept {
  T value;
  std::memcpy(&value, p, sizeof(T));
  if constexpr (std::endian::native == std::endian::big && sizeof(T) > 1) {
    auto bytes = std::bit_cast<std::array<std::byte, sizeof(T)>>(value);
    std::reverse(bytes.begin(), bytes.end());
    value = std::bit_cast<T>(bytes);
  }
  return value;
}

template <class T>
inline void store_le(std::byte* p, T value) noexcept {
  if constexpr (std::endian::native == std::endian::big && sizeof(T) > 1) {
    auto bytes = std::bit_cast<std::array<std::byte, sizeof(T)>>(value);
    std::reverse(bytes.begin(), bytes.end());
    value = std::bit_cast<T>(bytes);
  }
  std::memcpy(p, &value, sizeof(T));
}

[[nodiscard]] inline io::DType parse_dtype(const std::string& s, const std::string& where) {
  static const std::map<std::string, io::DType, std::less<>> table = [] {
    std::map<std::string, io::DType, std::less<>> names;
    for (int t = 0; t <= static_cast<int>(io::DType::C64); ++t)
      names.emplace(io::dtype_name(static_cast<io::DType>(t)), static_cast<io::DType>(t));
    return names;
  }();
  const auto it = table.find(s);
  if (it == table.end()) throw FormatError(where + ": unknown dtype \"" + s + "\"");
  return it->second;
}

// Converts `count` elements of `dtype` at `src` into Scalar.
template <class Scalar>
void convert(const std::byte* src, io::DType dtype, index_t count, Scalar* dst, const std::string& where) {
  auto each = [&]<class Stored>(auto to_value) {
    for (index_t i = 0; i < count; ++i)
      dst[i] = static_cast<Scalar>(to_value(load_le<Stored>(src + static_cast<std::size_t>(i) * sizeof(Stored))));
  };
  auto same = [](auto v) { return v; };
  constexpr bool floating = is_floating_v<Scalar>;
  constexpr bool boolean = std::is_same_v<Scalar, bool>;
  if constexpr (is_16bit_float_v<Scalar>) {
    // BF16 into bfloat16, F16 into half: the bits as they are
    if (dtype == (std::is_same_v<Scalar, bfloat16> ? io::DType::BF16 : io::DType::F16))
      return each.template operator()<std::uint16_t>([](std::uint16_t bits) { return std::bit_cast<Scalar>(bits); });
  }
  constexpr bool integral = std::is_integral_v<Scalar> && !boolean;
  switch (dtype) {
    case io::DType::BOOL:
      return each.template operator()<std::uint8_t>([](std::uint8_t v) { return v != 0; });
    case io::DType::F32:
      if constexpr (floating) return each.template operator()<float>(same);
      break;
    case io::DType::F64:
      if constexpr (floating) return each.template operator()<double>(same);
      break;
    case io::DType::F16:
      if constexpr (floating) return each.template operator()<std::uint16_t>(io::half_to_float);
      break;
    case io::DType::BF16:
      if constexpr (floating) return each.template operator()<std::uint16_t>(io::bfloat16_to_float);
      break;
    case io::DType::I32:
      if constexpr (floating || integral) return each.template operator()<std::int32_t>(same);
      break;
    case io::DType::I64:
      if constexpr (floating || integral) return each.template operator()<std::int64_t>(same);
      break;
    case io::DType::U8:
      if constexpr (floating || integral) return each.template operator()<std::uint8_t>(same);
      break;
    case io::DType::I8:
      if constexpr (floating || integral) return each.template operator()<std::int8_t>(same);
      break;
    case io::DType::I16:
      if constexpr (floating || integral) return each.template operator()<std::int16_t>(same);
      break;
    case io::DType::U16:
      if constexpr (floating || integral) return each.template operator()<std::uint16_t>(same);
      break;
    case io::DType::U32:
      if constexpr (floating || integral) return each.template operator()<std::uint32_t>(same);
      break;
    case io::DType::U64:
      if constexpr (floating) return each.template operator()<std::uint64_t>(same);
      break;
    default:  // recognized, not convertible
      throw FormatError(where + ": dtype " + std::string(io::dtype_name(dtype)) +
                        " is recognized but heed does not convert it (its bytes: SafeTensors::raw)");
  }
  throw FormatError(where + ": dtype " + std::string(io::dtype_name(dtype)) + " cannot be read as " +
                    std::string(boolean    ? "bool"
                                : floating ? "a floating-point tensor"
                                           : "an integer tensor"));
}

// The bytes of a file, mapped or read, kept alive by whoever shares them.
struct FileBytes {
  std::shared_ptr<const void> owner;
  const std::byte* data = nullptr;
  std::size_t size = 0;
  bool mapped = false;
};

[[nodiscard]] inline FileBytes read_file_bytes(const std::filesystem::path& path, std::string_view who) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw io_error(who, "read", path, EISDIR);
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw io_error(who, "open", path, errno);
  // Read to the end in chunks: a pipe or a device has no size to ask for first.
  auto bytes = std::make_shared<std::vector<std::byte>>();
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec) bytes->reserve(static_cast<std::size_t>(size));
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    const auto* first = reinterpret_cast<const std::byte*>(chunk);
    bytes->insert(bytes->end(), first, first + in.gcount());
  }
  if (in.bad()) throw io_error(who, "read", path, errno);
  return {bytes, bytes->data(), bytes->size(), false};
}

[[nodiscard]] inline FileBytes map_file_bytes(const std::filesystem::path& path, std::string_view who) {
#if defined(HEED_MMAP_WINDOWS)
  // Windows: the file opened for reading (others may read it too), a read-only mapping of all
  // of it, a view of the mapping; the view keeps the mapping and the file alive once their
  // handles are closed.
  const HANDLE file = ::CreateFileW(path.c_str(), GENERIC_READ, FILE_SHARE_READ, nullptr, OPEN_EXISTING,
                                    FILE_ATTRIBUTE_NORMAL, nullptr);
  if (file == INVALID_HANDLE_VALUE) {
    const DWORD error = ::GetLastError();
    throw io_error(who, "open", path,
                   error == ERROR_FILE_NOT_FOUND || error == ERROR_PATH_NOT_FOUND ? ENOENT
                   : error == ERROR_ACCESS_DENIED                                 ? EACCES
                                                                                  : EIO);
  }
  LARGE_INTEGER size{};
  if (!::GetFileSizeEx(file, &size) || ::GetFileType(file) != FILE_TYPE_DISK) {
    ::CloseHandle(file);
    return read_file_bytes(path, who);  // not a file on disk: read it
  }
  if (size.QuadPart == 0) {
    ::CloseHandle(file);
    return {};
  }
  const HANDLE mapping = ::CreateFileMappingW(file, nullptr, PAGE_READONLY, 0, 0, nullptr);
  ::CloseHandle(file);
  if (mapping == nullptr) return read_file_bytes(path, who);
  void* p = ::MapViewOfFile(mapping, FILE_MAP_READ, 0, 0, 0);
  ::CloseHandle(mapping);
  if (p == nullptr) return read_file_bytes(path, who);
  std::shared_ptr<const void> owner(p, [](const void* q) { ::UnmapViewOfFile(q); });
  return {std::move(owner), static_cast<const std::byte*>(p), static_cast<std::size_t>(size.QuadPart), true};
#elif defined(HEED_HAVE_MMAP)
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw io_error(who, "open", path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return read_file_bytes(path, who);  // not a regular file (a pipe, a device): read it
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return {};
  }
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);  // the mapping keeps the file
  if (p == MAP_FAILED) return read_file_bytes(path, who);
  std::shared_ptr<const void> owner(p, [size](const void* q) { ::munmap(const_cast<void*>(q), size); });
  return {std::move(owner), static_cast<const std::byte*>(p), size, true};
#else
  return read_file_bytes(path, who);
#endif
}

}  // namespace heed::detail
