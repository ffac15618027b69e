// Padding and output-size math shared by every convolution block and by shape inference.
//
//   ASSIGN_OR_RETURN(ConvAttrs a, ParseConvAttrs(attrs));        // strides, padding, ...
//   ASSIGN_OR_RETURN(ConvDim d, ComputeConvDim("rows", 8, 3, a.stride_h, a.dilation_h,
//                                              a.padding, a.explicit_top, a.explicit_bottom));
//   // d.out == 4 (SAME), d.pad_before == 0, d.pad_after == 1
//
// Everything here follows TensorFlow's definitions (GetWindowedOutputSizeVerbose):
//   eff  = (k - 1) * d + 1
//   VALID:    out = floor((in - eff) / s) + 1, no padding
//   SAME:     out = ceil(in / s), total = max((out - 1) * s + eff - in, 0),
//             before = floor(total / 2), after = total - before (odd extra at bottom/right)
//   EXPLICIT: out = floor((in + before + after - eff) / s) + 1
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/schema.h"
#include "core/shape.h"
#include "core/status.h"

namespace blockflow::conv {

enum class Padding { kSame, kValid, kExplicit };
enum class DataFormat { kNHWC, kNCHW };

/// The attributes common to the six convolution blocks, checked and resolved to rows/cols.
struct ConvAttrs {
  std::vector<int64_t> strides;            // as given (data_format order)
  std::vector<int64_t> dilations;          // as given
  std::vector<int64_t> explicit_paddings;  // as given
  std::string padding_name;                // "SAME", "VALID", "EXPLICIT"
  Padding padding = Padding::kValid;
  DataFormat format = DataFormat::kNHWC;
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;
  // EXPLICIT only: the (before, after) pairs of the two spatial dims.
  int64_t explicit_top = 0, explicit_bottom = 0, explicit_left = 0, explicit_right = 0;

  /// Index of the height, width, channel dim in a rank-4 tensor of this format.
  int h_dim() const { return format == DataFormat::kNHWC ? 1 : 2; }
  int w_dim() const { return format == DataFormat::kNHWC ? 2 : 3; }
  int c_dim() const { return format == DataFormat::kNHWC ? 3 : 1; }
  /// "strides [1,2,2,1], padding SAME" (+ dilations / explicit_paddings when not trivial).
  std::string Describe() const;
};

/// Reads and checks strides, dilations, padding, explicit_paddings and data_format, with
/// TensorFlow's rules: 4 strides and 4 dilations, all positive, 1 in the batch and channel
/// dims; explicit_paddings has 8 non-negative values with zero batch/channel pairs when
/// padding is EXPLICIT, and is empty otherwise.
Expected<ConvAttrs> ParseConvAttrs(const AttrMap& attrs);

/// Output size and resolved padding of one spatial dimension.
struct ConvDim {
  int64_t out = -1;  // -1 when the input size is unknown
  int64_t pad_before = 0;
  int64_t pad_after = 0;
};

/// Output size and padding for one spatial dim; `in` may be -1 (unknown), giving out == -1.
/// `what` names the dimension in messages ("rows", "cols").
Expected<ConvDim> ComputeConvDim(const char* what, int64_t in, int64_t k, int64_t stride,
                                 int64_t dilation, Padding padding, int64_t explicit_before,
                                 int64_t explicit_after);

/// The resolved geometry of one convolution, in NHWC terms, whatever the data format.
/// For Conv2D: filter [kh, kw, in_depth / groups, out_depth]. For depthwise: filter
/// [kh, kw, in_depth, multiplier], out_depth = in_depth * multiplier, groups = in_depth.
struct ConvGeometry {
  int64_t batch = 0, in_h = 0, in_w = 0, in_depth = 0;
  int64_t filter_h = 0, filter_w = 0, filter_in_depth = 0, out_depth = 0;
  int64_t out_h = 0, out_w = 0;
  int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  int64_t groups = 1;      // Conv2D family
  int64_t multiplier = 1;  // depthwise family
  bool depthwise = false;

  /// The input row that filter row kh reads for output row oh (outside [0, in_h) in padding).
  int64_t input_row(int64_t oh, int64_t kh) const {
    return oh * stride_h - pad_top + kh * dilation_h;
  }
  /// The input column that filter column kw reads for output column ow.
  int64_t input_col(int64_t ow, int64_t kw) const {
    return ow * stride_w - pad_left + kw * dilation_w;
  }

