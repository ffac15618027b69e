// The Conv2D family's optimized kernels: Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter
// (grouped when the input depth is a multiple of the filter's in-depth). Not part of the public
// API: run them through RunConv (conv_kernels.h); the blocks are registered in conv_blocks.cc.
#pragma once

#include "blocks/conv/conv_kernels.h"

namespace blockflow::conv::internal {

/// Runs the optimized Conv2D-family kernel of `s.op` (RunConv checked the operands).
Status RunConv2DKernels(const ConvState& s, const Tensor& a, const Tensor& b, Tensor* out,
                        const KernelContext& k);

}  // namespace blockflow::conv::internal
