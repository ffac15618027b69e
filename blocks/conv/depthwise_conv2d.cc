#include "blocks/conv/depthwise_conv2d.h"

#include <omp.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "blocks/conv/conv_internal.h"

// The kernels pass 64-byte vectors between always-inlined helpers; GCC's note that this
// changes the ABI on targets without AVX-512 (-Wpsabi) does not apply to inlined code.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace blockflow::conv {
namespace {

using internal::ActIndex;
using internal::ComputeT;
using internal::ThreadsFor;

// ---------------------------------------------------------------------------------------------
// Reference kernels: the definitions in plain loops, any data_format, accumulating in
// ComputeT<T>, rounding once. Filter [fh, fw, C, M]; output channel c*M + m.
// ---------------------------------------------------------------------------------------------

// y[n, oh, ow, c*M + m] = sum_{kh, kw} x[n, oh*sh - pt + kh*dh, ow*sw - pl + kw*dw, c] * w[kh, kw,
// c, m]
template <typename T>
void DepthwiseReference(const ConvAttrs& a, const ConvGeometry& g, const T* x, const T* w, T* y) {
  using Acc = ComputeT<T>;
  const int64_t ch = g.in_depth, mult = g.multiplier;
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow)
        for (int64_t c = 0; c < ch; ++c)
          for (int64_t m = 0; m < mult; ++m) {
            Acc acc = 0;
            for (int64_t kh = 0; kh < g.filter_h; ++kh) {
              const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
              if (ih < 0 || ih >= g.in_h) continue;
              for (int64_t kw = 0; kw < g.filter_w; ++kw) {
                const int64_t iw = ow * g.stride_w - g.pad_left + kw * g.dilation_w;
                if (iw < 0 || iw >= g.in_w) continue;
                acc += static_cast<Acc>(x[ActIndex(a.format, g.in_h, g.in_w, ch, n, ih, iw, c)]) *
                       static_cast<Acc>(w[((kh * g.filter_w + kw) * ch + c) * mult + m]);
              }
            }
            y[ActIndex(a.format, g.out_h, g.out_w, g.out_depth, n, oh, ow, c * mult + m)] =
                static_cast<T>(acc);
          }
}

// dx[n, ih, iw, c] = sum over (oh, ow, kh, kw, m) with ih = oh*sh - pt + kh*dh,
//   iw = ow*sw - pl + kw*dw of dy[n, oh, ow, c*M + m] * w[kh, kw, c, m]  (scatter form).
template <typename T>
void DepthwiseBackpropInputReference(const ConvAttrs& a, const ConvGeometry& g, const T* w,
                                     const T* dy, T* dx) {
  using Acc = ComputeT<T>;
  const int64_t ch = g.in_depth, mult = g.multiplier;
  std::vector<Acc> acc(static_cast<size_t>(g.input_elements()), Acc(0));
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow)
        for (int64_t c = 0; c < ch; ++c)
          for (int64_t m = 0; m < mult; ++m) {
            const Acc d = static_cast<Acc>(
                dy[ActIndex(a.format, g.out_h, g.out_w, g.out_depth, n, oh, ow, c * mult + m)]);
            for (int64_t kh = 0; kh < g.filter_h; ++kh) {
              const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
              if (ih < 0 || ih >= g.in_h) continue;
              for (int64_t kw = 0; kw < g.filter_w; ++kw) {
                const int64_t iw = ow * g.stride_w - g.pad_left + kw * g.dilation_w;
                if (iw < 0 || iw >= g.in_w) continue;
                acc[static_cast<size_t>(ActIndex(a.format, g.in_h, g.in_w, ch, n, ih, iw, c))] +=
                    d * static_cast<Acc>(w[((kh * g.filter_w + kw) * ch + c) * mult + m]);
              }
            }
          }
  for (size_t i = 0; i < acc.size(); ++i) dx[i] = static_cast<T>(acc[i]);
}

