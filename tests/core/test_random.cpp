#include <gtest/gtest.h>

#include <cmath>

#include "heed/core.hpp"

namespace {

TEST(Random, RandnIsDeterministicForASeed) {
  const auto a = heed::randn<float>({4, 1000}, 42);
  const auto b = heed::randn<float>({4, 1000}, 42);
  const auto c = heed::randn<float>({4, 1000}, 43);
  int same = 0;
  for (heed::index_t i = 0; i < a.numel(); ++i) {
    EXPECT_EQ(a.data()[i], b.data()[i]);
    same += a.data()[i] == c.data()[i];
  }
  EXPECT_LT(same, 5);
}

TEST(Random, RandnHasUnitMoments) {
  const auto x = heed::randn<double>({200000}, 7);
  double mean = 0, var = 0;
  for (heed::index_t i = 0; i < x.numel(); ++i) mean += x.data()[i];
  mean /= static_cast<double>(x.numel());
  for (heed::index_t i = 0; i < x.numel(); ++i) var += (x.data()[i] - mean) * (x.data()[i] - mean);
  var /= static_cast<double>(x.numel());
  // standard errors: 1/sqrt(n) = 0.0022 for the mean, sqrt(2/n) = 0.0032 for the variance
  EXPECT_NEAR(mean, 0.0, 0.012);
  EXPECT_NEAR(var, 1.0, 0.016);
}

TEST(Random, UniformStaysInRange) {
  const auto u = heed::uniform<float>({10000}, -0.5f, 2.0f, 3);
  float lo = 10, hi = -10;
  double mean = 0;
  for (heed::index_t i = 0; i < u.numel(); ++i) {
    lo = std::min(lo, u.data()[i]);
    hi = std::max(hi, u.data()[i]);
    mean += u.data()[i];
  }
  EXPECT_GE(lo, -0.5f);
  EXPECT_LT(hi, 2.0f);
  EXPECT_NEAR(mean / 10000, 0.75, 0.03);
}

TEST(Random, FactoriesFill) {
  const auto z = heed::zeros<double>({3, 2});
  const auto f = heed::full<int>({2, 2}, 4);
  EXPECT_EQ(z(2, 1), 0.0);
  EXPECT_EQ(f(1, 1), 4);
}

}  // namespace
