#include "blocks/conv/conv2d.h"

#include <omp.h>

#include <algorithm>
#include <string>
#include <vector>

#include "blocks/conv/conv_internal.h"

namespace blockflow::conv {
namespace {

using internal::ActIndex;
using internal::ComputeT;
using internal::ThreadsFor;

// ---------------------------------------------------------------------------------------------
// Reference kernels: the definitions in plain loops, any data_format, accumulating in
// ComputeT<T> (float for 16-bit types and float32, double for float64), rounding once.
// Filter HWIO [fh, fw, in_depth / groups, out_depth]; group of output channel co is
// co / (out_depth / groups) and it reads input channels group * filter_in_depth + ci.
// ---------------------------------------------------------------------------------------------

// y[n, oh, ow, co] = sum_{kh, kw, ci} x[n, oh*sh - pt + kh*dh, ow*sw - pl + kw*dw, grp*cig + ci]
//                                   * w[kh, kw, ci, co]          (taps outside x read zero)
template <typename T>
void Conv2DReference(const ConvAttrs& a, const ConvGeometry& g, const T* x, const T* w, T* y) {
  using Acc = ComputeT<T>;
  const int64_t cig = g.filter_in_depth, cog = g.out_depth / g.groups;
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow)
        for (int64_t co = 0; co < g.out_depth; ++co) {
          const int64_t grp = co / cog;
          Acc acc = 0;
          for (int64_t kh = 0; kh < g.filter_h; ++kh) {
            const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
            if (ih < 0 || ih >= g.in_h) continue;
            for (int64_t kw = 0; kw < g.filter_w; ++kw) {
              const int64_t iw = ow * g.stride_w - g.pad_left + kw * g.dilation_w;
              if (iw < 0 || iw >= g.in_w) continue;
              for (int64_t ci = 0; ci < cig; ++ci) {
                const Acc xv = static_cast<Acc>(x[ActIndex(a.format, g.in_h, g.in_w, g.in_depth, n, ih, iw, grp * cig + ci)]);
                const Acc wv = static_cast<Acc>(w[((kh * g.filter_w + kw) * cig + ci) * g.out_depth + co]);
                acc += xv * wv;
              }
            }
          }
          y[ActIndex(a.format, g.out_h, g.out_w, g.out_depth, n, oh, ow, co)] = static_cast<T>(acc);
        }
}

// dx[n, ih, iw, grp*cig + ci] = sum over (oh, ow, kh, kw, co in grp) with
//   ih = oh*sh - pt + kh*dh, iw = ow*sw - pl + kw*dw of dy[n, oh, ow, co] * w[kh, kw, ci, co].
// Written as the scatter of the forward definition into a ComputeT<T> buffer.
template <typename T>
void Conv2DBackpropInputReference(const ConvAttrs& a, const ConvGeometry& g, const T* w, const T* dy,
                                  T* dx) {
  using Acc = ComputeT<T>;
  const int64_t cig = g.filter_in_depth, cog = g.out_depth / g.groups;
  std::vector<Acc> acc(static_cast<size_t>(g.input_elements()), Acc(0));
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow)
        for (int64_t co = 0; co < g.out_depth; ++co) {
          const int64_t grp = co / cog;
          const Acc d = static_cast<Acc>(dy[ActIndex(a.format, g.out_h, g.out_w, g.out_depth, n, oh, ow, co)]);
          for (int64_t kh = 0; kh < g.filter_h; ++kh) {
            const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
            if (ih < 0 || ih >= g.in_h) continue;
            for (int64_t kw = 0; kw < g.filter_w; ++kw) {
              const int64_t iw = ow * g.stride_w - g.pad_left + kw * g.dilation_w;
              if (iw < 0 || iw >= g.in_w) continue;
              for (int64_t ci = 0; ci < cig; ++ci) {
                const Acc wv = static_cast<Acc>(w[((kh * g.filter_w + kw) * cig + ci) * g.out_depth + co]);
                acc[static_cast<size_t>(ActIndex(a.format, g.in_h, g.in_w, g.in_depth, n, ih, iw, grp * cig + ci))] += d * wv;
              }
            }
          }
        }
  for (size_t i = 0; i < acc.size(); ++i) dx[i] = static_cast<T>(acc[i]);
}

