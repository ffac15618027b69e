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

  // y = sum over taps of x * w.
  static void Forward(const ConvState& s, const Tensor& x, const Tensor& w, Tensor* y,
                      const KernelContext& k) {
    const T* xp = x.data<T>();
    const T* wp = w.data<T>();
    Sum(s, k, s.geometry.output_elements(), y, [&](Acc* acc, int64_t xi, int64_t wi, int64_t yi) {
      acc[yi] += static_cast<Acc>(xp[xi]) * static_cast<Acc>(wp[wi]);
    });
  }
  // dx = the forward sum scattered back: every tap adds dy * w to the input it read.
  static void BackpropInput(const ConvState& s, const Tensor& w, const Tensor& dy, Tensor* dx,
                            const KernelContext& k) {
    const T* wp = w.data<T>();
    const T* dyp = dy.data<T>();
    Sum(s, k, s.geometry.input_elements(), dx, [&](Acc* acc, int64_t xi, int64_t wi, int64_t yi) {
      acc[xi] += static_cast<Acc>(dyp[yi]) * static_cast<Acc>(wp[wi]);
    });
  }
  // dw = every tap adds x * dy to the filter element it used.
  static void BackpropFilter(const ConvState& s, const Tensor& x, const Tensor& dy, Tensor* dw,
                             const KernelContext& k) {
    const T* xp = x.data<T>();
    const T* dyp = dy.data<T>();
    Sum(s, k, s.geometry.filter_elements(), dw, [&](Acc* acc, int64_t xi, int64_t wi, int64_t yi) {
      acc[wi] += static_cast<Acc>(xp[xi]) * static_cast<Acc>(dyp[yi]);
    });
  }

 private:
  // Runs `add(acc, x_index, w_index, y_index)` for every tap into a zeroed accumulator of
  // `size` elements, then rounds it once into `out` (every element written), unless cancelled.
  template <typename Add>
  static void Sum(const ConvState& s, const KernelContext& k, int64_t size, Tensor* out,
                  const Add& add) {
    const ConvGeometry& g = s.geometry;
    const int64_t in_per_group = g.depthwise ? 1 : g.filter_in_depth;
    const int64_t out_per_group = g.depthwise ? g.multiplier : g.out_depth / g.groups;
    std::vector<Acc> acc(static_cast<size_t>(size), Acc{0});
    ForEachTap(s.attrs.format, g, in_per_group, out_per_group, k,
               [&](int64_t xi, int64_t wi, int64_t yi) { add(acc.data(), xi, wi, yi); });
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
