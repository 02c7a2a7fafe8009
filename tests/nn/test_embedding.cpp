// nn::Embedding: each id picks its row of the table (exactly), scaled; padding_idx starts as a
// zero row; ids of every integer type; ids outside the vocabulary are ShapeErrors naming them.
#include <gtest/gtest.h>

#include <cstdint>

#include "heed/core/random.hpp"
#include "heed/nn/embedding.hpp"
#include "support/compare.hpp"

namespace {

using heed::index_t;
using heed::Tensor;
using heed::nn::Embedding;

TEST(Embedding, GathersTheRowsOfItsIdsScaled) {
  heed::nn::TensorDict d;
  const auto table = heed::randn<float>({11, 6}, 1);
  d.set("emb.weight", table);
  Embedding<float> emb({.num_embeddings = 11, .embedding_dim = 6});
  emb.load(heed::nn::Loader<heed::nn::TensorDict>(d, "emb."));
  Tensor<std::int32_t, 2> ids({2, 4});
  const std::int32_t values[] = {0, 10, 3, 3, 7, 1, 0, 9};
  std::copy(values, values + 8, ids.data());
  for (float scale : {1.0f, 2.5f}) {
    const auto y = emb(ids, scale);
    ASSERT_EQ(y.shape(), (heed::Shape<3>{2, 4, 6}));
    for (index_t b = 0; b < 2; ++b)
      for (index_t t = 0; t < 4; ++t)
        for (index_t c = 0; c < 6; ++c) EXPECT_EQ(y(b, t, c), table(ids(b, t), c) * scale);
  }
  const auto y64 = emb(Tensor<std::int64_t, 2>({1, 3}));  // id 0 three times
  for (index_t c = 0; c < 6; ++c) EXPECT_EQ(y64(0, 2, c), table(0, c));
}

TEST(Embedding, PaddingRowStartsAtZeroAndBadIdsAreShapeErrors) {
  const Embedding<double> emb({.num_embeddings = 5, .embedding_dim = 3, .padding_idx = 2, .seed = 7});
  Tensor<std::int64_t, 2> ids({1, 2});
  ids(0, 0) = 2;
  ids(0, 1) = 4;
  const auto y = emb(ids);
  for (index_t c = 0; c < 3; ++c) EXPECT_EQ(y(0, 0, c), 0.0);
  EXPECT_NE(y(0, 1, 0), 0.0);  // N(0, 1) initialization elsewhere
  for (std::int64_t bad : {std::int64_t{5}, std::int64_t{-1}}) {
    ids(0, 1) = bad;
    try {
      (void)emb(ids);
      FAIL();
    } catch (const heed::ShapeError& e) {
      EXPECT_NE(
          std::string(e.what()).find("token id " + std::to_string(bad) + " at [0, 1] is outside the vocabulary of 5"),
          std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(Embedding<float>({.num_embeddings = 0, .embedding_dim = 3}), heed::ShapeError);
}

}  // namespace