// dw[kh, kw, ci, co] = sum_{n, oh, ow} x[n, oh*sh - pt + kh*dh, ow*sw - pl + kw*dw, grp*cig + ci]
//                                     * dy[n, oh, ow, co]
template <typename T>
void Conv2DBackpropFilterReference(const ConvAttrs& a, const ConvGeometry& g, const T* x, const T* dy,
                                   T* dw) {
  using Acc = ComputeT<T>;
  const int64_t cig = g.filter_in_depth, cog = g.out_depth / g.groups;
  std::vector<Acc> acc(static_cast<size_t>(g.filter_elements()), Acc(0));
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow)
        for (int64_t co = 0; co < g.out_depth; ++co) {
          const int64_t grp = co / cog;
          const Acc d = static_cast<Acc>(dy[ActIndex(a.format, g.out_h, g.out_w, g.out_depth, n, oh, ow, co)]);
          for (int64_t kh = 0; kh < g.filter_h; ++kh) {
            const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
            if (ih < 0 || ih >= g.in_h) continue;
            for (int64_t kw = 0; kw < g.filter_w; ++kw) {
              const int64_t iw = ow * g.stride_w - g.pad_left + kw * g.dilation_w;
              if (iw < 0 || iw >= g.in_w) continue;
              for (int64_t ci = 0; ci < cig; ++ci) {
                const Acc xv = static_cast<Acc>(x[ActIndex(a.format, g.in_h, g.in_w, g.in_depth, n, ih, iw, grp * cig + ci)]);
                acc[static_cast<size_t>(((kh * g.filter_w + kw) * cig + ci) * g.out_depth + co)] += xv * d;
              }
            }
          }
        }
  for (size_t i = 0; i < acc.size(); ++i) dw[i] = static_cast<T>(acc[i]);
}

// ---------------------------------------------------------------------------------------------
// Optimized kernels: NHWC compute buffers of C (float or double), one output row (n, row) per
// call, parallel over rows that do not overlap. Inner loops run over contiguous channels.
// ---------------------------------------------------------------------------------------------

// Output pixels are processed in tiles of kTile along the row so each filter row loaded from
// memory feeds kTile pixels.
constexpr int64_t kTile = 4;

