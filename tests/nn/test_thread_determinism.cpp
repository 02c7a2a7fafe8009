// "Deterministic" (docs/design.md, Threads): every output is bit for bit the same on 1, 2 and 8
// workers and on a program's executor, over attention (prefill with weights, decode, bfloat16),
// the GEMM (Linear, and split into column chunks), SwiGLU, the encoder, a decoder's cached steps, CBAM and a ViT. Each
// worker's share depends on the work, never on the worker count: a tile or a row block is computed the same way whoever
// computes it. The preset `tsan` runs this file under ThreadSanitizer.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "heed/core/cast.hpp"
#include "heed/core/executor.hpp"
#include "heed/core/random.hpp"
#include "heed/kernels/attention.hpp"
#include "heed/kernels/gemm.hpp"
#include "heed/nn/linear.hpp"
#include "heed/nn/swiglu.hpp"
#include "heed/nn/transformer_decoder.hpp"
#include "heed/nn/transformer_encoder.hpp"
#include "heed/nn/vision/cbam.hpp"
#include "heed/nn/vision/vision_transformer.hpp"

namespace {

using heed::index_t;
using heed::Tensor;
using Bits = std::vector<unsigned char>;

template <class T>
void append(Bits& out, const T& tensor) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(tensor.data());
  out.insert(out.end(), bytes, bytes + tensor.numel() * static_cast<index_t>(sizeof(*tensor.data())));
}

// Each task on a thread of its own, started per call: a pool unlike heed's team.
class ThreadPerTask final : public heed::Executor {
 public:
  [[nodiscard]] int concurrency() const noexcept override { return 3; }
  void run(int n, heed::TaskRef task) override {
    std::vector<std::thread> threads;
    for (int i = 1; i < n; ++i) threads.emplace_back([task, i] { task(i); });
    task(0);
    for (auto& thread : threads) thread.join();
  }
};

// run() on one worker, then on 2 and 8 and on an executor of 3: the same bits each time.
void expect_the_same_on_any_workers(const std::function<Bits()>& run) {
  heed::set_num_threads(1);
  const Bits one = run();
  ASSERT_FALSE(one.empty());
  for (const int threads : {2, 8}) {
    heed::set_num_threads(threads);
    EXPECT_TRUE(run() == one) << threads << " workers";
  }
  heed::set_num_threads(0);
  heed::set_executor(std::make_shared<ThreadPerTask>());
  const Bits on_executor = run();
  heed::set_executor(nullptr);
  EXPECT_TRUE(on_executor == one) << "on the executor";
}

TEST(ThreadDeterminism, AttentionPrefillWithWeights) {
  const auto q = heed::randn<float>({2, 4, 150, 32}, 1);
  const auto k = heed::randn<float>({2, 2, 230, 32}, 2);  // two query heads per key head
  const auto v = heed::randn<float>({2, 2, 230, 32}, 3);
  expect_the_same_on_any_workers([&] {
    const auto r = heed::attention(q, k, v, heed::ScaledDot{}, heed::mask::Causal{}, {.need_weights = true});
    Bits out;
    append(out, r.output);
    append(out, r.weights);
    return out;
  });
}

TEST(ThreadDeterminism, AttentionDecodeAndBfloat16) {
  const auto q = heed::randn<float>({1, 8, 1, 64}, 4);
  const auto k = heed::randn<float>({1, 8, 1500, 64}, 5);
  const auto v = heed::randn<float>({1, 8, 1500, 64}, 6);
  const auto qb = heed::cast<heed::bfloat16>(heed::randn<float>({1, 4, 130, 64}, 7));
  const auto kb = heed::cast<heed::bfloat16>(heed::randn<float>({1, 4, 260, 64}, 8));
  expect_the_same_on_any_workers([&] {
    Bits out;
    append(out, heed::scaled_dot_product_attention(q, k, v));
    append(out, heed::scaled_dot_product_attention(qb, kb, kb));
    return out;
  });
}

TEST(ThreadDeterminism, LinearEncoderAndCbam) {
  const heed::nn::Linear<float> linear({.in_features = 96, .out_features = 200, .seed = 9});
  const auto x = heed::randn<float>({3, 170, 96}, 10);
  const heed::nn::TransformerEncoder<float> encoder(
      {.d_model = 64, .nhead = 4, .dim_feedforward = 128, .num_layers = 2, .seed = 11});
  const auto tokens = heed::randn<float>({2, 90, 64}, 12);
  const heed::nn::CBAM<float> cbam({.channels = 32, .reduction = 8, .seed = 13});
  const auto image = heed::randn<float>({3, 32, 14, 14}, 14);
  expect_the_same_on_any_workers([&] {
    Bits out;
    append(out, linear(x));
    append(out, encoder(tokens, {.is_causal = true}));
    append(out, cbam(image));
    return out;
  });
}