// dw[kh, kw, c, m] = sum_{n, oh, ow} x[n, oh*sh - pt + kh*dh, ow*sw - pl + kw*dw, c] * dy[n, oh,
// ow, c*M + m]
template <typename T>
void DepthwiseBackpropFilterReference(const ConvAttrs& a, const ConvGeometry& g, const T* x,
                                      const T* dy, T* dw) {
  using Acc = ComputeT<T>;
  const int64_t ch = g.in_depth, mult = g.multiplier;
  std::vector<Acc> acc(static_cast<size_t>(g.filter_elements()), Acc(0));
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow)
        for (int64_t c = 0; c < ch; ++c)
          for (int64_t m = 0; m < mult; ++m) {
            const Acc d = static_cast<Acc>(
                dy[ActIndex(a.format, g.out_h, g.out_w, g.out_depth, n, oh, ow, c * mult + m)]);
            for (int64_t kh = 0; kh < g.filter_h; ++kh) {
              const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
              if (ih < 0 || ih >= g.in_h) continue;
              for (int64_t kw = 0; kw < g.filter_w; ++kw) {
                const int64_t iw = ow * g.stride_w - g.pad_left + kw * g.dilation_w;
                if (iw < 0 || iw >= g.in_w) continue;
                acc[static_cast<size_t>(((kh * g.filter_w + kw) * ch + c) * mult + m)] +=
                    static_cast<Acc>(x[ActIndex(a.format, g.in_h, g.in_w, ch, n, ih, iw, c)]) * d;
              }
            }
          }
  for (size_t i = 0; i < acc.size(); ++i) dw[i] = static_cast<T>(acc[i]);
}

// ---------------------------------------------------------------------------------------------
// Optimized kernels: NHWC compute buffers of C, one row per call, parallel over rows that do not
// overlap. They handle multiplier 1 with `ch` channels in input and output alike: a register
// tile of P pixels by NV 64-byte vectors of channels, plain loops for the channels left over.
// A multiplier M > 1 is reduced to that case: the input is expanded to C*M channels
// (xe[c*M + m] = x[c]); the input gradient is computed per output channel and summed over m.
// ---------------------------------------------------------------------------------------------

using internal::VecOf;

using internal::IntPair;
using internal::LoadVec;
using internal::PairList;
using internal::ReachingCols;
using internal::ReachingRows;
using internal::RowFn;
using internal::StoreVec;

// Forward tile: y[ow0 + p, c0 + c] for p < P, c < NV*L, = sum over valid (kh, kw) of
// x[iw(ow, kw), c] * w[kh, kw, c].
template <typename C, int P, int NV>
BF_CONV_INLINE void DwForwardTile(const ConvGeometry& g, const C* __restrict x,
                                  const C* __restrict w, C* __restrict y, int64_t n, int64_t oh,
                                  const C* zeros, int64_t ow0, int64_t c0) {
  using Vec = typename VecOf<C>::type;
  constexpr int L = sizeof(Vec) / sizeof(C);
  const int64_t ch = g.out_depth;
  Vec acc[P][NV];
  for (int p = 0; p < P; ++p)
    for (int k = 0; k < NV; ++k) acc[p][k] = Vec{};
  for (int64_t kh = 0; kh < g.filter_h; ++kh) {
    const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
    if (ih < 0 || ih >= g.in_h) continue;
    const C* xrow = x + (n * g.in_h + ih) * g.in_w * ch + c0;
    for (int64_t kw = 0; kw < g.filter_w; ++kw) {
      const int64_t off = g.pad_left - kw * g.dilation_w;
      Vec wv[NV];
      for (int k = 0; k < NV; ++k) wv[k] = LoadVec(w + (kh * g.filter_w + kw) * ch + c0 + k * L);
      const int64_t iw0 = ow0 * g.stride_w - off;
      if (ow0 + P <= g.out_w && iw0 >= 0 && iw0 + (P - 1) * g.stride_w < g.in_w) {
        // The whole tile reads inside the input (the common case): no per-pixel select.
        const C* xp = xrow + iw0 * ch;
        for (int p = 0; p < P; ++p)
          for (int k = 0; k < NV; ++k)
            acc[p][k] += LoadVec(xp + p * g.stride_w * ch + k * L) * wv[k];
      } else {
        for (int p = 0; p < P; ++p) {
          const int64_t ow = ow0 + p, iw = ow * g.stride_w - off;
          const C* xp = (ow < g.out_w && iw >= 0 && iw < g.in_w) ? xrow + iw * ch : zeros;
          for (int k = 0; k < NV; ++k) acc[p][k] += LoadVec(xp + k * L) * wv[k];
        }
      }
    }
  }
  C* yrow = y + (n * g.out_h + oh) * g.out_w * ch + c0;
  for (int p = 0; p < P && ow0 + p < g.out_w; ++p)
    for (int k = 0; k < NV; ++k) StoreVec(yrow + (ow0 + p) * ch + k * L, acc[p][k]);
}

