#include "blocks/conv/reference/conv_reference.h"

#include <vector>

#include "blocks/conv/run_kernels.h"

namespace blockflow::conv::internal {
namespace {

// Conv2D family, filter HWIO [fh, fw, in_depth / groups, out_depth]; output channel co is in
// group co / (out_depth / groups) and reads input channels group * filter_in_depth + ci:
//   y[n, oh, ow, co] = sum_{kh, kw, ci} x[n, oh*sh - pt + kh*dh, ow*sw - pl + kw*dw, grp*cig + ci]
//                                     * w[kh, kw, ci, co]          (taps outside x read zero)
// Depthwise family, filter [fh, fw, C, M], output channel c*M + m: the case of one input
// channel per group,
//   y[n, oh, ow, c*M + m] = sum_{kh, kw} x[n, oh*sh - pt + kh*dh, ow*sw - pl + kw*dw, c]
//                                       * w[kh, kw, c, m]
// The input and filter gradients are the same sum scattered back to the input and to the
// filter element each tap read (ForEachTap).
template <typename T>
struct ReferenceKernels {
  using Acc = ComputeT<T>;
  // The three arrays a tap indexes (ForEachTap's xi, wi, yi).
  enum Array { kX, kW, kY };

  // y = sum over taps of x * w.
  static void Forward(const ConvState& s, const Tensor& x, const Tensor& w, Tensor* y,
                      const KernelContext& k) {
    Sum<kX, kW, kY>(s, x, w, y, k);
  }
  // dx = the forward sum scattered back: every tap adds dy * w to the input it read.
  static void BackpropInput(const ConvState& s, const Tensor& w, const Tensor& dy, Tensor* dx,
                            const KernelContext& k) {
    Sum<kY, kW, kX>(s, dy, w, dx, k);
  }
  // dw = every tap adds x * dy to the filter element it used.
  static void BackpropFilter(const ConvState& s, const Tensor& x, const Tensor& dy, Tensor* dw,
                             const KernelContext& k) {
    Sum<kX, kY, kW>(s, x, dy, dw, k);
  }

 private:
  // For every tap, out[tap's index into Out] += a[its index into A] * b[its index into B],
  // summed in a zeroed accumulator that is rounded once into `out` (every element written),
  // unless cancelled.
  template <Array A, Array B, Array Out>
  static void Sum(const ConvState& s, const Tensor& a, const Tensor& b, Tensor* out,
                  const KernelContext& k) {
    const ConvGeometry& g = s.geometry;
    const int64_t in_per_group = g.depthwise ? 1 : g.filter_in_depth;
    const int64_t out_per_group = g.depthwise ? g.multiplier : g.out_depth / g.groups;
    const int64_t sizes[] = {g.input_elements(), g.filter_elements(), g.output_elements()};
    std::vector<Acc> acc(static_cast<size_t>(sizes[Out]), Acc{0});
    const T* ap = a.data<T>();
    const T* bp = b.data<T>();
    ForEachTap(s.attrs.format, g, in_per_group, out_per_group, k,
               [&](int64_t xi, int64_t wi, int64_t yi) {
                 const int64_t at[] = {xi, wi, yi};
                 acc[at[Out]] += static_cast<Acc>(ap[at[A]]) * static_cast<Acc>(bp[at[B]]);
               });
    if (k.cancelled()) return;
    T* o = out->data<T>();
    for (size_t i = 0; i < acc.size(); ++i) o[i] = static_cast<T>(acc[i]);
  }
};

}  // namespace

Status RunReferenceKernels(const ConvState& s, const Tensor& a, const Tensor& b, Tensor* out,
                           const KernelContext& k) {
  return RunKernels<ReferenceKernels>(s, a, b, out, k);
}

}  // namespace blockflow::conv::internal
