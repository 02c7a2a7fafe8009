// seed::AttentionClassifier (seed 000 §6.1) against PyTorch 1.13: logits, pooling weights, bad ids;
// and its former names in heed::nn (heed/nn/attention_classifier.hpp), deprecated aliases of it.
#include <gtest/gtest.h>

#include <cmath>
#include <type_traits>

#include "heed/nn/attention_classifier.hpp"
#include "heed/nn/seed/attention_classifier.hpp"
#include "support/compare.hpp"
#include "support/golden.hpp"

namespace {

using heed::index_t;
using heed::nn::seed::AttentionClassifier;
using heed::test::all_close;

constexpr heed::test::Tolerance tol{1e-5, 1e-6};

TEST(AttentionClassifierGolden, LogitsWeightsAndBadIds) {
  const auto fx = heed::test::golden("seed_modules");
  AttentionClassifier<float> clf({.vocab_size = 50, .embed_dim = 24, .hidden_dim = 40, .num_classes = 5, .n_heads = 3});
  clf.load(fx, "clf.module.", {.strict = true});
  const auto ids = fx.get<std::int64_t, 2>("clf.ids");
  const auto r = clf(ids);
  const auto ok = all_close(r.logits, fx.get<float, 2>("clf.logits"), tol);
  std::printf("classifier logits: %s\n", ok.message());
  EXPECT_TRUE(ok);
  EXPECT_TRUE(all_close(r.weights, fx.get<float, 2>("clf.weights"), tol));
  heed::Tensor<std::int64_t, 2> bad({1, 3});
  bad(0, 1) = 50;
  try {
    (void)clf(bad);
    FAIL();
  } catch (const heed::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("token id 50 at [0, 1] is outside the vocabulary of 50"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)clf(heed::Tensor<std::int64_t, 2>({2, 0})), heed::ShapeError);
}

#if defined(__GNUC__)  // using the deprecated names is the point here
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
static_assert(std::is_same_v<heed::nn::AttentionClassifier<float>, heed::nn::seed::AttentionClassifier<float>>);
static_assert(std::is_same_v<heed::nn::AttentionClassifierOptions, heed::nn::seed::AttentionClassifierOptions>);
static_assert(std::is_same_v<heed::nn::ClassifierResult<double>, heed::nn::seed::ClassifierResult<double>>);
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

}  // namespace
