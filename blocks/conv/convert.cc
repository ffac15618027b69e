#include "blocks/conv/convert.h"

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

// The functions below convert the whole vectors of a run and return how many elements they
// converted. Where the hardware and the scalar conversions differ, which is on NaNs only, the
// NaN lanes are rebuilt as the scalar ones make them: HalfBitsToFloat keeps a half NaN's payload
// as it is (vcvtph2ps quiets a signalling one), FloatToHalfBits makes every NaN the quiet half
// 0x7e00 with its sign (vcvtps2ph keeps the payload's upper bits).

BF_TARGET_AVX512 int64_t WidenHalfAvx512(const Half* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    __m512 f = _mm512_cvtph_ps(h);
    const __mmask16 nan = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
    if (nan != 0) {
      const __m512i w = _mm512_cvtepu16_epi32(h);
      const __m512i sign = _mm512_slli_epi32(_mm512_and_si512(w, _mm512_set1_epi32(0x8000)), 16);
      const __m512i payload = _mm512_slli_epi32(_mm512_and_si512(w, _mm512_set1_epi32(0x3ff)), 13);
      const __m512i bits =
          _mm512_or_si512(sign, _mm512_or_si512(_mm512_set1_epi32(0x7f800000), payload));
      f = _mm512_mask_mov_ps(f, nan, _mm512_castsi512_ps(bits));
    }
    _mm512_storeu_ps(dst + i, f);
  }
  return i;
}

BF_TARGET_AVX512 int64_t NarrowHalfAvx512(const float* src, Half* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 f = _mm512_loadu_ps(src + i);
    __m256i h = _mm512_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT);
    const __mmask16 nan = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
    if (nan != 0) {
      const __m512i sign = _mm512_and_si512(_mm512_srli_epi32(_mm512_castps_si512(f), 16),
                                            _mm512_set1_epi32(0x8000));
      const __m256i quiet = _mm512_cvtepi32_epi16(_mm512_or_si512(sign, _mm512_set1_epi32(0x7e00)));
      h = _mm256_mask_blend_epi16(nan, h, quiet);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), h);
  }
  return i;
}

BF_TARGET_AVX512 int64_t WidenBFloat16Avx512(const BFloat16* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    _mm512_storeu_si512(dst + i, _mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
  }
  return i;
}

// FloatToBFloat16Bits a vector at a time: x + 0x7fff + (bit 16 of x), the upper half (to nearest
// even); a NaN's upper half with the quiet bit set.
BF_TARGET_AVX512 int64_t NarrowBFloat16Avx512(const float* src, BFloat16* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i x = _mm512_loadu_si512(src + i);
    const __m512i upper = _mm512_srli_epi32(x, 16);
    const __m512i lsb = _mm512_and_si512(upper, _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(
        _mm512_add_epi32(x, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb)), 16);
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(
        _mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(upper, _mm512_set1_epi32(0x40)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm512_cvtepi32_epi16(r));
  }
  return i;
}

// Eight 32-bit lanes, each below 2^16, as eight 16-bit lanes.
BF_TARGET_AVX2_F16C __m128i Pack16(__m256i v) {
  return _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
}

BF_TARGET_AVX2_F16C int64_t WidenHalfAvx2(const Half* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    __m256 f = _mm256_cvtph_ps(h);
    const __m256 nan = _mm256_cmp_ps(f, f, _CMP_UNORD_Q);
    if (_mm256_movemask_ps(nan) != 0) {
      const __m256i w = _mm256_cvtepu16_epi32(h);
      const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(w, _mm256_set1_epi32(0x8000)), 16);
      const __m256i payload = _mm256_slli_epi32(_mm256_and_si256(w, _mm256_set1_epi32(0x3ff)), 13);
      const __m256i bits =
          _mm256_or_si256(sign, _mm256_or_si256(_mm256_set1_epi32(0x7f800000), payload));
      f = _mm256_blendv_ps(f, _mm256_castsi256_ps(bits), nan);
    }
    _mm256_storeu_ps(dst + i, f);
  }
  return i;
}

BF_TARGET_AVX2_F16C int64_t NarrowHalfAvx2(const float* src, Half* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 f = _mm256_loadu_ps(src + i);
    __m128i h = _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT);
    const __m256 nan = _mm256_cmp_ps(f, f, _CMP_UNORD_Q);
    if (_mm256_movemask_ps(nan) != 0) {
      const __m256i sign = _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(f), 16),
                                            _mm256_set1_epi32(0x8000));
      const __m128i quiet = Pack16(_mm256_or_si256(sign, _mm256_set1_epi32(0x7e00)));
      const __m256i m = _mm256_castps_si256(nan);
      const __m128i mask =
          _mm_packs_epi32(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
      h = _mm_blendv_epi8(h, quiet, mask);
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
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
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    const __m256i upper = _mm256_srli_epi32(x, 16);
    const __m256i lsb = _mm256_and_si256(upper, _mm256_set1_epi32(1));
    const __m256i r = _mm256_srli_epi32(
        _mm256_add_epi32(x, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb)), 16);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff)),
                                           _mm256_set1_epi32(0x7f800000));
    const __m256i quiet = _mm256_or_si256(upper, _mm256_set1_epi32(0x40));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     Pack16(_mm256_blendv_epi8(r, quiet, nan)));
  }
  return i;
}

#endif  // BF_CONVERT_X86

// The run through `avx512` or `avx2` (each returning how many elements it converted) where
// ActiveIsa() allows, the rest one value at a time. `f16c`: the AVX2 variant needs F16C.
template <typename S, typename D, typename Fn>
void Run(const S* src, D* dst, int64_t n, [[maybe_unused]] Fn avx512, [[maybe_unused]] Fn avx2,
         [[maybe_unused]] bool f16c) {
  int64_t done = 0;
#if defined(BF_CONVERT_X86)
  const Isa isa = ActiveIsa();
  if (isa == Isa::kAvx512) {
    done = avx512(src, dst, n);
  } else if (isa == Isa::kAvx2 && (!f16c || HasF16c())) {
    done = avx2(src, dst, n);
  }
#endif
  ScalarRun(src + done, dst + done, n - done);
}

}  // namespace

#if defined(BF_CONVERT_X86)
void WidenRun(const Half* src, float* dst, int64_t n) {
  Run(src, dst, n, WidenHalfAvx512, WidenHalfAvx2, true);
}
void WidenRun(const BFloat16* src, float* dst, int64_t n) {
  Run(src, dst, n, WidenBFloat16Avx512, WidenBFloat16Avx2, false);
}
void NarrowRun(const float* src, Half* dst, int64_t n) {
  Run(src, dst, n, NarrowHalfAvx512, NarrowHalfAvx2, true);
}
void NarrowRun(const float* src, BFloat16* dst, int64_t n) {
  Run(src, dst, n, NarrowBFloat16Avx512, NarrowBFloat16Avx2, false);
}
#else
void WidenRun(const Half* src, float* dst, int64_t n) { ScalarRun(src, dst, n); }
void WidenRun(const BFloat16* src, float* dst, int64_t n) { ScalarRun(src, dst, n); }
void NarrowRun(const float* src, Half* dst, int64_t n) { ScalarRun(src, dst, n); }
void NarrowRun(const float* src, BFloat16* dst, int64_t n) { ScalarRun(src, dst, n); }
#endif

}  // namespace blockflow::conv::internal
