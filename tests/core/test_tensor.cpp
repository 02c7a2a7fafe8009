#include <gtest/gtest.h>

#include <cstdint>
#include <type_traits>

#include "heed/core.hpp"

namespace {

using heed::index_t;
using heed::Tensor;
using heed::TensorView;

TEST(Tensor, IsZeroFilledAlignedAndRowMajor) {
  Tensor<float, 3> t({2, 3, 5});
  EXPECT_EQ(t.numel(), 30);
  EXPECT_EQ(t.size(0), 2);
  EXPECT_EQ(t.size(2), 5);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.data()) % 64, 0u);
  for (index_t i = 0; i < t.numel(); ++i) EXPECT_EQ(t.data()[i], 0.0f);
  t(1, 2, 4) = 7.0f;
  EXPECT_EQ(t.data()[1 * 15 + 2 * 5 + 4], 7.0f);
}

TEST(Tensor, CopiesDeeplyAndMovesCheaply) {
  Tensor<double, 2> a({2, 2}, 1.5);
  Tensor<double, 2> b = a;
  b(0, 0) = 9;
  EXPECT_EQ(a(0, 0), 1.5);
  const double* storage = b.data();
  Tensor<double, 2> c = std::move(b);
  EXPECT_EQ(c.data(), storage);
  EXPECT_EQ(c(0, 0), 9);
  EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
}

TEST(Tensor, RejectsNegativeExtents) {
  EXPECT_THROW((Tensor<float, 2>({2, -1})), heed::ShapeError);
  try {
    Tensor<float, 2> bad({2, -1});
  } catch (const heed::Error& e) {
    EXPECT_NE(std::string(e.what()).find("[2, -1]"), std::string::npos);
  }
}

// Limits (docs/formats.md): a shape whose element count overflows int64, or whose bytes do not
// fit an index_t, is a ShapeError before anything is allocated, even with a zero extent in it.
TEST(Tensor, ShapesBeyondIndexRangeAreShapeErrors) {
  const auto expect_too_large = [](auto make, const std::string& shape) {
    try {
      make();
      ADD_FAILURE() << "no error for " << shape;
    } catch (const heed::ShapeError& e) {
      EXPECT_NE(std::string(e.what()).find(shape), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("more bytes than an index_t can count"), std::string::npos) << e.what();
    }
  };
  constexpr heed::index_t big = heed::index_t{1} << 32;
  expect_too_large([] { Tensor<float, 2>({big, big}); }, "[4294967296, 4294967296]");  // numel 2^64
  expect_too_large([] { Tensor<float, 3>({big, big, 0}); }, "[4294967296, 4294967296, 0]");
  // 2^62 doubles: the count fits int64, the 2^65 bytes do not fit a size_t
  expect_too_large([] { Tensor<double, 1>({heed::index_t{1} << 62}); }, "[4611686018427387904]");
  // Within the limit, the size is the allocator's business (std::bad_alloc), not a ShapeError.
  EXPECT_NO_THROW((Tensor<double, 3>({big, big / 64, 0})));  // 2^61 bytes if it were full
}

TEST(Tensor, ZeroSizedDimensionsAreValid) {
  Tensor<float, 3> t({2, 0, 4});
  EXPECT_EQ(t.numel(), 0);
  EXPECT_TRUE(t.empty());
  Tensor<float, 3> copy = t;
  EXPECT_EQ(copy.shape(), t.shape());
}

TEST(Tensor, LargeBuffersAreRecycledAndStillZeroFilled) {
  const float* first = nullptr;
  {
    Tensor<float, 2> a({512, 512}, 3.0f);  // 1 MiB
    first = a.data();
  }
  Tensor<float, 2> b({512, 512});  // the same size comes back from the thread's cache...
  EXPECT_EQ(b.data(), first);
  for (index_t i = 0; i < b.numel(); ++i) ASSERT_EQ(b.data()[i], 0.0f);  // ...zero-filled all the same
  Tensor<float, 2> c({512, 512});                                        // the cache had one block: this one is new
  EXPECT_NE(c.data(), b.data());
  Tensor<float, 2> moved = std::move(b);
  EXPECT_EQ(moved.data(), first);
}

