// Built by the ctest kernels/scorer_missing_method_does_not_compile, which expects the build to
// FAIL with the driver's static_assert naming the method: a user's scorer that packs K
// (packed_bytes) but has no pack(group).
#include <utility>

#include "heed/heed.hpp"

struct PacksButCannotPack {
  void check(const heed::Shape<4>& q, const heed::Shape<4>& k) const { heed::ScaledDot{}.check(q, k); }
  template <class T>
  auto bind(const heed::TensorView<const T, 4>& q, const heed::TensorView<const T, 4>& k) const {
    struct Scorer {
      heed::detail::DotScorer<T> dot;
      void scores(const heed::TileRef& t, float* s, heed::index_t ld) const { dot.scores(t, s, ld); }
      [[nodiscard]] heed::index_t packed_bytes() const { return dot.packed_bytes(); }
      void prepare(int threads, heed::index_t first, heed::index_t count) { dot.prepare(threads, first, count); }
      void reserve(heed::index_t first, heed::index_t count) { dot.reserve(first, count); }
      // no pack(group)
      [[nodiscard]] std::pair<const T*, heed::index_t> packed_keys(heed::index_t b, heed::index_t hk, heed::index_t j0,
                                                                   heed::index_t nj) const {
        return dot.packed_keys(b, hk, j0, nj);
      }
    };
    return Scorer{heed::ScaledDot{}.bind<T>(q, k)};
  }
};

int main() {
  const auto q = heed::randn<float>({1, 1, 4, 8}, 1);
  return heed::attention(q, q, q, PacksButCannotPack{}).output.numel() > 0 ? 0 : 1;
}
