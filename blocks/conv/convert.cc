#include "blocks/conv/convert.h"

#include <algorithm>

#include "blocks/conv/isa.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define BF_CONVERT_X86 1
#define BF_TARGET_AVX2_F16C __attribute__((target("avx2,fma,f16c")))
#endif
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics pass an `_mm512_undefined_*()` source to their builtins, which
// -Wmaybe-uninitialized reports once they are inlined here: a known false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace blockflow::conv::internal {
namespace {

// One value at a time, through the types' own conversions: the elements after the last whole
// vector, and every element on the baseline ISA.
template <typename S, typename D>
void ScalarRun(const S* src, D* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<D>(src[i]);
}

#if defined(BF_CONVERT_X86)

// F16C (CPUID leaf 1, ECX bit 29): every CPU with AVX2 has it, but the AVX2 level does not
// check for it (and Clang's __builtin_cpu_supports does not know its name).
bool HasF16c() {
  static const bool f16c = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_F16C) != 0;
  }();
  return f16c;
}

// Lanes `mask` of a vector's values redone one at a time. Where the hardware and the scalar
// conversions differ, which is on NaNs only, the functions below redo the NaN lanes this way:
// HalfBitsToFloat keeps a half NaN's payload as it is (vcvtph2ps quiets a signalling one),
// FloatToHalfBits makes every NaN the quiet half 0x7e00 with its sign (vcvtps2ph keeps the
// payload's upper bits), and bfloat16's rounding add would carry a NaN into the exponent.
template <typename S, typename D>
void RedoLanes(const S* src, D* dst, unsigned mask) {
  for (; mask != 0; mask &= mask - 1) {
    const int lane = __builtin_ctz(mask);
    dst[lane] = static_cast<D>(src[lane]);
  }
}

// The AVX-512 variants: one step converts 16 lanes; kTail steps only the lanes of mask m, through
// masked loads and stores (masked-off lanes neither read nor written), for the last, partial
// vector of a run. The other steps store whole vectors: a masked store measured twice as slow
// (a float16 filter gradient's widening, mnv2_dw_7x960: 0.066 -> 0.124 ms).
template <bool kTail, typename S>
BF_TARGET_AVX512 BF_CONV_INLINE __m256i Load16Bit(const S* src, __mmask16 m) {
  return kTail ? _mm256_maskz_loadu_epi16(m, src)
               : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
}
template <bool kTail, typename D>
BF_TARGET_AVX512 BF_CONV_INLINE void Store16Bit(D* dst, __mmask16 m, __m256i v) {
  if constexpr (kTail) {
    _mm256_mask_storeu_epi16(dst, m, v);
  } else {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), v);
  }
}
template <bool kTail>
BF_TARGET_AVX512 BF_CONV_INLINE __m512 LoadFloats(const float* src, __mmask16 m) {
  return kTail ? _mm512_maskz_loadu_ps(m, src) : _mm512_loadu_ps(src);
}
template <bool kTail>
BF_TARGET_AVX512 BF_CONV_INLINE void StoreFloats(float* dst, __mmask16 m, __m512 v) {
  if constexpr (kTail) {
    _mm512_mask_storeu_ps(dst, m, v);
  } else {
    _mm512_storeu_ps(dst, v);
  }
}

template <bool kTail>
BF_TARGET_AVX512 BF_CONV_INLINE void WidenHalfStep(const Half* src, float* dst, __mmask16 m) {
  const __m512 f = _mm512_cvtph_ps(Load16Bit<kTail>(src, m));
  StoreFloats<kTail>(dst, m, f);
  RedoLanes(src, dst, _mm512_mask_cmp_ps_mask(m, f, f, _CMP_UNORD_Q));
}

template <bool kTail>
BF_TARGET_AVX512 BF_CONV_INLINE void NarrowHalfStep(const float* src, Half* dst, __mmask16 m) {
  const __m512 f = LoadFloats<kTail>(src, m);
  Store16Bit<kTail>(dst, m, _mm512_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT));
  RedoLanes(src, dst, _mm512_mask_cmp_ps_mask(m, f, f, _CMP_UNORD_Q));
}

template <bool kTail>
BF_TARGET_AVX512 BF_CONV_INLINE void WidenBFloat16Step(const BFloat16* src, float* dst,
                                                       __mmask16 m) {
  const __m512i f = _mm512_slli_epi32(_mm512_cvtepu16_epi32(Load16Bit<kTail>(src, m)), 16);
  StoreFloats<kTail>(dst, m, _mm512_castsi512_ps(f));
}

// FloatToBFloat16Bits a vector at a time: x + 0x7fff + (bit 16 of x), the upper half (to nearest
// even).
template <bool kTail>
BF_TARGET_AVX512 BF_CONV_INLINE void NarrowBFloat16Step(const float* src, BFloat16* dst,
                                                        __mmask16 m) {
  const __m512 f = LoadFloats<kTail>(src, m);
  const __m512i x = _mm512_castps_si512(f);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
  const __m512i r =
      _mm512_srli_epi32(_mm512_add_epi32(x, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb)), 16);
  Store16Bit<kTail>(dst, m, _mm512_cvtepi32_epi16(r));
  RedoLanes(src, dst, _mm512_mask_cmp_ps_mask(m, f, f, _CMP_UNORD_Q));
}

