// The convolution kernels' vector conversions between 16-bit floats and float (convert.h): bit
// for bit what Half and BFloat16 give one value at a time, at every ISA, for every 16-bit
// pattern widened and for floats around every rounding boundary (and every kind of NaN)
// rounded, in runs that start and end anywhere within a vector.
#include "blocks/conv/convert.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "blocks/conv/isa.h"

namespace blockflow::conv::internal {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Runs `check(isa, offset, length)` at every ISA the CPU has, over the whole input and over
// runs starting at offsets 1..17 and ending 0..16 elements before its end.
template <typename Check>
void ForEveryIsaAndRun(int64_t size, const Check& check) {
  for (Isa isa : {Isa::kBase, Isa::kAvx2, Isa::kAvx512}) {
    SetIsaForTesting(isa);
    check(std::string(IsaName(ActiveIsa())), 0, size);
    for (int64_t off = 1; off <= 17; ++off) check(IsaName(ActiveIsa()), off, size - 2 * off + 1);
  }
  SetIsaForTesting(Isa::kAvx512);
}

template <typename H>
void CheckWidenEveryPattern() {
  std::vector<H> src(65536 + 5);
  for (size_t i = 0; i < src.size(); ++i) src[i] = H::FromBits(static_cast<uint16_t>(i));
  ForEveryIsaAndRun(
      static_cast<int64_t>(src.size()), [&](const std::string& isa, int64_t off, int64_t n) {
        std::vector<float> dst(src.size(), -7.0f);
        WidenRun(src.data() + off, dst.data() + off, n);
        int wrong = 0;
        for (int64_t i = 0; i < static_cast<int64_t>(src.size()); ++i) {
          const bool inside = i >= off && i < off + n;
          const uint32_t want = inside ? Bits(static_cast<float>(src[i])) : Bits(-7.0f);
          if (Bits(dst[i]) != want && ++wrong <= 3) {
            ADD_FAILURE() << isa << " offset " << off << " element " << i << " bits 0x" << std::hex
                          << src[i].bits << ": got 0x" << Bits(dst[i]) << ", want 0x" << want;
          }
        }
        EXPECT_EQ(wrong, 0) << isa << " offset " << off;
      });
}

TEST(ConvertRuns, WidenHalfEveryPattern) { CheckWidenEveryPattern<Half>(); }
TEST(ConvertRuns, WidenBFloat16EveryPattern) { CheckWidenEveryPattern<BFloat16>(); }

// Floats to round: around every 16-bit value of type H (the value, its neighbouring floats,
// and the midpoints to the next value and their neighbours, where rounding to nearest even
// decides), NaNs quiet and signalling of either sign, infinities, float subnormals, the
// overflow boundaries, and a sweep over the float bit patterns.
template <typename H>
std::vector<float> RoundingCases() {
  std::vector<float> v;
  for (uint32_t h = 0; h < 65535; ++h) {
    const float a = static_cast<float>(H::FromBits(static_cast<uint16_t>(h)));
    const float b = static_cast<float>(H::FromBits(static_cast<uint16_t>(h + 1)));
    if (a != a || b != b) continue;  // NaN
    const uint32_t ab = Bits(a);
    v.push_back(a);
    v.push_back(FromBits(ab + 1));
    v.push_back(FromBits(ab - 1));
    if (h != 0x7fff && h != 0xffff) {  // b is the next value of the same sign
      const uint32_t mid = Bits(static_cast<float>((static_cast<double>(a) + b) / 2));
      for (uint32_t m : {mid - 1, mid, mid + 1}) v.push_back(FromBits(m));
    }
  }
  for (uint32_t u : {0x7fc00000u, 0x7f800001u, 0x7fbfffffu, 0x7fffffffu, 0xffc00000u, 0xff800001u,
                     0xffffffffu, 0x7fa00000u, 0x7f800000u, 0xff800000u, 0x00000001u, 0x807fffffu,
                     0x33000000u, 0x33000001u, 0x477fe000u, 0x477fefffu, 0x477ff000u, 0x7f7fffffu})
    v.push_back(FromBits(u));
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 65521)
    v.push_back(FromBits(static_cast<uint32_t>(u)));
  return v;
}

template <typename H>
void CheckNarrow() {
  const std::vector<float> src = RoundingCases<H>();
  ForEveryIsaAndRun(
      static_cast<int64_t>(src.size()), [&](const std::string& isa, int64_t off, int64_t n) {
        std::vector<H> dst(src.size(), H::FromBits(0x1234));
        NarrowRun(src.data() + off, dst.data() + off, n);
        int wrong = 0;
        for (int64_t i = 0; i < static_cast<int64_t>(src.size()); ++i) {
          const bool inside = i >= off && i < off + n;
          const uint16_t want = inside ? H(src[i]).bits : uint16_t{0x1234};
          if (dst[i].bits != want && ++wrong <= 3) {
            ADD_FAILURE() << isa << " offset " << off << " element " << i << " float 0x" << std::hex
                          << Bits(src[i]) << ": got 0x" << dst[i].bits << ", want 0x" << want;
          }
        }
        EXPECT_EQ(wrong, 0) << isa << " offset " << off;
      });
}

TEST(ConvertRuns, NarrowToHalfRoundsAsTheScalarConversion) { CheckNarrow<Half>(); }
TEST(ConvertRuns, NarrowToBFloat16RoundsAsTheScalarConversion) { CheckNarrow<BFloat16>(); }

}  // namespace
}  // namespace blockflow::conv::internal
