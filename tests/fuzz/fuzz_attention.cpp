// Fuzz target: heed's attention through its public API (issue #46). The input bytes choose the
// shapes (0, 1, odd, up to a few hundred), the scalar type, the score policy, a mask with its
// offsets and layouts (extremes included: INT64_MAX as "unbounded", INT64_MIN, ±2^62), and the
// options (tile sizes, weights and their strides, masked rows, threads); the call then either
// throws a heed::Error or returns what the double-precision reference (tests/reference/)
// computes from the same (rounded) inputs. Anything else aborts: a finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "fuzz/fuzz_target.hpp"
#include "heed/core/cast.hpp"
#include "heed/core/random.hpp"
#include "heed/kernels.hpp"
#include "reference/attention.hpp"

namespace {

using heed::index_t;
using heed::Tensor;
__extension__ typedef __int128 wide;  // the reference's index arithmetic: no overflow for any offset

using heed::fuzz::Bytes;

[[noreturn]] void finding(const char* what, double got, double want, index_t at) {
  std::fprintf(stderr, "fuzz_attention: %s at flat index %lld: heed %.9g, reference %.9g\n", what,
               static_cast<long long>(at), got, want);
  std::abort();
}

// One mask policy over every mask the target tries, forwarding to the chosen one: one driver
// instantiation per scalar type and score serves them all (a user's own mask policy, as the
// MaskPolicy concept allows), and each mask's classify, apply, next_visible_key and tile
// preference are the library's own.
using Masks = std::variant<heed::mask::None, heed::mask::Causal, heed::mask::SlidingWindow, heed::mask::KeyPadding,
                           heed::mask::Allowed, heed::mask::Bias<float>, heed::mask::ALiBi, heed::mask::BlockSparse,
                           heed::mask::GlobalTokens, heed::mask::AllOf<heed::mask::Causal, heed::mask::KeyPadding>,
                           heed::mask::AnyOf<heed::mask::SlidingWindow, heed::mask::GlobalTokens>>;
struct FuzzMask {
  Masks m;
  void check(const heed::Shape<4>& dims) const {
    std::visit([&](const auto& x) { x.check(dims); }, m);
  }
  [[nodiscard]] heed::mask::Tile classify(const heed::TileRef& t) const noexcept {
    return std::visit([&](const auto& x) { return x.classify(t); }, m);
  }
  template <class T>
  void apply(const heed::TileRef& t, T* scores, index_t ld) const noexcept {
    std::visit([&](const auto& x) { x.apply(t, scores, ld); }, m);
  }
  [[nodiscard]] index_t next_visible_key(const heed::TileRef& t) const noexcept {
    return std::visit([&](const auto& x) { return heed::mask::next_visible_key(x, t); }, m);
  }
  [[nodiscard]] heed::TileShape preferred_tiles() const noexcept {
    heed::TileShape s;
    std::visit([&](const auto& x) { heed::mask::merge_preference(s, x); }, m);
    return s;
  }
};

// The mask and, for the reference, what it adds to score (b, h, i, j): 0, -inf or a bias.
struct Chosen {
  FuzzMask mask;
  heed::reference::MaskFn add;
  bool comparable = true;  // false: only "finite weights summing to one" is checked (ALiBi far away)
  std::string text = "";   // the mask's numbers, for HEED_FUZZ_VERBOSE
};

bool causal_visible(index_t i, index_t j, index_t offset) {
  return wide{j} <= wide{i} + offset;
}
bool window_visible(index_t i, index_t j, const heed::mask::SlidingWindow& w) {
  const wide c = wide{i} + w.offset;
  return c - w.left <= j && j <= c + w.right;
}

Chosen choose_mask(Bytes& in, index_t B, index_t H, index_t Lq, index_t Lk) {
  constexpr double hid = heed::reference::hidden;
  const auto bits = [&](index_t n) {
    auto flags = std::make_shared<std::vector<bool>>();
    for (index_t i = 0; i < n; ++i) flags->push_back((in.byte() & 3u) != 0);  // mostly true
    return flags;
  };
  switch (in.byte() % 11) {
    case 1: {
      const heed::mask::Causal c{in.extreme(Lk + 2)};
      return {{c},
              [c](index_t, index_t, index_t i, index_t j) { return causal_visible(i, j, c.offset) ? 0.0 : hid; },
              true,
              "causal " + std::to_string(c.offset)};
    }
    case 2: {
      const heed::mask::SlidingWindow w{in.extreme(Lk), in.extreme(Lk), in.extreme(Lk)};
      return {{w},
              [w](index_t, index_t, index_t i, index_t j) { return window_visible(i, j, w) ? 0.0 : hid; },
              true,
              "window " + std::to_string(w.left) + " " + std::to_string(w.right) + " " + std::to_string(w.offset)};
    }
    case 3: {
      const auto f = bits(B * Lk);
      Tensor<bool, 2> pad({B, Lk});
      for (index_t x = 0; x < B * Lk; ++x) pad.data()[x] = !(*f)[static_cast<std::size_t>(x)];
      return {{heed::mask::KeyPadding{std::move(pad)}}, [f, Lk](index_t b, index_t, index_t, index_t j) {
                return (*f)[static_cast<std::size_t>(b * Lk + j)] ? 0.0 : hid;
              }};
    }
    case 4: {  // broadcast over batch and heads, or not
      const bool per_b = in.flag(), per_h = in.flag();
      const index_t nb = per_b ? B : 1, nh = per_h ? H : 1;
      const auto f = bits(nb * nh * Lq * Lk);
      Tensor<bool, 4> allowed({nb, nh, Lq, Lk});
      for (index_t x = 0; x < allowed.numel(); ++x) allowed.data()[x] = (*f)[static_cast<std::size_t>(x)];
      return {{heed::mask::Allowed{std::move(allowed)}}, [=](index_t b, index_t h, index_t i, index_t j) {
                return (*f)[static_cast<std::size_t>((((per_b ? b : 0) * nh + (per_h ? h : 0)) * Lq + i) * Lk + j)]
                           ? 0.0
                           : hid;
              }};
    }
    case 5: {
      auto bias = std::make_shared<Tensor<float, 2>>(heed::randn<float>({Lq, Lk}, in.byte()));
      for (index_t x = 0; x < bias->numel(); ++x)
        if ((in.byte() & 7u) == 0) bias->data()[x] = -std::numeric_limits<float>::infinity();
      return {{heed::mask::Bias<float>{Tensor<float, 2>(*bias)}},
              [bias](index_t, index_t, index_t i, index_t j) { return static_cast<double>((*bias)(i, j)); }};
    }
    case 6: {
      const index_t offset = in.extreme(Lk);
      const bool near = offset >= -1024 && offset <= 1024;
      heed::mask::ALiBi a{heed::alibi_slopes(H), offset};
      const auto slopes = a.slopes;
      return {{std::move(a)},
              [slopes, offset](index_t, index_t h, index_t i, index_t j) {
                return slopes[static_cast<std::size_t>(h)] * static_cast<double>(wide{j} - i - offset);
              },
              near};
    }
    case 7: {
      const index_t block = in.flag() ? 1 + in.below(70) : in.extreme(70);
      const index_t bq = block <= 0 ? 1 : (Lq == 0 ? 0 : (Lq - 1) / block + 1),
                    bk = block <= 0 ? 1 : (Lk == 0 ? 0 : (Lk - 1) / block + 1);
      const auto f = bits(bq * bk);
      Tensor<bool, 2> layout({bq, bk});
      for (index_t x = 0; x < layout.numel(); ++x) layout.data()[x] = (*f)[static_cast<std::size_t>(x)];
      return {{heed::mask::BlockSparse{std::move(layout), block}}, [=](index_t, index_t, index_t i, index_t j) {
                return (*f)[static_cast<std::size_t>(i / block * bk + j / block)] ? 0.0 : hid;
              }};
    }
    case 8:
    case 10: {
      const index_t L = Lk;  // Lq = Lk, or the mask's check refuses the call
      auto g = std::make_shared<std::vector<bool>>();
      for (index_t x = 0; x < L; ++x) g->push_back((in.byte() & 15u) == 0);
      Tensor<bool, 1> tokens({L});
      for (index_t x = 0; x < L; ++x) tokens(x) = (*g)[static_cast<std::size_t>(x)];
      const auto global = [g](index_t i, index_t j) {
        return (*g)[static_cast<std::size_t>(j)] ||
               (i < static_cast<index_t>(g->size()) && (*g)[static_cast<std::size_t>(i)]);
      };
      if (in.byte() % 2 == 0) {
        return {{heed::mask::GlobalTokens{tokens}},
                [global](index_t, index_t, index_t i, index_t j) { return global(i, j) ? 0.0 : hid; }};
      }
      const heed::mask::SlidingWindow w{in.below(9), in.below(9), 0};
      return {{heed::mask::any(w, heed::mask::GlobalTokens{tokens})},
              [global, w](index_t, index_t, index_t i, index_t j) {
                return global(i, j) || window_visible(i, j, w) ? 0.0 : hid;
              }};
    }
    case 9: {
      const heed::mask::Causal c{in.extreme(Lk)};
      const auto f = bits(B * Lk);
      Tensor<bool, 2> pad({B, Lk});
      for (index_t x = 0; x < B * Lk; ++x) pad.data()[x] = !(*f)[static_cast<std::size_t>(x)];
      return {{heed::mask::all(c, heed::mask::KeyPadding{std::move(pad)})},
              [f, c, Lk](index_t b, index_t, index_t i, index_t j) {
                return causal_visible(i, j, c.offset) && (*f)[static_cast<std::size_t>(b * Lk + j)] ? 0.0 : hid;
              }};
    }
    default:
      return {{heed::mask::None{}}, heed::reference::no_mask};
  }
}

template <class T>
Tensor<T, 4> random(Bytes& in, heed::Shape<4> shape) {
  return heed::cast<T>(heed::randn<float>(shape, in.byte()));
}

// Relative tolerance of the type's rounding: inputs are rounded the same for the reference, the
// 16-bit paths also round P (bfloat16 pair products) and the output.
template <class T>
double tolerance() {
  if constexpr (std::is_same_v<T, double>) return 1e-9;
  if constexpr (std::is_same_v<T, float>) return 2e-4;
  if constexpr (std::is_same_v<T, heed::half>) return 1e-2;
  return 4e-2;  // bfloat16
}

template <class T, class Score>
void attend(Bytes& in, const Score& score, const heed::reference::ScoreFn* additive_ref, index_t d,
            const Tensor<T, 4>& q, const Tensor<T, 4>& k, const Tensor<T, 4>& v, index_t H) {
  const index_t B = q.size(0), Lq = q.size(2), Lk = k.size(2), dv = v.size(3);
  Chosen chosen = choose_mask(in, B, H, Lq, Lk);
  static constexpr index_t blocks_q[] = {
      0, 0, 1, 2, 5, 16, 24, 96, index_t{1} << 40, std::numeric_limits<index_t>::max()};
  static constexpr index_t blocks_k[] = {0, 0, 1, 2, 3, 8, 64, 256, 1000, std::numeric_limits<index_t>::max()};
  static constexpr int threads[] = {0, 1, 2, 3, 1 << 30};
  heed::AttentionOptions o;
  o.need_weights = in.flag();
  o.masked_rows = in.flag() ? heed::MaskedRows::nan : heed::MaskedRows::zero;
  o.num_threads = threads[in.byte() % 5];
  o.block_q = blocks_q[in.byte() % 10];
  o.block_k = blocks_k[in.byte() % 10];
  const bool transposed_weights = in.flag();

  Tensor<T, 4> out({B, H, Lq, dv});
  Tensor<T, 4> weights_buffer;
  heed::TensorView<T, 4> weights;
  if (o.need_weights) {
    weights_buffer = transposed_weights ? Tensor<T, 4>({B, H, Lk, Lq}) : Tensor<T, 4>({B, H, Lq, Lk});
    weights = transposed_weights ? weights_buffer.view().transpose(2, 3) : weights_buffer.view();
  }
  if (std::getenv("HEED_FUZZ_VERBOSE"))  // what a finding ran: the call's shapes, mask and options
    std::fprintf(stderr,
                 "q [%lld, %lld, %lld, %lld], k/v heads %lld, Lk %lld, dv %lld, mask %zu (%s), weights %d%s, "
                 "masked_rows %d, threads %d, block_q %lld, block_k %lld\n",
                 static_cast<long long>(B), static_cast<long long>(H), static_cast<long long>(Lq),
                 static_cast<long long>(q.size(3)), static_cast<long long>(k.size(1)), static_cast<long long>(Lk),
                 static_cast<long long>(dv), chosen.mask.m.index(), chosen.text.c_str(), o.need_weights ? 1 : 0,
                 transposed_weights ? " (transposed)" : "", static_cast<int>(o.masked_rows), o.num_threads,
                 static_cast<long long>(o.block_q), static_cast<long long>(o.block_k));
  heed::attention_into<T>(out.view(), weights, q.view(), k.view(), v.view(), score, chosen.mask, o);

  const auto qd = heed::cast<double>(q), kd = heed::cast<double>(k), vd = heed::cast<double>(v);
  const double scale = d > 0 ? 1 / std::sqrt(static_cast<double>(d)) : 1.0;
  const auto score_fn = additive_ref ? *additive_ref
                        : d == 0     ? heed::reference::ScoreFn([](index_t, index_t, index_t, index_t) { return 0.0; })
                                 : heed::reference::scaled_dot(qd, kd, std::is_same_v<Score, heed::Dot> ? 1.0 : scale);
  const Tensor<double, 4> v_ref = dv > 0 ? vd : Tensor<double, 4>(heed::Shape<4>{B, k.size(1), Lk, 1});
  // (no keys at all: zeros in either mode, as PyTorch's softmax(empty) · v)
  const bool nan_rows = o.masked_rows == heed::MaskedRows::nan && Lk > 0;
  const auto ref = heed::reference::attention(qd, kd, v_ref, score_fn, chosen.add, nan_rows);
  const double tol = tolerance<T>();
  const auto compare = [&](const char* what, const auto& got, const Tensor<double, 4>& want) {
    index_t flat = 0;
    for (index_t b = 0; b < got.size(0); ++b)
      for (index_t h = 0; h < got.size(1); ++h)
        for (index_t i = 0; i < got.size(2); ++i)
          for (index_t j = 0; j < got.size(3); ++j, ++flat) {
            const double g = static_cast<double>(got(b, h, i, j)), w = want(b, h, i, j);
            if (std::isnan(w) ? !std::isnan(g) : !(std::abs(g - w) <= tol * (1 + std::abs(w))))
              finding(what, g, w, flat);
          }
  };
  if (chosen.comparable) {
    compare("output", out.view(), ref.output);
    if (o.need_weights) compare("weights", weights, ref.weights);
  } else if (o.need_weights) {  // ALiBi far away: rows of finite weights summing to one (or zero, or NaN)
    for (index_t b = 0; b < B; ++b)
      for (index_t h = 0; h < H; ++h)
        for (index_t i = 0; i < Lq; ++i) {
          double sum = 0;
          for (index_t j = 0; j < Lk; ++j) sum += static_cast<double>(weights(b, h, i, j));
          if (Lk > 0 && !(std::abs(sum - 1) <= 1e-2)) finding("ALiBi weights' row sum", sum, 1.0, i);
        }
  }
}

template <class T>
void run_typed(Bytes& in) {
  // shapes: mostly small, sometimes a few hundred; the reference's work kept under ~4M products
  const index_t B = in.below(3), Hkv = in.below(4), G = 1 + in.below(3), H = Hkv * G;
  const bool long_one = in.byte() % 8 == 0;
  index_t Lq = long_one ? in.below(300) : in.below(40), Lk = long_one ? in.below(600) : in.below(40);
  static constexpr index_t depths[] = {0, 1, 2, 3, 4, 7, 8, 15, 16, 17, 32, 64};
  const index_t d = depths[in.byte() % 12], dv = depths[in.byte() % 12];
  while (B * H * Lq * Lk * (std::max(d, dv) + 1) > 4'000'000) Lq /= 2, Lk = Lk * 3 / 4;
  const Tensor<T, 4> q = random<T>(in, {B, H, Lq, d}), k = random<T>(in, {B, Hkv, Lk, d}),
                     v = random<T>(in, {B, Hkv, Lk, dv});
  const unsigned which = in.byte() % 4;
  if constexpr (std::is_same_v<T, float>) {
    if (which == 1) return attend<T>(in, heed::Dot{}, nullptr, d, q, k, v, H);
    if (which == 2) {  // (the policy views its weights: they live here, as the reference's copies do)
      const index_t hidden = in.below(9);
      const auto wq = heed::randn<float>({hidden, d}, in.byte()), wk = heed::randn<float>({hidden, d}, in.byte());
      const auto w = heed::randn<float>({hidden}, in.byte());
      const auto bq = in.flag() ? heed::randn<float>({hidden}, 7) : Tensor<float, 1>();
      const heed::Additive<float> a{.w_q = wq, .w_k = wk, .v = w, .b_q = bq};
      const auto qd = heed::cast<double>(q), kd = heed::cast<double>(k);
      const auto wqd = heed::cast<double>(wq), wkd = heed::cast<double>(wk);
      const auto wd = heed::cast<double>(w), bqd = heed::cast<double>(bq);
      const Tensor<double, 1> no_bias;
      const heed::reference::ScoreFn ref = heed::reference::additive(qd, kd, wqd, wkd, wd, bqd, no_bias);
      return attend<T>(in, a, &ref, d, q, k, v, H);
    }
  }
  attend<T>(in, heed::ScaledDot{}, nullptr, d, q, k, v, H);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Bytes in(data, size);
  return heed::fuzz::run([&] {
    switch (in.byte() % 4) {
      case 0:
        return run_typed<double>(in);
      case 1:
        return run_typed<heed::bfloat16>(in);
      case 2:
        return run_typed<heed::half>(in);
      default:
        return run_typed<float>(in);
    }
  });
}
