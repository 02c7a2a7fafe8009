#pragma once
// safetensors (https://github.com/huggingface/safetensors): an 8-byte little-endian header
// length N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end)}, "__metadata__":
// {string: string}}, then the raw little-endian data. The reader validates like the reference
// implementation does, before any tensor is touched:
//   - the header length fits in the file and is at most 100 MB;
//   - the header is a JSON object starting with '{', entries well formed, names unique;
//   - every byte range matches shape × dtype size (without overflow), the ranges are
//     contiguous from 0, and they cover the data exactly: no gaps, no overlaps, no trailing bytes.
// Every violation is a FormatError naming the file and the tensor; nothing is read out of bounds.
//
// SafeTensors::open memory-maps the file (mmap on POSIX, MapViewOfFile on Windows), so a large file
// is never copied twice: `get` converts straight from the mapped pages into the Tensor it
// returns, and pages nobody reads are never loaded. Elsewhere, or with ReadMode::copy, the file
// is read into memory once.

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "heed/core/error.hpp"
#include "heed/core/shape.hpp"
#include "heed/core/tensor.hpp"
#include "heed/io/json.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#define HEED_HAVE_MMAP 1
#elif defined(_WIN32)
// CreateFileMappingW / MapViewOfFile. Without min and max macros (NOMINMAX) and the rarely used
// parts of the API, each defined only for this include where the program has not defined it.
#if !defined(NOMINMAX)
#define NOMINMAX
#define HEED_DEFINED_NOMINMAX
#endif
#if !defined(WIN32_LEAN_AND_MEAN)
#define WIN32_LEAN_AND_MEAN
#define HEED_DEFINED_WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#if defined(HEED_DEFINED_NOMINMAX)
#undef NOMINMAX
#undef HEED_DEFINED_NOMINMAX
#endif
#if defined(HEED_DEFINED_WIN32_LEAN_AND_MEAN)
#undef WIN32_LEAN_AND_MEAN
#undef HEED_DEFINED_WIN32_LEAN_AND_MEAN
#endif
#define HEED_HAVE_MMAP 1
#define HEED_MMAP_WINDOWS 1
#endif

