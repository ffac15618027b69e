#include "core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace blockflow {
namespace {

TEST(DTypeTest, NamesRoundTrip) {
  for (DType d : AllDTypes()) {
    auto parsed = ParseDType(DTypeName(d));
    ASSERT_TRUE(parsed.has_value()) << DTypeName(d);
    EXPECT_EQ(*parsed, d);
  }
  EXPECT_EQ(ParseDType("half"), DType::kFloat16);
  EXPECT_FALSE(ParseDType("float128").has_value());
  EXPECT_EQ(DTypeSize(DType::kBFloat16), 2u);
  EXPECT_EQ(DTypeSize(DType::kInt64), 8u);
}

TEST(DTypeTest, EveryHalfSurvivesTheRoundTrip) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = HalfBitsToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(HalfBitsToFloat(FloatToHalfBits(f))));
      continue;
    }
    ASSERT_EQ(FloatToHalfBits(f), h) << "half bits " << h;
  }
}

TEST(DTypeTest, HalfRoundsToNearestEven) {
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: ties go to the even mantissa (1).
  EXPECT_EQ(FloatToHalfBits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even).
  EXPECT_EQ(FloatToHalfBits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(FloatToHalfBits(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalfBits(65520.0f), 0x7c00);               // overflows to inf
  EXPECT_EQ(FloatToHalfBits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(FloatToHalfBits(std::ldexp(1.0f, -25)), 0x0000);  // tie to even: zero
  EXPECT_EQ(FloatToHalfBits(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(FloatToHalfBits(-0.0f), 0x8000);
}

TEST(DTypeTest, BFloat16RoundsToNearestEven) {
  for (uint32_t b = 0; b < 0x10000; b += 7) {
    const float f = BFloat16BitsToFloat(static_cast<uint16_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToBFloat16Bits(f), b);
  }
  EXPECT_EQ(FloatToBFloat16Bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80);      // tie → even
  EXPECT_EQ(FloatToBFloat16Bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // tie → even (up)
  EXPECT_TRUE(std::isnan(
      BFloat16BitsToFloat(FloatToBFloat16Bits(std::numeric_limits<float>::quiet_NaN()))));
}

}  // namespace
}  // namespace blockflow
