#include "blocks/conv/depthwise_conv2d.h"

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
// ComputeT<T>, rounding once. Filter [fh, fw, C, M]; output channel c*M + m.
// ---------------------------------------------------------------------------------------------

// y[n, oh, ow, c*M + m] = sum_{kh, kw} x[n, oh*sh - pt + kh*dh, ow*sw - pl + kw*dw, c] * w[kh, kw, c, m]
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
            y[ActIndex(a.format, g.out_h, g.out_w, g.out_depth, n, oh, ow, c * mult + m)] = static_cast<T>(acc);
          }
}

// dx[n, ih, iw, c] = sum over (oh, ow, kh, kw, m) with ih = oh*sh - pt + kh*dh,
//   iw = ow*sw - pl + kw*dw of dy[n, oh, ow, c*M + m] * w[kh, kw, c, m]  (scatter form).
template <typename T>
void DepthwiseBackpropInputReference(const ConvAttrs& a, const ConvGeometry& g, const T* w, const T* dy, T* dx) {
  using Acc = ComputeT<T>;
  const int64_t ch = g.in_depth, mult = g.multiplier;
  std::vector<Acc> acc(static_cast<size_t>(g.input_elements()), Acc(0));
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow)
        for (int64_t c = 0; c < ch; ++c)
          for (int64_t m = 0; m < mult; ++m) {
            const Acc d = static_cast<Acc>(dy[ActIndex(a.format, g.out_h, g.out_w, g.out_depth, n, oh, ow, c * mult + m)]);
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

// dw[kh, kw, c, m] = sum_{n, oh, ow} x[n, oh*sh - pt + kh*dh, ow*sw - pl + kw*dw, c] * dy[n, oh, ow, c*M + m]
template <typename T>
void DepthwiseBackpropFilterReference(const ConvAttrs& a, const ConvGeometry& g, const T* x, const T* dy, T* dw) {
  using Acc = ComputeT<T>;
  const int64_t ch = g.in_depth, mult = g.multiplier;
  std::vector<Acc> acc(static_cast<size_t>(g.filter_elements()), Acc(0));
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow)
        for (int64_t c = 0; c < ch; ++c)
          for (int64_t m = 0; m < mult; ++m) {
            const Acc d = static_cast<Acc>(dy[ActIndex(a.format, g.out_h, g.out_w, g.out_depth, n, oh, ow, c * mult + m)]);
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
// Optimized kernels: NHWC compute buffers of C, one row per call, inner loops over the
// contiguous channel dim (c*M + m), parallel over rows that do not overlap.
// ---------------------------------------------------------------------------------------------

// Columns ow whose tap (offset `off` = pad_left - kw*dw, iw = ow*sw - off) lies inside the input.
BF_CONV_INLINE void ValidColumns(const ConvGeometry& g, int64_t off, int64_t* ow0, int64_t* ow1) {
  *ow0 = off > 0 ? (off + g.stride_w - 1) / g.stride_w : 0;
  *ow1 = (g.in_w - 1 + off < 0) ? 0 : std::min<int64_t>(g.out_w, (g.in_w - 1 + off) / g.stride_w + 1);
}

// Forward: y[ow, c*M + m] += x[iw, c] * w[kh, kw, c*M + m] over valid taps.
template <typename C>
BF_CONV_INLINE void DepthwiseForwardRow(const ConvGeometry& g, const C* __restrict x, const C* __restrict w,
                                        C* __restrict y, int64_t n, int64_t oh) {
  const int64_t ch = g.in_depth, mult = g.multiplier, cm = g.out_depth;
  C* __restrict yrow = y + (n * g.out_h + oh) * g.out_w * cm;
  for (int64_t i = 0; i < g.out_w * cm; ++i) yrow[i] = C(0);
  for (int64_t kh = 0; kh < g.filter_h; ++kh) {
    const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
    if (ih < 0 || ih >= g.in_h) continue;
    const C* xrow = x + (n * g.in_h + ih) * g.in_w * ch;
    for (int64_t kw = 0; kw < g.filter_w; ++kw) {
      const C* __restrict wtap = w + (kh * g.filter_w + kw) * cm;
      const int64_t off = g.pad_left - kw * g.dilation_w;
      int64_t ow0, ow1;
      ValidColumns(g, off, &ow0, &ow1);
      for (int64_t ow = ow0; ow < ow1; ++ow) {
        const C* __restrict xp = xrow + (ow * g.stride_w - off) * ch;
        C* __restrict yp = yrow + ow * cm;
        if (mult == 1) {
          for (int64_t c = 0; c < ch; ++c) yp[c] += xp[c] * wtap[c];
        } else {
          for (int64_t c = 0; c < ch; ++c) {
            const C xv = xp[c];
            for (int64_t m = 0; m < mult; ++m) yp[c * mult + m] += xv * wtap[c * mult + m];
          }
        }
      }
    }
  }
}

// Input gradient, gather over one input row: dx[iw, c] = sum over reaching taps, m of
// dy[ow, c*M + m] * w[kh, kw, c*M + m].
template <typename C>
BF_CONV_INLINE void DepthwiseBackpropInputRow(const ConvGeometry& g, const C* __restrict w, const C* __restrict dy,
                                              C* __restrict dx, int64_t n, int64_t ih) {
  const int64_t ch = g.in_depth, mult = g.multiplier, cm = g.out_depth;
  C* __restrict dxrow = dx + (n * g.in_h + ih) * g.in_w * ch;
  for (int64_t i = 0; i < g.in_w * ch; ++i) dxrow[i] = C(0);
  for (int64_t kh = 0; kh < g.filter_h; ++kh) {
    const int64_t t = ih + g.pad_top - kh * g.dilation_h;
    if (t < 0 || t % g.stride_h != 0) continue;
    const int64_t oh = t / g.stride_h;
    if (oh >= g.out_h) continue;
    const C* dyrow = dy + (n * g.out_h + oh) * g.out_w * cm;
    for (int64_t kw = 0; kw < g.filter_w; ++kw) {
      const C* __restrict wtap = w + (kh * g.filter_w + kw) * cm;
      // The columns iw = ow*sw - off reached by tap kw: walk ow, not iw, so no modulo per pixel.
      const int64_t off = g.pad_left - kw * g.dilation_w;
      int64_t ow0, ow1;
      ValidColumns(g, off, &ow0, &ow1);
      for (int64_t ow = ow0; ow < ow1; ++ow) {
        const C* __restrict dyp = dyrow + ow * cm;
        C* __restrict dxp = dxrow + (ow * g.stride_w - off) * ch;
        if (mult == 1) {
          for (int64_t c = 0; c < ch; ++c) dxp[c] += dyp[c] * wtap[c];
        } else {
          for (int64_t c = 0; c < ch; ++c) {
            C s = 0;
            for (int64_t m = 0; m < mult; ++m) s += dyp[c * mult + m] * wtap[c * mult + m];
            dxp[c] += s;
          }
        }
      }
    }
  }
}

// Filter gradient of one output row into a private partial sum dw [fh, fw, C*M]:
// dw[kh, kw, c*M + m] += x[iw, c] * dy[ow, c*M + m].
template <typename C>
BF_CONV_INLINE void DepthwiseBackpropFilterRow(const ConvGeometry& g, const C* __restrict x, const C* __restrict dy,
                                               C* __restrict dw, int64_t n, int64_t oh) {
  const int64_t ch = g.in_depth, mult = g.multiplier, cm = g.out_depth;
  const C* dyrow = dy + (n * g.out_h + oh) * g.out_w * cm;
  for (int64_t kh = 0; kh < g.filter_h; ++kh) {
    const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
    if (ih < 0 || ih >= g.in_h) continue;
    const C* xrow = x + (n * g.in_h + ih) * g.in_w * ch;
    for (int64_t kw = 0; kw < g.filter_w; ++kw) {
      C* __restrict dwtap = dw + (kh * g.filter_w + kw) * cm;
      const int64_t off = g.pad_left - kw * g.dilation_w;
      int64_t ow0, ow1;
      ValidColumns(g, off, &ow0, &ow1);
      for (int64_t ow = ow0; ow < ow1; ++ow) {
        const C* __restrict xp = xrow + (ow * g.stride_w - off) * ch;
        const C* __restrict dyp = dyrow + ow * cm;
        if (mult == 1) {
          for (int64_t c = 0; c < ch; ++c) dwtap[c] += xp[c] * dyp[c];
        } else {
          for (int64_t c = 0; c < ch; ++c) {
            const C xv = xp[c];
            for (int64_t m = 0; m < mult; ++m) dwtap[c * mult + m] += xv * dyp[c * mult + m];
          }
        }
      }
    }
  }
}

BF_CONV_CLONES void DwForwardRowF(const ConvGeometry& g, const float* x, const float* w, float* y, int64_t n, int64_t r) {
  DepthwiseForwardRow<float>(g, x, w, y, n, r);
}
BF_CONV_CLONES void DwForwardRowD(const ConvGeometry& g, const double* x, const double* w, double* y, int64_t n, int64_t r) {
  DepthwiseForwardRow<double>(g, x, w, y, n, r);
}
BF_CONV_CLONES void DwBackpropInputRowF(const ConvGeometry& g, const float* w, const float* dy, float* dx, int64_t n, int64_t r) {
  DepthwiseBackpropInputRow<float>(g, w, dy, dx, n, r);
}
BF_CONV_CLONES void DwBackpropInputRowD(const ConvGeometry& g, const double* w, const double* dy, double* dx, int64_t n, int64_t r) {
  DepthwiseBackpropInputRow<double>(g, w, dy, dx, n, r);
}
BF_CONV_CLONES void DwBackpropFilterRowF(const ConvGeometry& g, const float* x, const float* dy, float* dw, int64_t n, int64_t r) {
  DepthwiseBackpropFilterRow<float>(g, x, dy, dw, n, r);
}
BF_CONV_CLONES void DwBackpropFilterRowD(const ConvGeometry& g, const double* x, const double* dy, double* dw, int64_t n, int64_t r) {
  DepthwiseBackpropFilterRow<double>(g, x, dy, dw, n, r);
}
inline void DwForwardRow(const ConvGeometry& g, const float* x, const float* w, float* y, int64_t n, int64_t r) { DwForwardRowF(g, x, w, y, n, r); }
inline void DwForwardRow(const ConvGeometry& g, const double* x, const double* w, double* y, int64_t n, int64_t r) { DwForwardRowD(g, x, w, y, n, r); }
inline void DwBackpropInputRow(const ConvGeometry& g, const float* w, const float* dy, float* dx, int64_t n, int64_t r) { DwBackpropInputRowF(g, w, dy, dx, n, r); }
inline void DwBackpropInputRow(const ConvGeometry& g, const double* w, const double* dy, double* dx, int64_t n, int64_t r) { DwBackpropInputRowD(g, w, dy, dx, n, r); }
inline void DwBackpropFilterRow(const ConvGeometry& g, const float* x, const float* dy, float* dw, int64_t n, int64_t r) { DwBackpropFilterRowF(g, x, dy, dw, n, r); }
inline void DwBackpropFilterRow(const ConvGeometry& g, const double* x, const double* dy, double* dw, int64_t n, int64_t r) { DwBackpropFilterRowD(g, x, dy, dw, n, r); }

template <typename T>
void DepthwiseOptimized(const ConvAttrs& a, const ConvGeometry& g, const Tensor& input, const Tensor& filter,
                        Tensor* output, int num_threads) {
  using C = ComputeT<T>;
  std::vector<C> xbuf, wbuf, ybuf;
  const C* x = internal::ToNHWC<T, C>(input, a.format, g.batch, g.in_h, g.in_w, g.in_depth, &xbuf, num_threads);
  const C* w = internal::ToCompute<T, C>(filter, &wbuf);
  C* y = internal::OutputBuffer<T, C>(output, a.format, &ybuf);
  const int64_t rows = g.batch * g.out_h;
  const int64_t row_cost = g.out_w * g.filter_h * g.filter_w * g.out_depth;
#pragma omp parallel for num_threads(ThreadsFor(num_threads, rows * row_cost, 1 << 15)) schedule(static)
  for (int64_t r = 0; r < rows; ++r) DwForwardRow(g, x, w, y, r / g.out_h, r % g.out_h);
  internal::StoreNHWC<T, C>(y, output, a.format, g.batch, g.out_h, g.out_w, g.out_depth, num_threads);
}

template <typename T>
void DepthwiseBackpropInputOptimized(const ConvAttrs& a, const ConvGeometry& g, const Tensor& filter,
                                     const Tensor& out_backprop, Tensor* input_grad, int num_threads) {
  using C = ComputeT<T>;
  std::vector<C> dybuf, wbuf, dxbuf;
  const C* dy = internal::ToNHWC<T, C>(out_backprop, a.format, g.batch, g.out_h, g.out_w, g.out_depth, &dybuf,
                                       num_threads);
  const C* w = internal::ToCompute<T, C>(filter, &wbuf);
  C* dx = internal::OutputBuffer<T, C>(input_grad, a.format, &dxbuf);
  const int64_t rows = g.batch * g.in_h;
  const int64_t row_cost = g.in_w * g.filter_h * g.filter_w * g.out_depth / (g.stride_h * g.stride_w) + g.in_w;
#pragma omp parallel for num_threads(ThreadsFor(num_threads, rows * row_cost, 1 << 15)) schedule(static)
  for (int64_t r = 0; r < rows; ++r) DwBackpropInputRow(g, w, dy, dx, r / g.in_h, r % g.in_h);
  internal::StoreNHWC<T, C>(dx, input_grad, a.format, g.batch, g.in_h, g.in_w, g.in_depth, num_threads);
}

template <typename T>
void DepthwiseBackpropFilterOptimized(const ConvAttrs& a, const ConvGeometry& g, const Tensor& input,
                                      const Tensor& out_backprop, Tensor* filter_grad, int num_threads) {
  using C = ComputeT<T>;
  std::vector<C> xbuf, dybuf;
  const C* x = internal::ToNHWC<T, C>(input, a.format, g.batch, g.in_h, g.in_w, g.in_depth, &xbuf, num_threads);
  const C* dy = internal::ToNHWC<T, C>(out_backprop, a.format, g.batch, g.out_h, g.out_w, g.out_depth, &dybuf,
                                       num_threads);
  const int64_t fsize = g.filter_elements();
  const int64_t rows = g.batch * g.out_h;
  const int nt = ThreadsFor(num_threads, rows * g.out_w * fsize, 1 << 15);
  // Private partial sums per thread, added in thread order: deterministic, no atomics.
  std::vector<C> partial(static_cast<size_t>(nt * fsize), C(0));
#pragma omp parallel num_threads(nt)
  {
    C* mine = partial.data() + static_cast<int64_t>(omp_get_thread_num()) * fsize;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) DwBackpropFilterRow(g, x, dy, mine, r / g.out_h, r % g.out_h);
  }
  T* out = filter_grad->data<T>();
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

Status RunDepthwiseConv2d(KernelKind kind, const ConvAttrs& a, const ConvGeometry& g, const Tensor& input,
                          const Tensor& filter, Tensor* output, int num_threads) {
  RETURN_IF_ERROR(CheckDTypes("DepthwiseConv2dNative", input, filter, *output));
  if (output->num_elements() == 0) return Status::OK();
  DispatchFloat(input.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (kind == KernelKind::kReference) {
      DepthwiseReference<T>(a, g, input.data<T>(), filter.data<T>(), output->data<T>());
    } else {
      DepthwiseOptimized<T>(a, g, input, filter, output, num_threads);
    }
  });
  return Status::OK();
}

Status RunDepthwiseConv2dBackpropInput(KernelKind kind, const ConvAttrs& a, const ConvGeometry& g,
                                       const Tensor& filter, const Tensor& out_backprop,
                                       Tensor* input_grad, int num_threads) {
  RETURN_IF_ERROR(CheckDTypes("DepthwiseConv2dNativeBackpropInput", filter, out_backprop, *input_grad));
  if (input_grad->num_elements() == 0) return Status::OK();
  DispatchFloat(filter.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (kind == KernelKind::kReference) {
      DepthwiseBackpropInputReference<T>(a, g, filter.data<T>(), out_backprop.data<T>(), input_grad->data<T>());
    } else {
      DepthwiseBackpropInputOptimized<T>(a, g, filter, out_backprop, input_grad, num_threads);
    }
  });
  return Status::OK();
}

