#pragma once
// A module's options travelling with its weights: a safetensors file whose __metadata__ holds
// "heed.module" (the class name) and "heed.config" (a JSON object of the options) can be turned
// into a ready module by the module's from_file(path). The training scripts in examples/train/
// write both keys. ModuleConfig reads the options field by field, names the file and the key in
// every error, and rejects keys no field took (a misspelt option is an error, not a default).
//
// The config sizes a module before its weights are read, so a file could ask for a model far
// larger than itself: require_values() lets from_file compare the parameter count the options
// imply with the values the file holds, before anything is allocated (docs/formats.md, "Limits").

#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>

#include "heed/core/error.hpp"
#include "heed/io/json.hpp"
#include "heed/io/safetensors.hpp"

namespace heed::nn {

/// A module's options read from a safetensors file's "heed.config" metadata (see the top of this file).
class ModuleConfig {
 public:
  /// The config of `module` in the file's metadata. FormatError if the file names another
  /// module, or has no "heed.config", or the config is not a JSON object.
  static ModuleConfig from_metadata(const io::SafeTensors& file, std::string_view module) {
    const std::string where = file.origin();
    const std::string stored = file.metadata("heed.module", "");
    if (!stored.empty() && stored != module)
      throw FormatError(where + ": holds a \"" + stored + "\", not a \"" + std::string(module) + "\"");
    const std::string text = file.metadata("heed.config", "");
    if (text.empty())
      throw FormatError(where + ": no \"heed.config\" in __metadata__, so the " + std::string(module) +
                        " options are unknown (build the module with its options, then load())");
    ModuleConfig c;
    c.where_ = where + ": heed.config";
    c.json_ = io::Json::parse(text, c.where_);
    if (!c.json_.is_object()) throw FormatError(c.where_ + " is not a JSON object");
    return c;
  }

  /// Sets `field` from `key` when present (integers, floating point, bool, string).
  template <class T>
  ModuleConfig& read(std::string_view key, T& field) {
    const io::Json* v = json_.find(key);
    if (!v) return *this;
    used_.insert(std::string(key));
    const std::string where = where_ + " \"" + std::string(key) + "\"";
    try {
      if constexpr (std::is_same_v<T, bool>) {
        field = v->as_bool();
      } else if constexpr (std::is_integral_v<T>) {
        if constexpr (std::is_signed_v<T>) {
          const std::int64_t x = v->as_int64();
          if (x < std::numeric_limits<T>::min() || x > std::numeric_limits<T>::max())
            throw FormatError(std::to_string(x) + " is out of range");
          field = static_cast<T>(x);
        } else {
          const std::uint64_t x = v->as_uint64();
          if (x > std::numeric_limits<T>::max()) throw FormatError(std::to_string(x) + " is out of range");
          field = static_cast<T>(x);
        }
      } else if constexpr (std::is_floating_point_v<T>) {
        field = static_cast<T>(v->as_double());
      } else {
        field = v->as_string();
      }
    } catch (const FormatError& e) {
      throw FormatError(where + ": " + e.what());
    }
    return *this;
  }

  /// FormatError unless the file's tensors hold at least `needed` values together: a module calls it
  /// with (a lower bound of) the parameter count its options imply, before it is built, so that a
  /// small file with a large config is rejected without allocating. `sizes` names the options
  /// for the message ("vocab_size 10, embed_dim 8").
  void require_values(const io::SafeTensors& file, std::int64_t needed, std::string_view sizes) const {
    std::int64_t held = 0;
    for (const auto& name : file.names()) {
      std::int64_t n = 1;
      for (const index_t extent : file.info(name).shape) n = saturating_product(n, extent);
      held = saturating_sum(held, n);
    }
    if (needed > held)
      throw FormatError(where_ + " (" + std::string(sizes) + ") asks for at least " + std::to_string(needed) +
                        " parameters, but the file's tensors hold " + std::to_string(held) + " values");
  }

  /// a · b, or INT64_MAX when that overflows; a negative factor counts as 0 (options are checked
  /// by the module's constructor, after this bound).
  [[nodiscard]] static constexpr std::int64_t saturating_product(std::int64_t a, std::int64_t b) noexcept {
    if (a <= 0 || b <= 0) return 0;
    return a > std::numeric_limits<std::int64_t>::max() / b ? std::numeric_limits<std::int64_t>::max() : a * b;
  }
  /// a + b, or INT64_MAX when that overflows (both non-negative).
  [[nodiscard]] static constexpr std::int64_t saturating_sum(std::int64_t a, std::int64_t b) noexcept {
    return a > std::numeric_limits<std::int64_t>::max() - b ? std::numeric_limits<std::int64_t>::max() : a + b;
  }

  /// FormatError naming every key that no read() took.
  void finish() const {
    std::string unknown;
    for (const auto& [key, value] : json_.as_object())
      if (!used_.count(key)) unknown += (unknown.empty() ? "" : ", ") + key;
    if (!unknown.empty()) throw FormatError(where_ + ": unknown options " + unknown);
  }

 private:
  ModuleConfig() = default;
  std::string where_;
  io::Json json_;
  std::set<std::string> used_;
};

}  // namespace heed::nn
