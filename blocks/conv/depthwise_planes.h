#pragma once

#include "blocks/conv/optimized_util.h"

// The depthwise family's NCHW kernels: each channel is a plane of its own in NCHW, and a
// depthwise convolution convolves every plane with its own filter, so these kernels take a plane
// at a time and vectorise along it, with no transposes to NHWC and back. Not part of the public
// API: the depthwise kernel set (depthwise_conv2d.cc) calls them for NCHW operands.
//
// The input plane goes, zero-padded and its rows split by row-stride phase, into a few flat
// planes of one width PW (out_w plus the filter's reach along a row; the column stride is 1).
// Every tap then reads its phase plane at a constant offset from the output position,
// oh * PW + ow, so that all three ops are sums of shifted vectors over flat arrays:
//   forward          y'[i]    = sum over taps t of w[t] * X_phase(t)[i + off(t)]
//   filter gradient  dw[t]   += sum over i of dy'[i] * X_phase(t)[i + off(t)]
//   input gradient   DX_q[k]  = sum over taps t of phase q of w[t] * dy'[k - off(t)]
// where dy' holds dy at the same positions (zeros in the PW - out_w columns past each row), and
// the forward's y' and the input gradient's DX go back to the plane afterwards.

namespace blockflow::conv::internal {

/// Whether the plane kernels take depthwise op `op` in `format` of geometry g (the depthwise
/// kernel set asks first whether the op runs in channel blocks, as multiplier-1 NCHW ops on rows
/// of up to 56 columns do): NCHW at column stride 1 (a strided row would have to be gathered
/// element by element), on rows of at least
/// kMinPlaneWidth output columns (7-column rows leave most of a vector's lanes idle, and took
/// twice as long as the transposes to NHWC). The forward and the input gradient only on planes of
/// at most kMaxPlaneBytes of the compute type (elem_size bytes a value): on 112 x 112 float
/// planes (mnv1_dw1_112x32) they took 15-25% longer than the transposes and the NHWC kernels. The
/// filter gradient only on rows of kMinFilterGradWidth columns and more: 1.7x faster on the 56-
/// and 112-column layers, but on 28 and 14 columns between 0.9x and 1.2x (mnv2_dw_28x192 0.9x on
/// one thread, 0.7x on two), where the NHWC sweep is efficient after the transposes.
inline constexpr int64_t kMinPlaneWidth = 14;
inline constexpr int64_t kMinFilterGradWidth = 32;
inline constexpr int64_t kMaxPlaneBytes = int64_t{32} << 10;
inline bool UsesPlanes(const ConvGeometry& g, DataFormat format, ConvOp op, size_t elem_size) {
  if (format != DataFormat::kNCHW || g.stride_w != 1 || g.out_w < kMinPlaneWidth) return false;
  if (op == ConvOp::kBackpropFilter) return g.out_w >= kMinFilterGradWidth;
  return g.in_h * g.in_w * static_cast<int64_t>(elem_size) <= kMaxPlaneBytes;
}

template <typename T>
void DwForwardPlanes(const KernelArgs<T>& args, const KernelContext& ctx);
template <typename T>
void DwBackpropInputPlanes(const KernelArgs<T>& args, const KernelContext& ctx);
template <typename T>
void DwBackpropFilterPlanes(const KernelArgs<T>& args, const KernelContext& ctx);

}  // namespace blockflow::conv::internal