// Forward of one output row: pixel tiles outside and channel blocks inside (the tile's input
// pixels stay in L1 across blocks); channels after the last full vector in plain loops.
template <typename C, int P, int NV>
BF_CONV_INLINE void DwForwardRowT(const ConvGeometry& g, const C* __restrict x,
                                  const C* __restrict w, C* __restrict y, int64_t n, int64_t oh,
                                  const C* zeros, IntPair* scratch) {
  constexpr int64_t L = 64 / sizeof(C);
  const int64_t ch = g.out_depth, c_vec = ch - ch % L;
  for (int64_t ow0 = 0; ow0 < g.out_w && c_vec > 0; ow0 += P) {
    int64_t c0 = 0;
    for (; c0 + NV * L <= ch; c0 += NV * L)
      DwForwardTile<C, P, NV>(g, x, w, y, n, oh, zeros, ow0, c0);
    for (; c0 + L <= ch; c0 += L) DwForwardTile<C, P, 1>(g, x, w, y, n, oh, zeros, ow0, c0);
  }
  if (c_vec == ch) return;
  C* yrow = y + (n * g.out_h + oh) * g.out_w * ch;
  for (int64_t ow = 0; ow < g.out_w; ++ow) {
    C* __restrict yp = yrow + ow * ch;
    for (int64_t c = c_vec; c < ch; ++c) yp[c] = C(0);
    for (int64_t kh = 0; kh < g.filter_h; ++kh) {
      const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
      if (ih < 0 || ih >= g.in_h) continue;
      for (int64_t kw = 0; kw < g.filter_w; ++kw) {
        const int64_t iw = ow * g.stride_w - g.pad_left + kw * g.dilation_w;
        if (iw < 0 || iw >= g.in_w) continue;
        const C* __restrict xp = x + ((n * g.in_h + ih) * g.in_w + iw) * ch;
        const C* __restrict wp = w + (kh * g.filter_w + kw) * ch;
        for (int64_t c = c_vec; c < ch; ++c) yp[c] += xp[c] * wp[c];
      }
    }
  }
}

// Input gradient tile: dx[iw = r + sw*(t0 + p), c0 + c] for p < P, c < NV*L, = sum over the
// reaching taps of dy[ow, c] * w[kh, kw, c].
template <typename C, int P, int NV>
BF_CONV_INLINE void DwBackpropInputTile(const ConvGeometry& g, const C* __restrict w,
                                        const C* __restrict dy, C* __restrict dx, int64_t n,
                                        int64_t ih, const C* zeros, const PairList& rows,
                                        const PairList& cols, int64_t r, int64_t count, int64_t t0,
                                        int64_t c0) {
  using Vec = typename VecOf<C>::type;
  constexpr int L = sizeof(Vec) / sizeof(C);
  const int64_t ch = g.out_depth;
  Vec acc[P][NV];
  for (int p = 0; p < P; ++p)
    for (int k = 0; k < NV; ++k) acc[p][k] = Vec{};
  for (const auto& [kh, oh] : rows) {
    const C* dyrow = dy + (n * g.out_h + oh) * g.out_w * ch + c0;
    for (const auto& [kw, ow_t0] : cols) {
      const int64_t ow_base = ow_t0 + t0;
      Vec wv[NV];
      for (int k = 0; k < NV; ++k) wv[k] = LoadVec(w + (kh * g.filter_w + kw) * ch + c0 + k * L);
      if (t0 + P <= count && ow_base >= 0 && ow_base + P <= g.out_w) {
        // The whole tile is reached (the common case): no per-pixel select.
        const C* dyp = dyrow + ow_base * ch;
        for (int p = 0; p < P; ++p)
          for (int k = 0; k < NV; ++k) acc[p][k] += LoadVec(dyp + p * ch + k * L) * wv[k];
      } else {
        for (int p = 0; p < P; ++p) {
          const int64_t ow = ow_base + p;
          const C* dyp = (t0 + p < count && ow >= 0 && ow < g.out_w) ? dyrow + ow * ch : zeros;
          for (int k = 0; k < NV; ++k) acc[p][k] += LoadVec(dyp + k * L) * wv[k];
        }
      }
    }
  }
  C* dxrow = dx + (n * g.in_h + ih) * g.in_w * ch + c0;
  for (int p = 0; p < P && t0 + p < count; ++p)
    for (int k = 0; k < NV; ++k)
      StoreVec(dxrow + (r + g.stride_w * (t0 + p)) * ch + k * L, acc[p][k]);
}

