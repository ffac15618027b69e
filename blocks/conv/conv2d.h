// The Conv2D family: Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter (grouped when the
// input depth is a multiple of the filter's in-depth): the kernels. Their shape functions and
// kernel wrappers, shared with the depthwise family, are in conv_blocks.cc.
//
//   ASSIGN_OR_RETURN(ConvAttrs a, ParseConvAttrs(attrs));
//   ASSIGN_OR_RETURN(ConvGeometry g, MakeConvGeometry(a, x.shape(), w.shape(), false));
//   Tensor y(x.dtype(), OutputShape(a, g));
//   RETURN_IF_ERROR(RunConv2D(KernelKind::kOptimized, a, g, x, w, &y, 2));
#pragma once

#include "blocks/conv/conv_geometry.h"
#include "core/tensor.h"

namespace blockflow::conv {

/// Which implementation of a convolution kernel to run.
enum class KernelKind { kReference, kOptimized };

// Direct entry points (tests and benchmarks): tensors in `a.format`, filter HWIO, `output`
// already allocated with the right dtype and shape. Every output element is written.
Status RunConv2D(KernelKind kind, const ConvAttrs& a, const ConvGeometry& g, const Tensor& input,
                 const Tensor& filter, Tensor* output, int num_threads);
Status RunConv2DBackpropInput(KernelKind kind, const ConvAttrs& a, const ConvGeometry& g,
                              const Tensor& filter, const Tensor& out_backprop, Tensor* input_grad,
                              int num_threads);
Status RunConv2DBackpropFilter(KernelKind kind, const ConvAttrs& a, const ConvGeometry& g,
                               const Tensor& input, const Tensor& out_backprop, Tensor* filter_grad,
                               int num_threads);

}  // namespace blockflow::conv
