#include "core/dtype.h"

#include <cmath>

#include "core/text.h"

namespace blockflow {

std::string_view DTypeName(DType dtype) {
  static constexpr EnumName<DType> kNames[] = {
      {DType::kFloat16, "float16"}, {DType::kBFloat16, "bfloat16"}, {DType::kFloat32, "float32"},
      {DType::kFloat64, "float64"}, {DType::kInt32, "int32"},       {DType::kInt64, "int64"},
      {DType::kBool, "bool"}};
  return NameIn(kNames, dtype, "invalid");
}

std::optional<DType> ParseDType(std::string_view name) {
  for (DType d : AllDTypes()) {
    if (DTypeName(d) == name) return d;
  }
  if (name == "half") return DType::kFloat16;
  if (name == "float") return DType::kFloat32;
  if (name == "double") return DType::kFloat64;
  return std::nullopt;
}

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kFloat64:
    case DType::kInt64:
      return 8;
    case DType::kBool:
      return 1;
    case DType::kInvalid:
      break;
  }
  return 0;
}

bool IsFloatingDType(DType dtype) {
  return dtype == DType::kFloat16 || dtype == DType::kBFloat16 || dtype == DType::kFloat32 ||
         dtype == DType::kFloat64;
}

const std::vector<DType>& AllDTypes() {
  static const std::vector<DType> all = {DType::kFloat16, DType::kBFloat16, DType::kFloat32,
                                         DType::kFloat64, DType::kInt32,    DType::kInt64,
                                         DType::kBool};
  return all;
}

const std::vector<DType>& FloatDTypes() {
  static const std::vector<DType> floats = {DType::kFloat16, DType::kBFloat16, DType::kFloat32,
                                            DType::kFloat64};
  return floats;
}

const std::vector<DType>& NumericDTypes() {
  static const std::vector<DType> numeric = {DType::kFloat16, DType::kBFloat16, DType::kFloat32,
                                             DType::kFloat64, DType::kInt32,    DType::kInt64};
  return numeric;
}

const std::vector<DType>& IndexDTypes() {
  static const std::vector<DType> index = {DType::kInt32, DType::kInt64};
  return index;
}

// float32 → binary16 with round-to-nearest-even, handling subnormals, overflow and NaN.
uint16_t FloatToHalfBits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {
    // Subnormal half (or zero): value = mantissa * 2^-24. Round abs/2^-24 to nearest even.
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // < 2^-25: rounds to 0
    const uint32_t exp = abs >> 23;
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exp;  // 14..24 bits dropped (in [14, 24])
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  // Normal: rebias exponent (127 → 15) and round 13 dropped bits to nearest even.
  uint32_t h = (abs - 0x38000000u) >> 13;
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: correct
  return static_cast<uint16_t>(sign | h);
}

namespace {

// double → float rounded to odd: truncate, then set the last bit when inexact. Rounding that
// float once more to a type with at least 2 fewer significand bits (half: 11, bfloat16: 8)
// gives the same result as rounding the double directly: no double-rounding error.
float RoundToOddFloat(double d) {
  float f = static_cast<float>(d);
  if (std::isnan(d) || static_cast<double>(f) == d) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  bits |= 1u;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace

uint16_t DoubleToHalfBits(double d) { return FloatToHalfBits(RoundToOddFloat(d)); }
uint16_t DoubleToBFloat16Bits(double d) { return FloatToBFloat16Bits(RoundToOddFloat(d)); }

float HalfBitsToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  float out;
  if (exp == 0) {
    out = std::ldexp(static_cast<float>(mant), -24);
    if (sign) out = -out;
    return out;
  }
  uint32_t bits;
  if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  }
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

uint16_t FloatToBFloat16Bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  const uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace blockflow