TEST(TensorView, ConvertsFromTensorAndToConst) {
  Tensor<float, 2> t({3, 4});
  TensorView<float, 2> v = t;
  TensorView<const float, 2> cv = v;
  TensorView<const float, 2> ct = std::as_const(t);
  v(2, 3) = 5;
  EXPECT_EQ(cv(2, 3), 5);
  EXPECT_EQ(ct(2, 3), 5);
  static_assert(!std::is_convertible_v<TensorView<const float, 2>, TensorView<float, 2>>);
}

TEST(TensorView, IndexingDropsTheLeadingDimension) {
  Tensor<int, 3> t({2, 3, 4});
  for (index_t i = 0; i < t.numel(); ++i) t.data()[i] = static_cast<int>(i);
  auto b1 = t.view()[1];
  static_assert(decltype(b1)::rank == 2);
  EXPECT_EQ(b1.shape(), (heed::Shape<2>{3, 4}));
  EXPECT_EQ(b1(2, 1), 12 + 8 + 1);
  EXPECT_EQ(t.view()[1][2][3], 23);
}

TEST(TensorView, NarrowTransposeAndReshape) {
  Tensor<int, 3> t({2, 3, 4});
  for (index_t i = 0; i < t.numel(); ++i) t.data()[i] = static_cast<int>(i);
  auto v = t.view();
  auto mid = v.slice(2, 1, 3);  // [2, 3, 2]
  EXPECT_EQ(mid.shape(), (heed::Shape<3>{2, 3, 2}));
  EXPECT_EQ(mid(1, 2, 1), t(1, 2, 2));
  EXPECT_FALSE(mid.is_contiguous());
  auto tr = v.transpose(0, 2);  // [4, 3, 2]
  EXPECT_EQ(tr(3, 1, 0), t(0, 1, 3));
  EXPECT_FALSE(tr.is_contiguous());
  auto flat = v.reshape(heed::Shape<2>{6, 4});
  EXPECT_EQ(flat(5, 3), 23);
  Tensor<int, 3> copy(tr);  // strided copy is dense and row-major
  EXPECT_TRUE(copy.view().is_contiguous());
  EXPECT_EQ(copy(3, 1, 0), t(0, 1, 3));
  EXPECT_EQ(copy(2, 2, 1), t(1, 2, 2));
}

TEST(TensorView, NarrowIsPyTorchsStartAndLengthAndSliceIsBeginEnd) {
  Tensor<int, 2> t({4, 6});
  for (index_t i = 0; i < t.numel(); ++i) t.data()[i] = static_cast<int>(i);
  const auto n = t.view().narrow(1, 2, 3);  // torch: t.narrow(1, 2, 3) = t[:, 2:5]
  EXPECT_EQ(n.shape(), (heed::Shape<2>{4, 3}));
  EXPECT_EQ(n(1, 0), t(1, 2));
  EXPECT_EQ(n(3, 2), t(3, 4));
  const auto s = t.view().slice(1, 2, 5);  // t[:, 2:5]
  EXPECT_EQ(s.shape(), n.shape());
  EXPECT_EQ(s.data(), n.data());
  EXPECT_EQ(t.view().slice(0, 4, 4).size(0), 0);  // an empty range at the end is valid
  EXPECT_EQ(t.view().narrow(0, 4, 0).size(0), 0);
}

