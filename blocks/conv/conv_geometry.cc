#include "blocks/conv/conv_geometry.h"

#include <algorithm>

namespace blockflow::conv {

std::string IntsToString(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(v[i]);
  }
  return s + "]";
}

std::string ConvAttrs::Describe() const {
  std::string s = "strides " + IntsToString(strides) + ", padding " + padding_name;
  if (padding == Padding::kExplicit) s += " " + IntsToString(explicit_paddings);
  if (dilation_h != 1 || dilation_w != 1) s += ", dilations " + IntsToString(dilations);
  if (format == DataFormat::kNCHW) s += ", data_format NCHW";
  return s;
}

namespace {

// Checks a strides- or dilations-like attr: 4 positive values, 1 in the batch and channel dims.
Status CheckWindowAttr(const char* name, const std::vector<int64_t>& v, const ConvAttrs& a,
                       const std::string& format_name) {
  if (v.size() != 4) {
    return InvalidArgument(std::string(name) + " " + IntsToString(v) +
                           " must have 4 values, one per dimension of data_format " + format_name +
                           ", but has " + std::to_string(v.size()));
  }
  for (int64_t x : v) {
    if (x <= 0) {
      return InvalidArgument(std::string(name) + " " + IntsToString(v) +
                             " must all be positive, but one is " + std::to_string(x));
    }
  }
  if (v[0] != 1 || v[static_cast<size_t>(a.c_dim())] != 1) {
    return InvalidArgument(std::string(name) + " " + IntsToString(v) + ": the batch and channel " +
                           name + " must be 1 (data_format " + format_name +
                           "); only the height and width may differ");
  }
  return Status::OK();
}

}  // namespace

Expected<ConvAttrs> ParseConvAttrs(const AttrMap& attrs) {
  ConvAttrs a;
  std::string format_name = attrs.Has("data_format") ? attrs.GetString("data_format") : "NHWC";
  if (format_name == "NHWC") {
    a.format = DataFormat::kNHWC;
  } else if (format_name == "NCHW") {
    a.format = DataFormat::kNCHW;
  } else {
    return InvalidArgument("data_format '" + format_name + "' must be NHWC or NCHW");
  }
  a.padding_name = attrs.Has("padding") ? attrs.GetString("padding") : "";
  if (a.padding_name == "SAME") {
    a.padding = Padding::kSame;
  } else if (a.padding_name == "VALID") {
    a.padding = Padding::kValid;
  } else if (a.padding_name == "EXPLICIT") {
    a.padding = Padding::kExplicit;
  } else {
    return InvalidArgument("padding '" + a.padding_name + "' must be SAME, VALID or EXPLICIT");
  }
  if (!attrs.Has("strides")) return InvalidArgument("strides is required (4 ints)");
  a.strides = attrs.GetInts("strides");
  a.dilations =
      attrs.Has("dilations") ? attrs.GetInts("dilations") : std::vector<int64_t>{1, 1, 1, 1};
  a.explicit_paddings =
      attrs.Has("explicit_paddings") ? attrs.GetInts("explicit_paddings") : std::vector<int64_t>{};
  RETURN_IF_ERROR(CheckWindowAttr("strides", a.strides, a, format_name));
  RETURN_IF_ERROR(CheckWindowAttr("dilations", a.dilations, a, format_name));
  const size_t h = static_cast<size_t>(a.h_dim()), w = static_cast<size_t>(a.w_dim());
  a.stride_h = a.strides[h];
  a.stride_w = a.strides[w];
  a.dilation_h = a.dilations[h];
  a.dilation_w = a.dilations[w];

  const std::vector<int64_t>& p = a.explicit_paddings;
  if (a.padding != Padding::kExplicit) {
    if (!p.empty()) {
      return InvalidArgument("explicit_paddings " + IntsToString(p) +
                             " must be empty unless padding is EXPLICIT (padding is " +
                             a.padding_name + ")");
    }
    return a;
  }
  if (p.size() != 8) {
    return InvalidArgument("explicit_paddings " + IntsToString(p) +
                           " must have 8 values (a before/after pair per dimension of " +
                           format_name + ") when padding is EXPLICIT, but has " +
                           std::to_string(p.size()));
  }
  for (int64_t x : p) {
    if (x < 0) {
      return InvalidArgument("explicit_paddings " + IntsToString(p) +
                             " must be non-negative, but one is " + std::to_string(x));
    }
  }
  const size_t c = static_cast<size_t>(a.c_dim());
  if (p[0] != 0 || p[1] != 0 || p[2 * c] != 0 || p[2 * c + 1] != 0) {
    return InvalidArgument("explicit_paddings " + IntsToString(p) +
                           ": the batch and channel pairs must be 0 (data_format " + format_name +
                           "); only the height and width may be padded");
  }
  a.explicit_top = p[2 * h];
  a.explicit_bottom = p[2 * h + 1];
  a.explicit_left = p[2 * w];
  a.explicit_right = p[2 * w + 1];
  return a;
}

