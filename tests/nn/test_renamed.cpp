// heed::nn::renamed: a weight source under other names (rules, anchors, collisions) and a
// module loaded through it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "heed/core/random.hpp"
#include "heed/io/safetensors.hpp"
#include "heed/nn/renamed.hpp"
#include "heed/nn/transformer_encoder.hpp"
#include "support/compare.hpp"

namespace {

using heed::nn::renamed;
using heed::nn::TensorDict;

static_assert(heed::nn::WeightSource<heed::nn::RenamedSource<TensorDict>>);
static_assert(heed::nn::WeightSource<heed::nn::RenamedSource<heed::io::SafeTensors>>);
static_assert(heed::nn::WeightSource<heed::nn::RenamedSource<heed::nn::RenamedSource<TensorDict>>>);

TensorDict named(const std::vector<std::string>& names) {
  TensorDict d;
  std::uint64_t seed = 1;
  for (const std::string& name : names) d.set(name, heed::randn<float>({2}, seed++));
  return d;
}

TEST(Renamed, RulesRewriteEveryOccurrenceInOrderAndAnchorsHoldThemToTheEnds) {
  const TensorDict d = named({"a.x.a.x", "x.b", "b.x", "x", "keep.me"});
  const auto r = renamed(d, {{"x", "y"}, {"^y.", "start."}, {".y$", ".end"}, {"^y$", "whole"}});
  EXPECT_EQ(r.names(), (std::vector<std::string>{"a.y.a.end", "b.end", "keep.me", "start.b", "whole"}));
  EXPECT_EQ(r.original_name("a.y.a.end"), "a.x.a.x");
  EXPECT_EQ(r.original_name("start.b"), "x.b");
  EXPECT_EQ(r.original_name("no.such"), "no.such");
  EXPECT_TRUE(r.contains("whole"));
  EXPECT_FALSE(r.contains("x"));
  const auto got = r.get<double, 1>("b.end"), want = d.get<double, 1>("b.x");
  EXPECT_TRUE(heed::test::all_close(got, want, {0, 0}));
  EXPECT_THROW(((void)r.get<float, 1>("x")), heed::FormatError);
  EXPECT_THROW(((void)r.get<float, 2>("b.end")), heed::ShapeError);  // the source's own check
}

TEST(Renamed, NoRulesChangeNothingAndRenamedSourcesNest) {
  const TensorDict d = named({"p.q", "r"});
  EXPECT_EQ(renamed(d, {}).names(), d.names());
  const auto once = renamed(d, {{"p.", "s."}});
  const auto twice = renamed(once, {{"s.", "t."}});
  EXPECT_EQ(twice.names(), (std::vector<std::string>{"r", "t.q"}));
  EXPECT_TRUE(heed::test::all_close(twice.get<float, 1>("t.q"), d.get<float, 1>("p.q"), {0, 0}));
}

TEST(Renamed, TwoNamesBecomingOneAndAnEmptyRuleAreFormatErrors) {
  const TensorDict d = named({"ln_1.weight", "norm1.weight"});
  try {
    (void)renamed(d, {{"ln_1.", "norm1."}});
    FAIL();
  } catch (const heed::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("\"ln_1.weight\" and \"norm1.weight\" both become \"norm1.weight\""),
              std::string::npos)
        << e.what();
  }
  for (const char* empty : {"", "^", "$", "^$"}) {
    try {
      (void)renamed(d, {{empty, "x"}});
      FAIL() << empty;
    } catch (const heed::FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("has nothing to replace"), std::string::npos) << e.what();
    }
  }
}

// torchvision's encoder-block names (ViT) loaded into heed's TransformerEncoder through the rules
// of the file's top comment: the same numbers as the module loaded from its own names.
TEST(Renamed, LoadsTorchvisionEncoderNamesIntoTheTransformerEncoder) {
  const heed::index_t E = 8, F = 12;
  const heed::nn::TransformerEncoderOptions options{.d_model = E,
                                                    .nhead = 2,
                                                    .dim_feedforward = F,
                                                    .num_layers = 2,
                                                    .activation = heed::nn::Activation::gelu,
                                                    .layer_norm_eps = 1e-6,
                                                    .norm_first = true,
                                                    .final_norm = true};
  TensorDict heed_names, torchvision_names;
  std::uint64_t seed = 10;
  const auto both = [&](const std::string& heed_name, const std::string& torchvision_name,
                        const heed::Tensor<float, 2>& t) {
    heed_names.set(heed_name, t);
    torchvision_names.set(torchvision_name, t);
  };
  const auto both1 = [&](const std::string& heed_name, const std::string& torchvision_name, heed::index_t n) {
    const auto t = heed::randn<float>({n}, seed++);
    heed_names.set(heed_name, t);
    torchvision_names.set(torchvision_name, t);
  };
  for (int i = 0; i < 2; ++i) {
    const std::string h = "layers." + std::to_string(i) + ".",
                      t = "encoder.layers.encoder_layer_" + std::to_string(i) + ".";
    both(h + "self_attn.in_proj_weight", t + "self_attention.in_proj_weight", heed::randn<float>({3 * E, E}, seed++));
    both1(h + "self_attn.in_proj_bias", t + "self_attention.in_proj_bias", 3 * E);
    both(h + "self_attn.out_proj.weight", t + "self_attention.out_proj.weight", heed::randn<float>({E, E}, seed++));
    both1(h + "self_attn.out_proj.bias", t + "self_attention.out_proj.bias", E);
    both(h + "linear1.weight", t + "mlp.0.weight", heed::randn<float>({F, E}, seed++));
    both1(h + "linear1.bias", t + "mlp.0.bias", F);
    both(h + "linear2.weight", t + "mlp.3.weight", heed::randn<float>({E, F}, seed++));
    both1(h + "linear2.bias", t + "mlp.3.bias", E);
    for (const char* norm : {"1", "2"}) {
      both1(h + "norm" + norm + ".weight", t + "ln_" + norm + ".weight", E);
      both1(h + "norm" + norm + ".bias", t + "ln_" + norm + ".bias", E);
    }
  }
  both1("norm.weight", "encoder.ln.weight", E);
  both1("norm.bias", "encoder.ln.bias", E);
  torchvision_names.set("heads.head.weight", heed::randn<float>({3, E}, seed++));

  heed::nn::TransformerEncoder<float> want(options), got(options);
  want.load(heed_names, "", {.strict = true});
  const auto source = renamed(torchvision_names, {{"^encoder.layers.encoder_layer_", "layers."},
                                                  {".self_attention.", ".self_attn."},
                                                  {".mlp.0.", ".linear1."},
                                                  {".mlp.3.", ".linear2."},
                                                  {".ln_1.", ".norm1."},
                                                  {".ln_2.", ".norm2."},
                                                  {"^encoder.ln.", "norm."}});
  got.load(source);
  const auto x = heed::randn<float>({2, 5, E}, 99);
  EXPECT_TRUE(heed::test::all_close(got(x), want(x), {0, 0}));

  // strict mode sees the renamed names: the classifier head is left over
  try {
    got.load(source, "", {.strict = true});
    FAIL();
  } catch (const heed::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("unused tensors heads.head.weight"), std::string::npos) << e.what();
  }
  // a rule forgotten: the missing parameter's error offers the renamed name it was probably meant to be
  const auto partial = renamed(torchvision_names, {{"^encoder.layers.encoder_layer_", "layers."}});
  try {
    got.load(partial);
    FAIL();
  } catch (const heed::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "missing parameter \"layers.0.self_attn.in_proj_bias\" (expected shape [24]); closest in the "
                  "source: \"layers.0.self_attention.in_proj_bias\""),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
