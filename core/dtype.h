// Element types: DType and the two 16-bit float storage types.
//
//   DType t = DType::kFloat32;
//   DTypeName(t) == "float32";  DTypeSize(t) == 4;
//   Half h(1.5f);  float f = h;    // IEEE binary16, round to nearest even
//   BFloat16 b(1.5f);              // upper half of a float32, round to nearest even
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace blockflow {

/// The element type of a tensor or a port.
enum class DType : uint8_t {
  kInvalid = 0,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
  kInt32,
  kInt64,
  kBool,
};

/// The name used in graph JSON and messages: "float32", "bfloat16", ...
std::string_view DTypeName(DType dtype);
/// Parses a DType name ("float32"; also "half" and "double"); nullopt if unknown.
std::optional<DType> ParseDType(std::string_view name);
/// Bytes per element (bool is 1).
size_t DTypeSize(DType dtype);
/// True for float16, bfloat16, float32, float64.
bool IsFloatingDType(DType dtype);
/// All valid dtypes, in enum order.
const std::vector<DType>& AllDTypes();
/// The four floating dtypes a convolution block accepts.
const std::vector<DType>& FloatDTypes();
/// The floating dtypes plus int32 and int64: what arithmetic blocks accept.
const std::vector<DType>& NumericDTypes();
/// int32 and int64: shapes, sizes and axes.
const std::vector<DType>& IndexDTypes();

/// Converts float32 to IEEE binary16 bits, rounding to nearest even (overflow gives inf).
uint16_t FloatToHalfBits(float f);
/// Converts float64 to IEEE binary16 bits with a single rounding to nearest even.
uint16_t DoubleToHalfBits(double d);
/// Converts float64 to bfloat16 bits with a single rounding to nearest even.
uint16_t DoubleToBFloat16Bits(double d);
/// Converts IEEE binary16 bits to float32 (exact).
float HalfBitsToFloat(uint16_t h);
/// Converts float32 to bfloat16 bits, rounding to nearest even (NaN stays NaN).
uint16_t FloatToBFloat16Bits(float f);
/// Converts bfloat16 bits to float32 (exact).
inline float BFloat16BitsToFloat(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// A 16-bit floating storage type whose bits the three conversions define; arithmetic happens
/// in float.
template <uint16_t (*kFromFloat)(float), uint16_t (*kFromDouble)(double),
          float (*kToFloat)(uint16_t)>
struct Float16Storage {
  uint16_t bits = 0;
  Float16Storage() = default;
  explicit Float16Storage(float f) : bits(kFromFloat(f)) {}
  explicit Float16Storage(double d) : bits(kFromDouble(d)) {}
  static Float16Storage FromBits(uint16_t b) {
    Float16Storage h;
    h.bits = b;
    return h;
  }
  // Implicit on purpose: widening to float is exact.
  // NOLINTNEXTLINE(google-explicit-constructor)
  operator float() const { return kToFloat(bits); }
};

/// IEEE binary16.
using Half = Float16Storage<FloatToHalfBits, DoubleToHalfBits, HalfBitsToFloat>;
/// bfloat16: the upper half of a float32.
using BFloat16 = Float16Storage<FloatToBFloat16Bits, DoubleToBFloat16Bits, BFloat16BitsToFloat>;

/// Maps a C++ element type to its DType.
template <typename T>
struct DTypeOf {
  static constexpr DType value = std::is_same_v<T, Half>       ? DType::kFloat16
                                 : std::is_same_v<T, BFloat16> ? DType::kBFloat16
                                 : std::is_same_v<T, float>    ? DType::kFloat32
                                 : std::is_same_v<T, double>   ? DType::kFloat64
                                 : std::is_same_v<T, int32_t>  ? DType::kInt32
                                 : std::is_same_v<T, int64_t>  ? DType::kInt64
                                 : std::is_same_v<T, bool>     ? DType::kBool
                                                               : DType::kInvalid;
  static_assert(value != DType::kInvalid, "not a blockflow element type");
};

/// The type kernels accumulate in: float for the 16-bit types and float32, double for float64,
/// int64 for the integer types.
template <typename T>
struct AccumulatorOf {
  using type = std::conditional_t<std::is_same_v<T, double>, double,
                                  std::conditional_t<std::is_integral_v<T>, int64_t, float>>;
};

/// Calls `fn(T{})` with T the one of `Ts` whose DType is `dtype`; false when none is.
template <typename... Ts, typename Fn>
bool DispatchAmong(DType dtype, Fn&& fn) {
  return ((dtype == DTypeOf<Ts>::value ? (fn(Ts{}), true) : false) || ...);
}

/// Calls `fn(T{})` with T the C++ type of a floating `dtype`; returns false for other dtypes.
template <typename Fn>
bool DispatchFloat(DType dtype, Fn&& fn) {
  return DispatchAmong<Half, BFloat16, float, double>(dtype, fn);
}

/// Calls `fn(T{})` with T the C++ type of any numeric `dtype` (floats, int32, int64, bool).
template <typename Fn>
bool DispatchAll(DType dtype, Fn&& fn) {
  return DispatchAmong<Half, BFloat16, float, double, int32_t, int64_t, bool>(dtype, fn);
}

}  // namespace blockflow
