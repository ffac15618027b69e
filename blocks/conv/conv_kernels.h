// The convolution kernels of both families behind one entry point, on a node's prepared state:
// the attrs parsed and the geometry resolved once per node (OpSchema::SetPrepare), not on every
// run. The blocks (conv_blocks.cc), the tests and the benchmarks all run kernels through it.
//
//   ASSIGN_OR_RETURN(ConvState s, MakeConvState(ConvOp::kForward, attrs, x.shape(), w.shape(),
//                                               /*depthwise=*/false));
//   Tensor y(x.dtype(), OutputShape(s.attrs, s.geometry));
//   KernelContext k;  // k.num_threads, and k.cancel to stop a long run from another thread
//   k.num_threads = 2;
//   RETURN_IF_ERROR(RunConv(KernelKind::kOptimized, s, x, w, &y, k));
#pragma once

#include "blocks/conv/conv_geometry.h"
#include "core/schema.h"
#include "core/tensor.h"

namespace blockflow::conv {

/// Which implementation of a convolution kernel to run.
enum class KernelKind { kReference, kOptimized };

/// The three ops of a family. Their operands (a, b) and output:
///   kForward:        input, filter -> output
///   kBackpropInput:  filter, out_backprop -> input gradient
///   kBackpropFilter: input, out_backprop -> filter gradient
enum class ConvOp { kForward, kBackpropInput, kBackpropFilter };

/// A convolution node's prepared state: which op, its attrs and its resolved geometry (whose
/// `depthwise` selects the family).
struct ConvState {
  ConvOp op = ConvOp::kForward;
  ConvAttrs attrs;
  ConvGeometry geometry;
};

/// The TensorFlow name of `op` in the Conv2D or the depthwise family ("Conv2DBackpropInput").
const char* ConvOpName(ConvOp op, bool depthwise);

/// The state of `op` from its attrs, the input shape and the filter shape (data_format order,
/// filter [fh, fw, in / groups, out] or [fh, fw, C, M]), all fully defined.
Expected<ConvState> MakeConvState(ConvOp op, const AttrMap& attrs, const Shape& input,
                                  const Shape& filter, bool depthwise);

/// The shapes the operands a, b and the output of `s` have (see ConvOp).
struct ConvShapes {
  Shape a, b, out;
};
ConvShapes OperandShapes(const ConvState& s);

/// Runs the kernel of `s.op` in the family of `s.geometry`: the operands a and b (see ConvOp)
/// and `out` must have one floating dtype and the shapes OperandShapes(s). Every output element
/// is written. Uses `k.num_threads` threads and polls `k.cancelled()` between rows, returning
/// Cancelled() when it stopped early (`out` then holds partial results).
Status RunConv(KernelKind kind, const ConvState& s, const Tensor& a, const Tensor& b, Tensor* out,
               const KernelContext& k);

}  // namespace blockflow::conv