  /// Filter column kw's reads: output column ow reads input column ow * stride_w - off, and
  /// inside the input for ow in [begin, end) (none when begin >= end).
  struct ColumnSpan {
    int64_t off, begin, end;
  };
  ColumnSpan columns_inside(int64_t kw) const {
    const int64_t off = pad_left - kw * dilation_w;
    const int64_t begin = off > 0 ? (off + stride_w - 1) / stride_w : 0;
    const int64_t end = in_w - 1 + off < 0 ? 0 : std::min(out_w, (in_w - 1 + off) / stride_w + 1);
    return {off, begin, end};
  }

  /// Calls fn(kh, ih) for each filter row of output row oh that reads inside the input.
  template <typename Fn>
  void ForRowsInside(int64_t oh, Fn&& fn) const {
    for (int64_t kh = 0; kh < filter_h; ++kh) {
      const int64_t ih = input_row(oh, kh);
      if (ih >= 0 && ih < in_h) fn(kh, ih);
    }
  }
  /// Calls fn(kh, kw, ih, iw) for each filter tap of output pixel (oh, ow) that reads inside
  /// the input, kh-major.
  template <typename Fn>
  void ForTapsInside(int64_t oh, int64_t ow, Fn&& fn) const {
    ForRowsInside(oh, [&](int64_t kh, int64_t ih) {
      for (int64_t kw = 0; kw < filter_w; ++kw) {
        const int64_t iw = input_col(ow, kw);
        if (iw >= 0 && iw < in_w) fn(kh, kw, ih, iw);
      }
    });
  }

  int64_t input_elements() const { return batch * in_h * in_w * in_depth; }
  int64_t output_elements() const { return batch * out_h * out_w * out_depth; }
  int64_t filter_elements() const {
    return filter_h * filter_w * filter_in_depth * (depthwise ? multiplier : out_depth);
  }
  /// Multiply-adds times 2, padding taps counted (the benchmark suite's formula).
  double Flops() const;
};

/// Builds the geometry of a Conv2D (depthwise == false) or DepthwiseConv2dNative from an
/// input shape (data_format order) and an HWIO filter shape, checking depths. Dims may be
/// -1; the result then holds -1 where it cannot be known. Messages name the values and rule.
Expected<ConvGeometry> MakeConvGeometry(const ConvAttrs& attrs, const Shape& input,
                                        const Shape& filter, bool depthwise);

/// A rank-4 shape in `format` order from NHWC-order values.
Shape MakeShape(DataFormat format, int64_t n, int64_t h, int64_t w, int64_t c);
/// The forward output shape of `g` in the data format of `attrs`.
Shape OutputShape(const ConvAttrs& attrs, const ConvGeometry& g);
/// The input shape of `g` in the data format of `attrs`.
Shape InputShape(const ConvAttrs& attrs, const ConvGeometry& g);

/// Checks that out_backprop's shape equals the forward output shape of `g` (unknown dims
/// match anything); the message shows both shapes, the input, filter, strides and padding.
Status CheckOutBackprop(const ConvAttrs& attrs, const ConvGeometry& g, const Shape& input,
                        const Shape& filter, const Shape& out_backprop);

/// The input shape a *BackpropInput produces, from its `input_sizes` port (4 values in
/// data_format order; with `allow_hw`, also 2 values [H, W], the batch then coming from
/// out_backprop and the depth from the filter). Unknown values give -1 dims.
Expected<Shape> ResolveInputSizes(const ConvAttrs& attrs, const PortInfo& sizes,
                                  const Shape& filter, const Shape& out_backprop, bool allow_hw);

/// The filter shape a *BackpropFilter produces, from its `filter_sizes` port (4 values).
/// Unknown values give -1 dims, refined from the input and out_backprop where possible.
Expected<Shape> ResolveFilterSizes(const ConvAttrs& attrs, const PortInfo& sizes,
                                   const Shape& input, const Shape& out_backprop, bool depthwise);

/// Checks that `shape` (named `port`) has rank 4.
Status CheckRank4(const char* port, const Shape& shape);

/// Formats a list of ints as "[1,2,2,1]".
std::string IntsToString(const std::vector<int64_t>& v);

}  // namespace blockflow::conv
