#pragma once
// A weight source under other names: a checkpoint written by torchvision, Hugging Face or any
// other code loads into heed's modules without a hand-written WeightSource.
//
//   const auto file = heed::io::SafeTensors::open("vit.safetensors");
//   const auto source = heed::nn::renamed(file, {{"^encoder.layers.encoder_layer_", "layers."},
//                                                {".self_attention.", ".self_attn."}});
//   encoder.load(source);
//
// Each rule rewrites every name of the source it matches, in the order given, each rule seeing
// the names the rules before it wrote (as transformers' `key_mapping` rewrites a checkpoint's
// keys before they meet the model's):
//   {"from", "to"}    every occurrence of "from" becomes "to", left to right;
//   {"^from", "to"}   "from" at the start of the name only (a prefix);
//   {"from$", "to"}   "from" at the end of the name only (a suffix);
//   {"^from$", "to"}  the whole name.
// Names no rule matches keep their own. Two names of the source that end up the same are a
// FormatError naming both, when the renamed source is made.

#include <concepts>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "heed/core/error.hpp"
#include "heed/core/tensor.hpp"
#include "heed/nn/weights.hpp"

namespace heed::nn {

/// One renaming rule of `renamed`: `from` (with an optional leading `^` or trailing `$`
/// anchor) becomes `to`.
struct Rename {
  std::string from;  ///< the text to replace; "^..." only at the start, "...$" only at the end
  std::string to;    ///< what it becomes
};

/// A WeightSource showing another source's tensors under renamed names (see the top of this
/// file). It refers to `source`, which must outlive it; nothing is copied.
template <WeightSource Source>
class RenamedSource {
 public:
  /// The names of `source` rewritten by `rules`; FormatError for an empty `from` or when two
  /// names of the source become one.
  RenamedSource(const Source& source, const std::vector<Rename>& rules) : source_(&source) {
    for (const Rename& rule : rules) {
      const Pattern p = pattern(rule);
      if (p.text.empty())
        throw FormatError("heed::nn::renamed: the rule {\"" + rule.from + "\", \"" + rule.to +
                          "\"} has nothing to replace");
    }
    for (const std::string& original : source.names()) {
      std::string name = original;
      for (const Rename& rule : rules) name = apply(pattern(rule), rule.to, name);
      const auto [it, inserted] = original_.emplace(name, original);
      if (!inserted)
        throw FormatError("heed::nn::renamed: \"" + it->second + "\" and \"" + original + "\" both become \"" + name +
                          "\"");
    }
  }

  /// Whether a tensor has this (renamed) name.
  [[nodiscard]] bool contains(std::string_view name) const { return original_.find(name) != original_.end(); }

  /// The renamed names, sorted.
  [[nodiscard]] std::vector<std::string> names() const {
    std::vector<std::string> out;
    out.reserve(original_.size());
    for (const auto& entry : original_) out.push_back(entry.first);
    return out;
  }

  /// The source's name for a renamed one (`name` itself when no tensor has it).
  [[nodiscard]] std::string original_name(std::string_view name) const {
    const auto it = original_.find(name);
    return it == original_.end() ? std::string(name) : it->second;
  }

  /// The tensor of that (renamed) name, as the source gives it; FormatError when no tensor has it.
  template <class Scalar, std::size_t Rank>
  [[nodiscard]] Tensor<Scalar, Rank> get(std::string_view name) const {
    const auto it = original_.find(name);
    if (it == original_.end()) throw FormatError("heed::nn::renamed: no tensor named \"" + std::string(name) + "\"");
    return source_->template get<Scalar, Rank>(it->second);
  }

 private:
  struct Pattern {
    std::string_view text;
    bool at_start = false, at_end = false;
  };

  static Pattern pattern(const Rename& rule) {
    Pattern p{rule.from};
    if (!p.text.empty() && p.text.front() == '^') {
      p.at_start = true;
      p.text.remove_prefix(1);
    }
    if (!p.text.empty() && p.text.back() == '$') {
      p.at_end = true;
      p.text.remove_suffix(1);
    }
    return p;
  }

  static std::string apply(const Pattern& p, const std::string& to, const std::string& name) {
    const std::string_view n(name), t = p.text;
    const bool starts = n.substr(0, t.size()) == t, ends = n.size() >= t.size() && n.substr(n.size() - t.size()) == t;
    if (p.at_start && p.at_end) return n == t ? to : name;
    if (p.at_start) return starts ? to + name.substr(t.size()) : name;
    if (p.at_end) return ends ? name.substr(0, n.size() - t.size()) + to : name;
    std::string out;
    std::size_t begin = 0;
    for (std::size_t at = n.find(t); at != std::string_view::npos; at = n.find(t, begin)) {
      out.append(n.substr(begin, at - begin)).append(to);
      begin = at + t.size();
    }
    return out.append(n.substr(begin));
  }

  const Source* source_;
  std::map<std::string, std::string, std::less<>> original_;  // renamed name → the source's name
};

/// `source` under the names `rules` make of its own (see the top of this file); it refers to
/// `source`, which must outlive it.
template <WeightSource Source>
[[nodiscard]] RenamedSource<Source> renamed(const Source& source, const std::vector<Rename>& rules) {
  return RenamedSource<Source>(source, rules);
}

}  // namespace heed::nn