// Forward, NHWC: for each output pixel, y[co] = sum over valid taps and ci of x[ci] * w[.., ci, co].
template <typename C>
BF_CONV_INLINE void Conv2DForwardRow(const ConvGeometry& g, const C* __restrict x, const C* __restrict w,
                                     C* __restrict y, int64_t n, int64_t oh) {
  const int64_t ci_all = g.in_depth, co_all = g.out_depth, cig = g.filter_in_depth;
  const int64_t groups = g.groups, cog = co_all / groups;
  C* __restrict yrow = y + (n * g.out_h + oh) * g.out_w * co_all;
  for (int64_t i = 0; i < g.out_w * co_all; ++i) yrow[i] = C(0);
  for (int64_t kh = 0; kh < g.filter_h; ++kh) {
    const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
    if (ih < 0 || ih >= g.in_h) continue;
    const C* xrow = x + (n * g.in_h + ih) * g.in_w * ci_all;
    for (int64_t kw = 0; kw < g.filter_w; ++kw) {
      const C* wtap = w + (kh * g.filter_w + kw) * cig * co_all;
      // Output columns whose tap kw lands inside the input: ow in [ow0, ow1).
      const int64_t off = g.pad_left - kw * g.dilation_w;  // iw = ow*sw - off
      int64_t ow0 = off > 0 ? (off + g.stride_w - 1) / g.stride_w : 0;
      int64_t ow1 = std::min<int64_t>(g.out_w, (g.in_w - 1 + off) / g.stride_w + 1);
      if (g.in_w - 1 + off < 0) ow1 = 0;
      int64_t ow = ow0;
      for (; ow + kTile <= ow1; ow += kTile) {
        const C* xp[kTile];
        C* yp[kTile];
        for (int64_t t = 0; t < kTile; ++t) {
          xp[t] = xrow + ((ow + t) * g.stride_w - off) * ci_all;
          yp[t] = yrow + (ow + t) * co_all;
        }
        for (int64_t grp = 0; grp < groups; ++grp) {
          for (int64_t ci = 0; ci < cig; ++ci) {
            const C* __restrict wr = wtap + ci * co_all + grp * cog;
            const int64_t c = grp * cig + ci;
            const C x0 = xp[0][c], x1 = xp[1][c], x2 = xp[2][c], x3 = xp[3][c];
            C* __restrict y0 = yp[0] + grp * cog;
            C* __restrict y1 = yp[1] + grp * cog;
            C* __restrict y2 = yp[2] + grp * cog;
            C* __restrict y3 = yp[3] + grp * cog;
            for (int64_t j = 0; j < cog; ++j) {
              const C wv = wr[j];
              y0[j] += x0 * wv;
              y1[j] += x1 * wv;
              y2[j] += x2 * wv;
              y3[j] += x3 * wv;
            }
          }
        }
      }
      for (; ow < ow1; ++ow) {
        const C* xp = xrow + (ow * g.stride_w - off) * ci_all;
        C* yp = yrow + ow * co_all;
        for (int64_t grp = 0; grp < groups; ++grp) {
          for (int64_t ci = 0; ci < cig; ++ci) {
            const C* __restrict wr = wtap + ci * co_all + grp * cog;
            const C xv = xp[grp * cig + ci];
            C* __restrict yg = yp + grp * cog;
            for (int64_t j = 0; j < cog; ++j) yg[j] += xv * wr[j];
          }
        }
      }
    }
  }
}

// Input gradient, NHWC, gather form over one input row: for each input pixel,
// dx[grp*cig + ci] = sum over taps that reach it and co in grp of dy[co] * wt[kh, kw, co, ci],
// where wt is the filter with its last two dims swapped so the inner loop runs over ci.
template <typename C>
BF_CONV_INLINE void Conv2DBackpropInputRow(const ConvGeometry& g, const C* __restrict wt,
                                           const C* __restrict dy, C* __restrict dx, int64_t n, int64_t ih) {
  const int64_t ci_all = g.in_depth, co_all = g.out_depth, cig = g.filter_in_depth;
  const int64_t groups = g.groups, cog = co_all / groups;
  C* __restrict dxrow = dx + (n * g.in_h + ih) * g.in_w * ci_all;
  for (int64_t i = 0; i < g.in_w * ci_all; ++i) dxrow[i] = C(0);
  for (int64_t kh = 0; kh < g.filter_h; ++kh) {
    const int64_t t = ih + g.pad_top - kh * g.dilation_h;
    if (t < 0 || t % g.stride_h != 0) continue;
    const int64_t oh = t / g.stride_h;
    if (oh >= g.out_h) continue;
    const C* dyrow = dy + (n * g.out_h + oh) * g.out_w * co_all;
    for (int64_t kw = 0; kw < g.filter_w; ++kw) {
      const C* wtap = wt + (kh * g.filter_w + kw) * co_all * cig;
      for (int64_t iw = 0; iw < g.in_w; ++iw) {
        const int64_t u = iw + g.pad_left - kw * g.dilation_w;
        if (u < 0 || u % g.stride_w != 0) continue;
        const int64_t ow = u / g.stride_w;
        if (ow >= g.out_w) continue;
        const C* __restrict dyp = dyrow + ow * co_all;
        C* __restrict dxp = dxrow + iw * ci_all;
        for (int64_t grp = 0; grp < groups; ++grp) {
          C* __restrict dg = dxp + grp * cig;
          for (int64_t j = 0; j < cog; ++j) {
            const int64_t co = grp * cog + j;
            const C d = dyp[co];
            const C* __restrict wr = wtap + co * cig;
            for (int64_t ci = 0; ci < cig; ++ci) dg[ci] += d * wr[ci];
          }
        }
      }
    }
  }
}

