#include "core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string_view>
#include <type_traits>

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

TEST(DTypeTest, EveryDTypeHasItsOwnName) {
  std::set<std::string_view> names;
  for (DType d : AllDTypes()) names.insert(DTypeName(d));
  EXPECT_EQ(names.size(), AllDTypes().size());
  EXPECT_EQ(names.count("invalid"), 0u);
  EXPECT_EQ(DTypeName(DType::kInvalid), "invalid");
}

TEST(DTypeTest, DispatchCallsWithTheDTypesCppType) {
  for (DType d : AllDTypes()) {
    DType seen = DType::kInvalid;
    int calls = 0;
    const auto record = [&](auto tag) {
      seen = DTypeOf<decltype(tag)>::value;
      ++calls;
    };
    EXPECT_TRUE(DispatchAll(d, record)) << DTypeName(d);
    EXPECT_EQ(seen, d);
    EXPECT_EQ(DispatchFloat(d, record), IsFloatingDType(d)) << DTypeName(d);
    EXPECT_EQ(calls, IsFloatingDType(d) ? 2 : 1) << DTypeName(d);
  }
  EXPECT_FALSE(DispatchAll(DType::kInvalid, [](auto) { FAIL() << "called for kInvalid"; }));
}

TEST(DTypeTest, SixteenBitTypesAreDistinct) {
  static_assert(!std::is_same_v<Half, BFloat16>);
  // 1.0: 0x3c00 in binary16, 0x3f80 in bfloat16.
  EXPECT_EQ(Half(1.0f).bits, 0x3c00);
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(static_cast<float>(Half::FromBits(0xc000)), -2.0f);
  EXPECT_EQ(static_cast<float>(BFloat16::FromBits(0xc000)), -2.0f);
  EXPECT_EQ(Half(0.1).bits, DoubleToHalfBits(0.1));
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

TEST(DTypeTest, DoublesRoundOnceToSixteenBits) {
  // Just above a half-precision tie: rounding through float would land on the tie and go to
  // even (down); one rounding of the double goes up.
  const double above = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(Half(above).bits, 0x3c01);
  EXPECT_EQ(Half(1.0 + std::ldexp(1.0, -11)).bits, 0x3c00);  // the tie itself: to even
  EXPECT_EQ(BFloat16(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)).bits, 0x3f81);
  EXPECT_EQ(BFloat16(1.0 + std::ldexp(1.0, -8)).bits, 0x3f80);
  EXPECT_EQ(Half(-above).bits, 0xbc01);
  EXPECT_EQ(Half(1e300).bits, 0x7c00);
  EXPECT_TRUE(std::isnan(static_cast<float>(Half(std::nan("")))));
  // Random doubles against a brute-force nearest-even search among neighbouring halves.
  uint64_t state = 12345;
  for (int k = 0; k < 200000; ++k) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const double d = (static_cast<double>(state >> 11) * 0x1.0p-53 - 0.5) * 4.0;  // [-2, 2)
    const uint16_t guess = FloatToHalfBits(static_cast<float>(d));
    uint16_t best = guess;
    double best_err = std::fabs(static_cast<double>(HalfBitsToFloat(guess)) - d);
    for (int delta : {-1, 1}) {
      const uint16_t h = static_cast<uint16_t>(guess + delta);
      const double err = std::fabs(static_cast<double>(HalfBitsToFloat(h)) - d);
      if (err < best_err || (err == best_err && (h & 1) == 0)) {
        best = h;
        best_err = err;
      }
    }
    ASSERT_EQ(Half(d).bits, best) << "d = " << d;
  }
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
