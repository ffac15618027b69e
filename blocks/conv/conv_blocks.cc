// Registers the six convolution blocks with TensorFlow's names, ports, attrs and rules, and
// holds their shape functions and kernel wrappers: one of each per op, serving the Conv2D and
// the depthwise family alike (`depthwise` selects the filter layout and the kernel).
#include <string>
#include <utility>
#include <vector>

#include "blocks/conv/conv2d.h"
#include "blocks/conv/depthwise_conv2d.h"
#include "blocks/register_blocks.h"

namespace blockflow {
namespace {

using conv::ConvAttrs;
using conv::ConvGeometry;
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

Status BackpropInputShape(InferContext& c, bool depthwise) {
  ASSIGN_OR_RETURN(ConvAttrs a, conv::ParseConvAttrs(c.attrs()));
  const Shape& filter = c.input(1).shape;
  const Shape& dy = c.input(2).shape;
  // Only Conv2DBackpropInput takes input_sizes as 2 values [height, width].
  ASSIGN_OR_RETURN(Shape input,
                   conv::ResolveInputSizes(a, c.input(0), filter, dy, /*allow_hw=*/!depthwise));
  ASSIGN_OR_RETURN(ConvGeometry g, conv::MakeConvGeometry(a, input, filter, depthwise));
  RETURN_IF_ERROR(conv::CheckOutBackprop(a, g, input, filter, dy));
  // The geometry's input is `input`, with a depthwise input depth filled in from the filter.
  c.SetOutput(0, c.input(1).dtype, conv::InputShape(a, g));
  return Status::OK();
}

Status BackpropFilterShape(InferContext& c, bool depthwise) {
  ASSIGN_OR_RETURN(ConvAttrs a, conv::ParseConvAttrs(c.attrs()));
  const Shape& input = c.input(0).shape;
  const Shape& dy = c.input(2).shape;
  ASSIGN_OR_RETURN(Shape filter, conv::ResolveFilterSizes(a, c.input(1), input, dy, depthwise));
  ASSIGN_OR_RETURN(ConvGeometry g, conv::MakeConvGeometry(a, input, filter, depthwise));
  RETURN_IF_ERROR(conv::CheckOutBackprop(a, g, input, filter, dy));
  // A depthwise filter's in-channels equal the input depth; a Conv2D one's stay as given.
  if (depthwise && filter.dim(2) == -1) filter.set_dim(2, g.in_depth);
  c.SetOutput(0, c.input(0).dtype, filter);
  return Status::OK();
}

// ---------------------------------------------------------------------------------------------
// Kernel wrappers: resolve the geometry from the tensors and run the family's kernel.
// ---------------------------------------------------------------------------------------------

Status ForwardKernel(KernelContext& k, KernelKind kind, bool depthwise) {
  ASSIGN_OR_RETURN(ConvAttrs a, conv::ParseConvAttrs(*k.attrs));
  const Tensor& x = k.input(0);
  const Tensor& w = k.input(1);
  ASSIGN_OR_RETURN(ConvGeometry g, conv::MakeConvGeometry(a, x.shape(), w.shape(), depthwise));
  Tensor& y = k.AllocateOutput(0);
  if (y.shape() != conv::OutputShape(a, g)) {
    return Internal("output shape " + y.shape().ToString() + " differs from the computed " +
                    conv::OutputShape(a, g).ToString());
  }
  const auto run = depthwise ? conv::RunDepthwiseConv2d : conv::RunConv2D;
  return run(kind, a, g, x, w, &y, k.num_threads);
}

Status BackpropInputKernel(KernelContext& k, KernelKind kind, bool depthwise) {
  ASSIGN_OR_RETURN(ConvAttrs a, conv::ParseConvAttrs(*k.attrs));
  const Tensor& w = k.input(1);
  const Tensor& dy = k.input(2);
  Tensor& dx = k.AllocateOutput(0);
  ASSIGN_OR_RETURN(ConvGeometry g, conv::MakeConvGeometry(a, dx.shape(), w.shape(), depthwise));
  RETURN_IF_ERROR(conv::CheckOutBackprop(a, g, dx.shape(), w.shape(), dy.shape()));
  const auto run = depthwise ? conv::RunDepthwiseConv2dBackpropInput : conv::RunConv2DBackpropInput;
  return run(kind, a, g, w, dy, &dx, k.num_threads);
}

Status BackpropFilterKernel(KernelContext& k, KernelKind kind, bool depthwise) {
  ASSIGN_OR_RETURN(ConvAttrs a, conv::ParseConvAttrs(*k.attrs));
  const Tensor& x = k.input(0);
  const Tensor& dy = k.input(2);
  Tensor& dw = k.AllocateOutput(0);
  ASSIGN_OR_RETURN(ConvGeometry g, conv::MakeConvGeometry(a, x.shape(), dw.shape(), depthwise));
  RETURN_IF_ERROR(conv::CheckOutBackprop(a, g, x.shape(), dw.shape(), dy.shape()));
  const auto run =
      depthwise ? conv::RunDepthwiseConv2dBackpropFilter : conv::RunConv2DBackpropFilter;
  return run(kind, a, g, x, dy, &dw, k.num_threads);
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

using ConvShapeFn = Status (*)(InferContext&, bool depthwise);
using ConvKernelFn = Status (*)(KernelContext&, KernelKind, bool depthwise);

// Completes a schema whose ports are set: the shared attrs, the shape function and both kernels
// for the Conv2D (depthwise == false) or the depthwise family; then registers it.
void RegisterConv(OpRegistry& registry, OpSchema s, bool depthwise, ConvShapeFn shape,
                  ConvKernelFn kernel) {
  AddWindowAttrs(s, /*conv2d=*/!depthwise);
  s.SetShapeFn([shape, depthwise](InferContext& c) { return shape(c, depthwise); })
      .SetReferenceKernel([kernel, depthwise](KernelContext& k) {
        return kernel(k, KernelKind::kReference, depthwise);
      })
      .SetKernel([kernel, depthwise](KernelContext& k) {
        return kernel(k, KernelKind::kOptimized, depthwise);
      });
  registry.Register(std::move(s));
}

}  // namespace

void RegisterConvBlocks(OpRegistry& registry) {
  const std::vector<DType> kT = FloatDTypes();
  const std::vector<DType> kSizes = {DType::kInt32, DType::kInt64};

  {
    OpSchema s("Conv2D");
    s.Category("Convolution")
        .Doc(
            "2-D convolution: output[n, oh, ow, o] = sum over kh, kw, i of input[n, oh*sh - "
            "pad_top + "
            "kh*dh, ow*sw - pad_left + kw*dw, g*in_per_group + i] * filter[kh, kw, i, o]. Grouped "
            "when the input depth is a multiple of the filter's in-depth.")
        .Input("input", kT, "4-D input [batch, in_height, in_width, in_channels] (NHWC) or NCHW.")
        .Layout(LayoutRole::kActivation)
        .Input("filter", kT, "[filter_height, filter_width, in_channels / groups, out_channels].")
        .Layout(LayoutRole::kFilter)
        .Output("output", kT, "4-D output [batch, out_height, out_width, out_channels] (or NCHW).")
        .Layout(LayoutRole::kActivation)
        .SameDType({"input", "filter"});
    RegisterConv(registry, std::move(s), /*depthwise=*/false, ForwardShape, ForwardKernel);
  }
  {
    OpSchema s("Conv2DBackpropInput");
    s.Category("Convolution")
        .Doc("Gradient of Conv2D with respect to its input.")
        .Input("input_sizes", kSizes,
               "Shape of the input: 4 ints in data_format order, or 2 ints [height, width] (batch "
               "from out_backprop, depth from the filter).")
        .Input("filter", kT, "[filter_height, filter_width, in_channels / groups, out_channels].")
        .Layout(LayoutRole::kFilter)
        .Input("out_backprop", kT,
               "Gradient w.r.t. the Conv2D output; shape of the forward output.")
        .Layout(LayoutRole::kActivation)
        .Output("output", kT, "Gradient w.r.t. the input, shape input_sizes.")
        .Layout(LayoutRole::kActivation)
        .SameDType({"filter", "out_backprop"});
    RegisterConv(registry, std::move(s), /*depthwise=*/false, BackpropInputShape,
                 BackpropInputKernel);
  }
  {
    OpSchema s("Conv2DBackpropFilter");
    s.Category("Convolution")
        .Doc("Gradient of Conv2D with respect to its filter.")
        .Input("input", kT, "4-D input of the convolution (data_format order).")
        .Layout(LayoutRole::kActivation)
        .Input("filter_sizes", kSizes,
               "Shape of the filter: 4 ints [fh, fw, in_channels / groups, out_channels].")
        .Input("out_backprop", kT,
               "Gradient w.r.t. the Conv2D output; shape of the forward output.")
        .Layout(LayoutRole::kActivation)
        .Output("output", kT, "Gradient w.r.t. the filter, shape filter_sizes.")
        .Layout(LayoutRole::kFilter)
        .SameDType({"input", "out_backprop"});
    RegisterConv(registry, std::move(s), /*depthwise=*/false, BackpropFilterShape,
                 BackpropFilterKernel);
  }
  {
    OpSchema s("DepthwiseConv2dNative");
    s.Category("Convolution")
        .Doc(
            "Depthwise 2-D convolution: output[n, oh, ow, c*M + m] = sum over kh, kw of input[n, "
            "oh*sh - pad_top + kh*dh, ow*sw - pad_left + kw*dw, c] * filter[kh, kw, c, m].")
        .Input("input", kT, "4-D input [batch, in_height, in_width, in_channels] (NHWC) or NCHW.")
        .Layout(LayoutRole::kActivation)
        .Input("filter", kT, "[filter_height, filter_width, in_channels, channel_multiplier].")
        .Layout(LayoutRole::kFilter)
        .Output("output", kT, "4-D output with in_channels * channel_multiplier channels.")
        .Layout(LayoutRole::kActivation)
        .SameDType({"input", "filter"});
    RegisterConv(registry, std::move(s), /*depthwise=*/true, ForwardShape, ForwardKernel);
  }
  {
    OpSchema s("DepthwiseConv2dNativeBackpropInput");
    s.Category("Convolution")
        .Doc("Gradient of depthwise convolution with respect to its input.")
        .Input("input_sizes", kSizes, "Shape of the input: 4 ints in data_format order.")
        .Input("filter", kT, "[filter_height, filter_width, in_channels, channel_multiplier].")
        .Layout(LayoutRole::kFilter)
        .Input("out_backprop", kT,
               "Gradient w.r.t. the depthwise output; shape of the forward output.")
        .Layout(LayoutRole::kActivation)
        .Output("output", kT, "Gradient w.r.t. the input, shape input_sizes.")
        .Layout(LayoutRole::kActivation)
        .SameDType({"filter", "out_backprop"});
    RegisterConv(registry, std::move(s), /*depthwise=*/true, BackpropInputShape,
                 BackpropInputKernel);
  }
  {
    OpSchema s("DepthwiseConv2dNativeBackpropFilter");
    s.Category("Convolution")
        .Doc("Gradient of depthwise convolution with respect to its filter.")
        .Input("input", kT, "4-D input of the convolution (data_format order).")
        .Layout(LayoutRole::kActivation)
        .Input("filter_sizes", kSizes,
               "Shape of the filter: 4 ints [filter_height, filter_width, in_channels, "
               "channel_multiplier].")
        .Input("out_backprop", kT,
               "Gradient w.r.t. the depthwise output; shape of the forward output.")
        .Layout(LayoutRole::kActivation)
        .Output("output", kT, "Gradient w.r.t. the filter, shape filter_sizes.")
        .Layout(LayoutRole::kFilter)
        .SameDType({"input", "out_backprop"});
    RegisterConv(registry, std::move(s), /*depthwise=*/true, BackpropFilterShape,
                 BackpropFilterKernel);
  }
}

}  // namespace blockflow