namespace heed::io {

/// The element types of the safetensors format, by the names its header uses. heed converts the
/// first thirteen (see SafeTensors::get); the 8-bit floats, the sub-byte floats (F4, F6_*) and C64
/// are recognized, so a file holding them opens and lists, but `get` refuses them with a
/// FormatError naming the dtype (`raw` still gives their bytes). docs/formats.md has the rules.
enum class DType {
  BOOL,
  U8,
  I8,
  I16,
  U16,
  F16,
  BF16,
  I32,
  U32,
  F32,
  I64,
  U64,
  F64,
  F8_E5M2,
  F8_E4M3,
  F8_E8M0,
  F8_E4M3FNUZ,
  F8_E5M2FNUZ,
  F4,
  F6_E2M3,
  F6_E3M2,
  C64
};

/// "F32", "BF16", ...: the dtype as a safetensors header spells it.
[[nodiscard]] inline std::string_view dtype_name(DType t) noexcept {
  constexpr std::string_view names[] = {
      "BOOL", "U8",  "I8",      "I16",     "U16",     "F16",         "BF16",        "I32", "U32",     "F32",     "I64",
      "U64",  "F64", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F4",  "F6_E2M3", "F6_E3M2", "C64"};
  return names[static_cast<int>(t)];
}

/// Bits per element: 4 for F4, 6 for F6_E2M3 and F6_E3M2, 8 × dtype_size otherwise. A tensor of a
/// sub-byte dtype must fill whole bytes (its element count × bits is a multiple of 8).
[[nodiscard]] inline std::size_t dtype_bits(DType t) noexcept {
  switch (t) {
    case DType::F4:
      return 4;
    case DType::F6_E2M3:
    case DType::F6_E3M2:
      return 6;
    case DType::BOOL:
    case DType::U8:
    case DType::I8:
    case DType::F8_E5M2:
    case DType::F8_E4M3:
    case DType::F8_E8M0:
    case DType::F8_E4M3FNUZ:
    case DType::F8_E5M2FNUZ:
      return 8;
    case DType::I16:
    case DType::U16:
    case DType::F16:
    case DType::BF16:
      return 16;
    case DType::I32:
    case DType::U32:
    case DType::F32:
      return 32;
    case DType::I64:
    case DType::U64:
    case DType::F64:
    case DType::C64:
      return 64;
  }
  return 0;
}

/// Bytes per element, 0 for the sub-byte dtypes (F4, F6_*: see dtype_bits).
[[nodiscard]] inline std::size_t dtype_size(DType t) noexcept {
  return dtype_bits(t) % 8 == 0 ? dtype_bits(t) / 8 : 0;
}

/// The safetensors dtype that stores Scalar.
template <class Scalar>
[[nodiscard]] constexpr DType dtype_of() noexcept {
  if constexpr (std::is_same_v<Scalar, bool>)
    return DType::BOOL;
  else if constexpr (std::is_same_v<Scalar, float>)
    return DType::F32;
  else if constexpr (std::is_same_v<Scalar, double>)
    return DType::F64;
  else if constexpr (std::is_same_v<Scalar, bfloat16>)
    return DType::BF16;
  else if constexpr (std::is_same_v<Scalar, half>)
    return DType::F16;
  else if constexpr (std::is_same_v<Scalar, std::int32_t>)
    return DType::I32;
  else if constexpr (std::is_same_v<Scalar, std::int64_t>)
    return DType::I64;
  else if constexpr (std::is_same_v<Scalar, std::uint8_t>)
    return DType::U8;
  else if constexpr (std::is_same_v<Scalar, std::int8_t>)
    return DType::I8;
  else
    static_assert(sizeof(Scalar) == 0, "no safetensors dtype for this scalar");
}

/// One tensor of a safetensors file: its name, dtype, shape and byte range in the data section.
struct TensorInfo {
  std::string name;            ///< the tensor's name in the header
  DType dtype = DType::F32;    ///< the element type
  std::vector<index_t> shape;  ///< the extents, outermost first
  std::size_t begin = 0;       ///< first byte, as an offset into the data section
  std::size_t end = 0;         ///< one past the last byte, as an offset into the data section
};

/// IEEE binary16 bits → float, exact (every half is a float): Eigen's conversion, as heed::half's.
[[nodiscard]] inline float half_to_float(std::uint16_t bits) noexcept {
  return static_cast<float>(std::bit_cast<half>(bits));
}

/// bfloat16 bits → float, exact: Eigen's conversion, as heed::bfloat16's.
[[nodiscard]] inline float bfloat16_to_float(std::uint16_t bits) noexcept {
  return static_cast<float>(std::bit_cast<bfloat16>(bits));
}

}  // namespace heed::io

// The internals, which need the declarations above.
#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/io/detail/safetensors_bytes.hpp"

namespace heed::io {

/// How SafeTensors::open reads a file: mapped (the default where mmap exists) or copied into memory.
enum class ReadMode { map, copy };

/// A validated safetensors file, memory-mapped or held in memory. Cheap to copy (the bytes are shared).
class SafeTensors {
 public:
  /// The largest header accepted, in bytes (FormatError beyond it).
  static constexpr std::uint64_t max_header_size = 100'000'000;

  /// Opens and validates a file: IoError if it cannot be read, FormatError if it is malformed.
  /// ReadMode::map (the default) maps it where the platform can and reads it otherwise.
  static SafeTensors open(const std::filesystem::path& path, ReadMode mode = ReadMode::map) {
    constexpr std::string_view who = "heed::io::SafeTensors::open";
    return from_file_bytes(
        mode == ReadMode::map ? detail::map_file_bytes(path, who) : detail::read_file_bytes(path, who), path.string());
  }

  /// Validates bytes already in memory; `origin` names them in error messages.
  static SafeTensors from_bytes(std::vector<std::byte> bytes, std::string origin = "<memory>") {
    auto owned = std::make_shared<const std::vector<std::byte>>(std::move(bytes));
    return from_file_bytes({owned, owned->data(), owned->size(), false}, std::move(origin));
  }

  /// True when the bytes are a memory mapping of the file (no copy was made).
  [[nodiscard]] bool is_mapped() const noexcept { return bytes_.mapped; }

  /// A metadata value, or `fallback` when the key is absent.
  [[nodiscard]] std::string metadata(const std::string& key, std::string fallback) const {
    const auto it = metadata_.find(key);
    return it == metadata_.end() ? std::move(fallback) : it->second;
  }