Expected<ConvDim> ComputeConvDim(const char* what, int64_t in, int64_t k, int64_t stride,
                                 int64_t dilation, Padding padding, int64_t explicit_before,
                                 int64_t explicit_after) {
  ConvDim d;
  if (stride <= 0 || dilation <= 0) {
    return InvalidArgument(std::string(what) + ": stride " + std::to_string(stride) +
                           " and dilation " + std::to_string(dilation) + " must be positive");
  }
  if (in == -1) return d;  // unknown input size: unknown output
  if (padding == Padding::kSame) {
    d.out = (in + stride - 1) / stride;
    if (k == -1) return d;  // the size is known, the padding is not (kernels see known k)
    const int64_t eff = (k - 1) * dilation + 1;
    const int64_t total = std::max<int64_t>((d.out - 1) * stride + eff - in, 0);
    d.pad_before = total / 2;
    d.pad_after = total - d.pad_before;
    return d;
  }
  if (k == -1) {
    d.out = -1;
    return d;
  }
  const int64_t eff = (k - 1) * dilation + 1;
  if (padding == Padding::kExplicit) {
    d.pad_before = explicit_before;
    d.pad_after = explicit_after;
  }
  const int64_t padded = in + d.pad_before + d.pad_after;
  // TensorFlow's formula: (padded - eff + stride) / stride, truncating; negative is an error.
  d.out = (padded - eff + stride) / stride;
  if (d.out < 0) {
    return InvalidArgument(std::string(what) + ": the output size would be negative (" +
                           std::to_string(d.out) + "): input size " + std::to_string(in) +
                           (padding == Padding::kExplicit
                                ? " + explicit padding " + std::to_string(d.pad_before) + "+" +
                                      std::to_string(d.pad_after)
                                : std::string(" with VALID padding")) +
                           " is smaller than the effective filter size " + std::to_string(eff) +
                           " (filter " + std::to_string(k) + ", dilation " +
                           std::to_string(dilation) + ", stride " + std::to_string(stride) + ")");
  }
  return d;
}

double ConvGeometry::Flops() const {
  const double in_per_group = depthwise ? 1.0 : static_cast<double>(filter_in_depth);
  return 2.0 * static_cast<double>(batch) * static_cast<double>(out_h) *
         static_cast<double>(out_w) * static_cast<double>(filter_h) *
         static_cast<double>(filter_w) * in_per_group * static_cast<double>(out_depth);
}

Status CheckOutBackprop(const ConvAttrs& attrs, const ConvGeometry& g, const Shape& input,
                        const Shape& filter, const Shape& out_backprop) {
  RETURN_IF_ERROR(CheckRank4("out_backprop", out_backprop));
  const Shape expected = OutputShape(attrs, g);
  for (int i = 0; i < 4; ++i) {
    const int64_t a = out_backprop.dim(i), b = expected.dim(i);
    if (a != -1 && b != -1 && a != b) {
      return InvalidArgument("out_backprop shape " + out_backprop.ToString() +
                             " must equal the forward output shape " + expected.ToString() +
                             " for input " + input.ToString() + ", filter " + filter.ToString() +
                             ", " + attrs.Describe());
    }
  }
  return Status::OK();
}

