#include "core/tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace blockflow {
namespace {

TEST(TensorTest, ZeroFilledAndAligned) {
  for (DType d : AllDTypes()) {
    Tensor t(d, Shape{3, 5});
    EXPECT_EQ(t.num_elements(), 15);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
    for (int64_t i = 0; i < t.num_elements(); ++i) ASSERT_EQ(t.GetAsDouble(i), 0.0);
  }
  Tensor empty(DType::kFloat32, Shape{0, 4});
  EXPECT_EQ(empty.num_elements(), 0);
  EXPECT_EQ(empty.num_bytes(), 0u);
}

TEST(TensorTest, CopiesShareAndClonesDoNot) {
  Tensor a = Tensor::FromVector<float>({1, 2, 3});
  Tensor b = a;
  Tensor c = a.Clone();
  a.data<float>()[0] = 7;
  EXPECT_EQ(b.data<float>()[0], 7);
  EXPECT_EQ(c.data<float>()[0], 1);
  EXPECT_FALSE(a.BitwiseEquals(c));
  c.data<float>()[0] = 7;
  EXPECT_TRUE(a.BitwiseEquals(c));
}

TEST(TensorTest, ReshapeChecksElementCount) {
  Tensor a(DType::kInt32, Shape{2, 3});
  EXPECT_TRUE(a.Reshaped(Shape{3, 2}).ok());
  auto bad = a.Reshaped(Shape{4, 2});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("element counts differ"), std::string::npos);
}

TEST(TensorTest, CastRoundsOnce) {
  Tensor f = Tensor::FromVector<float>({1.0f + std::ldexp(1.0f, -11), 65520.0f, -2.5f});
  Tensor h = f.CastTo(DType::kFloat16);
  EXPECT_EQ(h.data<Half>()[0].bits, 0x3c00);
  EXPECT_TRUE(std::isinf(h.GetAsDouble(1)));
  EXPECT_EQ(h.GetAsDouble(2), -2.5);
  Tensor i = Tensor::FromVector<double>({3.0, -4.0}).CastTo(DType::kInt64);
  EXPECT_EQ(i.ToInt64Vector(), (std::vector<int64_t>{3, -4}));
}

TEST(TensorTest, StatsSkipNonFinite) {
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  TensorStats s = Tensor::FromVector<float>({1, nan, -3, inf, 5}).Stats();
  EXPECT_EQ(s.nan_count, 1);
  EXPECT_EQ(s.inf_count, 1);
  EXPECT_EQ(s.min, -3);
  EXPECT_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.mean, 1.0);
  EXPECT_EQ(s.count, 5);
}

TEST(TensorTest, DataChecksDType) {
  Tensor t(DType::kFloat32, Shape{1});
  EXPECT_DEATH(t.data<double>(), "dtype is float32");
}

}  // namespace
}  // namespace blockflow
