// The Conv2D forward as Winograd's minimal filtering F(2x2, 3x3) (not part of the public API):
// for 3x3 filters at stride 1, each 2x2 block of output pixels (a tile) is computed from its 4x4
// block of input pixels in 16 products per channel pair instead of 36, as 16 matrix products
// (one per transformed point) through the packed GEMM. The stride-1 input gradient goes the
// same way, as the forward of out_backprop by the filter turned half a turn. Run it through
// RunConv (conv_kernels.h), which takes this path where UseWinograd says so.
//
//   U = G g G^T   per (input channel, output channel): the filter, 3x3 -> 4x4
//   V = B^T d B   per (tile, input channel): the tile's input, 4x4 -> 4x4
//   M[xi] = V[xi] * U[xi]   for each of the 16 points xi: [tiles, ci] x [ci, co]
//   Y = A^T M A   per (tile, output channel): the tile's 2x2 outputs
//
// The stride-1 filter gradient is the same identity read the other way round:
//
//   D = A dy A^T   per (tile, output channel): the tile's 2x2 out_backprop, 2x2 -> 4x4
//   dU[xi] = sum over tiles of V[xi]^T D[xi]   for each point: [ci, tiles] x [tiles, co]
//   dw = G^T dU G   per (input channel, output channel): 4x4 -> 3x3
//
// B^T, G and A^T hold only 0, +-1 and 1/2: the transforms are exact up to the rounding of their
// sums. The forward and the input gradient sum every result's products in an order fixed by the
// geometry: the same bits at every thread count. The filter gradient's threads that split the
// tiles add their own sums in thread order: the same bits for a given thread count, as the
// direct kernels' filter gradients. Either way AVX2 gives AVX-512's bits (the baseline ISA,
// without fused multiply-adds, rounds each product apart).
#pragma once

#include "blocks/conv/conv_kernels.h"

namespace blockflow::conv::internal {

/// Whether op `op` of geometry `g` on operands of `dtype` goes through the Winograd kernels: a
/// Conv2D forward, input gradient or filter gradient (groups 1) with a 3x3 filter at stride 1
/// and dilation 1 (the input gradient: no side padded by more than 2), at least
/// kWinogradMinChannels input and output channels, in float32 or float64 (a 16-bit layer's
/// results would no longer come from exact float32 sums), needing at most 2/3 of the direct
/// kernels' products (not where the result is a pixel or two across, nor fc6's input
/// gradient), and not turned off by the environment variable BLOCKFLOW_CONV_WINOGRAD=0 (or
/// SetWinogradForTesting).
bool UseWinograd(const ConvGeometry& g, ConvOp op, DType dtype);
inline constexpr int64_t kWinogradMinChannels = 32;

/// Turns the Winograd kernels on or off for this process (tests compare them with the direct ones).
void SetWinogradForTesting(bool on);

/// Runs the Winograd kernel of `s.op` (RunConv checked the operands; UseWinograd said yes).
Status RunWinogradKernels(const ConvState& s, const Tensor& a, const Tensor& b, Tensor* out,
                          const KernelContext& k);

}  // namespace blockflow::conv::internal
