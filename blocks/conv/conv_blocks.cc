// Registers the six convolution blocks with TensorFlow's names, ports, attrs and rules, and
// holds their shape functions, prepare function and kernel wrapper: one of each per op, serving
// the Conv2D and the depthwise family alike (`depthwise` selects the filter layout and the
// kernel).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "blocks/conv/conv_kernels.h"
#include "blocks/register_blocks.h"

namespace blockflow {
namespace {

using conv::ConvAttrs;
using conv::ConvGeometry;
using conv::ConvOp;
using conv::ConvState;
using conv::KernelKind;

// ---------------------------------------------------------------------------------------------
// Shape functions: check every attr and shape (TensorFlow's rules) and infer the output.
// ---------------------------------------------------------------------------------------------

Status ForwardShape(InferContext& c, bool depthwise) {
  ASSIGN_OR_RETURN(ConvAttrs a, conv::ParseConvAttrs(c.attrs()));
  ASSIGN_OR_RETURN(ConvGeometry g,
                   conv::MakeConvGeometry(a, c.input(0).shape, c.input(1).shape, depthwise));
  c.SetOutput(0, c.input(0).dtype, conv::OutputShape(a, g));
  return Status::OK();
}

// The gradients': the sizes port gives the shape of the result (input or filter), checked
// against the other operand and out_backprop.
Status GradientShape(InferContext& c, bool depthwise, ConvOp op) {
  ASSIGN_OR_RETURN(ConvAttrs a, conv::ParseConvAttrs(c.attrs()));
  const Shape& dy = c.input(2).shape;
  Shape input, filter;
  if (op == ConvOp::kBackpropInput) {
    filter = c.input(1).shape;
    // Only Conv2DBackpropInput takes input_sizes as 2 values [height, width].
    ASSIGN_OR_RETURN(input,
                     conv::ResolveInputSizes(a, c.input(0), filter, dy, /*allow_hw=*/!depthwise));
  } else {
    input = c.input(0).shape;
    ASSIGN_OR_RETURN(filter, conv::ResolveFilterSizes(a, c.input(1), input, dy, depthwise));
  }
  ASSIGN_OR_RETURN(ConvGeometry g, conv::MakeConvGeometry(a, input, filter, depthwise));
  RETURN_IF_ERROR(conv::CheckOutBackprop(a, g, input, filter, dy));
  if (op == ConvOp::kBackpropInput) {
    // The geometry's input is `input`, with a depthwise input depth filled in from the filter.
    c.SetOutput(0, c.input(1).dtype, conv::InputShape(a, g));
    return Status::OK();
  }
  // A depthwise filter's in-channels equal the input depth; a Conv2D one's stay as given.
  if (depthwise && filter.dim(2) == -1) filter.set_dim(2, g.in_depth);
  c.SetOutput(0, c.input(0).dtype, filter);
  return Status::OK();
}

// ---------------------------------------------------------------------------------------------
// Prepare and run: the attrs are parsed and the geometry resolved once per node, from the
// node's inferred shapes; every run then only checks its tensors against them.
// ---------------------------------------------------------------------------------------------

// The ports each op reads its operands from (see conv::ConvOp): forward (input, filter),
// BackpropInput (filter, out_backprop), BackpropFilter (input, out_backprop).
int PortOfA(ConvOp op) { return op == ConvOp::kBackpropInput ? 1 : 0; }
int PortOfB(ConvOp op) { return op == ConvOp::kForward ? 1 : 2; }

Expected<std::shared_ptr<const void>> PrepareConv(const PrepareContext& p, ConvOp op,
                                                  bool depthwise) {
  const std::vector<PortInfo>& in = *p.inputs;
  const Shape& out = (*p.outputs)[0].shape;
  // The geometry's input and filter: given, or (for a gradient) the output's shape.
  const Shape& input = op == ConvOp::kBackpropInput ? out : in[0].shape;
  const Shape& filter = op == ConvOp::kBackpropFilter ? out : in[1].shape;
  ASSIGN_OR_RETURN(ConvState s, conv::MakeConvState(op, *p.attrs, input, filter, depthwise));
  if (op != ConvOp::kForward) {
    RETURN_IF_ERROR(conv::CheckOutBackprop(s.attrs, s.geometry, input, filter, in[2].shape));
  }
  return std::shared_ptr<const void>(std::make_shared<const ConvState>(std::move(s)));
}

// Forward and BackpropInput write every output element (RunConv); BackpropFilter takes a
// zeroed output, which it also writes whole, as the filter gradient is small.
Status ConvKernel(KernelContext& k, KernelKind kind, ConvOp op) {
  const ConvState& s = k.State<ConvState>();
  Tensor& out =
      op == ConvOp::kBackpropFilter ? k.AllocateOutput(0) : k.AllocateUninitializedOutput(0);
  return conv::RunConv(kind, s, k.input(PortOfA(op)), k.input(PortOfB(op)), &out, k);
}

// ---------------------------------------------------------------------------------------------
// Registration.
// ---------------------------------------------------------------------------------------------

// The attrs every convolution block shares, in TensorFlow's order.
OpSchema& AddWindowAttrs(OpSchema& s, bool conv2d) {
  s.RequiredAttr("strides", AttrType::kInts,
                 "Stride of the sliding window per dimension of data_format (4 ints; batch and "
                 "channel strides must be 1).")
      .Length(4);
  if (conv2d) {
    s.Attr("use_cudnn_on_gpu", AttrType::kBool, true,
           "Accepted for TensorFlow compatibility; no effect.");
  }
  s.EnumAttr("padding", {"SAME", "VALID", "EXPLICIT"}, "",
             "SAME: output ceil(in / stride), the odd extra padding at the bottom/right; VALID: "
             "no padding; EXPLICIT: the pads in explicit_paddings.");
  s.Attr("explicit_paddings", AttrType::kInts, nlohmann::json::array(),
         "With padding EXPLICIT: 8 non-negative ints, a (before, after) pair per dimension of "
         "data_format, batch and channel pairs 0. Empty otherwise.")
      .Length(8)
      .VisibleWhen("padding", "EXPLICIT")
      .EnumAttr("data_format", {"NHWC", "NCHW"}, "NHWC",
                "Layout of input, output and out_backprop: NHWC [batch, height, width, channels] "
                "or NCHW [batch, channels, height, width]. Filters are always [fh, fw, in, out].")
      .Attr("dilations", AttrType::kInts, nlohmann::json::array({1, 1, 1, 1}),
            "Dilation factor per dimension of data_format (4 ints; batch and channel must be 1); "
            "a filter tap k reads input offset k * dilation.")
      .Length(4);
  return s;
}

// Completes a schema whose ports are set: the shared attrs, the shape function, the prepare
// function and both kernels of `op` for the Conv2D (depthwise == false) or the depthwise family;
// then registers it.
void RegisterConv(OpRegistry& registry, OpSchema s, bool depthwise, ConvOp op) {
  AddWindowAttrs(s, /*conv2d=*/!depthwise);
  s.SetShapeFn([depthwise, op](InferContext& c) {
     return op == ConvOp::kForward ? ForwardShape(c, depthwise) : GradientShape(c, depthwise, op);
   })
      .SetPrepare(
          [op, depthwise](const PrepareContext& p) { return PrepareConv(p, op, depthwise); })
      .SetReferenceKernel(
          [op](KernelContext& k) { return ConvKernel(k, KernelKind::kReference, op); })
      .SetKernel([op](KernelContext& k) { return ConvKernel(k, KernelKind::kOptimized, op); });
  registry.Register(std::move(s));
}

// What tells the Conv2D family from the depthwise one in the schemas: names and doc strings.
// Ports, layouts, batch rules and dtype constraints are the same for both.
struct ConvFamily {
  bool depthwise;
  const char* forward_name;  // the backprop ops append "BackpropInput" / "BackpropFilter"
  const char* forward_doc;
  const char* output_doc;       // the forward output
  const char* filter_doc;       // the filter port of the forward and BackpropInput ops
  const char* gradient_of;      // "Gradient of <this> with respect to ..."
  const char* out_backprop_of;  // "Gradient w.r.t. the <this> output; ..."
  const char* input_sizes_doc;
  const char* filter_sizes_doc;
};

void RegisterConvFamily(OpRegistry& registry, const ConvFamily& f) {
  const std::vector<DType>& kT = FloatDTypes();
  const std::vector<DType>& kSizes = IndexDTypes();
  const std::string name = f.forward_name;
  const std::string gradient = std::string("Gradient of ") + f.gradient_of;
  const std::string out_backprop_doc = std::string("Gradient w.r.t. the ") + f.out_backprop_of +
                                       " output; shape of the forward output.";
  {
    OpSchema s(name);
    s.Category("Convolution")
        .Doc(f.forward_doc)
        .Input("input", kT, "4-D input [batch, in_height, in_width, in_channels] (NHWC) or NCHW.")
        .Layout(LayoutRole::kActivation)
        .Input("filter", kT, f.filter_doc)
        .Layout(LayoutRole::kFilter)
        .Output("output", kT, f.output_doc)
        .Layout(LayoutRole::kActivation)
        .Batch(BatchRule::Batched({"input"}, "filter", BatchRule::kKeepsBatch))
        .SameDType({"input", "filter"});
    RegisterConv(registry, std::move(s), f.depthwise, ConvOp::kForward);
  }
  {
    OpSchema s(name + "BackpropInput");
    s.Category("Convolution")
        .Doc(gradient + " with respect to its input.")
        .Input("input_sizes", kSizes, f.input_sizes_doc)
        .Input("filter", kT, f.filter_doc)
        .Layout(LayoutRole::kFilter)
        .Input("out_backprop", kT, out_backprop_doc)
        .Layout(LayoutRole::kActivation)
        .Output("output", kT, "Gradient w.r.t. the input, shape input_sizes.")
        .Layout(LayoutRole::kActivation)
        .Batch(
            BatchRule::Batched({"out_backprop"}, "filter", BatchRule::kKeepsBatch, "input_sizes"))
        .SameDType({"filter", "out_backprop"});
    RegisterConv(registry, std::move(s), f.depthwise, ConvOp::kBackpropInput);
  }
  {
    OpSchema s(name + "BackpropFilter");
    s.Category("Convolution")
        .Doc(gradient + " with respect to its filter.")
        .Input("input", kT, "4-D input of the convolution (data_format order).")
        .Layout(LayoutRole::kActivation)
        .Input("filter_sizes", kSizes, f.filter_sizes_doc)
        .Input("out_backprop", kT, out_backprop_doc)
        .Layout(LayoutRole::kActivation)
        .Output("output", kT, "Gradient w.r.t. the filter, shape filter_sizes.")
        .Layout(LayoutRole::kFilter)
        .Batch(BatchRule::Batched({"input", "out_backprop"}, "", BatchRule::kSumsBatch,
                                  "filter_sizes"))
        .SameDType({"input", "out_backprop"});
    RegisterConv(registry, std::move(s), f.depthwise, ConvOp::kBackpropFilter);
  }
}

}  // namespace

void RegisterConvBlocks(OpRegistry& registry) {
  RegisterConvFamily(
      registry,
      {/*depthwise=*/false, "Conv2D",
       "2-D convolution: output[n, oh, ow, o] = sum over kh, kw, i of "
       "input[n, oh*sh - pad_top + kh*dh, ow*sw - pad_left + kw*dw, g*in_per_group + i] * "
       "filter[kh, kw, i, o]. Grouped when the input depth is a multiple of the filter's "
       "in-depth.",
       "4-D output [batch, out_height, out_width, out_channels] (or NCHW).",
       "[filter_height, filter_width, in_channels / groups, out_channels].", "Conv2D", "Conv2D",
       "Shape of the input: 4 ints in data_format order, or 2 ints [height, width] (batch "
       "from out_backprop, depth from the filter).",
       "Shape of the filter: 4 ints [fh, fw, in_channels / groups, out_channels]."});
  RegisterConvFamily(
      registry,
      {/*depthwise=*/true, "DepthwiseConv2dNative",
       "Depthwise 2-D convolution: output[n, oh, ow, c*M + m] = sum over kh, kw of input[n, "
       "oh*sh - pad_top + kh*dh, ow*sw - pad_left + kw*dw, c] * filter[kh, kw, c, m].",
       "4-D output with in_channels * channel_multiplier channels.",
       "[filter_height, filter_width, in_channels, channel_multiplier].", "depthwise convolution",
       "depthwise", "Shape of the input: 4 ints in data_format order.",
       "Shape of the filter: 4 ints [filter_height, filter_width, in_channels, "
       "channel_multiplier]."});
}

}  // namespace blockflow
