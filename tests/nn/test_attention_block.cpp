// The attention block behind every attention module (heed/nn/detail/attention_block.hpp), against
// the double reference computed step by step: grouped key/value heads (Hq = 3·Hkv and
// multi-query), the fused self-attention projection and the separate one, the q/k transform
// hook at the right positions, and the key/value store hook: a sequence fed in two calls through
// a store equals the sequence in one causal call.
#include <gtest/gtest.h>

#include <cmath>
#include <span>

#include "heed/core/random.hpp"
#include "heed/nn/multihead_attention.hpp"
#include "reference/attention.hpp"
#include "reference/nn.hpp"
#include "reference/softmax.hpp"
#include "support/compare.hpp"

namespace {

using heed::index_t;
using heed::Shape;
using heed::Tensor;
using heed::TensorView;
using Block = heed::detail::AttentionBlock<double>;
using heed::reference::to_double;

constexpr heed::test::Tolerance tol{1e-11, 1e-12};

// A position-dependent scaling of each head row (rotary embeddings are one such transform):
// row i of batch row b of q (or k) is multiplied by 1 + 0.1 · (start[b] + i).
struct ScaleByPosition final : heed::detail::QKTransform<double> {
  void apply(const TensorView<double, 4>& q, const TensorView<double, 4>& k, std::span<const index_t> q_start,
             std::span<const index_t> k_start) const override {
    for (index_t b = 0; b < q.size(0); ++b) {
      scale(q.slice(0, b, b + 1), q_start[static_cast<std::size_t>(b)]);
      scale(k.slice(0, b, b + 1), k_start[static_cast<std::size_t>(b)]);
    }
  }
  static void scale(const TensorView<double, 4>& x, index_t start) {
    for (index_t b = 0; b < x.size(0); ++b)
      for (index_t h = 0; h < x.size(1); ++h)
        for (index_t i = 0; i < x.size(2); ++i)
          for (index_t c = 0; c < x.size(3); ++c) x(b, h, i, c) *= 1.0 + 0.1 * double(start + i);
  }
};

// A store that keeps every appended position, as a KV cache does.
struct GrowingStore final : heed::detail::KVStore<double> {
  Tensor<double, 4> k, v;
  index_t length = 0;
  GrowingStore(index_t B, index_t heads, index_t capacity, index_t hd) : k({B, heads, capacity, hd}), v(k) {}
  [[nodiscard]] index_t past(index_t) const override { return length; }
  Views append(const TensorView<const double, 4>& kn, const TensorView<const double, 4>& vn) override {
    for (index_t b = 0; b < kn.size(0); ++b)
      for (index_t h = 0; h < kn.size(1); ++h)
        for (index_t i = 0; i < kn.size(2); ++i)
          for (index_t c = 0; c < kn.size(3); ++c) {
            k(b, h, length + i, c) = kn(b, h, i, c);
            v(b, h, length + i, c) = vn(b, h, i, c);
          }
    length += kn.size(2);
    return {k.view().slice(2, 0, length), v.view().slice(2, 0, length)};
  }
};

// The block's output from the formulas: project, split heads (key/value head h / G), transform,
// attend with `mask`, merge, project.
Tensor<double, 3> expected_output(const Block& block, const Tensor<double, 3>& query, const Tensor<double, 3>& kv,
                                  const heed::reference::MaskFn& mask, bool transform, index_t start) {
  const index_t B = query.size(0), Lq = query.size(1), Lk = kv.size(1);
  const index_t H = block.options().num_heads, Hkv = block.options().num_kv_heads, hd = block.head_dim();
  const auto rows = [](const Tensor<double, 3>& x) {
    return Tensor<double, 2>(x.view().reshape(Shape<2>{x.size(0) * x.size(1), x.size(2)}));
  };
  const auto q = heed::reference::linear(rows(query), block.q_proj.weight(), block.q_proj.bias());
  const auto k = heed::reference::linear(rows(kv), block.k_proj.weight(), block.k_proj.bias());
  const auto v = heed::reference::linear(rows(kv), block.v_proj.weight(), block.v_proj.bias());
  const auto heads = [&](const Tensor<double, 2>& x, index_t n, index_t L) {
    Tensor<double, 4> out({B, n, L, hd});
    for (index_t b = 0; b < B; ++b)
      for (index_t h = 0; h < n; ++h)
        for (index_t i = 0; i < L; ++i)
          for (index_t c = 0; c < hd; ++c) out(b, h, i, c) = x(b * L + i, h * hd + c);
    return out;
  };
  auto qh = heads(q, H, Lq), kh = heads(k, Hkv, Lk);
  const auto vh = heads(v, Hkv, Lk);
  if (transform) {
    ScaleByPosition::scale(qh.view(), start + Lk - Lq);  // queries are the last Lq positions
    ScaleByPosition::scale(kh.view(), start);
  }
  const auto attended = heed::reference::attention(
      qh, kh, vh, heed::reference::scaled_dot(qh, kh, 1 / std::sqrt(double(hd))), mask, false);
  Tensor<double, 2> context({B * Lq, H * hd});
  for (index_t b = 0; b < B; ++b)
    for (index_t h = 0; h < H; ++h)
      for (index_t i = 0; i < Lq; ++i)
        for (index_t c = 0; c < hd; ++c) context(b * Lq + i, h * hd + c) = attended.output(b, h, i, c);
  const auto out = heed::reference::linear(context, block.out_proj.weight(), block.out_proj.bias());
  return Tensor<double, 3>(out.view().reshape(Shape<3>{B, Lq, H * hd}));
}

TEST(AttentionBlock, GroupedKeyValueHeadsFusedAndSeparateProjections) {
  for (index_t kv_heads : {6, 2, 1}) {
    SCOPED_TRACE(testing::Message() << "Hkv " << kv_heads);
    const Block block({.embed_dim = 24, .num_heads = 6, .num_kv_heads = kv_heads, .seed = 5}, "test");
    EXPECT_EQ(block.kv_width(), kv_heads * 4);
    const auto x = heed::randn<double>({2, 9, 24}, 1), source = heed::randn<double>({2, 13, 24}, 2);
    const heed::mask::Dynamic<double> none;
    const auto self = block.forward(x, x, x, none, {.need_weights = true});  // the fused q/k/v GEMM
    EXPECT_TRUE(
        heed::test::all_close(self.output, expected_output(block, x, x, heed::reference::no_mask, false, 0), tol));
    EXPECT_EQ(self.weights.shape(), (Shape<4>{2, 6, 9, 9}));
    const auto cross = block.forward(x, source, source, none, {});
    EXPECT_TRUE(heed::test::all_close(cross.output,
                                      expected_output(block, x, source, heed::reference::no_mask, false, 0), tol));
    EXPECT_TRUE(cross.weights.empty());
  }
  EXPECT_THROW(Block({.embed_dim = 24, .num_heads = 6, .num_kv_heads = 4}, "test"), heed::ShapeError);
  EXPECT_THROW(Block({.embed_dim = 24, .num_heads = 5}, "test"), heed::ShapeError);
}

TEST(AttentionBlock, TransformHookSeesTheProjectedHeadsAtTheirPositions) {
  const Block block({.embed_dim = 16, .num_heads = 4, .num_kv_heads = 2, .seed = 6}, "test");
  const auto x = heed::randn<double>({1, 7, 16}, 3);
  const ScaleByPosition transform;
  const auto r = block.forward(x, x, x, {}, {.qk_transform = &transform});
  EXPECT_TRUE(heed::test::all_close(r.output, expected_output(block, x, x, heed::reference::no_mask, true, 0), tol));
  const auto plain = block.forward(x, x, x, {}, {});
  EXPECT_GT(heed::test::max_abs_diff(r.output, plain.output), 1e-3);  // the hook changed something
}

TEST(AttentionBlock, TwoCallsThroughAStoreEqualOneCausalCall) {
  const Block block({.embed_dim = 16, .num_heads = 4, .num_kv_heads = 2, .seed = 7}, "test");
  const auto x = heed::randn<double>({2, 9, 16}, 4);
  const ScaleByPosition transform;
  heed::mask::Dynamic<double> causal;
  causal.causal.emplace();
  const auto whole = block.forward(x, x, x, causal, {.qk_transform = &transform});
  const auto causal_fn = [](index_t, index_t, index_t i, index_t j) { return j <= i ? 0.0 : heed::reference::hidden; };
  EXPECT_TRUE(heed::test::all_close(whole.output, expected_output(block, x, x, causal_fn, true, 0), tol));

  GrowingStore store(2, 2, 16, 4);
  Tensor<double, 3> parts({2, 9, 16});
  for (const auto& [begin, end] : {std::pair<index_t, index_t>{0, 5}, {5, 6}, {6, 9}}) {
    const Tensor<double, 3> chunk(x.view().slice(1, begin, end));
    heed::mask::Dynamic<double> masks;
    // the block adds the causal mask of a store itself (bottom-right: the chunk is the newest)
    const auto r = block.forward(chunk, chunk, chunk, masks, {.qk_transform = &transform, .kv_store = &store});
    for (index_t b = 0; b < 2; ++b)
      for (index_t i = begin; i < end; ++i)
        for (index_t c = 0; c < 16; ++c) parts(b, i, c) = r.output(b, i - begin, c);
  }
  EXPECT_EQ(store.past(0), 9);
  EXPECT_TRUE(heed::test::all_close(parts, whole.output, tol));
}

TEST(AttentionBlock, ShapesAreCheckedWithEveryShapeInTheMessage) {
  const Block block({.embed_dim = 8, .num_heads = 2, .kdim = 5, .vdim = 6}, "heed::nn::Example");
  const auto q = heed::randn<double>({2, 3, 8}, 1);
  try {
    (void)block.forward(q, heed::randn<double>({2, 4, 6}, 2), heed::randn<double>({2, 4, 6}, 3), {}, {});
    FAIL();
  } catch (const heed::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("heed::nn::Example: expects embed_dim 8, kdim 5, vdim 6 (query [2, 3, 8], key "
                                         "[2, 4, 6], value [2, 4, 6])"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)block.forward(q, heed::randn<double>({2, 4, 5}, 2), heed::randn<double>({2, 5, 6}, 3), {}, {}),
               heed::ShapeError);
}

}  // namespace