namespace {

// A sizes port's values (empty when not constant) and length (-1 when unknown).
struct Sizes {
  std::vector<int64_t> values;
  int64_t length = -1;
};

Expected<Sizes> SizesValues(const char* port, const PortInfo& sizes, const std::string& rule,
                            bool allow_two) {
  if (sizes.shape.rank() != 1) {
    return InvalidArgument(std::string(port) + " shape " + sizes.shape.ToString() +
                           " must be rank 1: " + rule);
  }
  const int64_t length = sizes.shape.dim(0);
  std::vector<int64_t> values;
  if (sizes.value) values = sizes.value->ToInt64Vector();
  if (length != -1 && length != 4 && !(allow_two && length == 2)) {
    return InvalidArgument(std::string(port) + (sizes.value ? " " + IntsToString(values) : "") +
                           " has " + std::to_string(length) + " values; it must hold " + rule);
  }
  for (int64_t v : values) {
    if (v < 0) {
      return InvalidArgument(std::string(port) + " " + IntsToString(values) +
                             " must be non-negative: " + rule);
    }
  }
  return Sizes{std::move(values), length};
}

// Checks a gradient's sizes port (`port`: 4 values, or 2 with `allow_two`, non-negative),
// then the ranks of its two 4-D operands: `other` (named `other_port`) and out_backprop.
Expected<Sizes> GradientSizes(const char* port, const PortInfo& sizes, const std::string& rule,
                              bool allow_two, const char* other_port, const Shape& other,
                              const Shape& out_backprop) {
  ASSIGN_OR_RETURN(Sizes s, SizesValues(port, sizes, rule, allow_two));
  RETURN_IF_ERROR(CheckRank4(other_port, other));
  RETURN_IF_ERROR(CheckRank4("out_backprop", out_backprop));
  return s;
}

}  // namespace

Expected<Shape> ResolveInputSizes(const ConvAttrs& attrs, const PortInfo& sizes,
                                  const Shape& filter, const Shape& out_backprop, bool allow_hw) {
  const std::string rule = allow_hw ? "4 values [batch, height, width, depth] in data_format "
                                      "order, or 2 values [height, width]"
                                    : "4 values [batch, height, width, depth] in data_format order";
  ASSIGN_OR_RETURN(
      Sizes s, GradientSizes("input_sizes", sizes, rule, allow_hw, "filter", filter, out_backprop));
  const std::vector<int64_t>& v = s.values;
  if (s.length == 2) {
    // TensorFlow: the batch comes from out_backprop, the depth from the filter's in-depth.
    return MakeShape(attrs.format, out_backprop.dim(0), v.empty() ? -1 : v[0],
                     v.empty() ? -1 : v[1], filter.dim(2));
  }
  if (!v.empty()) return Shape(v);
  return MakeShape(attrs.format, out_backprop.dim(0), -1, -1, -1);
}

Expected<Shape> ResolveFilterSizes(const ConvAttrs& attrs, const PortInfo& sizes,
                                   const Shape& input, const Shape& out_backprop, bool depthwise) {
  const std::string rule =
      depthwise ? "4 values [filter_height, filter_width, in_channels, channel_multiplier]"
                : "4 values [filter_height, filter_width, in_depth / groups, out_depth]";
  ASSIGN_OR_RETURN(Sizes s, GradientSizes("filter_sizes", sizes, rule, /*allow_two=*/false, "input",
                                          input, out_backprop));
  if (!s.values.empty()) return Shape(s.values);
  const int64_t in_c = input.dim(attrs.c_dim()), out_c = out_backprop.dim(attrs.c_dim());
  if (depthwise) {
    const int64_t m = (in_c > 0 && out_c != -1 && out_c % in_c == 0) ? out_c / in_c : -1;
    return Shape{-1, -1, in_c, m};
  }
  return Shape{-1, -1, -1, out_c};
}

Status CheckRank4(const char* port, const Shape& shape) {
  if (shape.rank() != 4) {
    return InvalidArgument(std::string(port) + " shape " + shape.ToString() +
                           " must have rank 4, but has rank " + std::to_string(shape.rank()));
  }
  return Status::OK();
}

Shape MakeShape(DataFormat format, int64_t n, int64_t h, int64_t w, int64_t c) {
  return format == DataFormat::kNHWC ? Shape{n, h, w, c} : Shape{n, c, h, w};
}

