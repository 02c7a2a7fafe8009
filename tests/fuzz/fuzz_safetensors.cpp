// Fuzz target: the safetensors reader. Validates the bytes, lists the tensors and the metadata,
// and reads every tensor at its own rank (1 to 4) as float, double, bfloat16 and half.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_target.hpp"
#include "heed/io/safetensors.hpp"

namespace {

template <class Scalar>
void read_as(const heed::io::SafeTensors& file, const heed::io::TensorInfo& info) {
  heed::fuzz::run([&] {
    switch (info.shape.size()) {
      case 1:
        (void)file.get<Scalar, 1>(info.name);
        break;
      case 2:
        (void)file.get<Scalar, 2>(info.name);
        break;
      case 3:
        (void)file.get<Scalar, 3>(info.name);
        break;
      case 4:
        (void)file.get<Scalar, 4>(info.name);
        break;
      default:
        (void)file.get<Scalar, 2>(info.name);
        break;  // a rank mismatch: ShapeError
    }
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return heed::fuzz::run([&] {
    const auto file = heed::io::SafeTensors::from_bytes(heed::fuzz::bytes_of(data, size), "fuzz input");
    for (const auto& [key, value] : file.metadata()) (void)file.metadata(key, value);
    for (const auto& name : file.names()) {
      const heed::io::TensorInfo& info = file.info(name);
      (void)file.raw(name);
      read_as<float>(file, info);
      read_as<double>(file, info);
      read_as<heed::bfloat16>(file, info);
      read_as<heed::half>(file, info);
    }
  });
}