Status RunDepthwiseConv2dBackpropFilter(KernelKind kind, const ConvAttrs& a, const ConvGeometry& g,
                                        const Tensor& input, const Tensor& out_backprop,
                                        Tensor* filter_grad, int num_threads) {
  RETURN_IF_ERROR(CheckDTypes("DepthwiseConv2dNativeBackpropFilter", input, out_backprop, *filter_grad));
  if (filter_grad->num_elements() == 0) return Status::OK();
  DispatchFloat(input.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (kind == KernelKind::kReference) {
      DepthwiseBackpropFilterReference<T>(a, g, input.data<T>(), out_backprop.data<T>(), filter_grad->data<T>());
    } else {
      DepthwiseBackpropFilterOptimized<T>(a, g, input, out_backprop, filter_grad, num_threads);
    }
  });
  return Status::OK();
}

// ---------------------------------------------------------------------------------------------
// Shape functions and kernel wrappers.
// ---------------------------------------------------------------------------------------------

Status DepthwiseConv2dShape(InferContext& c) {
  ASSIGN_OR_RETURN(ConvAttrs a, ParseConvAttrs(c.attrs()));
  ASSIGN_OR_RETURN(ConvGeometry g, MakeConvGeometry(a, c.input(0).shape, c.input(1).shape, true));
  c.SetOutput(0, c.input(0).dtype, OutputShape(a, g));
  return Status::OK();
}