// Filter gradient, NHWC, one output row into a private partial sum `dw` [fh, fw, cig, co]:
// dw[kh, kw, ci, co] += x[n, ih, iw, grp*cig + ci] * dy[n, oh, ow, co].
template <typename C>
BF_CONV_INLINE void Conv2DBackpropFilterRow(const ConvGeometry& g, const C* __restrict x,
                                            const C* __restrict dy, C* __restrict dw, int64_t n, int64_t oh) {
  const int64_t ci_all = g.in_depth, co_all = g.out_depth, cig = g.filter_in_depth;
  const int64_t groups = g.groups, cog = co_all / groups;
  const C* dyrow = dy + (n * g.out_h + oh) * g.out_w * co_all;
  for (int64_t kh = 0; kh < g.filter_h; ++kh) {
    const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
    if (ih < 0 || ih >= g.in_h) continue;
    const C* xrow = x + (n * g.in_h + ih) * g.in_w * ci_all;
    for (int64_t kw = 0; kw < g.filter_w; ++kw) {
      C* dwtap = dw + (kh * g.filter_w + kw) * cig * co_all;
      const int64_t off = g.pad_left - kw * g.dilation_w;
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const int64_t iw = ow * g.stride_w - off;
        if (iw < 0 || iw >= g.in_w) continue;
        const C* __restrict xp = xrow + iw * ci_all;
        const C* __restrict dyp = dyrow + ow * co_all;
        for (int64_t grp = 0; grp < groups; ++grp) {
          const C* __restrict dyg = dyp + grp * cog;
          for (int64_t ci = 0; ci < cig; ++ci) {
            const C xv = xp[grp * cig + ci];
            C* __restrict dr = dwtap + ci * co_all + grp * cog;
            for (int64_t j = 0; j < cog; ++j) dr[j] += xv * dyg[j];
          }
        }
      }
    }
  }
}

// Non-template, ISA-cloned entry points: one call per row keeps the dispatch cost negligible.
BF_CONV_CLONES void ForwardRowF(const ConvGeometry& g, const float* x, const float* w, float* y, int64_t n, int64_t r) {
  Conv2DForwardRow<float>(g, x, w, y, n, r);
}
BF_CONV_CLONES void ForwardRowD(const ConvGeometry& g, const double* x, const double* w, double* y, int64_t n, int64_t r) {
  Conv2DForwardRow<double>(g, x, w, y, n, r);
}
BF_CONV_CLONES void BackpropInputRowF(const ConvGeometry& g, const float* wt, const float* dy, float* dx, int64_t n, int64_t r) {
  Conv2DBackpropInputRow<float>(g, wt, dy, dx, n, r);
}
BF_CONV_CLONES void BackpropInputRowD(const ConvGeometry& g, const double* wt, const double* dy, double* dx, int64_t n, int64_t r) {
  Conv2DBackpropInputRow<double>(g, wt, dy, dx, n, r);
}
BF_CONV_CLONES void BackpropFilterRowF(const ConvGeometry& g, const float* x, const float* dy, float* dw, int64_t n, int64_t r) {
  Conv2DBackpropFilterRow<float>(g, x, dy, dw, n, r);
}
BF_CONV_CLONES void BackpropFilterRowD(const ConvGeometry& g, const double* x, const double* dy, double* dw, int64_t n, int64_t r) {
  Conv2DBackpropFilterRow<double>(g, x, dy, dw, n, r);
}
inline void ForwardRow(const ConvGeometry& g, const float* x, const float* w, float* y, int64_t n, int64_t r) { ForwardRowF(g, x, w, y, n, r); }
inline void ForwardRow(const ConvGeometry& g, const double* x, const double* w, double* y, int64_t n, int64_t r) { ForwardRowD(g, x, w, y, n, r); }
inline void BackpropInputRow(const ConvGeometry& g, const float* wt, const float* dy, float* dx, int64_t n, int64_t r) { BackpropInputRowF(g, wt, dy, dx, n, r); }
inline void BackpropInputRow(const ConvGeometry& g, const double* wt, const double* dy, double* dx, int64_t n, int64_t r) { BackpropInputRowD(g, wt, dy, dx, n, r); }
inline void BackpropFilterRow(const ConvGeometry& g, const float* x, const float* dy, float* dw, int64_t n, int64_t r) { BackpropFilterRowF(g, x, dy, dw, n, r); }
inline void BackpropFilterRow(const ConvGeometry& g, const double* x, const double* dy, double* dw, int64_t n, int64_t r) { BackpropFilterRowD(g, x, dy, dw, n, r); }