// SwiGLU: gate and up as one GEMM, the product split over rows (300 rows of 300), in float and
// bfloat16; and one row, a decoding step's.
TEST(ThreadDeterminism, SwiGLU) {
  const heed::nn::SwiGLU<float> mlp({.dim = 64, .hidden_dim = 300, .bias = true, .seed = 15});
  const heed::nn::SwiGLU<heed::bfloat16> mlp16({.dim = 64, .hidden_dim = 300, .seed = 16});
  const auto x = heed::randn<float>({300, 64}, 17);
  const auto x16 = heed::cast<heed::bfloat16>(x);
  expect_the_same_on_any_workers([&] {
    Bits out;
    append(out, mlp(x));
    append(out, mlp16(x16));
    append(out, mlp16(heed::cast<heed::bfloat16>(heed::randn<float>({1, 64}, 18))));
    return out;
  });
}

// A ViT (its head is zero until load(), so every block's weights stand for its output).
TEST(ThreadDeterminism, VisionTransformer) {
  const heed::nn::VisionTransformer<float> vit({.image_size = 32,
                                                .patch_size = 4,
                                                .num_layers = 2,
                                                .num_heads = 4,
                                                .hidden_dim = 64,
                                                .mlp_dim = 128,
                                                .num_classes = 10,
                                                .seed = 19});
  const auto images = heed::randn<float>({3, 3, 32, 32}, 20);
  expect_the_same_on_any_workers([&] {
    Bits out;
    const auto r = vit.forward(images, {.need_weights = true});
    for (const auto& w : r.weights) append(out, w);
    append(out, vit.tokens(images));
    return out;
  });
}

// Few row blocks, so that the workers split each into column chunks: with an addend, bias and
// ReLU in float, and in 16-bit storage, whose chunks start from the addend and round their own
// columns.
template <class Storage>
Bits gemm_with_addend_bias_relu(index_t m, index_t n, index_t k) {
  const auto a = heed::cast<Storage>(heed::randn<float>({m, k}, 20));
  const auto w = heed::cast<Storage>(heed::randn<float>({n, k}, 21));
  const auto bias = heed::cast<Storage>(heed::randn<float>({n}, 22));
  const auto addend = heed::cast<Storage>(heed::randn<float>({m, n}, 23));
  const heed::PackedMatrix<Storage> packed(w.data(), n, k, bias.data());
  Tensor<Storage, 2> c({m, n});
  heed::gemm_nt(a.data(), k, m, packed, c.data(), n, {.addend = addend.data(), .ld_addend = n, .relu = true});
  Bits out;
  append(out, c);
  return out;
}

TEST(ThreadDeterminism, GemmSplitIntoColumnChunks) {
  expect_the_same_on_any_workers([] {
    Bits out = gemm_with_addend_bias_relu<float>(200, 333, 70);
    const Bits b = gemm_with_addend_bias_relu<heed::bfloat16>(150, 300, 64);
    const Bits h = gemm_with_addend_bias_relu<heed::half>(100, 129, 20);
    out.insert(out.end(), b.begin(), b.end());
    out.insert(out.end(), h.begin(), h.end());
    return out;
  });
}

TEST(ThreadDeterminism, DecoderPromptAndCachedSteps) {
  const heed::nn::TransformerDecoder<float> decoder(
      {.d_model = 64, .nhead = 4, .dim_feedforward = 128, .num_layers = 2, .seed = 15});
  const auto target = heed::randn<float>({2, 40, 64}, 16);
  const auto memory = heed::randn<float>({2, 50, 64}, 17);
  expect_the_same_on_any_workers([&] {
    auto cache = decoder.make_cache({.batch = 2, .max_len = 40});
    Bits out;
    for (index_t begin = 0; begin < 40;) {
      const index_t end = begin == 0 ? 32 : begin + 1;  // a prompt, then one token a call
      const Tensor<float, 3> part(target.view().slice(1, begin, end));
      append(out, decoder(part, memory, {.cache = &cache}));
      begin = end;
    }
    return out;
  });
}

}  // namespace
