#pragma once
// NumPy .npy files (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html):
// the magic "\x93NUMPY", a version byte pair, a header length (u16 in 1.0, u32 in 2.0 and 3.0),
// a Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded
// with spaces to a multiple of 64 bytes, then the raw data.
//
// load_npy reads versions 1.0, 2.0 and 3.0 with the dtypes <f4 <f8 <i4 <i8 |b1 |u1 |i1 (and
// the big-endian >f4 >f8 >i4 >i8, byte-swapped on the way in), in C or Fortran order (Fortran
// data is transposed into heed's row-major layout), converted to the Scalar asked for.
// Anything else (object arrays, structured dtypes, unicode) is a FormatError naming the file
// and the dtype. save_npy writes version 1.0, or 2.0 when the header needs more than 64 KiB.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "heed/core/error.hpp"
#include "heed/core/shape.hpp"
#include "heed/core/tensor.hpp"
#include "heed/io/safetensors.hpp"

namespace heed::io {

/// What an .npy header says.
struct NpyHeader {
  DType dtype = DType::F32;     ///< the element type ('descr')
  bool big_endian = false;      ///< true for '>' byte order
  bool fortran_order = false;   ///< true when the array is stored column-major
  std::vector<index_t> shape;   ///< the extents, outermost first
  std::size_t data_offset = 0;  ///< bytes before the data
};

}  // namespace heed::io

// The internals, which need the declarations above.
#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/io/detail/files.hpp"
#include "heed/io/detail/npy_header.hpp"

