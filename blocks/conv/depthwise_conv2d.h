// The depthwise family: DepthwiseConv2dNative and its input and filter gradients. Filter
// [fh, fw, in_channels, multiplier]; output channel c*M + m comes from input channel c and
// multiplier m: the kernels. Their shape functions and kernel wrappers, shared with Conv2D, are
// in conv_blocks.cc.
//
//   ASSIGN_OR_RETURN(ConvGeometry g, MakeConvGeometry(a, x.shape(), w.shape(),
//   /*depthwise=*/true)); Tensor y(x.dtype(), OutputShape(a, g));
//   RETURN_IF_ERROR(RunDepthwiseConv2d(KernelKind::kOptimized, a, g, x, w, &y, 2));
#pragma once

#include "blocks/conv/conv2d.h"
#include "blocks/conv/conv_geometry.h"
#include "core/tensor.h"

namespace blockflow::conv {

// Direct entry points (tests and benchmarks): tensors in `a.format`, filter [fh, fw, C, M],
// `output` already allocated with the right dtype and shape. Every output element is written.
Status RunDepthwiseConv2d(KernelKind kind, const ConvAttrs& a, const ConvGeometry& g,
                          const Tensor& input, const Tensor& filter, Tensor* output,
                          int num_threads);
Status RunDepthwiseConv2dBackpropInput(KernelKind kind, const ConvAttrs& a, const ConvGeometry& g,
                                       const Tensor& filter, const Tensor& out_backprop,
                                       Tensor* input_grad, int num_threads);
Status RunDepthwiseConv2dBackpropFilter(KernelKind kind, const ConvAttrs& a, const ConvGeometry& g,
                                        const Tensor& input, const Tensor& out_backprop,
                                        Tensor* filter_grad, int num_threads);

}  // namespace blockflow::conv