// Input gradient of one input row, by stride phase (iw = r + sw*t) so that a tap reaches a
// whole tile or none of it; the reaching taps are resolved once per row and phase (integer
// division per tile would cost more than the tile's arithmetic).
template <typename C, int P, int NV>
BF_CONV_INLINE void DwBackpropInputRowT(const ConvGeometry& g, const C* __restrict w,
                                        const C* __restrict dy, C* __restrict dx, int64_t n,
                                        int64_t ih, const C* zeros, IntPair* scratch) {
  constexpr int64_t L = 64 / sizeof(C);
  const int64_t ch = g.out_depth, c_vec = ch - ch % L;
  PairList rows(scratch), cols(scratch + g.filter_h);
  ReachingRows(g, ih, &rows);
  for (int64_t r = 0; r < g.stride_w && r < g.in_w && c_vec > 0; ++r) {
    const int64_t count = (g.in_w - r + g.stride_w - 1) / g.stride_w;
    ReachingCols(g, r, &cols);
    for (int64_t t0 = 0; t0 < count; t0 += P) {
      int64_t c0 = 0;
      for (; c0 + NV * L <= ch; c0 += NV * L)
        DwBackpropInputTile<C, P, NV>(g, w, dy, dx, n, ih, zeros, rows, cols, r, count, t0, c0);
      for (; c0 + L <= ch; c0 += L)
        DwBackpropInputTile<C, P, 1>(g, w, dy, dx, n, ih, zeros, rows, cols, r, count, t0, c0);
    }
  }
  if (c_vec == ch) return;
  C* dxrow = dx + (n * g.in_h + ih) * g.in_w * ch;
  for (int64_t iw = 0; iw < g.in_w; ++iw) {
    C* __restrict dxp = dxrow + iw * ch;
    for (int64_t c = c_vec; c < ch; ++c) dxp[c] = C(0);
    for (const auto& [kh, oh] : rows) {
      for (int64_t kw = 0; kw < g.filter_w; ++kw) {
        const int64_t tw = iw + g.pad_left - kw * g.dilation_w;
        if (tw < 0 || tw % g.stride_w != 0 || tw / g.stride_w >= g.out_w) continue;
        const C* __restrict dyp = dy + ((n * g.out_h + oh) * g.out_w + tw / g.stride_w) * ch;
        const C* __restrict wp = w + (kh * g.filter_w + kw) * ch;
        for (int64_t c = c_vec; c < ch; ++c) dxp[c] += dyp[c] * wp[c];
      }
    }
  }
}

