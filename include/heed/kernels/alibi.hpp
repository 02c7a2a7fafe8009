#pragma once
// ALiBi's head slopes (Press et al. 2021, https://arxiv.org/abs/2108.12409), as BLOOM computes
// them: heed::alibi_slopes(H). The bias itself is the mask mask::ALiBi{slopes, offset}
// (kernels/mask.hpp, which includes this header).

#include <cmath>
#include <string>
#include <vector>

#include "heed/core/error.hpp"
#include "heed/core/shape.hpp"

namespace heed {

/// ALiBi's head slopes as BLOOM computes them: for H a power of two, 2^(-8k/H) for k = 1..H;
/// otherwise those of the largest power of two P below H, then every other slope of 2P's
/// sequence (k = 1, 3, 5, ...) for the remaining H - P heads. ShapeError for H < 1.
[[nodiscard]] inline std::vector<double> alibi_slopes(index_t heads) {
  if (heads < 1) throw ShapeError("heed::alibi_slopes: heads must be >= 1, got " + std::to_string(heads));
  index_t closest = 1;
  while (closest * 2 <= heads) closest *= 2;
  const auto sequence = [](index_t n) { return std::pow(2.0, -8.0 / static_cast<double>(n)); };
  std::vector<double> slopes;
  const double base = sequence(closest);
  for (index_t k = 1; k <= closest; ++k) slopes.push_back(std::pow(base, static_cast<double>(k)));
  const double extra = sequence(2 * closest);
  for (index_t k = 1; static_cast<index_t>(slopes.size()) < heads; k += 2)
    slopes.push_back(std::pow(extra, static_cast<double>(k)));
  return slopes;
}

}  // namespace heed