  /// The path (or the origin given to from_bytes) that error messages name.
  [[nodiscard]] const std::string& origin() const noexcept { return origin_; }
  /// Every tensor, in the order of their data.
  [[nodiscard]] const std::vector<TensorInfo>& tensors() const noexcept { return tensors_; }
  /// Every __metadata__ entry.
  [[nodiscard]] const std::map<std::string, std::string>& metadata() const noexcept { return metadata_; }

  /// True when the file holds a tensor of this name.
  [[nodiscard]] bool contains(std::string_view name) const noexcept { return find(name) != nullptr; }

  /// The tensors' names, sorted.
  [[nodiscard]] std::vector<std::string> names() const {
    std::vector<std::string> out;
    out.reserve(tensors_.size());
    for (const auto& t : tensors_) out.push_back(t.name);
    std::sort(out.begin(), out.end());
    return out;
  }

  /// The entry for `name`; FormatError naming the file when it is absent.
  [[nodiscard]] const TensorInfo& info(std::string_view name) const {
    if (const TensorInfo* t = find(name)) return *t;
    throw FormatError(origin_ + ": no tensor named \"" + std::string(name) + "\"");
  }

  /// The raw little-endian bytes of a tensor.
  [[nodiscard]] std::span<const std::byte> raw(std::string_view name) const {
    const TensorInfo& t = info(name);
    return {bytes_.data + data_start_ + t.begin, t.end - t.begin};
  }

  /// The tensor `name`, converted to Scalar. ShapeError if its rank is not Rank;
  /// FormatError if it is absent or its dtype does not convert (a float file read as ints).
  template <class Scalar, std::size_t Rank>
  [[nodiscard]] Tensor<Scalar, Rank> get(std::string_view name) const {
    const TensorInfo& t = info(name);
    const std::string where = origin_ + ": tensor \"" + t.name + "\"";
    if (t.shape.size() != Rank)
      throw ShapeError(where + " has rank " + std::to_string(t.shape.size()) + " (shape " + shape_text(t.shape) +
                       "), expected rank " + std::to_string(Rank));
    Shape<Rank> shape{};
    std::copy(t.shape.begin(), t.shape.end(), shape.begin());
    Tensor<Scalar, Rank> out(shape);
    detail::convert(bytes_.data + data_start_ + t.begin, t.dtype, out.numel(), out.data(), where);
    return out;
  }

  /// "[2, 3]": a shape as error messages print it.
  [[nodiscard]] static std::string shape_text(const std::vector<index_t>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
  }

 private:
  SafeTensors() = default;

  static SafeTensors from_file_bytes(detail::FileBytes bytes, std::string origin) {
    SafeTensors st;
    st.origin_ = std::move(origin);
    st.bytes_ = std::move(bytes);
    st.validate();
    return st;
  }

  [[nodiscard]] const TensorInfo* find(std::string_view name) const noexcept {
    for (const auto& t : tensors_)
      if (t.name == name) return &t;
    return nullptr;
  }

  [[noreturn]] void fail(const std::string& why) const { throw FormatError(origin_ + ": " + why); }

  void validate() {
    const std::span<const std::byte> bytes(bytes_.data, bytes_.size);
    if (bytes.size() < 8)
      fail("file of " + std::to_string(bytes.size()) + " bytes is too small for a safetensors header");
    const auto header_size = detail::load_le<std::uint64_t>(bytes.data());
    if (header_size > max_header_size)
      fail("header length " + std::to_string(header_size) + " exceeds the limit of " + std::to_string(max_header_size));
    if (header_size > bytes.size() - 8)
      fail("header length " + std::to_string(header_size) + " runs past the end of the file (" +
           std::to_string(bytes.size()) + " bytes)");
    data_start_ = 8 + static_cast<std::size_t>(header_size);
    const std::string_view header(reinterpret_cast<const char*>(bytes.data() + 8),
                                  static_cast<std::size_t>(header_size));
    if (header.empty() || header.front() != '{') fail("header does not start with '{'");

    const Json root = Json::parse(header, origin_ + " header");
    if (!root.is_object()) fail("header is not a JSON object");
    for (const auto& [name, entry] : root.as_object()) {
      if (name == "__metadata__") {
        if (entry.is_null()) continue;  // the reference writer's "no metadata" (an Option)
        if (!entry.is_object()) fail("__metadata__ is not an object");
        for (const auto& [key, value] : entry.as_object()) {
          if (!value.is_string()) fail("__metadata__ value \"" + key + "\" is not a string");
          metadata_[key] = value.as_string();
        }
        continue;
      }
      tensors_.push_back(parse_entry(name, entry));
    }

    std::vector<const TensorInfo*> by_name;
    for (const auto& t : tensors_) by_name.push_back(&t);
    std::sort(by_name.begin(), by_name.end(), [](auto* a, auto* b) { return a->name < b->name; });
    for (std::size_t i = 1; i < by_name.size(); ++i)
      if (by_name[i]->name == by_name[i - 1]->name) fail("tensor \"" + by_name[i]->name + "\" appears twice");

    std::sort(tensors_.begin(), tensors_.end(), [](const TensorInfo& a, const TensorInfo& b) {
      return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
    });
    std::size_t expected = 0;
    for (const auto& t : tensors_) {
      if (t.begin != expected)
        fail("tensor \"" + t.name + "\" starts at byte " + std::to_string(t.begin) + ", expected " +
             std::to_string(expected) + " (offsets must be contiguous, without gaps or overlaps)");
      expected = t.end;
    }
    const std::size_t data_size = bytes.size() - data_start_;
    if (expected != data_size)
      fail("tensor data covers " + std::to_string(expected) + " bytes but the file holds " + std::to_string(data_size) +
           " bytes after the header");
  }

