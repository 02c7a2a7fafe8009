// Fuzz target: heed's modules through their public API (issue #46). The input bytes choose a
// module, its options (0, odd and extreme sizes included) and its input; the call either throws
// a heed::Error or returns a result that holds: Linear, LayerNorm, RMSNorm and Embedding match
// the double-precision reference (tests/reference/nn.hpp); MultiheadAttention, the encoder
// layer, the vision modules, conv2d and the KV cache return the shapes PyTorch returns,
// attention weights that sum to one per row (or zero, fully masked), and finite values for
// finite inputs. Anything else aborts: a finding.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "fuzz/fuzz_target.hpp"
#include "heed/core/cast.hpp"
#include "heed/core/random.hpp"
#include "heed/kernels.hpp"
#include "heed/nn.hpp"
#include "reference/nn.hpp"

namespace {

using heed::index_t;
using heed::Tensor;

using heed::fuzz::Bytes;

[[noreturn]] void finding(const char* what, double got, double want) {
  std::fprintf(stderr, "fuzz_modules: %s: heed %.9g, expected %.9g\n", what, got, want);
  std::abort();
}

void expect_close(const char* what, double got, double want, double tol) {
  if (std::isnan(want) ? !std::isnan(got) : !(std::abs(got - want) <= tol * (1 + std::abs(want))))
    finding(what, got, want);
}

template <class X>
void expect_finite(const char* what, const X& x) {
  for (index_t i = 0; i < x.numel(); ++i)
    if (!std::isfinite(static_cast<double>(x.data()[i]))) finding(what, static_cast<double>(x.data()[i]), 0);
}

template <std::size_t R>
void expect_shape(const char* what, const heed::Shape<R>& got, const heed::Shape<R>& want) {
  if (got != want) finding(what, static_cast<double>(got[R - 1]), static_cast<double>(want[R - 1]));
}

// Attention weights [B, H, Lq, Lk]: each row sums to one, or to zero when fully masked.
void expect_rows_sum_to_one(const Tensor<float, 4>& w) {
  for (index_t b = 0; b < w.size(0); ++b)
    for (index_t h = 0; h < w.size(1); ++h)
      for (index_t i = 0; i < w.size(2); ++i) {
        double sum = 0;
        for (index_t j = 0; j < w.size(3); ++j) sum += w(b, h, i, j);
        if (!(std::abs(sum - 1) <= 1e-4) && !(sum == 0)) finding("a weights row's sum", sum, 1);
      }
}

void linear(Bytes& in) {
  const index_t n = in.size(6), fin = in.size(20), fout = in.size(20);
  const bool bias = in.flag();
  heed::nn::Linear<float> l({.in_features = fin, .out_features = fout, .bias = bias, .seed = in.byte()});
  const auto x = heed::randn<float>({n, fin}, in.byte());
  const auto y = l(x);
  const auto want =
      heed::reference::linear(heed::cast<double>(x), heed::cast<double>(l.weight()), heed::cast<double>(l.bias()));
  expect_shape("Linear's output", y.shape(), heed::Shape<2>{n, fout});
  for (index_t i = 0; i < y.numel(); ++i) expect_close("Linear", y.data()[i], want.data()[i], 1e-5);
}

void norms(Bytes& in) {
  const index_t n = in.size(6), d = in.size(40);
  const double eps = in.flag() ? 1e-5 : 1e-12;
  const auto x = heed::randn<float>({n, d}, in.byte());
  if (in.flag()) {
    heed::nn::LayerNorm<float> ln({.normalized_shape = d, .eps = eps});
    const auto y = ln(x);
    const auto want = heed::reference::layer_norm(heed::cast<double>(x), {}, {}, eps);
    for (index_t i = 0; i < y.numel(); ++i) expect_close("LayerNorm", y.data()[i], want.data()[i], 1e-4);
  } else {
    heed::nn::RMSNorm<float> rms({.normalized_shape = d, .eps = eps});
    const auto y = rms(x);
    const auto want = heed::reference::rms_norm(heed::cast<double>(x), {}, eps);
    for (index_t i = 0; i < y.numel(); ++i) expect_close("RMSNorm", y.data()[i], want.data()[i], 1e-4);
  }
}

void embedding(Bytes& in) {
  const index_t n = in.size(10), dim = in.size(8);
  const std::optional<index_t> padding = in.flag() ? std::optional<index_t>(in.size(12) - 6) : std::nullopt;
  heed::nn::Embedding<float> e({.num_embeddings = n, .embedding_dim = dim, .padding_idx = padding, .seed = in.byte()});
  Tensor<std::int64_t, 2> ids({in.below(3), in.below(5)});
  for (index_t i = 0; i < ids.numel(); ++i) ids.data()[i] = static_cast<std::int64_t>(in.below(n + 3)) - 1;
  const auto y = e(ids);
  expect_finite("Embedding", y);
  if (e.options().padding_idx && (*e.options().padding_idx < 0 || *e.options().padding_idx >= n))
    finding("Embedding's padding_idx", static_cast<double>(*e.options().padding_idx), 0);
}

void multihead(Bytes& in) {
  const index_t H = in.size(4), E = H > 0 && H < 16 ? H * (1 + in.below(4)) : in.size(8);
  const heed::nn::MultiheadAttentionOptions o{.embed_dim = E,
                                              .num_heads = H,
                                              .bias = in.flag(),
                                              .add_bias_kv = in.flag(),
                                              .add_zero_attn = in.flag(),
                                              .kdim = in.flag() ? in.size(6) : 0,
                                              .vdim = in.flag() ? in.size(6) : 0,
                                              .seed = in.byte()};
  heed::nn::MultiheadAttention<float> mha(o);
  const index_t B = in.below(3), Lq = in.size(12), Lk = in.flag() ? Lq : in.size(12);
  const index_t kdim = o.kdim > 0 ? o.kdim : E, vdim = o.vdim > 0 ? o.vdim : E;
  const auto q = heed::randn<float>({B, Lq, E}, in.byte()), k = heed::randn<float>({B, Lk, kdim}, in.byte()),
             v = heed::randn<float>({B, Lk, vdim}, in.byte());
  heed::nn::MultiheadAttentionCall<float> call;
  Tensor<bool, 2> pad({B, Lk});
  for (index_t i = 0; i < pad.numel(); ++i) pad.data()[i] = (in.byte() & 7u) == 0;
  if (in.flag()) call.key_padding_mask = pad;
  call.is_causal = in.flag();
  call.average_attn_weights = in.flag();
  heed::nn::KVCache<float> cache;
  if (in.byte() % 4 == 0) {
    cache = mha.make_cache({.batch = B, .max_len = in.size(24)});
    call.cache = &cache;
  }
  const auto r = mha(q, k, v, call);
  expect_shape("MultiheadAttention's output", r.output.shape(), heed::Shape<3>{B, Lq, E});
  expect_finite("MultiheadAttention", r.output);
  expect_rows_sum_to_one(r.weights);
}

void encoder(Bytes& in) {
  const index_t H = in.size(4), d = H > 0 && H < 16 ? H * (1 + in.below(4)) : in.size(8);
  heed::nn::TransformerEncoderLayer<float> layer(
      {.d_model = d, .nhead = H, .dim_feedforward = in.size(24), .norm_first = in.flag(), .seed = in.byte()});
  const index_t B = in.below(3), L = in.size(12);
  const auto x = heed::randn<float>({B, L, d}, in.byte());
  Tensor<bool, 2> pad({B, L});
  for (index_t i = 0; i < pad.numel(); ++i) pad.data()[i] = (in.byte() & 3u) == 0;
  heed::nn::EncoderCall call;
  if (in.flag()) call.src_key_padding_mask = pad;
  call.is_causal = in.flag();
  const auto y = layer(x, call);
  expect_shape("the encoder layer's output", y.shape(), heed::Shape<3>{B, L, d});
  expect_finite("the encoder layer", y);
}

void vision(Bytes& in) {
  const index_t B = in.below(3), C = in.size(12), Hh = in.size(9), W = in.size(9);
  const auto x = heed::randn<float>({B, C, Hh, W}, in.byte());
  switch (in.byte() % 4) {
    case 0: {
      heed::nn::SEBlock<float> se(
          {.channels = C, .reduction = in.size(8), .squeeze_channels = in.flag() ? in.size(40) : 0});
      const auto r = se.forward(x);
      expect_shape("SEBlock's output", r.output.shape(), x.shape());
      expect_finite("SEBlock", r.output);
      break;
    }
    case 1: {
      heed::nn::CBAM<float> cbam({.channels = C, .reduction = in.size(8), .kernel_size = in.flag() ? 7 : 3});
      const auto r = cbam.forward(x);
      expect_shape("CBAM's output", r.output.shape(), x.shape());
      expect_finite("CBAM", r.output);
      break;
    }
    case 2: {
      const auto w = heed::randn<float>({in.size(4), C, in.size(4), in.size(4)}, in.byte());
      const auto y = heed::conv2d(x, w, {}, {.padding = in.size(3), .stride = in.size(3)});
      expect_finite("conv2d", y);
      break;
    }
    default: {
      const auto r = heed::channel_mean_max(x);
      expect_shape("channel_mean_max's output", r.shape(), heed::Shape<4>{B, 2, Hh, W});
      expect_finite("channel_mean_max", r);
    }
  }
}

void cache_and_positions(Bytes& in) {
  const index_t B = in.size(3), Hkv = in.size(3), d = in.size(8), capacity = in.size(16);
  heed::nn::KVCache<float> cache(B, Hkv, d, capacity);
  const auto k = heed::randn<float>({B, Hkv, in.size(8), d}, in.byte());
  (void)cache.append(k.view(), k.view());
  cache.truncate_row(in.below(B + 2) - 1, in.size(18));
  cache.truncate(in.size(18));
  heed::Rotary<float> rope(d, {.dim = in.flag() ? 0 : in.size(8), .max_positions = in.size(64)});
  auto x = heed::randn<float>({B, Hkv, in.size(8), d}, in.byte());
  rope.apply(x.view(), in.flag() ? in.size(1 << 20) : std::numeric_limits<index_t>::max() - in.below(16));
  expect_finite("Rotary", x);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Bytes in(data, size);
  return heed::fuzz::run([&] {
    switch (in.byte() % 7) {
      case 0:
        return linear(in);
      case 1:
        return norms(in);
      case 2:
        return embedding(in);
      case 3:
        return multihead(in);
      case 4:
        return encoder(in);
      case 5:
        return vision(in);
      default:
        return cache_and_positions(in);
    }
  });
}
