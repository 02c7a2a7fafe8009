// No subnormals in the softmax (issue #41): with scores whose rows span far more than 100,
// under causal, padding, window, Longformer and block-sparse masks, on the tiled loop (small
// tiles, so that a row's maximum rises from tile to tile), the decode path and the standalone
// softmax, every probability heed writes is 0 or at least the smallest normal, the results
// match the double reference, and on x86 they are bit for bit the same with the calling
// thread's FTZ and DAZ set: no subnormal was produced or read on the way. heed never changes
// the caller's MXCSR. Built at every -march variant (and with AVX-512 BF16's pair products).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "heed/core/cast.hpp"
#include "heed/kernels.hpp"
#include "kernels/attention_cases.hpp"
#include "reference/softmax.hpp"

#if defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
#define HEED_TEST_MXCSR 1
#endif

namespace {

using heed::index_t;
using heed::Tensor;
using namespace heed::test;
namespace mask = heed::mask;
namespace reference = heed::reference;
using reference::hidden;

// The flush-to-zero and denormals-are-zero bits of MXCSR, set for the calls inside run(), one
// thread: the floating-point environment is per thread.
class FlushDenormals {
 public:
  FlushDenormals() {
#ifdef HEED_TEST_MXCSR
    saved_ = _mm_getcsr();
    _mm_setcsr(saved_ | 0x8040u);
#endif
  }
  ~FlushDenormals() {
#ifdef HEED_TEST_MXCSR
    _mm_setcsr(saved_);
#endif
  }
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;