// Filter gradient of one tap and channel block over the columns [ow0, ow1) of one output row:
// dwt[c0 + c] += sum over ow of x[iw(ow), c0 + c] * dy[ow, c0 + c]; P columns in flight.
template <typename C, int P, int NV>
BF_CONV_INLINE void DwBackpropFilterTile(const ConvGeometry& g, const C* __restrict xrow,
                                         const C* __restrict dyrow, C* __restrict dwt, int64_t off,
                                         int64_t ow0, int64_t ow1, int64_t c0) {
  using Vec = typename VecOf<C>::type;
  constexpr int L = sizeof(Vec) / sizeof(C);
  const int64_t ch = g.out_depth;
  Vec acc[P][NV];
  for (int p = 0; p < P; ++p)
    for (int k = 0; k < NV; ++k) acc[p][k] = Vec{};
  int64_t ow = ow0;
  for (; ow + P <= ow1; ow += P) {
    for (int p = 0; p < P; ++p) {
      const C* xp = xrow + ((ow + p) * g.stride_w - off) * ch + c0;
      const C* dyp = dyrow + (ow + p) * ch + c0;
      for (int k = 0; k < NV; ++k) acc[p][k] += LoadVec(xp + k * L) * LoadVec(dyp + k * L);
    }
  }
  for (; ow < ow1; ++ow) {
    const C* xp = xrow + (ow * g.stride_w - off) * ch + c0;
    const C* dyp = dyrow + ow * ch + c0;
    for (int k = 0; k < NV; ++k) acc[0][k] += LoadVec(xp + k * L) * LoadVec(dyp + k * L);
  }
  for (int k = 0; k < NV; ++k) {
    Vec s = acc[0][k];
    for (int p = 1; p < P; ++p) s += acc[p][k];
    StoreVec(dwt + c0 + k * L, LoadVec(dwt + c0 + k * L) + s);
  }
}

// Filter gradient of one output row into the private partial sum dw [fh, fw, ch].
template <typename C, int P, int NV>
BF_CONV_INLINE void DwBackpropFilterRowT(const ConvGeometry& g, const C* __restrict x,
                                         const C* __restrict dy, C* __restrict dw, int64_t n,
                                         int64_t oh, const C* /*zeros*/, IntPair* scratch) {
  constexpr int64_t L = 64 / sizeof(C);
  const int64_t ch = g.out_depth;
  const C* dyrow = dy + (n * g.out_h + oh) * g.out_w * ch;
  for (int64_t kh = 0; kh < g.filter_h; ++kh) {
    const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
    if (ih < 0 || ih >= g.in_h) continue;
    const C* xrow = x + (n * g.in_h + ih) * g.in_w * ch;
    for (int64_t kw = 0; kw < g.filter_w; ++kw) {
      const int64_t off = g.pad_left - kw * g.dilation_w;
      const int64_t ow0 = off > 0 ? (off + g.stride_w - 1) / g.stride_w : 0;
      const int64_t ow1 = (g.in_w - 1 + off < 0)
                              ? 0
                              : std::min<int64_t>(g.out_w, (g.in_w - 1 + off) / g.stride_w + 1);
      if (ow0 >= ow1) continue;
      C* dwt = dw + (kh * g.filter_w + kw) * ch;
      int64_t c0 = 0;
      for (; c0 + NV * L <= ch; c0 += NV * L)
        DwBackpropFilterTile<C, P, NV>(g, xrow, dyrow, dwt, off, ow0, ow1, c0);
      for (; c0 + L <= ch; c0 += L)
        DwBackpropFilterTile<C, P, 1>(g, xrow, dyrow, dwt, off, ow0, ow1, c0);
      for (int64_t ow = ow0; ow < ow1 && c0 < ch; ++ow) {
        const C* __restrict xp = xrow + (ow * g.stride_w - off) * ch;
        const C* __restrict dyp = dyrow + ow * ch;
        for (int64_t c = c0; c < ch; ++c) dwt[c] += xp[c] * dyp[c];
      }
    }
  }
}

BF_CONV_ROW_FNS(DwForwardRow, DwForwardRowT, float)
BF_CONV_ROW_FNS(DwForwardRow, DwForwardRowT, double)
BF_CONV_ROW_FNS(DwBackpropInputRow, DwBackpropInputRowT, float)
BF_CONV_ROW_FNS(DwBackpropInputRow, DwBackpropInputRowT, double)
BF_CONV_ROW_FNS(DwBackpropFilterRow, DwBackpropFilterRowT, float)
BF_CONV_ROW_FNS(DwBackpropFilterRow, DwBackpropFilterRowT, double)

// The geometry of the multiplier-1 problem with C*M channels that a multiplier M reduces to.
ConvGeometry Expanded(const ConvGeometry& g) {
  ConvGeometry e = g;
  e.in_depth = g.out_depth;
  e.filter_in_depth = g.out_depth;
  e.groups = g.out_depth;
  e.multiplier = 1;
  return e;
}

