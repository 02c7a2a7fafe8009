// Each mask's tile classification and application against its element-wise definition, on
// every tile of a grid of tile sizes: blocked ⇒ every element hidden, open ⇒ none hidden and
// nothing added, partial ⇒ apply() produces exactly the definition.
#include <cmath>

#include "kernels/attention_cases.hpp"

namespace {

using heed::index_t;
using namespace heed::test;

TEST(Mask, ClassifyAndApplyAgreeWithTheDefinition) {
  const Inputs<float> in({3, 2, 29, 37, 4, 4});
  for (MaskKind kind : all_masks) {
    in.with_mask(kind, [&](const auto& mask, const heed::reference::MaskFn& definition) {
      mask.check({3, 2, 29, 37});
      for (index_t bq : {1, 4, 16, 29})
        for (index_t bk : {1, 5, 16, 37})
          for (index_t b = 0; b < 3; ++b)
            for (index_t h = 0; h < 2; ++h)
              for (index_t i0 = 0; i0 < 29; i0 += bq)
                for (index_t j0 = 0; j0 < 37; j0 += bk) {
                  const heed::TileRef t{b, h, i0, std::min(bq, 29 - i0), j0, std::min(bk, 37 - j0), h};
                  std::vector<float> s(static_cast<std::size_t>(t.ni * t.nj), 0.0f);
                  const auto kind_of_tile = mask.classify(t);
                  mask.apply(t, s.data(), t.nj);
                  bool all_hidden = true, none_changed = true;
                  for (index_t i = 0; i < t.ni; ++i)
                    for (index_t j = 0; j < t.nj; ++j) {
                      const double expected = definition(b, h, i0 + i, j0 + j);
                      const float got = s[static_cast<std::size_t>(i * t.nj + j)];
                      ASSERT_EQ(double(got), double(float(expected)))
                          << name(kind) << " at " << i0 + i << "," << j0 + j;
                      all_hidden = all_hidden && std::isinf(expected);
                      none_changed = none_changed && expected == 0.0;
                    }
                  if (kind_of_tile == heed::mask::Tile::blocked) {
                    EXPECT_TRUE(all_hidden) << name(kind);
                  }
                  if (kind_of_tile == heed::mask::Tile::open) {
                    EXPECT_TRUE(none_changed) << name(kind);
                  }
                  if (kind != MaskKind::bias && kind != MaskKind::allowed && kind != MaskKind::key_padding &&
                      kind != MaskKind::causal_and_padding) {
                    // index-only masks classify exactly: partial means neither all hidden nor all visible
                    if (kind_of_tile == heed::mask::Tile::partial) {
                      EXPECT_FALSE(all_hidden || none_changed) << name(kind);
                    }
                  }
                }
    });
  }
}

TEST(Mask, BroadcastShapes) {
  const heed::Shape<4> dims{2, 3, 4, 5};
  EXPECT_NO_THROW((heed::mask::Allowed{heed::Tensor<bool, 2>({4, 5})}.check(dims)));
  EXPECT_NO_THROW((heed::mask::Allowed{heed::Tensor<bool, 4>({2, 1, 1, 5})}.check(dims)));
  EXPECT_NO_THROW((heed::mask::Allowed{heed::Tensor<bool, 4>({1, 3, 4, 5})}.check(dims)));
  EXPECT_NO_THROW((heed::mask::Bias{heed::Tensor<double, 4>({2, 3, 4, 5})}.check(dims)));
  EXPECT_THROW((heed::mask::Allowed{heed::Tensor<bool, 4>({2, 2, 4, 5})}.check(dims)), heed::ShapeError);
  EXPECT_THROW((heed::mask::Bias{heed::Tensor<float, 2>({5, 4})}.check(dims)), heed::ShapeError);
}

}  // namespace
