#include <gtest/gtest.h>

#include "heed/core/random.hpp"
#include "heed/io/safetensors.hpp"
#include "heed/nn/weights.hpp"
#include "support/compare.hpp"

namespace {

using heed::nn::Loader;
using heed::nn::TensorDict;

static_assert(heed::nn::WeightSource<TensorDict>);
static_assert(heed::nn::WeightSource<heed::io::SafeTensors>);

TEST(Loader, TakesCheckedParametersAndReportsUnusedInStrictMode) {
  TensorDict d;
  d.set("layer.weight", heed::randn<float>({3, 4}, 1)).set("layer.bias", heed::randn<float>({3}, 2));
  d.set("layer.extra", heed::randn<float>({1}, 3)).set("other.weight", heed::randn<float>({1}, 4));
  const Loader<TensorDict> from(d, "layer.", {.strict = true});
  const auto w = from.take<float, 2>("weight", {3, 4});
  EXPECT_TRUE(heed::test::all_close(w, d.get<float, 2>("layer.weight"), {0, 0}));
  (void)from.take<double, 1>("bias", {3});
  try {
    from.finish();
    FAIL();
  } catch (const heed::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("unused tensors layer.extra"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("other.weight"), std::string::npos) << e.what();
  }
  EXPECT_THROW(((void)from.take<float, 2>("weight", {4, 3})), heed::ShapeError);
  EXPECT_THROW(((void)from.take<float, 3>("weight", {3, 4, 1})), heed::ShapeError);
  EXPECT_THROW(((void)from.take<float, 1>("missing", {3})), heed::FormatError);
  const Loader<TensorDict> lenient(d, "layer.");
  EXPECT_NO_THROW(lenient.finish());
  EXPECT_EQ(from.child("sub.").prefix(), "layer.sub.");
}

TEST(Loader, AMissingParameterNamesTheClosestNamesAndThePrefixTheyHave) {
  TensorDict d;
  d.set("encoder.layers.0.self_attn.in_proj_weight", heed::randn<float>({6, 2}, 1));
  d.set("encoder.layers.1.self_attn.in_proj_weight", heed::randn<float>({6, 2}, 2));
  d.set("encoder.layers.0.linear1.weight", heed::randn<float>({3, 2}, 3));
  const Loader<TensorDict> wrong_prefix(d, "model.layers.0.");
  try {
    (void)wrong_prefix.child("self_attn.").take<float, 2>("in_proj_weight", {6, 2});
    FAIL();
  } catch (const heed::FormatError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("missing parameter \"model.layers.0.self_attn.in_proj_weight\" (expected shape [6, 2]); "
                           "closest in the source: \"encoder.layers.0.self_attn.in_proj_weight\" (\"encoder.\" where "
                           "\"model.\" was asked)"),
              std::string::npos)
        << message;
  }
  try {  // nothing shares even the last part: no suggestion
    (void)wrong_prefix.take<float, 1>("running_mean", {2});
    FAIL();
  } catch (const heed::FormatError& e) {
    EXPECT_EQ(std::string(e.what()).find("closest"), std::string::npos) << e.what();
  }
}

// The message of the FormatError that taking `name` under `prefix` of d raises.
std::string missing_message(const TensorDict& d, const std::string& prefix, const std::string& name) {
  try {
    (void)Loader<TensorDict>(d, prefix).take<float, 1>(name, {2});
  } catch (const heed::FormatError& e) {
    return e.what();
  }
  ADD_FAILURE() << name << " was found";
  return {};
}

TEST(Loader, AMisnamedParameterSuggestsTheNearestWholeName) {
  TensorDict d;
  for (const char* name : {"model.layers.0.self_attn.in_proj_weight", "model.layers.0.self_attn.out_proj.weight",
                           "model.layers.0.linear1.weight", "model.layers.0.linear2.weight", "model.norm.weight"})
    d.set(name, heed::randn<float>({2}, 1));
  // in_proj.weight for in_proj_weight: one character apart, and nothing shares two trailing parts
  const std::string misnamed = missing_message(d, "model.layers.0.self_attn.", "in_proj.weight");
  EXPECT_NE(misnamed.find("closest in the source: \"model.layers.0.self_attn.in_proj_weight\""), std::string::npos)
      << misnamed;
  EXPECT_EQ(misnamed.find("out_proj"), std::string::npos) << misnamed;
  EXPECT_EQ(misnamed.find("linear"), std::string::npos) << misnamed;
  // the whole name asked for, under a prefix the caller left out
  const std::string unprefixed = missing_message(d, "", "layers.0.linear1.weight");
  EXPECT_NE(unprefixed.find("closest in the source: \"model.layers.0.linear1.weight\" (under the prefix \"model.\")"),
            std::string::npos)
      << unprefixed;
  // a name unlike every other: no *.weight is offered
  const std::string unrelated = missing_message(d, "model.", "embed_tokens.weight");
  EXPECT_EQ(unrelated.find("closest"), std::string::npos) << unrelated;
  // a one-letter slip in a prefix part
  const std::string slip = missing_message(d, "model.layer.0.", "linear2.weight");
  EXPECT_NE(slip.find("\"model.layers.0.linear2.weight\""), std::string::npos) << slip;
  EXPECT_EQ(slip.find("linear1"), std::string::npos) << slip;
}

TEST(Loader, DefaultInitMatchesPyTorchsBounds) {
  const auto w = heed::nn::torch_default_init<float, 2>({64, 100}, 100, 7);
  float lo = 1, hi = -1;
  for (heed::index_t i = 0; i < w.numel(); ++i) {
    lo = std::min(lo, w.data()[i]);
    hi = std::max(hi, w.data()[i]);
  }
  EXPECT_GE(lo, -0.1f);
  EXPECT_LE(hi, 0.1f);
  EXPECT_LT(lo, -0.09f);  // the whole range is used
  EXPECT_GT(hi, 0.09f);
}

}  // namespace