// A bad range is a ShapeError naming the shape and the range, in release builds too (this
// test runs in the RelWithDebInfo and the Debug CI builds alike).
TEST(TensorView, BadRangesAreShapeErrorsInEveryBuild) {
  const Tensor<float, 3> t({2, 3, 4});
  const auto expect_error = [](auto&& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no ShapeError; expected one mentioning " << needle;
    } catch (const heed::ShapeError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  const auto v = t.view();
  expect_error([&] { (void)v.narrow(2, 1, 4); }, "start 1, length 4 of dimension 2 is outside the shape [2, 3, 4]");
  expect_error([&] { (void)v.narrow(2, -1, 2); }, "start -1, length 2");
  expect_error([&] { (void)v.narrow(2, 0, -1); }, "length -1");
  expect_error([&] { (void)v.slice(1, 2, 4); }, "range [2, 4) of dimension 1 is outside the shape [2, 3, 4]");
  expect_error([&] { (void)v.slice(1, 2, 1); }, "range [2, 1)");
  expect_error([&] { (void)v.slice(3, 0, 1); }, "of dimension 3");
  expect_error([&] { (void)v.transpose(0, 3); }, "dimensions 0 and 3 of a rank-3 view [2, 3, 4]");
  expect_error([&] { (void)v.reshape(heed::Shape<2>{5, 5}); }, "cannot view [2, 3, 4] as [5, 5]");
  expect_error([&] { (void)v.transpose(0, 1).reshape(heed::Shape<1>{24}); }, "cannot view strided [3, 2, 4]");
}

TEST(AsMatrix, MapsStridedViewsWithoutCopying) {
  Tensor<float, 2> t({3, 4});
  for (index_t i = 0; i < t.numel(); ++i) t.data()[i] = static_cast<float>(i);
  auto m = heed::as_matrix(t);
  EXPECT_EQ(m.rows(), 3);
  EXPECT_EQ(m(2, 1), 9.0f);
  auto mt = heed::as_matrix(t.view().transpose(0, 1));
  EXPECT_EQ(mt.rows(), 4);
  EXPECT_EQ(mt(1, 2), 9.0f);
  mt(1, 2) = -1;
  EXPECT_EQ(t(2, 1), -1.0f);
  const Tensor<float, 2>& ct = t;
  Eigen::MatrixXf product = heed::as_matrix(ct) * heed::as_matrix(ct).transpose();
  EXPECT_FLOAT_EQ(product(0, 0), 0 + 1 + 4 + 9);
}

TEST(TensorLike, AcceptsTensorsAndViews) {
  static_assert(heed::TensorLike<Tensor<float, 2>>);
  static_assert(heed::TensorLike<TensorView<const double, 3>>);
  static_assert(!heed::TensorLike<float>);
  static_assert(heed::rank_of<TensorView<float, 4>> == 4);
  static_assert(std::is_same_v<heed::scalar_of<TensorView<const float, 2>>, float>);
}

}  // namespace

namespace {

TEST(DefinedInputs, CopyFromAViewOfAnotherShapeIsAShapeError) {  // #46, defect 10
  heed::Tensor<float, 2> t({2, 3});
  const auto small = heed::randn<float>({2, 2}, 1);
  try {
    t.copy_from(small.view());
    FAIL() << "no ShapeError";
  } catch (const heed::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 2] into a tensor of [2, 3]"), std::string::npos) << e.what();
  }
  const auto same = heed::randn<float>({3, 2}, 2);
  t.copy_from(same.view().transpose(0, 1));
  EXPECT_EQ(t(1, 2), same(2, 1));
}

// HEED_ASSERT (core/assert.hpp): a failed internal invariant aborts naming it in a debug build
// (ci-sanitize), and costs nothing under NDEBUG (a release build of the tests), where the
// condition is not even evaluated.
TEST(Assert, AbortsInDebugBuildsAndVanishesUnderNDEBUG) {
  int evaluated = 0;
  [[maybe_unused]] const auto fails = [&] { return ++evaluated < 0; };
#ifdef NDEBUG
  HEED_ASSERT(fails());
  EXPECT_EQ(evaluated, 0);
#else
  EXPECT_DEATH(HEED_ASSERT(fails()), "heed: internal assertion `fails\\(\\)` failed at .*test_tensor.cpp");
#endif
}

}  // namespace
