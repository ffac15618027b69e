// The reference convolution kernels of both families: the definitions in plain loops, any
// data_format, summing in ComputeT<T> (float for the 16-bit types and float32, double for
// float64) per output element in tap order, rounding once. The optimized kernels are tested
// against them (not part of the public API; run them through RunConv with kReference).
#pragma once

#include <cstdint>

#include "blocks/conv/conv_geometry.h"
#include "blocks/conv/conv_kernels.h"
#include "blocks/conv/layout.h"
#include "core/schema.h"

namespace blockflow::conv::internal {

/// The taps of a grouped convolution, in the order the reference kernels sum them: for each
/// output element (n, oh, ow, co), every filter tap (kh, kw, ci) that reads inside the input,
///   ih = oh*sh - pt + kh*dh,  iw = ow*sw - pl + kw*dw,  input channel grp*in_per_group + ci,
///   grp = co / out_per_group.
/// `fn(x_index, w_index, y_index)` gets flat offsets into x and y (in `format`) and into the
/// filter [fh, fw, in_per_group, out_depth]. Depthwise convolution is the case
/// in_per_group = 1, out_per_group = M: output channel c*M + m reads input channel c, and the
/// filter [fh, fw, C, M] has the same offsets. Stops early, between output pixels, once `k` is
/// cancelled.
template <typename Fn>
void ForEachTap(DataFormat format, const ConvGeometry& g, int64_t in_per_group,
                int64_t out_per_group, const KernelContext& k, Fn&& fn) {
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        if (k.cancelled()) return;
        for (int64_t co = 0; co < g.out_depth; ++co) {
          const int64_t y_index = ActIndex(format, g.out_h, g.out_w, g.out_depth, n, oh, ow, co);
          const int64_t first_in = co / out_per_group * in_per_group;
          g.ForTapsInside(oh, ow, [&](int64_t kh, int64_t kw, int64_t ih, int64_t iw) {
            for (int64_t ci = 0; ci < in_per_group; ++ci) {
              fn(ActIndex(format, g.in_h, g.in_w, g.in_depth, n, ih, iw, first_in + ci),
                 ((kh * g.filter_w + kw) * in_per_group + ci) * g.out_depth + co, y_index);
            }
          });
        }
      }
}

/// Runs the reference kernel of `s.op` (RunConv checked the operands).
Status RunReferenceKernels(const ConvState& s, const Tensor& a, const Tensor& b, Tensor* out,
                           const KernelContext& k);

}  // namespace blockflow::conv::internal
