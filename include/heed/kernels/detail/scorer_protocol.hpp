#pragma once
#include "heed/core/detail/internal_header_check.hpp"

#include <utility>

#include "heed/core/shape.hpp"
#include "heed/kernels/score.hpp"
#include "heed/kernels/tile_ref.hpp"

// The scorer protocol of heed/kernels/score.hpp as the driver holds it: every scorer it runs
// has the whole PackingScorer protocol, a scorer that only scores through NoPacking below.
namespace heed::detail {

// Fails to compile, naming the method, unless S scores tiles into Acc and, where it declares
// packed_bytes(), has the rest of the packing protocol too.
template <class S, class Acc>
consteval bool check_scorer() {
  static_assert(TileScorer<S, Acc>,
                "heed: a scorer needs scores(const heed::TileRef&, Acc* out, heed::index_t ld) const, Acc "
                "being the accumulator type (float for bfloat16 and half)");
  if constexpr (requires(const S& s) { s.packed_bytes(); }) {
    static_assert(
        requires(S & s, int threads, index_t i) { s.prepare(threads, i, i); },
        "heed: a scorer with packed_bytes() needs prepare(int threads, index_t first, index_t count)");
    static_assert(
        requires(S & s, index_t i) { s.reserve(i, i); },
        "heed: a scorer with packed_bytes() needs reserve(index_t first, index_t count)");
    static_assert(
        requires(S & s, index_t i) { s.pack(i); }, "heed: a scorer with packed_bytes() needs pack(index_t group)");
    static_assert(
        requires(const S& s, index_t i) { s.packed_keys(i, i, i, i); },
        "heed: a scorer with packed_bytes() needs packed_keys(index_t b, index_t hk, index_t j0, index_t nj) "
        "const, returning {pointer, bytes}");
    static_assert(PackingScorer<S>, "heed: the packing methods of this scorer do not have the protocol's types");
  }
  return true;
}

// A scorer that packs nothing, seen through the packing protocol.
template <class S>
class NoPacking {
 public:
  explicit NoPacking(S& scorer) noexcept : scorer_(scorer) {}

  template <class Acc>
  void scores(const TileRef& tile, Acc* out, index_t ld) const {
    scorer_.scores(tile, out, ld);
  }
  [[nodiscard]] index_t packed_bytes() const noexcept { return 0; }
  void prepare(int, index_t, index_t) noexcept {}
  void reserve(index_t, index_t) noexcept {}
  void pack(index_t) noexcept {}
  [[nodiscard]] std::pair<const void*, index_t> packed_keys(index_t, index_t, index_t, index_t) const noexcept {
    return {nullptr, 0};
  }

 private:
  S& scorer_;
};

}  // namespace heed::detail
