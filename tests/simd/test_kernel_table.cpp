// simd::AttentionKernels, the table the attention driver calls through: it describes the level
// it was compiled at, and each entry computes what the kernel it stands for computes, bit for
// bit (the kernels themselves are tested against double loops in test_attention_kernel.cpp);
// the 16-bit score entry, which widens the queries itself, against a double loop too. The same
// for simd::GemmKernels, the table gemm_nt calls through (its kernels: test_gemm_kernel.cpp),
// for simd::VectorKernels and ConvertKernels, the modules' row operations (test_vector_ops.cpp,
// test_convert.cpp), and for simd::VisionKernels, the vision modules' passes over planes (their
// results against double references: kernels/test_conv2d.cpp, nn/test_vision*.cpp).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "heed/core/cast.hpp"
#include "heed/core/random.hpp"
#include "heed/simd/kernel_table.hpp"
#include "heed/simd/vector_ops.hpp"
#include "heed/simd/vision_ops.hpp"

namespace {

using heed::index_t;
namespace simd = heed::simd;

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

template <class Storage>
void check_description() {
  using Acc = heed::accumulator_t<Storage>;
  const simd::AttentionKernels<Storage>& table = simd::attention_kernels<Storage>();
  EXPECT_EQ(&table, &simd::attention_kernels<Storage>()) << "chosen once";
  EXPECT_EQ(table.level, simd::compiled_level);
  EXPECT_EQ(table.mr, simd::AttentionTile<Acc>::mr);
  EXPECT_EQ(table.nr, simd::AttentionTile<Acc>::nr);
  EXPECT_EQ(table.pairs, simd::pairs_in_use<Storage>());
  EXPECT_TRUE(table.pack_kt && table.tile_scores && table.rows_scores && table.tile_pv);
  const bool pair_entries = table.pack_kt_pairs && table.pack_v_pairs && table.pair_tile_scores && table.pair_tile_pv;
  const bool no_pair_entries =
      !table.pack_kt_pairs && !table.pack_v_pairs && !table.pair_tile_scores && !table.pair_tile_pv;
  EXPECT_TRUE(table.pairs ? pair_entries : no_pair_entries);
}

TEST(KernelTable, DescribesTheLevelItWasCompiledAt) {
  check_description<float>();
  check_description<double>();
  check_description<heed::bfloat16>();
  check_description<heed::half>();
}

// A tile of ni × nj scores past whole micro-kernel blocks, ni rows of scores read in place, and O = c·O + P·V over
// two runs of keys, through the table and through the kernels.
template <class Storage>
void check_entries(index_t depth) {
  using Acc = heed::accumulator_t<Storage>;
  const simd::AttentionKernels<Storage>& table = simd::attention_kernels<Storage>();
  const index_t ni = 2 * table.mr + 3, nj = 2 * table.nr + 5, nr = table.nr, ld = nj + 1;
  SCOPED_TRACE(testing::Message() << sizeof(Storage) * 8 << "-bit storage, depth " << depth);
  const auto q = heed::cast<Storage>(heed::randn<float>({ni, depth}, 31));
  const auto k = heed::cast<Storage>(heed::randn<float>({nj, depth}, 32));

  std::vector<Storage> kt((nj + nr - 1) / nr * nr * depth), kt_direct(kt.size());
  table.pack_kt(k.data(), depth, nj, depth, kt.data());
  simd::pack_kt(k.data(), depth, nj, depth, kt_direct.data());
  EXPECT_TRUE(same_bits(kt, kt_direct)) << "pack_kt";

  std::vector<Acc> s(ni * ld, Acc(0)), s_direct(s.size(), Acc(0)), q_acc(ni * depth);
  for (index_t i = 0; i < ni * depth; ++i) q_acc[i] = static_cast<Acc>(q.data()[i]);
  std::vector<Acc> widened(ni * depth);
  table.tile_scores(depth, q.data(), depth, ni, kt.data(), nj, s.data(), ld, Acc(0.5), widened.data());
  simd::attention_tile_scores(depth, q_acc.data(), depth, ni, kt_direct.data(), nj, s_direct.data(), ld, Acc(0.5));
  EXPECT_TRUE(same_bits(s, s_direct)) << "tile_scores";
  for (index_t i = 0; i < ni; ++i)
    for (index_t j = 0; j < nj; ++j) {
      double sum = 0;
      for (index_t kk = 0; kk < depth; ++kk) sum += double(q_acc[i * depth + kk]) * double(k(j, kk));
      ASSERT_NEAR(double(s[i * ld + j]), 0.5 * sum, 1e-5 * (1 + std::abs(sum)) * double(depth)) << i << "," << j;
    }

  std::vector<Acc> rows(ni * nj), rows_direct(ni * nj);
  table.rows_scores(depth, q.data(), depth, ni, k.data(), depth, nj, rows.data(), nj, Acc(0.5));
  simd::attention_rows_scores(depth, q.data(), depth, ni, k.data(), depth, nj, rows_direct.data(), nj, Acc(0.5));
  EXPECT_TRUE(same_bits(rows, rows_direct)) << "rows_scores";

  const index_t dv = depth, keys[2] = {nj, 5};
  const auto v = heed::cast<Storage>(heed::randn<float>({nj + 5, dv}, 33));
  const Storage* runs[2] = {v.data(), v.data() + nj * dv};
  const auto p = heed::cast<Acc>(heed::randn<float>({ni, nj + 5}, 34));
  const auto c = heed::cast<Acc>(heed::randn<float>({ni}, 35));
  const std::vector<Acc> ones(ni, Acc(1));
  const auto o0 = heed::cast<Acc>(heed::randn<float>({ni, dv}, 36));
  std::vector<Acc> o(o0.data(), o0.data() + ni * dv), o_direct = o;
  table.tile_pv(p.data(), nj + 5, ni, 2, keys, runs, dv, dv, o.data(), c.data(), ones.data());
  simd::attention_tile_pv<Acc, Storage>(p.data(), nj + 5, ni, 2, keys, runs, dv, dv, o_direct.data(), c.data(),
                                        ones.data());
  EXPECT_TRUE(same_bits(o, o_direct)) << "tile_pv";
}

TEST(KernelTable, EntriesComputeWhatTheKernelsCompute) {
  for (const index_t depth : {index_t{7}, index_t{64}}) {
    check_entries<float>(depth);
    check_entries<double>(depth);
    check_entries<heed::bfloat16>(depth);
    check_entries<heed::half>(depth);
  }
}

// The pair entries where the table has them (AVX-512 BF16 and the CPU's choice: the @bf16 ctest;
// @bf16-widened checks that they are absent there).
TEST(KernelTable, PairEntriesComputeWhatThePairKernelsCompute) {
  using heed::bfloat16;
  const simd::AttentionKernels<bfloat16>& table = simd::attention_kernels<bfloat16>();
  if (!table.pairs) GTEST_SKIP() << "bfloat16 is widened to float in this build on this CPU";
  const index_t depth = 64, pairs = depth / 2, ni = 2 * table.mr + 3, nj = 2 * table.nr + 5, nr = table.nr;
  const auto q = heed::cast<bfloat16>(heed::randn<float>({ni, depth}, 41));
  const auto k = heed::cast<bfloat16>(heed::randn<float>({nj, depth}, 42));
  std::vector<bfloat16> kt((nj + nr - 1) / nr * depth * nr), kt_direct(kt.size());
  table.pack_kt_pairs(k.data(), depth, nj, depth, kt.data());
  simd::pack_kt_pairs(k.data(), depth, nj, depth, kt_direct.data());
  EXPECT_TRUE(same_bits(kt, kt_direct)) << "pack_kt_pairs";
  std::vector<float> s(ni * nj), s_direct(s.size());
  table.pair_tile_scores(pairs, q.data(), depth, ni, kt.data(), nj, s.data(), nj, 0.5f);
  simd::pair_tile_scores(pairs, q.data(), depth, ni, kt.data(), nj, s_direct.data(), nj, 0.5f);
  EXPECT_TRUE(same_bits(s, s_direct)) << "pair_tile_scores";

  const index_t key_pairs = (nj + 1) / 2, stride = key_pairs * 2 * nr, dv = depth;
  const auto v = heed::cast<bfloat16>(heed::randn<float>({nj, dv}, 43));
  std::vector<bfloat16> vp((dv + nr - 1) / nr * stride), vp_direct(vp.size());
  table.pack_v_pairs(v.data(), dv, nj, dv, vp.data(), 0);
  simd::pack_v_pairs(v.data(), dv, nj, dv, vp_direct.data());
  EXPECT_TRUE(same_bits(vp, vp_direct)) << "pack_v_pairs";
  // P: the first 2·pv_pairs values of q's rows (each row has depth of them, V nj rows)
  const index_t pv_pairs = std::min(pairs, nj / 2);
  std::vector<float> o(ni * dv, 1.0f), o_direct = o;
  const std::vector<float> c(ni, 0.25f);
  table.pair_tile_pv(pv_pairs, q.data(), depth, ni, vp.data(), stride, dv, o.data(), c.data());
  simd::pair_tile_pv(pv_pairs, q.data(), depth, ni, vp.data(), stride, dv, o_direct.data(), c.data());
  EXPECT_TRUE(same_bits(o, o_direct)) << "pair_tile_pv";
}

template <class Storage>
void check_gemm_description() {
  const simd::GemmKernels<Storage>& table = simd::gemm_kernels<Storage>();
  EXPECT_EQ(&table, &simd::gemm_kernels<Storage>()) << "chosen once";
  EXPECT_EQ(table.level, simd::compiled_level);
  EXPECT_EQ(table.mr, simd::GemmTile<Storage>::mr);
  EXPECT_EQ(table.nr, simd::GemmTile<Storage>::nr);
  EXPECT_EQ(table.kc, simd::GemmTile<Storage>::kc);
  EXPECT_EQ(table.mc, simd::GemmTile<Storage>::mc);
  EXPECT_EQ(table.pairs, simd::pairs_in_use<Storage>());
  EXPECT_TRUE(table.pack_a && table.panel && table.row);
  EXPECT_EQ(table.narrow != nullptr, heed::is_16bit_float_v<Storage>) << "C rounded for 16-bit storage only";
  const bool pair_entries = table.pack_a_pairs && table.pair_panel && table.pair_row;
  const bool no_pair_entries = !table.pack_a_pairs && !table.pair_panel && !table.pair_row;
  EXPECT_TRUE(table.pairs ? pair_entries : no_pair_entries);
}

TEST(GemmTable, DescribesTheLevelItWasCompiledAt) {
  check_gemm_description<float>();
  check_gemm_description<double>();
  check_gemm_description<heed::bfloat16>();
  check_gemm_description<heed::half>();
}

// A packed block of A of 2·mr + 3 rows against one panel of W (columns < n_valid), with an addend,
// a bias and ReLU, and a single row with C as its own addend: through the table and through the
// micro-kernels; and C's rounding to 16 bits.
template <class Storage>
void check_gemm_entries(index_t kc, index_t n_valid) {
  using Acc = heed::accumulator_t<Storage>;
  const simd::GemmKernels<Storage>& table = simd::gemm_kernels<Storage>();
  const index_t mr = table.mr, nr = table.nr, m = 2 * mr + 3, ldc = nr + 3;
  SCOPED_TRACE(testing::Message() << sizeof(Storage) * 8 << "-bit storage, kc " << kc << ", " << n_valid << " columns");
  const auto a = heed::cast<Storage>(heed::randn<float>({m, kc}, 51));
  const auto b = heed::cast<Storage>(heed::randn<float>({kc, nr}, 52));
  const auto src = heed::cast<Acc>(heed::randn<float>({m, ldc}, 53));
  const auto bias = heed::cast<Acc>(heed::randn<float>({nr}, 54));

  const index_t panels_size = (m + mr - 1) / mr * mr * kc;  // whole micro-panels, rows past m zero
  std::vector<Acc> packed(static_cast<std::size_t>(panels_size + simd::pack_a_slack), Acc(0)), packed_direct = packed;
  table.pack_a(a.data(), kc, m, kc, packed.data());
  simd::pack_a(a.data(), kc, m, kc, packed_direct.data());
  EXPECT_EQ(std::memcmp(packed.data(), packed_direct.data(), sizeof(Acc) * panels_size), 0) << "pack_a";

  std::vector<Acc> c(m * ldc, Acc(7)), c_direct = c;
  table.panel(kc, packed.data(), m, b.data(), b.data(), kc * nr, c.data(), ldc, src.data(), ldc, bias.data(), true,
              n_valid);
  for (index_t ir = 0; ir < m; ir += mr)
    simd::gemm_micro_kernel(kc, packed_direct.data() + ir * kc, b.data(), c_direct.data() + ir * ldc, ldc,
                            src.data() + ir * ldc, ldc, bias.data(), true, std::min(mr, m - ir), n_valid);
  EXPECT_TRUE(same_bits(c, c_direct)) << "panel";
  for (index_t i = 0; i < m; ++i)
    for (index_t j = 0; j < nr; ++j) {
      if (j >= n_valid) {
        ASSERT_EQ(c[i * ldc + j], Acc(7)) << "column " << j << " is past n_valid";
        continue;
      }
      double sum = double(src.data()[i * ldc + j]) + double(bias.data()[j]);
      for (index_t k = 0; k < kc; ++k) sum += double(a.data()[i * kc + k]) * double(b.data()[k * nr + j]);
      ASSERT_NEAR(double(c[i * ldc + j]), std::max(sum, 0.0), 1e-5 * (1 + std::abs(sum)) * double(kc + 1))
          << i << "," << j;
    }

  // the single-row kernel reads A's first row as it is (widened), not packed
  std::vector<Acc> a_row(static_cast<std::size_t>(kc));
  for (index_t k = 0; k < kc; ++k) a_row[std::size_t(k)] = static_cast<Acc>(a.data()[k]);
  std::vector<Acc> row(c.begin(), c.begin() + nr), row_direct = row, start = row;
  table.row(kc, a_row.data(), b.data(), row.data(), row.data(), nullptr, false, n_valid);
  simd::gemm_row_kernel(kc, a_row.data(), b.data(), row_direct.data(), row_direct.data(),
                        static_cast<const Acc*>(nullptr), false, n_valid);
  EXPECT_TRUE(same_bits(row, row_direct)) << "row";
  for (index_t j = 0; j < n_valid; ++j) {
    double sum = double(start[std::size_t(j)]);
    for (index_t k = 0; k < kc; ++k) sum += double(a.data()[k]) * double(b.data()[k * nr + j]);
    ASSERT_NEAR(double(row[std::size_t(j)]), sum, 1e-5 * (1 + std::abs(sum)) * double(kc + 1)) << "row " << j;
  }

  if constexpr (heed::is_16bit_float_v<Storage>) {
    std::vector<Storage> out(nr), out_direct(nr);
    table.narrow(row.data(), out.data(), nr);
    simd::narrow(row.data(), out_direct.data(), nr);
    EXPECT_TRUE(same_bits(out, out_direct)) << "narrow";
  }
}

TEST(GemmTable, EntriesComputeWhatTheKernelsCompute) {
  for (const index_t kc : {index_t{1}, index_t{37}}) {
    check_gemm_entries<float>(kc, simd::GemmTile<float>::nr);
    check_gemm_entries<float>(kc, 3);
    check_gemm_entries<double>(kc, simd::GemmTile<double>::nr - 1);
    check_gemm_entries<heed::bfloat16>(kc, 5);
    check_gemm_entries<heed::half>(kc, simd::GemmTile<heed::half>::nr);
  }
}

// The pair entries where the table has them (the @bf16 ctest).
TEST(GemmTable, PairEntriesComputeWhatThePairKernelsCompute) {
  using heed::bfloat16;
  const simd::GemmKernels<bfloat16>& table = simd::gemm_kernels<bfloat16>();
  if (!table.pairs) GTEST_SKIP() << "bfloat16 is widened to float in this build on this CPU";
  const index_t kc = 37, depth = simd::pair_depth(kc), mr = table.mr, nr = table.nr, m = 2 * mr + 3;
  const auto a = heed::cast<bfloat16>(heed::randn<float>({m, kc}, 61));
  const auto b = heed::cast<bfloat16>(heed::randn<float>({depth, nr}, 62));  // a panel of W with k in pairs
  const auto src = heed::randn<float>({m, nr}, 63);
  const auto size = static_cast<std::size_t>((m + mr - 1) / mr * mr * depth + simd::pack_a_slack);
  std::vector<bfloat16> packed(size), packed_direct(size);
  table.pack_a_pairs(a.data(), kc, m, kc, packed.data());
  simd::pack_a_pairs(a.data(), kc, m, kc, packed_direct.data());
  EXPECT_TRUE(same_bits(packed, packed_direct)) << "pack_a_pairs";
  std::vector<float> c(m * nr), c_direct(c.size());
  table.pair_panel(depth, packed.data(), m, b.data(), nullptr, 0, c.data(), nr, src.data(), nr, nullptr, false, nr);
  for (index_t ir = 0; ir < m; ir += mr)
    simd::gemm_pair_micro_kernel(depth / 2, packed_direct.data() + ir * depth, b.data(), c_direct.data() + ir * nr, nr,
                                 src.data() + ir * nr, nr, nullptr, false, std::min(mr, m - ir), nr);
  EXPECT_TRUE(same_bits(c, c_direct)) << "pair_panel";
  std::vector<float> row(nr), row_direct(nr);
  table.pair_row(depth, packed.data(), b.data(), row.data(), nullptr, nullptr, true, nr - 1);
  simd::gemm_pair_row_kernel(depth / 2, packed_direct.data(), b.data(), row_direct.data(), nullptr, nullptr, true,
                             nr - 1);
  EXPECT_TRUE(same_bits(row, row_direct)) << "pair_row";
}

// Each vector op through the table against the function it stands for, bit for bit, on a row
// with a tail past whole vectors (n = 37) and in place where the entry allows it.
template <class T>
void check_vector_entries() {
  const simd::VectorKernels<T>& ops = simd::vector_kernels<T>();
  EXPECT_EQ(ops.level, simd::compiled_level);
  const index_t n = 37;
  SCOPED_TRACE(testing::Message() << sizeof(T) * 8 << "-bit values");
  const auto x = heed::cast<T>(heed::randn<float>({n}, 71)), y = heed::cast<T>(heed::randn<float>({n}, 72));
  const auto w = heed::cast<T>(heed::randn<float>({n}, 73)), b = heed::cast<T>(heed::randn<float>({n}, 74));
  const std::vector<T> xs(x.data(), x.data() + n), ys(y.data(), y.data() + n);
  EXPECT_EQ(ops.dot(x.data(), y.data(), n), simd::dot(x.data(), y.data(), n));
  EXPECT_EQ(ops.tanh_dot(x.data(), y.data(), w.data(), n), simd::tanh_dot(x.data(), y.data(), w.data(), n));
  const auto both = [&](const char* name, auto&& through_table, auto&& direct) {
    std::vector<T> got = ys, want = ys;
    through_table(got.data());
    direct(want.data());
    EXPECT_TRUE(same_bits(got, want)) << name;
  };
  both(
      "axpy", [&](T* out) { ops.axpy(T(0.5), x.data(), out, n); },
      [&](T* out) { simd::axpy(T(0.5), x.data(), out, n); });
  both(
      "add", [&](T* out) { ops.add(x.data(), out, n); }, [&](T* out) { simd::add(x.data(), out, n); });
  both(
      "multiply", [&](T* out) { ops.multiply(x.data(), out, out, n); },
      [&](T* out) { simd::multiply(x.data(), out, out, n); });
  both(
      "layer_norm", [&](T* out) { ops.layer_norm(out, out, w.data(), b.data(), T(1e-5), n); },
      [&](T* out) { simd::layer_norm(out, out, w.data(), b.data(), T(1e-5), n); });
  both(
      "rms_norm", [&](T* out) { ops.rms_norm(out, out, nullptr, T(1e-6), n); },
      [&](T* out) { simd::rms_norm(out, out, static_cast<const T*>(nullptr), T(1e-6), n); });
  both(
      "relu", [&](T* out) { ops.relu(out, out, n); }, [&](T* out) { simd::relu(out, out, n); });
  both(
      "sigmoid", [&](T* out) { ops.sigmoid(out, out, n); }, [&](T* out) { simd::sigmoid(out, out, n); });
  both(
      "silu", [&](T* out) { ops.silu(out, out, n); }, [&](T* out) { simd::silu(out, out, n); });
  both(
      "gelu", [&](T* out) { ops.gelu(out, out, n); }, [&](T* out) { simd::gelu(out, out, n); });
  both(
      "gelu_tanh", [&](T* out) { ops.gelu_tanh(out, out, n); }, [&](T* out) { simd::gelu_tanh(out, out, n); });
  // and one against its definition, so that a table of the wrong entries cannot pass
  std::vector<T> g = ys;
  ops.relu(g.data(), g.data(), n);
  for (index_t i = 0; i < n; ++i) ASSERT_EQ(g[i], std::max(ys[i], T(0))) << i;
}

TEST(VectorTable, EntriesComputeWhatTheFunctionsCompute) {
  check_vector_entries<float>();
  check_vector_entries<double>();
}

template <class Storage>
void check_convert_entries() {
  const simd::ConvertKernels<Storage>& convert = simd::convert_kernels<Storage>();
  EXPECT_EQ(convert.level, simd::compiled_level);
  const index_t n = 37;
  const auto x = heed::randn<float>({n}, 81);
  std::vector<Storage> narrowed(n), narrowed_direct(n);
  convert.narrow(x.data(), narrowed.data(), n);
  simd::narrow(x.data(), narrowed_direct.data(), n);
  EXPECT_TRUE(same_bits(narrowed, narrowed_direct)) << "narrow";
  std::vector<float> widened(n);
  convert.widen(narrowed.data(), widened.data(), n);
  for (index_t i = 0; i < n; ++i) ASSERT_EQ(widened[i], static_cast<float>(narrowed[i])) << i;
  EXPECT_EQ(convert.dot(narrowed.data(), narrowed.data(), n), simd::dot_widened(narrowed.data(), narrowed.data(), n));
}

TEST(ConvertTable, EntriesComputeWhatTheFunctionsCompute) {
  check_convert_entries<heed::half>();
  check_convert_entries<heed::bfloat16>();
}

// Each vision pass through the table against the function it stands for, bit for bit, on planes
// with a tail past whole vectors (plane 5 × 7) and channels past a group of eight (C = 11), with
// a NaN in one column; the gate and the convolution against their definitions too.
template <class Storage>
void check_vision_entries() {
  using A = heed::accumulator_t<Storage>;
  const simd::VisionKernels<Storage>& vision = simd::vision_kernels<Storage>();
  EXPECT_EQ(&vision, &simd::vision_kernels<Storage>());
  EXPECT_EQ(vision.level, simd::compiled_level);
  EXPECT_EQ(vision.conv_rows, simd::conv_rows<A>);
  EXPECT_EQ(vision.conv_columns, simd::conv_columns<A>);
  SCOPED_TRACE(testing::Message() << sizeof(Storage) * 8 << "-bit values");
  const index_t C = 11, plane = 35;
  auto x = heed::cast<Storage>(heed::randn<float>({C * plane}, 91));
  x.data()[3 * plane + 4] = heed::convert<Storage>(std::numeric_limits<float>::quiet_NaN());
  const auto channel = heed::cast<A>(heed::randn<float>({C}, 92));
  const auto spatial = heed::cast<A>(heed::randn<float>({plane}, 93));

  std::vector<A> means(C), means_direct(C);
  vision.plane_means(x.data(), C, plane, means.data(), true);
  simd::plane_means(x.data(), C, plane, means_direct.data(), true);
  EXPECT_TRUE(same_bits(means, means_direct)) << "plane_means";
  for (const A* scale : {static_cast<const A*>(nullptr), channel.data()}) {
    std::vector<A> mean(plane), max(plane), mean_direct(plane), max_direct(plane);
    vision.mean_max_over_channels(x.data(), scale, C, plane, mean.data(), max.data());
    simd::mean_max_over_channels(x.data(), scale, C, plane, mean_direct.data(), max_direct.data());
    EXPECT_TRUE(same_bits(mean, mean_direct) && same_bits(max, max_direct)) << "mean_max_over_channels";
    EXPECT_TRUE(std::isnan(max[4])) << "a NaN in a column is NaN in its max";
  }
  for (const A* c : {static_cast<const A*>(nullptr), channel.data()})
    for (const A* m : {static_cast<const A*>(nullptr), spatial.data()}) {
      std::vector<Storage> y(C * plane), y_direct(C * plane);
      vision.gate_planes(x.data(), y.data(), C, plane, c, m);
      simd::gate_planes(x.data(), y_direct.data(), C, plane, c, m);
      EXPECT_TRUE(same_bits(y, y_direct)) << "gate_planes";
      for (index_t i = 0; i < C * plane; ++i) {
        const double v =
            static_cast<double>(x.data()[i]) * (c ? double(c[i / plane]) : 1.0) * (m ? double(m[i % plane]) : 1.0);
        if (std::isnan(v)) continue;
        ASSERT_NEAR(static_cast<double>(y[i]), v, 1e-2 * std::abs(v) + 1e-30) << "gate_planes " << i;
      }
    }

  // a 5 × 6 output plane (a row block and, at every level's width, a vector of columns past its
  // edge) of a 2-channel 3 × 3 kernel, over input planes laid out as conv2d_plane asks
  const index_t Cin = 2, k = 3, Ho = 5, Wo = 6, V = vision.conv_columns, R = vision.conv_rows;
  const index_t Wp = (Wo + V - 1) / V * V + k - 1, Hp = Ho + k - 1 + R;
  const auto input = heed::cast<A>(heed::randn<float>({Cin * Hp * Wp}, 94));
  const auto w = heed::cast<A>(heed::randn<float>({Cin * k * k}, 95));
  std::vector<A> out(Ho * Wo), out_direct(Ho * Wo);
  vision.conv2d_plane(input.data(), Hp, Wp, w.data(), A(0.25), Cin, k, k, out.data(), Ho, Wo);
  simd::conv2d_plane(input.data(), Hp, Wp, w.data(), A(0.25), Cin, k, k, out_direct.data(), Ho, Wo);
  EXPECT_TRUE(same_bits(out, out_direct)) << "conv2d_plane";
  for (index_t oy = 0; oy < Ho; ++oy)
    for (index_t ox = 0; ox < Wo; ++ox) {
      double want = 0.25;
      for (index_t ci = 0; ci < Cin; ++ci)
        for (index_t ky = 0; ky < k; ++ky)
          for (index_t kx = 0; kx < k; ++kx)
            want += double(w.data()[(ci * k + ky) * k + kx]) * double(input.data()[(ci * Hp + oy + ky) * Wp + ox + kx]);
      ASSERT_NEAR(double(out[oy * Wo + ox]), want, 1e-5 * (1 + std::abs(want))) << "conv2d_plane " << oy << ", " << ox;
    }
}

TEST(VisionTable, EntriesComputeWhatTheFunctionsCompute) {
  check_vision_entries<float>();
  check_vision_entries<double>();
  check_vision_entries<heed::half>();
  check_vision_entries<heed::bfloat16>();
}

}  // namespace