namespace heed::io {

/// Reads the header only (dtype, order, shape), e.g. to choose the Rank to load with.
[[nodiscard]] inline NpyHeader read_npy_header(const std::filesystem::path& path) {
  const detail::FileBytes file = detail::map_file_bytes(path, "heed::io::load_npy");
  return detail::parse_npy_header({file.data, file.size}, path.string());
}

/// Parses .npy bytes already in memory; `origin` names them in errors.
template <class Scalar, std::size_t Rank>
[[nodiscard]] Tensor<Scalar, Rank> npy_from_bytes(std::span<const std::byte> bytes, const std::string& origin) {
  const NpyHeader h = detail::parse_npy_header(bytes, origin);
  if (h.shape.size() != Rank)
    throw ShapeError(origin + ": the array has rank " + std::to_string(h.shape.size()) + " (shape " +
                     SafeTensors::shape_text(h.shape) + "), expected rank " + std::to_string(Rank));
  Shape<Rank> shape{};
  std::copy(h.shape.begin(), h.shape.end(), shape.begin());
  std::uint64_t count = 1;
  for (const index_t e : h.shape) {
    if (e != 0 && count > static_cast<std::uint64_t>(INT64_MAX) / static_cast<std::uint64_t>(e))
      throw FormatError(origin + ": shape " + SafeTensors::shape_text(h.shape) + " overflows");
    count *= static_cast<std::uint64_t>(e);
  }
  const std::size_t size = dtype_size(h.dtype);
  const std::size_t available = bytes.size() - h.data_offset;
  if (count > available / size)
    throw FormatError(origin + ": shape " + SafeTensors::shape_text(h.shape) + " needs " +
                      std::to_string(count * size) + " bytes of data, the file holds " + std::to_string(available));

  // convert() reads little-endian straight from the (mapped) file; big-endian data is swapped
  // in a copy first.
  const std::byte* data = bytes.data() + h.data_offset;
  std::vector<std::byte> swapped;
  if (h.big_endian) {
    swapped.assign(data, data + count * size);
    detail::swap_bytes(swapped.data(), count, size);
    data = swapped.data();
  }
  if (!h.fortran_order || Rank < 2) {
    Tensor<Scalar, Rank> out(shape, uninitialized);
    detail::convert(data, h.dtype, out.numel(), out.data(), origin);
    return out;
  }
  // Fortran order is C order of the reversed shape: read it so, then transpose into place.
  Shape<Rank> reversed{};
  std::reverse_copy(shape.begin(), shape.end(), reversed.begin());
  Tensor<Scalar, Rank> column_major(reversed, uninitialized);
  detail::convert(data, h.dtype, column_major.numel(), column_major.data(), origin);
  Shape<Rank> strides{};
  for (std::size_t k = 0; k < Rank; ++k) strides[k] = column_major.view().strides()[Rank - 1 - k];
  return Tensor<Scalar, Rank>(TensorView<const Scalar, Rank>(column_major.data(), shape, strides));
}

/// Loads an .npy file as a Tensor<Scalar, Rank>. IoError if it cannot be read; FormatError for
/// a malformed or unsupported file; ShapeError if its rank is not Rank. Errors name the file.
template <class Scalar, std::size_t Rank>
[[nodiscard]] Tensor<Scalar, Rank> load_npy(const std::filesystem::path& path) {
  const detail::FileBytes file = detail::map_file_bytes(path, "heed::io::load_npy");
  return npy_from_bytes<Scalar, Rank>({file.data, file.size}, path.string());
}

/// The .npy bytes of a tensor (C order, little-endian).
template <class Scalar, std::size_t Rank>
[[nodiscard]] std::vector<std::byte> npy_to_bytes(const TensorView<const Scalar, Rank>& tensor) {
  std::string descr;
  if constexpr (std::is_same_v<Scalar, bool>)
    descr = "|b1";
  else if constexpr (std::is_same_v<Scalar, float>)
    descr = "<f4";
  else if constexpr (std::is_same_v<Scalar, double>)
    descr = "<f8";
  else if constexpr (std::is_same_v<Scalar, half>)
    descr = "<f2";
  else if constexpr (std::is_same_v<Scalar, std::int32_t>)
    descr = "<i4";
  else if constexpr (std::is_same_v<Scalar, std::int64_t>)
    descr = "<i8";
  else if constexpr (std::is_same_v<Scalar, std::uint8_t>)
    descr = "|u1";
  else if constexpr (std::is_same_v<Scalar, std::int8_t>)
    descr = "|i1";
  else
    static_assert(sizeof(Scalar) == 0, "save_npy: no .npy dtype for this scalar (NumPy has none for bfloat16)");

  std::string dims;
  for (std::size_t k = 0; k < Rank; ++k) dims += (k ? ", " : "") + std::to_string(tensor.size(k));
  if (Rank == 1) dims += ",";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  const bool v2 = header.size() + 64 + 10 > 65535;
  const std::size_t prefix = v2 ? 12 : 10;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');  // magic to data: a multiple of 64
  header += '\n';

  const Tensor<Scalar, Rank> dense(tensor);
  const std::size_t data_size = static_cast<std::size_t>(dense.numel()) * sizeof(Scalar);
  std::vector<std::byte> out(prefix + header.size() + data_size);
  std::memcpy(out.data(), "\x93NUMPY", 6);
  out[6] = std::byte{static_cast<unsigned char>(v2 ? 2 : 1)};
  out[7] = std::byte{0};
  if (v2)
    detail::store_le(out.data() + 8, static_cast<std::uint32_t>(header.size()));
  else
    detail::store_le(out.data() + 8, static_cast<std::uint16_t>(header.size()));
  std::memcpy(out.data() + prefix, header.data(), header.size());
  std::byte* data = out.data() + prefix + header.size();
  for (index_t i = 0; i < dense.numel(); ++i)
    detail::store_le(data + static_cast<std::size_t>(i) * sizeof(Scalar), dense.data()[i]);
  return out;
}

/// Writes a tensor as .npy (version 1.0; 2.0 if the header would exceed 64 KiB). IoError on failure.
template <TensorLike T>
void save_npy(const std::filesystem::path& path, const T& tensor) {
  const auto view = as_view(tensor);
  const std::vector<std::byte> bytes =
      npy_to_bytes<std::remove_const_t<scalar_of<T>>, rank_of<T>>(TensorView<const scalar_of<T>, rank_of<T>>(view));
  detail::write_file(path, bytes.data(), bytes.size(), "heed::io::save_npy");
}

}  // namespace heed::io
