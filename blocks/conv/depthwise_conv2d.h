// The depthwise family's optimized kernels: DepthwiseConv2dNative and its input and filter
// gradients. Filter [fh, fw, in_channels, multiplier]; output channel c*M + m comes from input
// channel c and multiplier m. Not part of the public API: run them through RunConv
// (conv_kernels.h); the blocks are registered in conv_blocks.cc.
#pragma once

#include "blocks/conv/conv_kernels.h"

namespace blockflow::conv::internal {

/// Runs the optimized depthwise kernel of `s.op` (RunConv checked the operands).
Status RunDepthwiseKernels(const ConvState& s, const Tensor& a, const Tensor& b, Tensor* out,
                           const KernelContext& k);

}  // namespace blockflow::conv::internal