template <typename T>
void Conv2DOptimized(const ConvAttrs& a, const ConvGeometry& g, const Tensor& input, const Tensor& filter,
                     Tensor* output, int num_threads) {
  using C = ComputeT<T>;
  std::vector<C> xbuf, wbuf, ybuf;
  const C* x = internal::ToNHWC<T, C>(input, a.format, g.batch, g.in_h, g.in_w, g.in_depth, &xbuf, num_threads);
  const C* w = internal::ToCompute<T, C>(filter, &wbuf);
  C* y = internal::OutputBuffer<T, C>(output, a.format, &ybuf);
  const int64_t rows = g.batch * g.out_h;
  const int64_t row_cost = g.out_w * g.filter_h * g.filter_w * g.filter_in_depth * g.out_depth;
#pragma omp parallel for num_threads(ThreadsFor(num_threads, rows * row_cost, 1 << 15)) schedule(static)
  for (int64_t r = 0; r < rows; ++r) ForwardRow(g, x, w, y, r / g.out_h, r % g.out_h);
  internal::StoreNHWC<T, C>(y, output, a.format, g.batch, g.out_h, g.out_w, g.out_depth, num_threads);
}

template <typename T>
void Conv2DBackpropInputOptimized(const ConvAttrs& a, const ConvGeometry& g, const Tensor& filter,
                                  const Tensor& out_backprop, Tensor* input_grad, int num_threads) {
  using C = ComputeT<T>;
  std::vector<C> dybuf, dxbuf;
  const C* dy = internal::ToNHWC<T, C>(out_backprop, a.format, g.batch, g.out_h, g.out_w, g.out_depth, &dybuf,
                                       num_threads);
  // wt[kh, kw, co, ci] = w[kh, kw, ci, co]: the inner loop then runs over contiguous ci.
  const T* w = filter.data<T>();
  const int64_t taps = g.filter_h * g.filter_w, cig = g.filter_in_depth, co_all = g.out_depth;
  std::vector<C> wt(static_cast<size_t>(taps * cig * co_all));
  for (int64_t tap = 0; tap < taps; ++tap)
    for (int64_t ci = 0; ci < cig; ++ci)
      for (int64_t co = 0; co < co_all; ++co)
        wt[static_cast<size_t>((tap * co_all + co) * cig + ci)] =
            internal::Widen<C>(w[(tap * cig + ci) * co_all + co]);
  C* dx = internal::OutputBuffer<T, C>(input_grad, a.format, &dxbuf);
  const int64_t rows = g.batch * g.in_h;
  const int64_t row_cost = g.in_w * g.filter_h * g.filter_w * cig * co_all / (g.stride_h * g.stride_w) + g.in_w;
#pragma omp parallel for num_threads(ThreadsFor(num_threads, rows * row_cost, 1 << 15)) schedule(static)
  for (int64_t r = 0; r < rows; ++r) BackpropInputRow(g, wt.data(), dy, dx, r / g.in_h, r % g.in_h);
  internal::StoreNHWC<T, C>(dx, input_grad, a.format, g.batch, g.in_h, g.in_w, g.in_depth, num_threads);
}