Status DepthwiseConv2dBackpropInputShape(InferContext& c) {
  ASSIGN_OR_RETURN(ConvAttrs a, ParseConvAttrs(c.attrs()));
  const Shape& filter = c.input(1).shape;
  const Shape& dy = c.input(2).shape;
  ASSIGN_OR_RETURN(Shape input, ResolveInputSizes(a, c.input(0), filter, dy, /*allow_hw=*/false));
  ASSIGN_OR_RETURN(ConvGeometry g, MakeConvGeometry(a, input, filter, true));
  RETURN_IF_ERROR(CheckOutBackprop(a, g, input, filter, dy));
  c.SetOutput(0, c.input(1).dtype, InputShape(a, g));
  return Status::OK();
}

Status DepthwiseConv2dBackpropFilterShape(InferContext& c) {
  ASSIGN_OR_RETURN(ConvAttrs a, ParseConvAttrs(c.attrs()));
  const Shape& input = c.input(0).shape;
  const Shape& dy = c.input(2).shape;
  ASSIGN_OR_RETURN(Shape filter, ResolveFilterSizes(a, c.input(1), input, dy, /*depthwise=*/true));
  ASSIGN_OR_RETURN(ConvGeometry g, MakeConvGeometry(a, input, filter, true));
  RETURN_IF_ERROR(CheckOutBackprop(a, g, input, filter, dy));
  if (filter.dim(2) == -1) filter.set_dim(2, g.in_depth);
  c.SetOutput(0, c.input(0).dtype, filter);
  return Status::OK();
}