// The whole run in steps of 16, the last partial vector through the masked step.
template <typename S, typename D, void (*Step)(const S*, D*, __mmask16),
          void (*TailStep)(const S*, D*, __mmask16)>
BF_TARGET_AVX512 int64_t Avx512Run(const S* src, D* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) Step(src + i, dst + i, __mmask16{0xffff});
  if (i < n) TailStep(src + i, dst + i, static_cast<__mmask16>((1u << (n - i)) - 1));
  return n;
}

// The AVX2 variants: the same steps, eight lanes at a time.
BF_TARGET_AVX2_F16C unsigned NanLanes(__m256 f) {
  return static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(f, f, _CMP_UNORD_Q)));
}

BF_TARGET_AVX2_F16C int64_t WidenHalfAvx2(const Half* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 f = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    _mm256_storeu_ps(dst + i, f);
    RedoLanes(src + i, dst + i, NanLanes(f));
  }
  return i;
}

BF_TARGET_AVX2_F16C int64_t NarrowHalfAvx2(const float* src, Half* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 f = _mm256_loadu_ps(src + i);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT));
    RedoLanes(src + i, dst + i, NanLanes(f));
  }
  return i;
}

BF_TARGET_AVX2_F16C int64_t WidenBFloat16Avx2(const BFloat16* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16));
  }
  return i;
}

BF_TARGET_AVX2_F16C int64_t NarrowBFloat16Avx2(const float* src, BFloat16* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 f = _mm256_loadu_ps(src + i);
    const __m256i x = _mm256_castps_si256(f);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    const __m256i r = _mm256_srli_epi32(
        _mm256_add_epi32(x, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb)), 16);
    // The eight lanes, each below 2^16, packed to 16 bits.
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)));
    RedoLanes(src + i, dst + i, NanLanes(f));
  }
  return i;
}

#endif  // BF_CONVERT_X86

// The run through `avx512` or `avx2` (each returning how many elements it converted) where
// ActiveIsa() allows, the elements after AVX2's last whole vector through the same function on
// a copy padded to 16 (the scalar conversions cost about 4 ns a value: a transposed row of 28
// values left 12 of them), and everything one value at a time on the baseline ISA. `f16c`: the
// AVX2 variant needs F16C.
template <typename S, typename D, typename Fn>
void Run(const S* src, D* dst, int64_t n, [[maybe_unused]] Fn avx512, [[maybe_unused]] Fn avx2,
         [[maybe_unused]] bool f16c) {
#if defined(BF_CONVERT_X86)
  const Isa isa = ActiveIsa();
  Fn fn = nullptr;
  if (isa == Isa::kAvx512) {
    fn = avx512;
  } else if (isa == Isa::kAvx2 && (!f16c || HasF16c())) {
    fn = avx2;
  }
  if (fn != nullptr) {
    const int64_t done = fn(src, dst, n), tail = n - done;
    if (tail == 0) return;
    constexpr int64_t kPadded = 16;  // a whole number of vectors at either width
    S s[kPadded] = {};
    D d[kPadded];
    std::copy_n(src + done, tail, s);
    fn(s, d, kPadded);
    std::copy_n(d, tail, dst + done);
    return;
  }
#endif
  ScalarRun(src, dst, n);
}

}  // namespace

#if defined(BF_CONVERT_X86)
void WidenRun(const Half* src, float* dst, int64_t n) {
  Run(src, dst, n, Avx512Run<Half, float, WidenHalfStep<false>, WidenHalfStep<true>>, WidenHalfAvx2,
      true);
}
void WidenRun(const BFloat16* src, float* dst, int64_t n) {
  Run(src, dst, n, Avx512Run<BFloat16, float, WidenBFloat16Step<false>, WidenBFloat16Step<true>>,
      WidenBFloat16Avx2, false);
}
void NarrowRun(const float* src, Half* dst, int64_t n) {
  Run(src, dst, n, Avx512Run<float, Half, NarrowHalfStep<false>, NarrowHalfStep<true>>,
      NarrowHalfAvx2, true);
}
void NarrowRun(const float* src, BFloat16* dst, int64_t n) {
  Run(src, dst, n, Avx512Run<float, BFloat16, NarrowBFloat16Step<false>, NarrowBFloat16Step<true>>,
      NarrowBFloat16Avx2, false);
}
#else
void WidenRun(const Half* src, float* dst, int64_t n) { ScalarRun(src, dst, n); }
void WidenRun(const BFloat16* src, float* dst, int64_t n) { ScalarRun(src, dst, n); }
void NarrowRun(const float* src, Half* dst, int64_t n) { ScalarRun(src, dst, n); }
void NarrowRun(const float* src, BFloat16* dst, int64_t n) { ScalarRun(src, dst, n); }
#endif

}  // namespace blockflow::conv::internal
