// The Conv2D family: Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter (grouped when the
// input depth is a multiple of the filter's in-depth). Shape functions and kernels.
//
//   ASSIGN_OR_RETURN(ConvAttrs a, ParseConvAttrs(attrs));
//   ASSIGN_OR_RETURN(ConvGeometry g, MakeConvGeometry(a, x.shape(), w.shape(), false));
//   Tensor y(x.dtype(), OutputShape(a, g));
//   RETURN_IF_ERROR(RunConv2D(KernelKind::kOptimized, a, g, x, w, &y, 2));
#pragma once

#include "blocks/conv/conv_geometry.h"
#include "core/schema.h"
#include "core/tensor.h"

namespace blockflow::conv {

/// Which implementation of a convolution kernel to run.
enum class KernelKind { kReference, kOptimized };

// Shape functions: check every attr and shape (TensorFlow's rules) and infer the output.
Status Conv2DShape(InferContext& c);
Status Conv2DBackpropInputShape(InferContext& c);
Status Conv2DBackpropFilterShape(InferContext& c);

// Kernels as registered with the schemas.
Status Conv2DKernel(KernelContext& k, KernelKind kind);
Status Conv2DBackpropInputKernel(KernelContext& k, KernelKind kind);
Status Conv2DBackpropFilterKernel(KernelContext& k, KernelKind kind);

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