Status DepthwiseConv2dKernel(KernelContext& k, KernelKind kind) {
  ASSIGN_OR_RETURN(ConvAttrs a, ParseConvAttrs(*k.attrs));
  const Tensor& x = k.input(0);
  const Tensor& w = k.input(1);
  ASSIGN_OR_RETURN(ConvGeometry g, MakeConvGeometry(a, x.shape(), w.shape(), true));
  Tensor& y = k.AllocateOutput(0);
  if (y.shape() != OutputShape(a, g)) {
    return Internal("output shape " + y.shape().ToString() + " differs from the computed " +
                    OutputShape(a, g).ToString());
  }
  return RunDepthwiseConv2d(kind, a, g, x, w, &y, k.num_threads);
}

Status DepthwiseConv2dBackpropInputKernel(KernelContext& k, KernelKind kind) {
  ASSIGN_OR_RETURN(ConvAttrs a, ParseConvAttrs(*k.attrs));
  const Tensor& w = k.input(1);
  const Tensor& dy = k.input(2);
  Tensor& dx = k.AllocateOutput(0);
  ASSIGN_OR_RETURN(ConvGeometry g, MakeConvGeometry(a, dx.shape(), w.shape(), true));
  RETURN_IF_ERROR(CheckOutBackprop(a, g, dx.shape(), w.shape(), dy.shape()));
  return RunDepthwiseConv2dBackpropInput(kind, a, g, w, dy, &dx, k.num_threads);
}

Status DepthwiseConv2dBackpropFilterKernel(KernelContext& k, KernelKind kind) {
  ASSIGN_OR_RETURN(ConvAttrs a, ParseConvAttrs(*k.attrs));
  const Tensor& x = k.input(0);
  const Tensor& dy = k.input(2);
  Tensor& dw = k.AllocateOutput(0);
  ASSIGN_OR_RETURN(ConvGeometry g, MakeConvGeometry(a, x.shape(), dw.shape(), true));
  RETURN_IF_ERROR(CheckOutBackprop(a, g, x.shape(), dw.shape(), dy.shape()));
  return RunDepthwiseConv2dBackpropFilter(kind, a, g, x, dy, &dw, k.num_threads);
}

}  // namespace blockflow::conv