template <typename T>
void Conv2DBackpropFilterOptimized(const ConvAttrs& a, const ConvGeometry& g, const Tensor& input,
                                   const Tensor& out_backprop, Tensor* filter_grad, int num_threads) {
  using C = ComputeT<T>;
  std::vector<C> xbuf, dybuf;
  const C* x = internal::ToNHWC<T, C>(input, a.format, g.batch, g.in_h, g.in_w, g.in_depth, &xbuf, num_threads);
  const C* dy = internal::ToNHWC<T, C>(out_backprop, a.format, g.batch, g.out_h, g.out_w, g.out_depth, &dybuf,
                                       num_threads);
  const int64_t fsize = g.filter_elements();
  const int64_t rows = g.batch * g.out_h;
  const int64_t row_cost = g.out_w * fsize;
  const int nt = ThreadsFor(num_threads, rows * row_cost, 1 << 15);
  // One private partial sum per thread, added in thread order at the end: deterministic for a
  // given thread count, and no atomics.
  std::vector<C> partial(static_cast<size_t>(nt * fsize), C(0));
#pragma omp parallel num_threads(nt)
  {
    C* mine = partial.data() + static_cast<int64_t>(omp_get_thread_num()) * fsize;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) BackpropFilterRow(g, x, dy, mine, r / g.out_h, r % g.out_h);
  }
  T* out = filter_grad->data<T>();
#pragma omp parallel for num_threads(ThreadsFor(num_threads, fsize * nt, 1 << 16)) schedule(static)
  for (int64_t i = 0; i < fsize; ++i) {
    C s = partial[static_cast<size_t>(i)];
    for (int t = 1; t < nt; ++t) s += partial[static_cast<size_t>(t * fsize + i)];
    out[i] = static_cast<T>(s);
  }
}

Status CheckDTypes(const char* op, const Tensor& a, const Tensor& b, const Tensor& out) {
  if (a.dtype() != b.dtype() || a.dtype() != out.dtype() || !IsFloatingDType(a.dtype())) {
    return InvalidArgument(std::string(op) + ": dtypes " + std::string(DTypeName(a.dtype())) + ", " +
                           std::string(DTypeName(b.dtype())) + " and output " +
                           std::string(DTypeName(out.dtype())) + " must be one floating dtype");
  }
  return Status::OK();
}

}  // namespace

Status RunConv2D(KernelKind kind, const ConvAttrs& a, const ConvGeometry& g, const Tensor& input,
                 const Tensor& filter, Tensor* output, int num_threads) {
  RETURN_IF_ERROR(CheckDTypes("Conv2D", input, filter, *output));
  if (output->num_elements() == 0) return Status::OK();
  DispatchFloat(input.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (kind == KernelKind::kReference) {
      Conv2DReference<T>(a, g, input.data<T>(), filter.data<T>(), output->data<T>());
    } else {
      Conv2DOptimized<T>(a, g, input, filter, output, num_threads);
    }
  });
  return Status::OK();
}

Status RunConv2DBackpropInput(KernelKind kind, const ConvAttrs& a, const ConvGeometry& g,
                              const Tensor& filter, const Tensor& out_backprop, Tensor* input_grad,
                              int num_threads) {
  RETURN_IF_ERROR(CheckDTypes("Conv2DBackpropInput", filter, out_backprop, *input_grad));
  if (input_grad->num_elements() == 0) return Status::OK();
  DispatchFloat(filter.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (kind == KernelKind::kReference) {
      Conv2DBackpropInputReference<T>(a, g, filter.data<T>(), out_backprop.data<T>(), input_grad->data<T>());
    } else {
      Conv2DBackpropInputOptimized<T>(a, g, filter, out_backprop, input_grad, num_threads);
    }
  });
  return Status::OK();
}

Status RunConv2DBackpropFilter(KernelKind kind, const ConvAttrs& a, const ConvGeometry& g,
                               const Tensor& input, const Tensor& out_backprop, Tensor* filter_grad,
                               int num_threads) {
  RETURN_IF_ERROR(CheckDTypes("Conv2DBackpropFilter", input, out_backprop, *filter_grad));
  if (filter_grad->num_elements() == 0) return Status::OK();
  DispatchFloat(input.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (kind == KernelKind::kReference) {
      Conv2DBackpropFilterReference<T>(a, g, input.data<T>(), out_backprop.data<T>(), filter_grad->data<T>());
    } else {
      Conv2DBackpropFilterOptimized<T>(a, g, input, out_backprop, filter_grad, num_threads);
    }
  });
  return Status::OK();
}