  std::uint64_t to_uint64(const Json& value, const std::string& where) const {
    if (!value.is_number()) fail(where + ": expected a non-negative integer");
    try {
      return value.as_uint64();
    } catch (const FormatError& e) {
      fail(where + ": " + e.what());
    }
  }

  TensorInfo parse_entry(const std::string& name, const Json& entry) const {
    const std::string where = "tensor \"" + name + "\"";
    if (!entry.is_object()) fail(where + " is not an object");
    TensorInfo t;
    t.name = name;
    const Json* dtype = entry.find("dtype");
    const Json* shape = entry.find("shape");
    const Json* offsets = entry.find("data_offsets");
    if (!dtype || !dtype->is_string()) fail(where + " has no string \"dtype\"");
    if (!shape || !shape->is_array()) fail(where + " has no array \"shape\"");
    if (!offsets || !offsets->is_array() || offsets->as_array().size() != 2)
      fail(where + " has no \"data_offsets\" pair");
    t.dtype = detail::parse_dtype(dtype->as_string(), origin_ + ": " + where);

    std::uint64_t count = 1;
    bool overflow = false;
    for (const Json& extent : shape->as_array()) {
      const std::uint64_t e = to_uint64(extent, where + " shape");
      if (e > static_cast<std::uint64_t>(INT64_MAX)) overflow = true;
      if (e != 0 && count > UINT64_MAX / e) overflow = true;
      count *= e;
      t.shape.push_back(static_cast<index_t>(e));
    }
    const std::uint64_t bits = dtype_bits(t.dtype);
    if (overflow || (count != 0 && count > UINT64_MAX / bits))
      fail(where + ": shape " + shape_text(t.shape) + " overflows");
    if (count * bits % 8 != 0)
      fail(where + ": shape " + shape_text(t.shape) + " of " + std::string(dtype_name(t.dtype)) + " (" +
           std::to_string(bits) + " bits each) does not fill whole bytes");
    const std::uint64_t nbytes = count * bits / 8;

    const std::uint64_t begin = to_uint64(offsets->as_array()[0], where + " data_offsets");
    const std::uint64_t end = to_uint64(offsets->as_array()[1], where + " data_offsets");
    if (end < begin)
      fail(where + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + ") are reversed");
    if (end - begin != nbytes)
      fail(where + ": data_offsets span " + std::to_string(end - begin) + " bytes but shape " + shape_text(t.shape) +
           " of " + std::string(dtype_name(t.dtype)) + " needs " + std::to_string(nbytes));
    if (end > bytes_.size - data_start_)
      fail(where + ": data_offsets end " + std::to_string(end) + " runs past the end of the file");
    t.begin = static_cast<std::size_t>(begin);
    t.end = static_cast<std::size_t>(end);
    return t;
  }

