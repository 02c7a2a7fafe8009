#pragma once
// Where modules get their parameters. A weight source is anything that hands out named
// tensors: the safetensors reader, or TensorDict (an in-memory map, for tests and for
// weights built in code). Modules load through a Loader, which checks every expected name and
// shape once, names the parameter, the expected and the found shape in its errors, and in
// strict mode reports the names under the prefix that no parameter used.

#include <algorithm>
#include <cmath>
#include <concepts>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "heed/core/cast.hpp"
#include "heed/core/error.hpp"
#include "heed/core/random.hpp"
#include "heed/core/tensor.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/nn/detail/initialization.hpp"

namespace heed::nn {

/// What a module needs from a weights file: presence, names, and typed tensors
/// (`get` throws ShapeError on a rank mismatch, FormatError on a dtype it cannot convert).
template <class S>
concept WeightSource = requires(const S& s, std::string_view name) {
  { s.contains(name) } -> std::convertible_to<bool>;
  { s.names() } -> std::convertible_to<std::vector<std::string>>;
  s.template get<float, 2>(name);
};

/// Named tensors in memory, any rank, stored as double and converted on `get`.
class TensorDict {
 public:
  /// Stores a copy of `tensor` under `name` (replacing one of that name).
  template <class Scalar, std::size_t Rank>
  TensorDict& set(std::string name, const TensorView<const Scalar, Rank>& tensor) {
    Entry e;
    e.shape.assign(tensor.shape().begin(), tensor.shape().end());
    const Tensor<Scalar, Rank> dense(tensor);
    e.data.assign(dense.data(), dense.data() + dense.numel());
    entries_[std::move(name)] = std::move(e);
    return *this;
  }
  /// Stores a copy of `tensor` under `name` (replacing one of that name).
  template <class Scalar, std::size_t Rank>
  TensorDict& set(std::string name, const Tensor<Scalar, Rank>& tensor) {
    return set<Scalar, Rank>(std::move(name), tensor.view());
  }

  /// Whether a tensor of that name is stored.
  [[nodiscard]] bool contains(std::string_view name) const {
    return entries_.find(std::string(name)) != entries_.end();
  }

  /// The stored names, sorted.
  [[nodiscard]] std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [name, entry] : entries_) out.push_back(name);
    return out;
  }

  /// The tensor `name` converted to Scalar; FormatError when absent, ShapeError for another rank.
  template <class Scalar, std::size_t Rank>
  [[nodiscard]] Tensor<Scalar, Rank> get(std::string_view name) const {
    const auto it = entries_.find(std::string(name));
    if (it == entries_.end()) throw FormatError("heed::nn::TensorDict: no tensor named \"" + std::string(name) + "\"");
    const Entry& e = it->second;
    if (e.shape.size() != Rank)
      throw ShapeError("heed::nn::TensorDict: tensor \"" + std::string(name) + "\" has rank " +
                       std::to_string(e.shape.size()) + ", expected rank " + std::to_string(Rank));
    Shape<Rank> shape{};
    std::copy(e.shape.begin(), e.shape.end(), shape.begin());
    Tensor<Scalar, Rank> out(shape);
    for (index_t i = 0; i < out.numel(); ++i) out.data()[i] = static_cast<Scalar>(e.data[static_cast<std::size_t>(i)]);
    return out;
  }

 private:
  struct Entry {
    std::vector<index_t> shape;
    std::vector<double> data;
  };
  std::map<std::string, Entry, std::less<>> entries_;
};

/// How a module loads its parameters.
struct LoadOptions {
  bool strict = false;  ///< FormatError if the source holds names under the prefix that nothing loaded
};

/// Loads the parameters of one module (and its children, through `child`) from a source.
template <WeightSource Source>
class Loader {
 public:
  /// A loader of the parameters of `source` whose names begin with `prefix`.
  Loader(const Source& source, std::string prefix, LoadOptions options = {})
      : source_(&source),
        prefix_(std::move(prefix)),
        options_(options),
        used_(std::make_shared<std::set<std::string>>()) {}