// xe[pixel, c*M + m] = x[pixel, c]; returns x itself when M == 1.
template <typename C>
const C* ExpandChannels(const ConvGeometry& g, const C* x, std::vector<C>* buf, int num_threads) {
  if (g.multiplier == 1) return x;
  const int64_t pixels = g.batch * g.in_h * g.in_w, ch = g.in_depth, mult = g.multiplier;
  buf->resize(static_cast<size_t>(pixels * ch * mult));
  C* e = buf->data();
#pragma omp parallel for num_threads(ThreadsFor(num_threads, pixels* ch* mult, 1 << 16)) \
    schedule(static)
  for (int64_t i = 0; i < pixels; ++i)
    for (int64_t c = 0; c < ch; ++c)
      for (int64_t m = 0; m < mult; ++m) e[(i * ch + c) * mult + m] = x[i * ch + c];
  return e;
}

template <typename T>
void DepthwiseOptimized(const ConvAttrs& a, const ConvGeometry& g, const Tensor& input,
                        const Tensor& filter, Tensor* output, int num_threads) {
  using C = ComputeT<T>;
  std::vector<C> xbuf, xebuf, wbuf, ybuf;
  const C* x = internal::ToNHWC<T, C>(input, a.format, g.batch, g.in_h, g.in_w, g.in_depth, &xbuf,
                                      num_threads);
  const C* xe = ExpandChannels(g, x, &xebuf, num_threads);
  const ConvGeometry e = Expanded(g);
  const C* w = internal::ToCompute<T, C>(filter, &wbuf);  // [fh, fw, C*M]
  C* y = internal::OutputBuffer<T, C>(output, a.format, &ybuf);
  const std::vector<C> zeros(static_cast<size_t>(e.out_depth), C(0));
  const RowFn<C> row = DwForwardRow(C{});
  const int64_t rows = g.batch * g.out_h;
  const int64_t row_cost = g.out_w * g.filter_h * g.filter_w * g.out_depth;
#pragma omp parallel for num_threads(ThreadsFor(num_threads, rows* row_cost, 1 << 15)) \
    schedule(static)
  for (int64_t r = 0; r < rows; ++r)
    row(e, xe, w, y, r / g.out_h, r % g.out_h, zeros.data(), nullptr);
  internal::StoreNHWC<T, C>(y, output, a.format, g.batch, g.out_h, g.out_w, g.out_depth,
                            num_threads);
}

template <typename T>
void DepthwiseBackpropInputOptimized(const ConvAttrs& a, const ConvGeometry& g,
                                     const Tensor& filter, const Tensor& out_backprop,
                                     Tensor* input_grad, int num_threads) {
  using C = ComputeT<T>;
  std::vector<C> dybuf, wbuf, dxbuf, dxebuf;
  const C* dy = internal::ToNHWC<T, C>(out_backprop, a.format, g.batch, g.out_h, g.out_w,
                                       g.out_depth, &dybuf, num_threads);
  const C* w = internal::ToCompute<T, C>(filter, &wbuf);
  C* dx = internal::OutputBuffer<T, C>(input_grad, a.format, &dxbuf);
  const ConvGeometry e = Expanded(g);
  // With M > 1, first the gradient of each expanded channel c*M + m, then the sum over m.
  C* dxe = dx;
  if (g.multiplier != 1) {
    dxebuf.resize(static_cast<size_t>(g.batch * g.in_h * g.in_w * e.in_depth));
    dxe = dxebuf.data();
  }
  const std::vector<C> zeros(static_cast<size_t>(e.out_depth), C(0));
  const RowFn<C> row = DwBackpropInputRow(C{});
  const int64_t rows = g.batch * g.in_h;
  const int64_t row_cost =
      g.in_w * g.filter_h * g.filter_w * g.out_depth / (g.stride_h * g.stride_w) + g.in_w;
  const int nt = ThreadsFor(num_threads, rows * row_cost, 1 << 15);
  // Per-thread scratch for the row kernel's tap lists, allocated here, outside the region.
  const int64_t pairs = internal::ScratchPairs(g);
  std::vector<IntPair> scratch(static_cast<size_t>(nt * pairs));
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    row(e, w, dy, dxe, r / g.in_h, r % g.in_h, zeros.data(),
        scratch.data() + omp_get_thread_num() * pairs);
  }
  if (g.multiplier != 1) {
    const int64_t pixels = g.batch * g.in_h * g.in_w, ch = g.in_depth, mult = g.multiplier;
#pragma omp parallel for num_threads(ThreadsFor(num_threads, pixels* ch* mult, 1 << 16)) \
    schedule(static)
    for (int64_t i = 0; i < pixels * ch; ++i) {
      C s = dxe[i * mult];
      for (int64_t m = 1; m < mult; ++m) s += dxe[i * mult + m];
      dx[i] = s;
    }
  }
  internal::StoreNHWC<T, C>(dx, input_grad, a.format, g.batch, g.in_h, g.in_w, g.in_depth,
                            num_threads);
}