  std::string origin_;
  detail::FileBytes bytes_;
  std::size_t data_start_ = 0;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

/// Collects named tensors and writes them as safetensors (names sorted, as PyTorch's writer does).
class SafeTensorsWriter {
 public:
  /// Adds a tensor under `name`, stored in its own scalar type; FormatError if the name is already taken,
  /// is "__metadata__" (the format's reserved key) or is not UTF-8: what the reader would refuse.
  template <class Scalar, std::size_t Rank>
  SafeTensorsWriter& add(std::string name, const TensorView<const Scalar, Rank>& tensor) {
    if (name == "__metadata__")
      throw FormatError("SafeTensorsWriter: \"__metadata__\" is the format's metadata key, not a tensor name");
    if (const char* why = detail::utf8_error(name))
      throw FormatError("SafeTensorsWriter: the tensor name \"" + name + "\" is not UTF-8 (" + why + ")");
    Entry e;
    e.name = std::move(name);
    e.dtype = dtype_of<Scalar>();
    e.shape.assign(tensor.shape().begin(), tensor.shape().end());
    const Tensor<Scalar, Rank> dense(tensor);  // contiguous copy
    e.data.resize(static_cast<std::size_t>(dense.numel()) * sizeof(Scalar));
    for (index_t i = 0; i < dense.numel(); ++i)
      detail::store_le(e.data.data() + static_cast<std::size_t>(i) * sizeof(Scalar), dense.data()[i]);
    for (const auto& other : entries_)
      if (other.name == e.name) throw FormatError("SafeTensorsWriter: tensor \"" + e.name + "\" added twice");
    entries_.push_back(std::move(e));
    return *this;
  }
  /// Adds a tensor under `name`, stored in its own scalar type; FormatError if the name is already taken.
  template <class Scalar, std::size_t Rank>
  SafeTensorsWriter& add(std::string name, const Tensor<Scalar, Rank>& tensor) {
    return add<Scalar, Rank>(std::move(name), tensor.view());
  }

  /// Sets a `__metadata__` entry (string to string); FormatError if either is not UTF-8.
  SafeTensorsWriter& metadata(std::string key, std::string value) {
    for (const std::string* text : {&key, &value})
      if (const char* why = detail::utf8_error(*text))
        throw FormatError("SafeTensorsWriter: the metadata text \"" + *text + "\" is not UTF-8 (" + why + ")");
    metadata_[std::move(key)] = std::move(value);
    return *this;
  }

  /// The file's bytes: header (names sorted, data aligned to 8 bytes), then the data.
  [[nodiscard]] std::vector<std::byte> to_bytes() const {
    std::vector<const Entry*> sorted;
    for (const auto& e : entries_) sorted.push_back(&e);
    std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->name < b->name; });
    std::string header = "{";
    if (!metadata_.empty()) {
      header += "\"__metadata__\":{";
      bool first = true;
      for (const auto& [k, v] : metadata_) {
        header += (first ? "" : ",") + json_quote(k) + ":" + json_quote(v);
        first = false;
      }
      header += "}";
    }
    std::size_t offset = 0;
    for (const Entry* e : sorted) {
      if (header.size() > 1) header += ",";
      header += json_quote(e->name) + ":{\"dtype\":\"" + std::string(dtype_name(e->dtype)) + "\",\"shape\":[";
      for (std::size_t i = 0; i < e->shape.size(); ++i) {
        if (i > 0) header += ',';  // not `(i ? "," : "") + to_string(...)`: gcc 12 -O3 warns (-Wrestrict) on it
        header += std::to_string(e->shape[i]);
      }
      header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + e->data.size()) + "]}";
      offset += e->data.size();
    }
    header += "}";
    while ((8 + header.size()) % 8 != 0) header += ' ';  // align the data, as the reference writer does
    std::vector<std::byte> out(8 + header.size() + offset);
    const std::uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<std::byte>((n >> (8 * i)) & 0xFF);
    std::memcpy(out.data() + 8, header.data(), header.size());
    std::size_t at = 8 + header.size();
    for (const Entry* e : sorted) {
      if (!e->data.empty()) std::memcpy(out.data() + at, e->data.data(), e->data.size());
      at += e->data.size();
    }
    return out;
  }

  /// Writes to_bytes() to `path`; IoError when the file cannot be written.
  void write(const std::filesystem::path& path) const {
    const std::vector<std::byte> bytes = to_bytes();
    detail::write_file(path, bytes.data(), bytes.size(), "heed::io::SafeTensorsWriter");
  }

 private:
  struct Entry {
    std::string name;
    DType dtype;
    std::vector<index_t> shape;
    std::vector<std::byte> data;
  };
  std::vector<Entry> entries_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace heed::io