  /// The prefix of this loader's names.
  [[nodiscard]] const std::string& prefix() const noexcept { return prefix_; }

  /// A loader for a submodule: `child("self_attn.")` loads "prefix.self_attn.*".
  [[nodiscard]] Loader child(const std::string& name) const {
    Loader l(*source_, prefix_ + name, options_);
    l.used_ = used_;
    return l;
  }

  /// Whether the source has prefix + name.
  [[nodiscard]] bool has(std::string_view name) const { return source_->contains(prefix_ + std::string(name)); }

  /// The parameter prefix + name, which must exist with exactly `expected` shape.
  template <class Scalar, std::size_t Rank>
  [[nodiscard]] Tensor<Scalar, Rank> take(std::string_view name, const Shape<Rank>& expected) const {
    const std::string full = prefix_ + std::string(name);
    if (!source_->contains(full))
      throw FormatError("heed::nn: missing parameter \"" + full + "\" (expected shape " + to_string(expected) + ")" +
                        closest_names(full));
    Tensor<Scalar, Rank> t;
    try {
      t = source_->template get<Scalar, Rank>(full);
    } catch (const ShapeError& e) {
      throw ShapeError("heed::nn: parameter \"" + full + "\" expected shape " + to_string(expected) + ": " + e.what());
    }
    if (t.shape() != expected)
      throw ShapeError("heed::nn: parameter \"" + full + "\" has shape " + to_string(t.shape()) + ", expected " +
                       to_string(expected));
    used_->insert(full);
    return t;
  }

  /// Strict mode: FormatError listing every name under the prefix that nothing took.
  void finish() const {
    if (!options_.strict) return;
    std::string unused;
    for (const std::string& name : source_->names())
      if (name.compare(0, prefix_.size(), prefix_) == 0 && !used_->count(name))
        unused += (unused.empty() ? "" : ", ") + name;
    if (!unused.empty()) throw FormatError("heed::nn: strict load under \"" + prefix_ + "\": unused tensors " + unused);
  }

 private:
  // "; closest in the source: ..." — what the caller probably meant, or "" when nothing is close:
  //   - a name with the same last two (or more) dot-separated parts under another prefix: the
  //     names sharing the longest such tail, and the prefix they have instead ("encoder." where
  //     "model." was asked), or the whole of `wanted` under an added prefix;
  //   - otherwise the names nearest by edit distance over the whole dotted path, if at most a
  //     third of its characters differ (`in_proj.weight` for `in_proj_weight`), so that an
  //     unrelated `*.weight` is never offered.
  std::string closest_names(const std::string& wanted) const {
    const auto parts = [](std::string_view s) {
      std::vector<std::string_view> out;
      for (std::size_t begin = 0;;) {
        const std::size_t dot = s.find('.', begin);
        out.push_back(s.substr(begin, dot == std::string_view::npos ? std::string_view::npos : dot - begin));
        if (dot == std::string_view::npos) return out;
        begin = dot + 1;
      }
    };
    const auto want = parts(wanted);
    std::size_t best_tail = 0;
    std::vector<std::string> by_tail;
    std::size_t best_distance = wanted.size() / 3 + 1;  // beyond a third: unrelated
    std::vector<std::string> by_distance;
    for (const std::string& name : source_->names()) {
      const auto have = parts(name);
      std::size_t common = 0;
      while (common < have.size() && common < want.size() &&
             have[have.size() - 1 - common] == want[want.size() - 1 - common])
        ++common;
      if (common >= 2 || (common >= 1 && common == want.size())) {
        if (common > best_tail) by_tail.clear();
        if (common >= best_tail) {
          best_tail = common;
          by_tail.push_back(name);
        }
      }
      const std::size_t d = edit_distance(name, wanted, best_distance);
      if (d < best_distance) by_distance.clear();
      if (d <= best_distance && d < wanted.size() / 3 + 1) {
        best_distance = d;
        by_distance.push_back(name);
      }
    }
    const std::vector<std::string>& matches = by_tail.empty() ? by_distance : by_tail;
    if (matches.empty()) return "";
    std::string text = "; closest in the source: ";
    constexpr std::size_t shown = 3;
    for (std::size_t i = 0; i < std::min(shown, matches.size()); ++i) text += (i ? ", \"" : "\"") + matches[i] + "\"";
    if (matches.size() > shown) text += " and " + std::to_string(matches.size() - shown) + " more";
    if (!by_tail.empty()) {
      // what precedes the shared tail of `best_tail` parts: the prefix the caller probably meant
      std::size_t tail = best_tail - 1;
      for (std::size_t i = 0; i < best_tail; ++i) tail += want[want.size() - 1 - i].size();
      const std::string& first = matches.front();
      if (best_tail < want.size())
        text += " (\"" + first.substr(0, first.size() - tail) + "\" where \"" + wanted.substr(0, wanted.size() - tail) +
                "\" was asked)";
      else
        text += " (under the prefix \"" + first.substr(0, first.size() - tail) + "\")";
    }
    return text;
  }

