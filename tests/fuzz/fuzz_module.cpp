// Fuzz target: a module built from a file alone. AttentionClassifier::from_safetensors reads the
// options from the file's "heed.config" metadata, builds the model and loads every parameter
// strictly; a model that loads is then run on three tokens. The config is read before any
// weight, so this is where a small file could ask for a huge model (the allocation cap of
// nn/config.hpp's require_values, docs/limits.md).
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_target.hpp"
#include "heed/io/safetensors.hpp"
#include "heed/nn/attention_classifier.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return heed::fuzz::run([&] {
    const auto file = heed::io::SafeTensors::from_bytes(heed::fuzz::bytes_of(data, size), "fuzz input");
    const auto model = heed::nn::seed::AttentionClassifier<float>::from_safetensors(file);
    heed::Tensor<std::int64_t, 2> ids({1, 3});
    ids(0, 0) = 1;
    ids(0, 1) = model.options().vocab_size - 1;
    ids(0, 2) = 0;
    (void)model(ids);
  });
}