template <typename T>
void DepthwiseBackpropFilterOptimized(const ConvAttrs& a, const ConvGeometry& g,
                                      const Tensor& input, const Tensor& out_backprop,
                                      Tensor* filter_grad, int num_threads) {
  using C = ComputeT<T>;
  std::vector<C> xbuf, xebuf, dybuf;
  const C* x = internal::ToNHWC<T, C>(input, a.format, g.batch, g.in_h, g.in_w, g.in_depth, &xbuf,
                                      num_threads);
  const C* xe = ExpandChannels(g, x, &xebuf, num_threads);
  const ConvGeometry e = Expanded(g);
  const C* dy = internal::ToNHWC<T, C>(out_backprop, a.format, g.batch, g.out_h, g.out_w,
                                       g.out_depth, &dybuf, num_threads);
  const int64_t fsize = g.filter_elements();
  const int64_t rows = g.batch * g.out_h;
  const int nt = ThreadsFor(num_threads, rows * g.out_w * fsize, 1 << 15);
  const RowFn<C> row = DwBackpropFilterRow(C{});
  internal::SumRowsPerThread<T, C>(
      rows, fsize, nt, num_threads, filter_grad->data<T>(), [&](int64_t r, C* mine) {
        row(e, xe, dy, mine, r / g.out_h, r % g.out_h, nullptr, nullptr);
      });
}

}  // namespace

Status RunDepthwiseConv2d(KernelKind kind, const ConvAttrs& a, const ConvGeometry& g,
                          const Tensor& input, const Tensor& filter, Tensor* output,
                          int num_threads) {
  return internal::RunFloatKernel("DepthwiseConv2dNative", input, filter, output, [&](auto tag) {
    using T = decltype(tag);
    if (kind == KernelKind::kReference) {
      DepthwiseReference<T>(a, g, input.data<T>(), filter.data<T>(), output->data<T>());
    } else {
      DepthwiseOptimized<T>(a, g, input, filter, output, num_threads);
    }
  });
}

Status RunDepthwiseConv2dBackpropInput(KernelKind kind, const ConvAttrs& a, const ConvGeometry& g,
                                       const Tensor& filter, const Tensor& out_backprop,
                                       Tensor* input_grad, int num_threads) {
  return internal::RunFloatKernel(
      "DepthwiseConv2dNativeBackpropInput", filter, out_backprop, input_grad, [&](auto tag) {
        using T = decltype(tag);
        if (kind == KernelKind::kReference) {
          DepthwiseBackpropInputReference<T>(a, g, filter.data<T>(), out_backprop.data<T>(),
                                             input_grad->data<T>());
        } else {
          DepthwiseBackpropInputOptimized<T>(a, g, filter, out_backprop, input_grad, num_threads);
        }
      });
}

Status RunDepthwiseConv2dBackpropFilter(KernelKind kind, const ConvAttrs& a, const ConvGeometry& g,
                                        const Tensor& input, const Tensor& out_backprop,
                                        Tensor* filter_grad, int num_threads) {
  return internal::RunFloatKernel(
      "DepthwiseConv2dNativeBackpropFilter", input, out_backprop, filter_grad, [&](auto tag) {
        using T = decltype(tag);
        if (kind == KernelKind::kReference) {
          DepthwiseBackpropFilterReference<T>(a, g, input.data<T>(), out_backprop.data<T>(),
                                              filter_grad->data<T>());
        } else {
          DepthwiseBackpropFilterOptimized<T>(a, g, input, out_backprop, filter_grad, num_threads);
        }
      });
}

}  // namespace blockflow::conv