  // Levenshtein distance between a and b over characters, or any value above `limit` once it
  // is certain to exceed it (the rows' minimum only grows).
  static std::size_t edit_distance(std::string_view a, std::string_view b, std::size_t limit) {
    const std::size_t gap = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
    if (gap > limit) return limit + 1;
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
      std::size_t diagonal = row[0], row_min = i;
      row[0] = i;
      for (std::size_t j = 1; j <= b.size(); ++j) {
        const std::size_t up = row[j];
        row[j] = std::min({up + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
        diagonal = up;
        row_min = std::min(row_min, row[j]);
      }
      if (row_min > limit) return limit + 1;
    }
    return row[b.size()];
  }

  const Source* source_;
  std::string prefix_;
  LoadOptions options_;
  std::shared_ptr<std::set<std::string>> used_;
};

/// The body of every module's `load(source, prefix, options)`: the module's `load(Loader)`,
/// then the strict-mode check for unused names.
template <class Module, WeightSource Source>
void load_module(Module& module, const Source& source, const std::string& prefix, LoadOptions options) {
  const Loader<Source> from(source, prefix, options);
  module.load(from);
  from.finish();
}

/// A `Module` built with `options` and loaded from `source` under `prefix`, without the random
/// initialization its constructor would do first: its Linear and Conv2d parameters are left
/// empty until load() sets every one of them (a missing one is load()'s FormatError, and no
/// module is returned). For large models, whose initialization takes longer than loading:
/// `auto vit = heed::nn::load_new<heed::nn::VisionTransformer<float>>(options, file);`
template <class Module, WeightSource Source>
[[nodiscard]] Module load_new(const std::remove_cvref_t<decltype(std::declval<const Module&>().options())>& options,
                              const Source& source, const std::string& prefix = "", LoadOptions load_options = {}) {
  std::optional<Module> module;
  {
    const detail::WithoutInitialization scope;
    module.emplace(options);
  }
  module->load(source, prefix, load_options);
  return std::move(*module);
}

/// PyTorch's default initialization of nn.Linear and nn.Conv2d weights and biases:
/// kaiming_uniform_(a = sqrt(5)) is U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and so is the bias.
/// Not PyTorch's random stream: the same distribution, from heed's seeded generator.
template <class Scalar, std::size_t Rank>
[[nodiscard]] Tensor<Scalar, Rank> torch_default_init(const Shape<Rank>& shape, index_t fan_in, std::uint64_t seed) {
  if constexpr (is_16bit_float_v<Scalar>) {
    return cast<Scalar>(torch_default_init<float, Rank>(shape, fan_in, seed));  // as torch: float, then .to()
  } else {
    const Scalar bound = fan_in > 0 ? Scalar(1) / std::sqrt(Scalar(fan_in)) : Scalar(0);
    return uniform<Scalar, Rank>(shape, -bound, bound, seed);
  }
}

}  // namespace heed::nn