// ---------------------------------------------------------------------------------------------
// Shape functions and kernel wrappers.
// ---------------------------------------------------------------------------------------------

Status Conv2DShape(InferContext& c) {
  ASSIGN_OR_RETURN(ConvAttrs a, ParseConvAttrs(c.attrs()));
  ASSIGN_OR_RETURN(ConvGeometry g, MakeConvGeometry(a, c.input(0).shape, c.input(1).shape, false));
  c.SetOutput(0, c.input(0).dtype, OutputShape(a, g));
  return Status::OK();
}

Status Conv2DBackpropInputShape(InferContext& c) {
  ASSIGN_OR_RETURN(ConvAttrs a, ParseConvAttrs(c.attrs()));
  const Shape& filter = c.input(1).shape;
  const Shape& dy = c.input(2).shape;
  ASSIGN_OR_RETURN(Shape input, ResolveInputSizes(a, c.input(0), filter, dy, /*allow_hw=*/true));
  ASSIGN_OR_RETURN(ConvGeometry g, MakeConvGeometry(a, input, filter, false));
  RETURN_IF_ERROR(CheckOutBackprop(a, g, input, filter, dy));
  c.SetOutput(0, c.input(1).dtype, input);
  return Status::OK();
}

Status Conv2DBackpropFilterShape(InferContext& c) {
  ASSIGN_OR_RETURN(ConvAttrs a, ParseConvAttrs(c.attrs()));
  const Shape& input = c.input(0).shape;
  const Shape& dy = c.input(2).shape;
  ASSIGN_OR_RETURN(Shape filter, ResolveFilterSizes(a, c.input(1), input, dy, /*depthwise=*/false));
  ASSIGN_OR_RETURN(ConvGeometry g, MakeConvGeometry(a, input, filter, false));
  RETURN_IF_ERROR(CheckOutBackprop(a, g, input, filter, dy));
  c.SetOutput(0, c.input(0).dtype, filter);
  return Status::OK();
}

Status Conv2DKernel(KernelContext& k, KernelKind kind) {
  ASSIGN_OR_RETURN(ConvAttrs a, ParseConvAttrs(*k.attrs));
  const Tensor& x = k.input(0);
  const Tensor& w = k.input(1);
  ASSIGN_OR_RETURN(ConvGeometry g, MakeConvGeometry(a, x.shape(), w.shape(), false));
  Tensor& y = k.AllocateOutput(0);
  if (y.shape() != OutputShape(a, g)) {
    return Internal("output shape " + y.shape().ToString() + " differs from the computed " +
                    OutputShape(a, g).ToString());
  }
  return RunConv2D(kind, a, g, x, w, &y, k.num_threads);
}

Status Conv2DBackpropInputKernel(KernelContext& k, KernelKind kind) {
  ASSIGN_OR_RETURN(ConvAttrs a, ParseConvAttrs(*k.attrs));
  const Tensor& w = k.input(1);
  const Tensor& dy = k.input(2);
  Tensor& dx = k.AllocateOutput(0);
  ASSIGN_OR_RETURN(ConvGeometry g, MakeConvGeometry(a, dx.shape(), w.shape(), false));
  RETURN_IF_ERROR(CheckOutBackprop(a, g, dx.shape(), w.shape(), dy.shape()));
  return RunConv2DBackpropInput(kind, a, g, w, dy, &dx, k.num_threads);
}

Status Conv2DBackpropFilterKernel(KernelContext& k, KernelKind kind) {
  ASSIGN_OR_RETURN(ConvAttrs a, ParseConvAttrs(*k.attrs));
  const Tensor& x = k.input(0);
  const Tensor& dy = k.input(2);
  Tensor& dw = k.AllocateOutput(0);
  ASSIGN_OR_RETURN(ConvGeometry g, MakeConvGeometry(a, x.shape(), dw.shape(), false));
  RETURN_IF_ERROR(CheckOutBackprop(a, g, x.shape(), dw.shape(), dy.shape()));
  return RunConv2DBackpropFilter(kind, a, g, x, dy, &dw, k.num_threads);
}

}  // namespace blockflow::conv
