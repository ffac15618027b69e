#include "blocks/conv/depthwise_planes.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "blocks/conv/isa.h"
#include "blocks/conv/layout.h"
#include "blocks/conv/optimized_util.h"
#include "core/team.h"

namespace blockflow::conv::internal {
namespace {

constexpr int64_t RoundUp(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

}  // namespace

// The flat planes of one geometry (depthwise_planes.h, column stride 1) for a band of `rows`
// output rows: sh phase planes, each ph rows of pw, in which tap t (kh-major) reads phase plane
// phase[t] at offset off[t] from the output position oh * pw + ow (oh counted from the band's
// first row). Outside the anonymous namespace: the closures of the kernels the header declares
// hold references to it.
struct DwPlanes {
  int64_t sh = 1;
  int64_t rows = 0;
  int64_t ph = 0, pw = 0;
  int64_t out = 0;    // rows * pw, the flat output positions
  int64_t reach = 0;  // the largest offset
  int64_t size = 0;   // elements of one phase plane: whole vectors past the last read
  std::vector<int64_t> phase, off;
};

namespace {

DwPlanes PlanesOf(const ConvGeometry& g, int64_t lanes, int64_t rows) {
  DwPlanes p;
  p.sh = g.stride_h;
  p.rows = rows;
  p.ph = rows + (g.filter_h - 1) * g.dilation_h / g.stride_h;
  p.pw = g.out_w + (g.filter_w - 1) * g.dilation_w;
  p.out = rows * p.pw;
  for (int64_t kh = 0; kh < g.filter_h; ++kh) {
    for (int64_t kw = 0; kw < g.filter_w; ++kw) {
      const int64_t r = kh * g.dilation_h;
      p.phase.push_back(r % p.sh);
      p.off.push_back(r / p.sh * p.pw + kw * g.dilation_w);
      p.reach = std::max(p.reach, p.off.back());
    }
  }
  // The forward reads up to RoundUp(out) + reach, the input gradient writes RoundUp(ph * pw).
  p.size = RoundUp(std::max(RoundUp(p.out, lanes) + p.reach, p.ph * p.pw), lanes);
  return p;
}

// Output rows a band (PlanesOf) at most: as many as keep a band's phase plane and its flat
// outputs within kBandBytes each, in bands of equal size: whole 112 x 112 float planes (two of
// 52 KB with the outputs) outgrow L1, and mnv1_dw1_112x32's filter gradient took 2.83 ms in
// them, 2.21 in bands of 23 rows (one pinned core, best of 5 alternated rounds).
constexpr int64_t kBandBytes = int64_t{12} << 10;
int64_t BandRows(const ConvGeometry& g, size_t elem_size) {
  const int64_t pw = g.out_w + (g.filter_w - 1) * g.dilation_w;
  const int64_t most = std::max<int64_t>(1, kBandBytes / (pw * static_cast<int64_t>(elem_size)));
  const int64_t bands = (g.out_h + most - 1) / most;  // out_h > 0: RunConv takes empty work
  return (g.out_h + bands - 1) / bands;
}

// The phase planes of the band from output row oh0 of one input plane x (in_h x in_w of S):
// phase q holds the zero-padded input at rows (oh0 + r) * sh + q, element [r * pw + j] that of
// column j - pad_left. The planes' tails past ph * pw are never written: they stay zeros.
template <typename S, typename C>
void FillPhases(const ConvGeometry& g, const DwPlanes& p, const S* x, int64_t oh0, C* planes) {
  // Columns j of a row read input column j - pad_left: [j0, j1) inside.
  const int64_t j0 = std::min(p.pw, g.pad_left);
  const int64_t j1 = std::clamp<int64_t>(g.in_w + g.pad_left, j0, p.pw);
  for (int64_t q = 0; q < p.sh; ++q) {
    C* plane = planes + q * p.size;
    for (int64_t r = 0; r < p.ph; ++r) {
      C* dst = plane + r * p.pw;
      const int64_t ih = (oh0 + r) * p.sh + q - g.pad_top;
      if (ih < 0 || ih >= g.in_h) {
        std::fill_n(dst, p.pw, C{0});
        continue;
      }
      std::fill_n(dst, j0, C{0});
      ConvertRun(x + ih * g.in_w + j0 - g.pad_left, dst + j0, j1 - j0);
      std::fill_n(dst + j1, p.pw - j1, C{0});
    }
  }
}

// The output rows [oh0, oh0 + rows) of one plane of dy (out_h x out_w of S) at the flat
// positions (oh - oh0) * pw + ow from `at`, zeros in the columns [out_w, pw) of each row and
// after the last row to the next whole vector.
template <typename S, typename C>
void FillGradient(const ConvGeometry& g, const DwPlanes& p, const S* dy, int64_t oh0, int64_t rows,
                  C* at) {
  constexpr int64_t L = 64 / sizeof(C);
  for (int64_t r = 0; r < rows; ++r) {
    ConvertRun(dy + (oh0 + r) * g.out_w, at + r * p.pw, g.out_w);
    std::fill_n(at + r * p.pw + g.out_w, p.pw - g.out_w, C{0});
  }
  std::fill(at + rows * p.pw, at + RoundUp(rows * p.pw, L), C{0});
}

// out[i] = sum over t < taps of w[t] * src[t][i], for i < n (a multiple of L), in blocks of NB
// vectors whose sums stay in registers over all the taps.
template <typename C, typename V, int NB>
BF_CONV_INLINE void ShiftedSums(const C* const* src, const C* w, int64_t taps, int64_t n,
                                C* __restrict out) {
  constexpr int64_t L = sizeof(V) / sizeof(C);
  int64_t i = 0;
  for (; i + NB * L <= n; i += NB * L) {
    V acc[NB];
    for (int b = 0; b < NB; ++b) acc[b] = V{};
    for (int64_t t = 0; t < taps; ++t) {
      const C* s = src[t] + i;
      const C wt = w[t];
      for (int b = 0; b < NB; ++b) acc[b] += LoadVec<V>(s + b * L) * wt;
    }
    for (int b = 0; b < NB; ++b) StoreVec(out + i + b * L, acc[b]);
  }
  for (; i < n; i += L) {
    V acc = V{};
    for (int64_t t = 0; t < taps; ++t) acc += LoadVec<V>(src[t] + i) * w[t];
    StoreVec(out + i, acc);
  }
}

// sums[t] += sum over the band's first `rows` output rows oh and columns ow < out_w of
// d[oh * pw + ow] * src[t][oh * pw + ow], for t < kTaps: a vector of sums per tap, summed lane by
// lane in a fixed order at the end. d holds zeros at the other flat positions (the columns [out_w,
// pw) and past the last row), so with finite inputs the sums run over the flat positions whole.
// With `masked` (an input plane holding an infinity or a NaN), each row's last vector is masked to
// zeros in both operands instead: a non-finite input that no output pairs with a tap then adds
// nothing to that tap (as in the reference, which skips the pair) rather than NaN (zero times
// infinity).
constexpr int kMaxDotTaps = 9;
template <typename C, typename V, int kTaps>
BF_CONV_INLINE void ShiftedDots(const ConvGeometry& g, const DwPlanes& p, int64_t rows, const C* d,
                                const C* const* src, bool masked, C* sums) {
  constexpr int64_t L = sizeof(V) / sizeof(C);
  V acc[kTaps];
  for (int t = 0; t < kTaps; ++t) acc[t] = V{};
  if (!masked) {
    for (int64_t i = 0; i < rows * p.pw; i += L) {
      const V dv = LoadVec<V>(d + i);
      for (int t = 0; t < kTaps; ++t) acc[t] += LoadVec<V>(src[t] + i) * dv;
    }
  } else {
    const int64_t full = g.out_w - g.out_w % L, rest = g.out_w - full;
    alignas(64) C dm[L];
    alignas(64) C xm[L];
    for (int64_t oh = 0; oh < rows; ++oh) {
      const int64_t base = oh * p.pw;
      for (int64_t i = base; i < base + full; i += L) {
        const V dv = LoadVec<V>(d + i);
        for (int t = 0; t < kTaps; ++t) acc[t] += LoadVec<V>(src[t] + i) * dv;
      }
      if (rest == 0) continue;
      const int64_t i = base + full;
      for (int64_t l = 0; l < L; ++l) dm[l] = l < rest ? d[i + l] : C{0};
      const V dv = LoadVec<V>(dm);
      for (int t = 0; t < kTaps; ++t) {
        for (int64_t l = 0; l < L; ++l) xm[l] = l < rest ? src[t][i + l] : C{0};
        acc[t] += LoadVec<V>(xm) * dv;
      }
    }
  }
  alignas(64) C lanes[L];
  for (int t = 0; t < kTaps; ++t) {
    StoreVec(lanes, acc[t]);
    C s = 0;
    for (int64_t l = 0; l < L; ++l) s += lanes[l];
    sums[t] += s;
  }
}

// *finite = whether the n values at p (a multiple of L) are all finite: their products with
// zero sum to zero, or to NaN when one is an infinity or a NaN.
template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void AllFiniteT(const C* p, int64_t n, bool* finite) {
  (void)P;
  (void)NV;
  constexpr int64_t L = sizeof(V) / sizeof(C);
  V acc = V{};
  for (int64_t i = 0; i < n; i += L) acc += LoadVec<V>(p + i) * C{0};
  alignas(64) C lanes[L];
  StoreVec(lanes, acc);
  C s = 0;
  for (int64_t l = 0; l < L; ++l) s += lanes[l];
  *finite = s == C{0};
}

template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void ShiftedSumsT(const C* const* src, const C* w, int64_t taps, int64_t n, C* out) {
  (void)P;
  (void)NV;
  // Four vectors of sums with AVX-512's 32 registers; one 64-byte vector (two ymm, four xmm)
  // with the narrower ISAs' 16.
  if constexpr (kIsSplitVec<V>) {
    ShiftedSums<C, V, 1>(src, w, taps, n, out);
  } else {
    ShiftedSums<C, V, 4>(src, w, taps, n, out);
  }
}

template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void ShiftedDotsT(const ConvGeometry& g, const DwPlanes& p, int64_t rows, const C* d,
                                 const C* const* src, int64_t taps, bool masked, C* sums) {
  (void)P;
  (void)NV;
  // In groups of kMaxDotTaps taps (the 3 x 3 filter's nine in one pass); the split vectors of
  // the narrower ISAs two at a time, within their 16 registers.
  constexpr int kGroup = kIsSplitVec<V> ? 2 : kMaxDotTaps;
  int64_t t = 0;
  for (; t + kGroup <= taps; t += kGroup)
    ShiftedDots<C, V, kGroup>(g, p, rows, d, src + t, masked, sums + t);
  for (; t < taps; ++t) ShiftedDots<C, V, 1>(g, p, rows, d, src + t, masked, sums + t);
}

template <typename C>
using ShiftedSumsFn = void (*)(const C* const*, const C*, int64_t, int64_t, C*);
template <typename C>
using ShiftedDotsFn = void (*)(const ConvGeometry&, const DwPlanes&, int64_t, const C*,
                               const C* const*, int64_t, bool, C*);
template <typename C>
using AllFiniteFn = void (*)(const C*, int64_t, bool*);
// NOLINTBEGIN(bugprone-macro-parentheses): C is spliced into parameter types.
#define BF_DW_PLANE_FNS(C)                                                             \
  BF_CONV_ISA_FNS(ShiftedSumsFor, ShiftedSumsT, C, ShiftedSumsFn<C>,                   \
                  (const C* const* src, const C* w, int64_t taps, int64_t n, C* out),  \
                  (src, w, taps, n, out))                                              \
  BF_CONV_ISA_FNS(ShiftedDotsFor, ShiftedDotsT, C, ShiftedDotsFn<C>,                   \
                  (const ConvGeometry& g, const DwPlanes& p, int64_t rows, const C* d, \
                   const C* const* src, int64_t taps, bool masked, C* sums),           \
                  (g, p, rows, d, src, taps, masked, sums))                            \
  BF_CONV_ISA_FNS(AllFiniteFor, AllFiniteT, C, AllFiniteFn<C>,                         \
                  (const C* p, int64_t n, bool* finite), (p, n, finite))
BF_DW_PLANE_FNS(float)
BF_DW_PLANE_FNS(double)
#undef BF_DW_PLANE_FNS
// NOLINTEND(bugprone-macro-parentheses)

// src[t] = where tap t reads the phase planes at `planes` (offset included).
template <typename C>
void TapSources(const DwPlanes& p, const C* planes, const C** src) {
  for (size_t k = 0; k < p.off.size(); ++k) src[k] = planes + p.phase[k] * p.size + p.off[k];
}

}  // namespace

template <typename T>
void DwForwardPlanes(const KernelArgs<T>& args, const KernelContext& ctx) {
  using C = ComputeT<T>;
  constexpr int64_t L = 64 / sizeof(C);
  const ConvGeometry& g = args.g;
  const DwPlanes p = PlanesOf(g, L, BandRows(g, sizeof(C)));
  const int64_t taps = g.filter_h * g.filter_w, mult = g.multiplier, ch = g.out_depth;
  const int64_t items = g.batch * g.in_depth, n = RoundUp(p.out, L);
  const int nt = ItemThreads(ctx.num_threads, items, mult * g.out_h * p.pw * taps);
  PerThread<C> phases(nt, p.sh * p.size);
  PerThread<C> out(nt, n);
  PerThread<C> weights(nt, taps);
  PerThread<const C*> src(nt, taps);
  for (int t = 0; t < nt; ++t) TapSources(p, phases[t], src[t]);
  const ShiftedSumsFn<C> sums = ShiftedSumsFor(C{});
  ParallelRows(items, nt, ctx, [&](int64_t item, int t) {
    const int64_t b = item / g.in_depth, c = item % g.in_depth;
    C* planes = phases[t];
    for (int64_t oh0 = 0; oh0 < g.out_h; oh0 += p.rows) {
      const int64_t rows = std::min(p.rows, g.out_h - oh0);
      FillPhases(g, p, args.x_t + item * g.in_h * g.in_w, oh0, planes);
      for (int64_t m = 0; m < mult; ++m) {
        const int64_t co = c * mult + m;
        for (int64_t k = 0; k < taps; ++k) weights[t][k] = args.w[k * ch + co];
        sums(src[t], weights[t], taps, RoundUp(rows * p.pw, L), out[t]);
        T* y = args.result_t + ((b * ch + co) * g.out_h + oh0) * g.out_w;
        for (int64_t r = 0; r < rows; ++r) ConvertRun(out[t] + r * p.pw, y + r * g.out_w, g.out_w);
      }
    }
  });
}

template <typename T>
void DwBackpropInputPlanes(const KernelArgs<T>& args, const KernelContext& ctx) {
  using C = ComputeT<T>;
  constexpr int64_t L = 64 / sizeof(C);
  const ConvGeometry& g = args.g;
  const DwPlanes p = PlanesOf(g, L, g.out_h);
  const int64_t taps = g.filter_h * g.filter_w, mult = g.multiplier, ch = g.out_depth;
  const int64_t items = g.batch * g.in_depth, n = RoundUp(p.ph * p.pw, L);
  const int64_t phases = p.sh;
  // dy of each multiplier's plane `reach` zeros in, so that every shifted read stays inside.
  const int64_t grad_size = RoundUp(p.reach + n, L);
  const int nt = ItemThreads(ctx.num_threads, items, mult * n * taps / phases);
  PerThread<C> grads(nt, mult * grad_size);
  PerThread<C> dx(nt, phases * n);
  PerThread<C> weights(nt, mult * taps);
  PerThread<const C*> src(nt, mult * taps);
  const ShiftedSumsFn<C> sums = ShiftedSumsFor(C{});
  ParallelRows(items, nt, ctx, [&](int64_t item, int t) {
    const int64_t b = item / g.in_depth, c = item % g.in_depth;
    for (int64_t m = 0; m < mult; ++m) {
      const int64_t co = c * mult + m;
      FillGradient(g, p, args.dy_t + (b * ch + co) * g.out_h * g.out_w, 0, g.out_h,
                   grads[t] + m * grad_size + p.reach);
    }
    // Phase plane q: the sum over its taps and the multiplier of w * dy shifted by the tap.
    for (int64_t q = 0; q < phases; ++q) {
      int64_t count = 0;
      for (int64_t m = 0; m < mult; ++m) {
        for (int64_t k = 0; k < taps; ++k) {
          if (p.phase[k] != q) continue;
          src[t][count] = grads[t] + m * grad_size + p.reach - p.off[k];
          weights[t][count] = args.w[k * ch + c * mult + m];
          ++count;
        }
      }
      C* plane = dx[t] + q * n;
      if (count == 0) {
        std::fill_n(plane, n, C{0});
      } else {
        sums(src[t], weights[t], count, n, plane);
      }
    }
    // Back to the plane: input row ih sits in phase plane (ih + pt) % sh at row (ih + pt) / sh,
    // input column iw at column iw + pl; pixels past the planes no tap reached.
    T* out = args.result_t + item * g.in_h * g.in_w;
    const int64_t inside = std::clamp<int64_t>(p.pw - g.pad_left, 0, g.in_w);
    for (int64_t ih = 0; ih < g.in_h; ++ih) {
      T* drow = out + ih * g.in_w;
      const int64_t r = ih + g.pad_top, pr = r / p.sh;
      if (pr >= p.ph) {
        std::fill_n(drow, g.in_w, T{});
        continue;
      }
      ConvertRun(dx[t] + r % p.sh * n + pr * p.pw + g.pad_left, drow, inside);
      std::fill_n(drow + inside, g.in_w - inside, T{});
    }
  });
}

template <typename T>
void DwBackpropFilterPlanes(const KernelArgs<T>& args, const KernelContext& ctx) {
  using C = ComputeT<T>;
  constexpr int64_t L = 64 / sizeof(C);
  const ConvGeometry& g = args.g;
  const DwPlanes p = PlanesOf(g, L, BandRows(g, sizeof(C)));
  const int64_t taps = g.filter_h * g.filter_w, mult = g.multiplier, ch = g.out_depth;
  // Each thread takes whole input channels over the batch, so that every filter gradient
  // element is summed by one thread in one order, whatever the number of threads.
  const int nt = ItemThreads(ctx.num_threads, g.in_depth, g.batch * mult * g.out_h * p.pw * taps);
  PerThread<C> phases(nt, p.sh * p.size);
  PerThread<C> grad(nt, RoundUp(p.out, L) + L);
  PerThread<const C*> src(nt, taps);
  WorkBuffer<C> dw(static_cast<size_t>(taps * ch), C{0});
  PerThread<C> sums(nt, taps);
  const ShiftedDotsFn<C> dots = ShiftedDotsFor(C{});
  const AllFiniteFn<C> all_finite = AllFiniteFor(C{});
  for (int t = 0; t < nt; ++t) TapSources(p, phases[t], src[t]);
  ParallelFor(nt, g.in_depth, [&](int64_t c) {
    const int t = TeamThread();
    for (int64_t b = 0; b < g.batch; ++b) {
      if (ctx.cancelled()) break;
      C* planes = phases[t];
      for (int64_t oh0 = 0; oh0 < g.out_h; oh0 += p.rows) {
        const int64_t rows = std::min(p.rows, g.out_h - oh0);
        FillPhases(g, p, args.x_t + (b * g.in_depth + c) * g.in_h * g.in_w, oh0, planes);
        bool finite = true;
        all_finite(planes, p.sh * p.size, &finite);
        for (int64_t m = 0; m < mult; ++m) {
          const int64_t co = c * mult + m;
          FillGradient(g, p, args.dy_t + (b * ch + co) * g.out_h * g.out_w, oh0, rows, grad[t]);
          std::fill_n(sums[t], taps, C{0});
          dots(g, p, rows, grad[t], src[t], taps, !finite, sums[t]);
          for (int64_t k = 0; k < taps; ++k) dw[k * ch + co] += sums[t][k];
        }
      }
    }
  });
  if (ctx.cancelled()) return;
  ConvertRun(dw.data(), args.filter_grad->template data<T>(), taps * ch);
}

#define BF_DW_PLANES_INSTANTIATE(T)                                                   \
  template void DwForwardPlanes<T>(const KernelArgs<T>&, const KernelContext&);       \
  template void DwBackpropInputPlanes<T>(const KernelArgs<T>&, const KernelContext&); \
  template void DwBackpropFilterPlanes<T>(const KernelArgs<T>&, const KernelContext&);
BF_DW_PLANES_INSTANTIATE(float)
BF_DW_PLANES_INSTANTIATE(double)
BF_DW_PLANES_INSTANTIATE(Half)
BF_DW_PLANES_INSTANTIATE(BFloat16)
#undef BF_DW_PLANES_INSTANTIATE

}  // namespace blockflow::conv::internal