Shape OutputShape(const ConvAttrs& attrs, const ConvGeometry& g) {
  return MakeShape(attrs.format, g.batch, g.out_h, g.out_w, g.out_depth);
}

Shape InputShape(const ConvAttrs& attrs, const ConvGeometry& g) {
  return MakeShape(attrs.format, g.batch, g.in_h, g.in_w, g.in_depth);
}

Expected<ConvGeometry> MakeConvGeometry(const ConvAttrs& attrs, const Shape& input,
                                        const Shape& filter, bool depthwise) {
  RETURN_IF_ERROR(CheckRank4("input", input));
  RETURN_IF_ERROR(CheckRank4("filter", filter));
  ConvGeometry g;
  g.depthwise = depthwise;
  g.batch = input.dim(0);
  g.in_h = input.dim(attrs.h_dim());
  g.in_w = input.dim(attrs.w_dim());
  g.in_depth = input.dim(attrs.c_dim());
  g.filter_h = filter.dim(0);
  g.filter_w = filter.dim(1);
  g.filter_in_depth = filter.dim(2);
  g.stride_h = attrs.stride_h;
  g.stride_w = attrs.stride_w;
  g.dilation_h = attrs.dilation_h;
  g.dilation_w = attrs.dilation_w;
  const std::string shapes = "input " + input.ToString() + ", filter " + filter.ToString();
  if (g.filter_h == 0 || g.filter_w == 0) {
    return InvalidArgument("filter " + filter.ToString() +
                           ": the filter height and width must be positive");
  }
  if (depthwise) {
    if (g.in_depth != -1 && g.filter_in_depth != -1 && g.in_depth != g.filter_in_depth) {
      return InvalidArgument("filter in_channels " + std::to_string(g.filter_in_depth) +
                             " must equal the input depth " + std::to_string(g.in_depth) + " (" +
                             shapes +
                             "; a depthwise filter is [filter_height, filter_width, "
                             "in_channels, channel_multiplier])");
    }
    if (g.in_depth == -1) g.in_depth = g.filter_in_depth;
    g.filter_in_depth = g.in_depth;
    g.multiplier = filter.dim(3);
    g.groups = g.in_depth;
    g.out_depth = (g.in_depth == -1 || g.multiplier == -1) ? -1 : g.in_depth * g.multiplier;
  } else {
    g.out_depth = filter.dim(3);
    g.groups = -1;
    if (g.in_depth != -1 && g.filter_in_depth != -1) {
      if (g.filter_in_depth == 0) {
        return InvalidArgument("filter in-depth must not be 0 (" + shapes + ")");
      }
      if (g.in_depth % g.filter_in_depth != 0 || g.in_depth == 0) {
        return InvalidArgument("input depth " + std::to_string(g.in_depth) +
                               " must be a positive multiple of the filter's in-depth " +
                               std::to_string(g.filter_in_depth) + " (" + shapes + ")");
      }
      g.groups = g.in_depth / g.filter_in_depth;
      if (g.out_depth != -1 && g.out_depth % g.groups != 0) {
        return InvalidArgument("filter out-depth " + std::to_string(g.out_depth) +
                               " must be a multiple of the number of groups " +
                               std::to_string(g.groups) + " (input depth " +
                               std::to_string(g.in_depth) + " / filter in-depth " +
                               std::to_string(g.filter_in_depth) + "; " + shapes + ")");
      }
    }
  }
  ASSIGN_OR_RETURN(ConvDim rows,
                   ComputeConvDim("rows", g.in_h, g.filter_h, g.stride_h, g.dilation_h,
                                  attrs.padding, attrs.explicit_top, attrs.explicit_bottom));
  ASSIGN_OR_RETURN(ConvDim cols,
                   ComputeConvDim("cols", g.in_w, g.filter_w, g.stride_w, g.dilation_w,
                                  attrs.padding, attrs.explicit_left, attrs.explicit_right));
  g.out_h = rows.out;
  g.out_w = cols.out;
  g.pad_top = rows.pad_before;
  g.pad_bottom = rows.pad_after;
  g.pad_left = cols.pad_before;
  g.pad_right = cols.pad_after;
  return g;
}

}  // namespace blockflow::conv
