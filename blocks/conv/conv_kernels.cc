#include "blocks/conv/conv_kernels.h"

#include <cstring>
#include <string>

#include "blocks/conv/conv2d.h"
#include "blocks/conv/depthwise_conv2d.h"
#include "blocks/conv/reference/conv_reference.h"

namespace blockflow::conv {

const char* ConvOpName(ConvOp op, bool depthwise) {
  switch (op) {
    case ConvOp::kForward:
      return depthwise ? "DepthwiseConv2dNative" : "Conv2D";
    case ConvOp::kBackpropInput:
      return depthwise ? "DepthwiseConv2dNativeBackpropInput" : "Conv2DBackpropInput";
    case ConvOp::kBackpropFilter:
      return depthwise ? "DepthwiseConv2dNativeBackpropFilter" : "Conv2DBackpropFilter";
  }
  return "?";
}

Expected<ConvState> MakeConvState(ConvOp op, const AttrMap& attrs, const Shape& input,
                                  const Shape& filter, bool depthwise) {
  ConvState s;
  s.op = op;
  ASSIGN_OR_RETURN(s.attrs, ParseConvAttrs(attrs));
  ASSIGN_OR_RETURN(s.geometry, MakeConvGeometry(s.attrs, input, filter, depthwise));
  return s;
}

ConvShapes OperandShapes(const ConvState& s) {
  const ConvGeometry& g = s.geometry;
  const Shape input = InputShape(s.attrs, g), output = OutputShape(s.attrs, g);
  const Shape filter{g.filter_h, g.filter_w, g.filter_in_depth,
                     g.depthwise ? g.multiplier : g.out_depth};
  switch (s.op) {
    case ConvOp::kBackpropInput:
      return {filter, output, input};
    case ConvOp::kBackpropFilter:
      return {input, output, filter};
    default:
      return {input, filter, output};
  }
}

Status RunConv(KernelKind kind, const ConvState& s, const Tensor& a, const Tensor& b, Tensor* out,
               const KernelContext& k) {
  const std::string op = ConvOpName(s.op, s.geometry.depthwise);
  if (a.dtype() != b.dtype() || a.dtype() != out->dtype() || !IsFloatingDType(a.dtype())) {
    return InvalidArgument(op + ": dtypes " + std::string(DTypeName(a.dtype())) + ", " +
                           std::string(DTypeName(b.dtype())) + " and output " +
                           std::string(DTypeName(out->dtype())) + " must be one floating dtype");
  }
  const ConvShapes want = OperandShapes(s);
  if (a.shape() != want.a || b.shape() != want.b || out->shape() != want.out) {
    return Internal(op + ": operands " + a.shape().ToString() + ", " + b.shape().ToString() +
                    " and output " + out->shape().ToString() + " differ from the prepared " +
                    want.a.ToString() + ", " + want.b.ToString() + " and " + want.out.ToString());
  }
  if (out->num_elements() == 0) return Status::OK();
  // An operand with no elements (no output rows, a channel multiplier of 0, an empty batch):
  // every result element is a sum over nothing. Zeros here, so that no kernel meets empty work.
  if (a.num_elements() == 0 || b.num_elements() == 0) {
    std::memset(out->raw(), 0, out->num_bytes());
    return Status::OK();
  }
  const auto run = kind == KernelKind::kReference ? internal::RunReferenceKernels
                   : s.geometry.depthwise         ? internal::RunDepthwiseKernels
                                                  : internal::RunConv2DKernels;
  RETURN_IF_ERROR(run(s, a, b, out, k));
  return k.cancelled() ? Cancelled() : Status::OK();
}

}  // namespace blockflow::conv
