// Registers the six convolution blocks with TensorFlow's names, ports, attrs and rules.
#include <string>
#include <vector>

#include "blocks/conv/conv2d.h"
#include "blocks/conv/depthwise_conv2d.h"
#include "blocks/register_blocks.h"

namespace blockflow {
namespace {

using conv::KernelKind;

// The attrs every convolution block shares, in TensorFlow's order.
OpSchema& AddWindowAttrs(OpSchema& s, bool conv2d) {
  s.RequiredAttr("strides", AttrType::kInts,
                 "Stride of the sliding window per dimension of data_format (4 ints; batch and "
                 "channel strides must be 1).");
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
      .EnumAttr("data_format", {"NHWC", "NCHW"}, "NHWC",
                "Layout of input, output and out_backprop: NHWC [batch, height, width, channels] "
                "or NCHW [batch, channels, height, width]. Filters are always [fh, fw, in, out].")
      .Attr("dilations", AttrType::kInts, nlohmann::json::array({1, 1, 1, 1}),
            "Dilation factor per dimension of data_format (4 ints; batch and channel must be 1); "
            "a filter tap k reads input offset k * dilation.");
  return s;
}

KernelFn Kernel(Status (*fn)(KernelContext&, KernelKind), KernelKind kind) {
  return [fn, kind](KernelContext& k) { return fn(k, kind); };
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
        .Input("filter", kT, "[filter_height, filter_width, in_channels / groups, out_channels].")
        .Output("output", kT, "4-D output [batch, out_height, out_width, out_channels] (or NCHW).")
        .SameDType({"input", "filter"});
    AddWindowAttrs(s, true);
    s.SetShapeFn(conv::Conv2DShape)
        .SetReferenceKernel(Kernel(conv::Conv2DKernel, KernelKind::kReference))
        .SetKernel(Kernel(conv::Conv2DKernel, KernelKind::kOptimized));
    registry.Register(std::move(s));
  }
  {
    OpSchema s("Conv2DBackpropInput");
    s.Category("Convolution")
        .Doc("Gradient of Conv2D with respect to its input.")
        .Input("input_sizes", kSizes,
               "Shape of the input: 4 ints in data_format order, or 2 ints [height, width] (batch "
               "from out_backprop, depth from the filter).")
        .Input("filter", kT, "[filter_height, filter_width, in_channels / groups, out_channels].")
        .Input("out_backprop", kT,
               "Gradient w.r.t. the Conv2D output; shape of the forward output.")
        .Output("output", kT, "Gradient w.r.t. the input, shape input_sizes.")
        .SameDType({"filter", "out_backprop"});
    AddWindowAttrs(s, true);
    s.SetShapeFn(conv::Conv2DBackpropInputShape)
        .SetReferenceKernel(Kernel(conv::Conv2DBackpropInputKernel, KernelKind::kReference))
        .SetKernel(Kernel(conv::Conv2DBackpropInputKernel, KernelKind::kOptimized));
    registry.Register(std::move(s));
  }
  {
    OpSchema s("Conv2DBackpropFilter");
    s.Category("Convolution")
        .Doc("Gradient of Conv2D with respect to its filter.")
        .Input("input", kT, "4-D input of the convolution (data_format order).")
        .Input("filter_sizes", kSizes,
               "Shape of the filter: 4 ints [fh, fw, in_channels / groups, out_channels].")
        .Input("out_backprop", kT,
               "Gradient w.r.t. the Conv2D output; shape of the forward output.")
        .Output("output", kT, "Gradient w.r.t. the filter, shape filter_sizes.")
        .SameDType({"input", "out_backprop"});
    AddWindowAttrs(s, true);
    s.SetShapeFn(conv::Conv2DBackpropFilterShape)
        .SetReferenceKernel(Kernel(conv::Conv2DBackpropFilterKernel, KernelKind::kReference))
        .SetKernel(Kernel(conv::Conv2DBackpropFilterKernel, KernelKind::kOptimized));
    registry.Register(std::move(s));
  }
  {
    OpSchema s("DepthwiseConv2dNative");
    s.Category("Convolution")
        .Doc(
            "Depthwise 2-D convolution: output[n, oh, ow, c*M + m] = sum over kh, kw of input[n, "
            "oh*sh - pad_top + kh*dh, ow*sw - pad_left + kw*dw, c] * filter[kh, kw, c, m].")
        .Input("input", kT, "4-D input [batch, in_height, in_width, in_channels] (NHWC) or NCHW.")
        .Input("filter", kT, "[filter_height, filter_width, in_channels, channel_multiplier].")
        .Output("output", kT, "4-D output with in_channels * channel_multiplier channels.")
        .SameDType({"input", "filter"});
    AddWindowAttrs(s, false);
    s.SetShapeFn(conv::DepthwiseConv2dShape)
        .SetReferenceKernel(Kernel(conv::DepthwiseConv2dKernel, KernelKind::kReference))
        .SetKernel(Kernel(conv::DepthwiseConv2dKernel, KernelKind::kOptimized));
    registry.Register(std::move(s));
  }
  {
    OpSchema s("DepthwiseConv2dNativeBackpropInput");
    s.Category("Convolution")
        .Doc("Gradient of depthwise convolution with respect to its input.")
        .Input("input_sizes", kSizes, "Shape of the input: 4 ints in data_format order.")
        .Input("filter", kT, "[filter_height, filter_width, in_channels, channel_multiplier].")
        .Input("out_backprop", kT,
               "Gradient w.r.t. the depthwise output; shape of the forward output.")
        .Output("output", kT, "Gradient w.r.t. the input, shape input_sizes.")
        .SameDType({"filter", "out_backprop"});
    AddWindowAttrs(s, false);
    s.SetShapeFn(conv::DepthwiseConv2dBackpropInputShape)
        .SetReferenceKernel(
            Kernel(conv::DepthwiseConv2dBackpropInputKernel, KernelKind::kReference))
        .SetKernel(Kernel(conv::DepthwiseConv2dBackpropInputKernel, KernelKind::kOptimized));
    registry.Register(std::move(s));
  }
  {
    OpSchema s("DepthwiseConv2dNativeBackpropFilter");
    s.Category("Convolution")
        .Doc("Gradient of depthwise convolution with respect to its filter.")
        .Input("input", kT, "4-D input of the convolution (data_format order).")
        .Input("filter_sizes", kSizes,
               "Shape of the filter: 4 ints [filter_height, filter_width, in_channels, "
               "channel_multiplier].")
        .Input("out_backprop", kT,
               "Gradient w.r.t. the depthwise output; shape of the forward output.")
        .Output("output", kT, "Gradient w.r.t. the filter, shape filter_sizes.")
        .SameDType({"input", "out_backprop"});
    AddWindowAttrs(s, false);
    s.SetShapeFn(conv::DepthwiseConv2dBackpropFilterShape)
        .SetReferenceKernel(
            Kernel(conv::DepthwiseConv2dBackpropFilterKernel, KernelKind::kReference))
        .SetKernel(Kernel(conv::DepthwiseConv2dBackpropFilterKernel, KernelKind::kOptimized));
    registry.Register(std::move(s));
  }
}

}  // namespace blockflow
