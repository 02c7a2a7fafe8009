#pragma once
// A module's options travelling with its weights: a safetensors file whose __metadata__ holds
// "heed.module" (the class name) and "heed.config" (a JSON object of the options) can be turned
// into a ready module by the module's from_file(path). The training scripts in examples/train/
// write both keys. ModuleConfig reads the options field by field, names the file and the key in
// every error, and rejects keys no field took (a misspelt option is an error, not a default).

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
        const auto x = std::is_signed_v<T> ? v->as_int64() : static_cast<std::int64_t>(v->as_uint64());
        field = static_cast<T>(x);
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
