#include <gtest/gtest.h>

#include "heed/core/random.hpp"
#include "heed/io/safetensors.hpp"
#include "heed/nn/conv2d.hpp"
#include "heed/nn/linear.hpp"
#include "heed/nn/multihead_attention.hpp"
#include "heed/nn/swiglu.hpp"
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

namespace {

// nn::load_new: the module built without its random initialization and loaded gives the same
// numbers as one built, initialized, then loaded; a missing parameter is load()'s error; the
// constructors initialize again afterwards.
TEST(LoadNew, BuildsWithoutInitializationAndLoadsEveryParameter) {
  TensorDict d;
  d.set("attn.in_proj_weight", heed::randn<float>({24, 8}, 1)).set("attn.in_proj_bias", heed::randn<float>({24}, 2));
  d.set("attn.out_proj.weight", heed::randn<float>({8, 8}, 3)).set("attn.out_proj.bias", heed::randn<float>({8}, 4));
  d.set("mlp.gate_proj.weight", heed::randn<float>({12, 8}, 5))
      .set("mlp.up_proj.weight", heed::randn<float>({12, 8}, 6));
  d.set("mlp.down_proj.weight", heed::randn<float>({8, 12}, 7));
  d.set("conv.weight", heed::randn<float>({4, 2, 3, 3}, 8)).set("conv.bias", heed::randn<float>({4}, 9));
  const heed::nn::MultiheadAttentionOptions attn_options{.embed_dim = 8, .num_heads = 2};
  const heed::nn::SwiGLUOptions mlp_options{.dim = 8, .hidden_dim = 12};
  const heed::nn::Conv2dOptions conv_options{.in_channels = 2, .out_channels = 4, .kernel_size = 3, .stride = 2};

  const auto attn = heed::nn::load_new<heed::nn::MultiheadAttention<float>>(attn_options, d, "attn.", {.strict = true});
  heed::nn::MultiheadAttention<float> attn_loaded(attn_options);
  attn_loaded.load(d, "attn.");
  const auto x = heed::randn<float>({2, 5, 8}, 10);
  EXPECT_TRUE(heed::test::all_close(attn(x, x, x).output, attn_loaded(x, x, x).output, {0, 0}));
  const auto y = heed::randn<float>({2, 3, 8}, 11);  // cross-attention: the separate projections
  EXPECT_TRUE(heed::test::all_close(attn(y, x, x).output, attn_loaded(y, x, x).output, {0, 0}));

  const auto mlp = heed::nn::load_new<heed::nn::SwiGLU<float>>(mlp_options, d, "mlp.");
  heed::nn::SwiGLU<float> mlp_loaded(mlp_options);
  mlp_loaded.load(d, "mlp.");
  EXPECT_TRUE(heed::test::all_close(mlp(x), mlp_loaded(x), {0, 0}));

  const auto conv = heed::nn::load_new<heed::nn::Conv2d<float>>(conv_options, d, "conv.");
  heed::nn::Conv2d<float> conv_loaded(conv_options);
  conv_loaded.load(d, "conv.");
  const auto image = heed::randn<float>({1, 2, 7, 9}, 12);
  EXPECT_TRUE(heed::test::all_close(conv(image), conv_loaded(image), {0, 0}));

  // a missing parameter: load()'s FormatError, and the next module is initialized as usual
  EXPECT_THROW((void)heed::nn::load_new<heed::nn::Linear<float>>(
                   heed::nn::LinearOptions{.in_features = 8, .out_features = 3}, d, "absent."),
               heed::FormatError);
  const heed::nn::Linear<float> fresh({.in_features = 8, .out_features = 3});
  EXPECT_EQ(fresh.weight().shape(), (heed::Shape<2>{3, 8}));
  EXPECT_NE(fresh.weight()(0, 0), 0.0f);
}

// Linear from its parameters: the same as set(), and set()'s errors.
TEST(LoadNew, LinearFromItsParameters) {
  const auto w = heed::randn<float>({3, 4}, 13);
  const auto b = heed::randn<float>({3}, 14);
  const heed::nn::Linear<float> made({.in_features = 4, .out_features = 3}, w, b);
  heed::nn::Linear<float> set({.in_features = 4, .out_features = 3});
  set.set(w, b);
  const auto x = heed::randn<float>({5, 4}, 15);
  EXPECT_TRUE(heed::test::all_close(made(x), set(x), {0, 0}));
  EXPECT_THROW(heed::nn::Linear<float>({.in_features = 4, .out_features = 3}, heed::randn<float>({4, 3}, 16), b),
               heed::ShapeError);
}

}  // namespace