 private:
  unsigned saved_ = 0;
};

unsigned mxcsr() {
#ifdef HEED_TEST_MXCSR
  return _mm_getcsr();
#else
  return 0;
#endif
}

// Every element 0 (or NaN, a fully masked row's fill under MaskedRows::nan: not used here) or
// at least the smallest normal float: bfloat16 and float share its exponent range.
template <class T>
::testing::AssertionResult zero_or_normal(const Tensor<T, 4>& w) {
  using A = heed::accumulator_t<T>;
  for (index_t i = 0; i < w.numel(); ++i) {
    const A p = static_cast<A>(w.data()[i]);
    if (p != A(0) && !(p >= std::numeric_limits<A>::min()))
      return ::testing::AssertionFailure() << "probability " << p << " at flat index " << i;
  }
  return ::testing::AssertionSuccess();
}

template <class T>
bool same_bits(const Tensor<T, 4>& a, const Tensor<T, 4>& b) {
  return a.shape() == b.shape() && std::equal(a.data(), a.data() + a.numel(), b.data(),
                                              [](T x, T y) { return std::memcmp(&x, &y, sizeof(T)) == 0; });
}

// Scores q·k/√d of unit-variance q and k, times this: rows span about ±4·scale, far beyond
// the floor of the softmax's exp (64 below the maximum in float, 512 in double).
template <class T>
constexpr double score_scale() {
  return sizeof(T) >= 8 ? 400.0 : 30.0;
}

template <class T>
constexpr Tolerance tolerance() {
  if constexpr (sizeof(T) >= 8) return {1e-9, 1e-11};
  if constexpr (sizeof(T) == 4) return {5e-4, 1e-4};  // scores near 100 carry rounding errors near 100 eps
  // bfloat16 output; on AVX-512 BF16, P rounded to bfloat16 for the pair products: up to
  // 2^-8 · Σ_j p_j·|v_j| more, with |v| < 5 here (test_attention_16bit checks that bound itself)
  return {1e-2, 2e-2};
}

template <class T>
class NoSubnormals : public ::testing::Test {};
using Types = ::testing::Types<float, double, heed::bfloat16>;
TYPED_TEST_SUITE(NoSubnormals, Types);

// Every mask the issue names, with its element-wise reference: f(name, heed_mask, reference_fn);
// Longformer's global tokens only where Lq = Lk, as GlobalTokens needs.
template <class F>
void for_each_mask(index_t B, index_t Lq, index_t Lk, F&& f) {
  Tensor<bool, 2> padding({B, Lk}), global({B, Lk});
  for (index_t b = 0; b < B; ++b)
    for (index_t j = 0; j < Lk; ++j) {
      padding(b, j) = j % 5 == 3 || j >= Lk - 7;
      global(b, j) = j == 0 || j == Lk / 2;
    }
  Tensor<bool, 2> layout({(Lq + 15) / 16, (Lk + 15) / 16});
  for (index_t i = 0; i < layout.size(0); ++i)
    for (index_t j = 0; j < layout.size(1); ++j) layout(i, j) = j == i || (i + 2 * j) % 3 == 0;
  const index_t offset = Lk - Lq;  // causal and window aligned to the last key, as in decoding
  f("causal", mask::Causal{offset},
    [offset](index_t, index_t, index_t i, index_t j) { return j <= i + offset ? 0.0 : hidden; });
  f("padding", mask::KeyPadding{padding},
    [&](index_t b, index_t, index_t, index_t j) { return padding(b, j) ? hidden : 0.0; });
  f("window", mask::SlidingWindow{.left = 20, .right = 9, .offset = offset},
    [offset](index_t, index_t, index_t i, index_t j) {
      return j >= i + offset - 20 && j <= i + offset + 9 ? 0.0 : hidden;
    });
  if (Lq == Lk)
    f("longformer", mask::any(mask::SlidingWindow{12, 12}, mask::GlobalTokens{global}),
      [&](index_t b, index_t, index_t i, index_t j) {
        return (j >= i - 12 && j <= i + 12) || global(b, i) || global(b, j) ? 0.0 : hidden;
      });
  f("block_sparse", mask::BlockSparse{layout, 16},
    [&](index_t, index_t, index_t i, index_t j) { return layout(i / 16, j / 16) ? 0.0 : hidden; });
}

// heed's attention against the reference under every mask, the weights 0 or normal, and the
// same bits with FTZ and DAZ set.
template <class T>
void check_attention(Dims n, heed::AttentionOptions options) {
  const Inputs<heed::accumulator_t<T>> in(n, 11);  // drawn in float for bfloat16, then rounded
  const auto q = heed::cast<T>(in.q), k = heed::cast<T>(in.k), v = heed::cast<T>(in.v);
  const auto qd = reference::to_double(q), kd = reference::to_double(k), vd = reference::to_double(v);
  const double scale = score_scale<T>() / std::sqrt(double(n.d));
  const auto ref_score = reference::scaled_dot(qd, kd, scale);
  options.num_threads = 1;
  for_each_mask(n.B, n.Lq, n.Lk, [&](const char* mask_name, const auto& heed_mask, const reference::MaskFn& ref_mask) {
    SCOPED_TRACE(std::string(mask_name) + ", Lq " + std::to_string(n.Lq) + ", Lk " + std::to_string(n.Lk) +
                 ", weights " + std::to_string(options.need_weights));
    const auto expected = reference::attention(qd, kd, vd, ref_score, ref_mask, false);
    // the rows really span more than 100
    double widest = 0;
    for (index_t i = 0; i < n.Lq; ++i) {
      double lo = INFINITY, hi = -INFINITY;
      for (index_t j = 0; j < n.Lk; ++j) {
        if (ref_mask(0, 0, i, j) == hidden) continue;
        lo = std::min(lo, ref_score(0, 0, i, j));
        hi = std::max(hi, ref_score(0, 0, i, j));
      }
      widest = std::max(widest, hi - lo);
    }
    EXPECT_GT(widest, sizeof(T) >= 8 ? 1000.0 : 100.0);

    const unsigned before = mxcsr();
    const auto got = heed::attention(q, k, v, heed::ScaledDot{scale}, heed_mask, options);
    EXPECT_EQ(mxcsr(), before) << "heed changed the caller's MXCSR";
    EXPECT_TRUE(all_close(got.output, expected.output, tolerance<T>()));
    if (options.need_weights) {
      EXPECT_TRUE(zero_or_normal(got.weights));
      EXPECT_TRUE(all_close(got.weights, expected.weights, tolerance<T>()));
    }
#ifdef HEED_TEST_MXCSR
    const FlushDenormals flushed;
    const auto ftz = heed::attention(q, k, v, heed::ScaledDot{scale}, heed_mask, options);
    EXPECT_TRUE(same_bits(ftz.output, got.output)) << "FTZ/DAZ changed the output: a subnormal was on the way";
    if (options.need_weights) {
      EXPECT_TRUE(same_bits(ftz.weights, got.weights)) << "FTZ/DAZ changed the weights";
    }
#endif
  });
}

TYPED_TEST(NoSubnormals, TiledAttentionWithSmallTiles) {
  for (bool weights : {true, false})
    check_attention<TypeParam>({.B = 2, .H = 2, .Lq = 77, .Lk = 77, .d = 16, .dv = 24},
                               {.need_weights = weights, .block_q = 8, .block_k = 16});
}

TYPED_TEST(NoSubnormals, TiledAttentionWithDefaultTiles) {
  for (bool weights : {true, false})
    check_attention<TypeParam>({.B = 1, .H = 2, .Lq = 300, .Lk = 300, .d = 32, .dv = 32}, {.need_weights = weights});
}

TYPED_TEST(NoSubnormals, DecodePath) {  // a few query rows over many keys, no weights
  check_attention<TypeParam>({.B = 1, .H = 2, .Lq = 3, .Lk = 1100, .d = 16, .dv = 16}, {});
}

TYPED_TEST(NoSubnormals, StandaloneSoftmax) {
  using T = TypeParam;
  using A = heed::accumulator_t<T>;
  Tensor<A, 4> x = heed::randn<A>({1, 2, 9, 257}, 5);
  for (index_t i = 0; i < x.numel(); ++i) x.data()[i] *= A(score_scale<T>());
  x(0, 1, 3, 100) = -std::numeric_limits<A>::infinity();
  const auto xs = heed::cast<T>(x);
  const unsigned before = mxcsr();
  const auto got = heed::softmax(xs);
  EXPECT_EQ(mxcsr(), before);
  EXPECT_TRUE(zero_or_normal(got));
  EXPECT_TRUE(all_close(got, reference::softmax(reference::to_double(xs)), tolerance<T>()));
#ifdef HEED_TEST_MXCSR
  const FlushDenormals flushed;
  EXPECT_TRUE(same_bits(heed::softmax(xs), got));
#endif
}

}  // namespace
