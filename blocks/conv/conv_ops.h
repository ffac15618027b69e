// Scope constructors for the six convolution blocks, mirroring TensorFlow's C++ API
// (tensorflow/cc/ops/nn_ops.h): required inputs and attrs as arguments, optional attrs
// through an `Attrs` builder or the class's static helpers.
//
//   Scope root = Scope::NewRootScope();
//   auto dx = ops::DepthwiseConv2dNativeBackpropInput(
//       root.WithOpName("dx"), sizes, w, dy, {1, 2, 2, 1}, "SAME",
//       ops::DepthwiseConv2dNativeBackpropInput::DataFormat("NCHW").Dilations({1, 1, 2, 2}));
//   Output out = dx;  // or dx.output
//
// Only the attrs that are set are written to the graph (the rest take the schema defaults),
// so graphs built here save to the same JSON as graphs drawn in the editor.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/scope.h"

namespace blockflow::ops {
namespace conv_internal {

/// The optional attrs every convolution block has. `D` is the concrete Attrs type.
// The setters take their values by value and move them in (sinks); clang-tidy 14 does not see
// the move through the dependent type.
// NOLINTBEGIN(performance-unnecessary-value-param)
template <typename D>
struct WindowAttrs {
  /// EXPLICIT padding: 8 ints, a (before, after) pair per dimension of data_format.
  D ExplicitPaddings(std::vector<int64_t> x) const {
    D r = Self();
    r.explicit_paddings_ = std::move(x);
    return r;
  }
  /// "NHWC" (default) or "NCHW".
  D DataFormat(std::string x) const {
    D r = Self();
    r.data_format_ = std::move(x);
    return r;
  }
  /// 4 ints in data_format order (default [1, 1, 1, 1]).
  D Dilations(std::vector<int64_t> x) const {
    D r = Self();
    r.dilations_ = std::move(x);
    return r;
  }

  /// The node's attrs: strides and padding, then every optional attr that was set.
  nlohmann::json ToJson(const std::vector<int64_t>& strides, const std::string& padding) const {
    nlohmann::json j = nlohmann::json::object();
    j["strides"] = strides;
    j["padding"] = padding;
    if (use_cudnn_on_gpu_) j["use_cudnn_on_gpu"] = *use_cudnn_on_gpu_;
    if (explicit_paddings_) j["explicit_paddings"] = *explicit_paddings_;
    if (data_format_) j["data_format"] = *data_format_;
    if (dilations_) j["dilations"] = *dilations_;
    return j;
  }

  std::optional<bool> use_cudnn_on_gpu_;
  std::optional<std::vector<int64_t>> explicit_paddings_;
  std::optional<std::string> data_format_;
  std::optional<std::vector<int64_t>> dilations_;

 private:
  D Self() const { return static_cast<const D&>(*this); }
};
// NOLINTEND(performance-unnecessary-value-param)

/// Conv2D* attrs add `use_cudnn_on_gpu` (accepted, no effect).
template <typename D>
struct Conv2DAttrs : WindowAttrs<D> {
  D UseCudnnOnGpu(bool x) const {
    D r = static_cast<const D&>(*this);
    r.use_cudnn_on_gpu_ = x;
    return r;
  }
};

}  // namespace conv_internal

// The common members of a block class: the output, conversion to Output, static helpers.
#define BF_CONV_OP_COMMON()                                                                  \
  operator ::blockflow::Output() const { return output; }                                    \
  static Attrs ExplicitPaddings(std::vector<int64_t> x) {                                    \
    return Attrs().ExplicitPaddings(std::move(x));                                           \
  }                                                                                          \
  static Attrs DataFormat(std::string x) { return Attrs().DataFormat(std::move(x)); }        \
  static Attrs Dilations(std::vector<int64_t> x) { return Attrs().Dilations(std::move(x)); } \
  ::blockflow::Output output

/// Conv2D: input [N,H,W,C] (or NCHW), filter [fh, fw, C / groups, out].
class Conv2D {
 public:
  struct Attrs : conv_internal::Conv2DAttrs<Attrs> {};
  Conv2D(const Scope& scope, const Output& input, const Output& filter,
         const std::vector<int64_t>& strides, const std::string& padding,
         const Attrs& attrs = Attrs())
      : output(scope.AddNode("Conv2D", {{"input", {input}}, {"filter", {filter}}},
                             attrs.ToJson(strides, padding))) {}
  static Attrs UseCudnnOnGpu(bool x) { return Attrs().UseCudnnOnGpu(x); }
  BF_CONV_OP_COMMON();
};

/// Conv2DBackpropInput: input_sizes (4 ints, or 2 [H, W]), filter, out_backprop.
class Conv2DBackpropInput {
 public:
  struct Attrs : conv_internal::Conv2DAttrs<Attrs> {};
  Conv2DBackpropInput(const Scope& scope, const Output& input_sizes, const Output& filter,
                      const Output& out_backprop, const std::vector<int64_t>& strides,
                      const std::string& padding, const Attrs& attrs = Attrs())
      : output(scope.AddNode("Conv2DBackpropInput",
                             {{"input_sizes", {input_sizes}},
                              {"filter", {filter}},
                              {"out_backprop", {out_backprop}}},
                             attrs.ToJson(strides, padding))) {}
  static Attrs UseCudnnOnGpu(bool x) { return Attrs().UseCudnnOnGpu(x); }
  BF_CONV_OP_COMMON();
};

/// Conv2DBackpropFilter: input, filter_sizes (4 ints), out_backprop.
class Conv2DBackpropFilter {
 public:
  struct Attrs : conv_internal::Conv2DAttrs<Attrs> {};
  Conv2DBackpropFilter(const Scope& scope, const Output& input, const Output& filter_sizes,
                       const Output& out_backprop, const std::vector<int64_t>& strides,
                       const std::string& padding, const Attrs& attrs = Attrs())
      : output(scope.AddNode("Conv2DBackpropFilter",
                             {{"input", {input}},
                              {"filter_sizes", {filter_sizes}},
                              {"out_backprop", {out_backprop}}},
                             attrs.ToJson(strides, padding))) {}
  static Attrs UseCudnnOnGpu(bool x) { return Attrs().UseCudnnOnGpu(x); }
  BF_CONV_OP_COMMON();
};

/// DepthwiseConv2dNative: input [N,H,W,C] (or NCHW), filter [fh, fw, C, M].
class DepthwiseConv2dNative {
 public:
  struct Attrs : conv_internal::WindowAttrs<Attrs> {};
  DepthwiseConv2dNative(const Scope& scope, const Output& input, const Output& filter,
                        const std::vector<int64_t>& strides, const std::string& padding,
                        const Attrs& attrs = Attrs())
      : output(scope.AddNode("DepthwiseConv2dNative", {{"input", {input}}, {"filter", {filter}}},
                             attrs.ToJson(strides, padding))) {}
  BF_CONV_OP_COMMON();
};

/// DepthwiseConv2dNativeBackpropInput: input_sizes (4 ints), filter, out_backprop.
class DepthwiseConv2dNativeBackpropInput {
 public:
  struct Attrs : conv_internal::WindowAttrs<Attrs> {};
  DepthwiseConv2dNativeBackpropInput(const Scope& scope, const Output& input_sizes,
                                     const Output& filter, const Output& out_backprop,
                                     const std::vector<int64_t>& strides,
                                     const std::string& padding, const Attrs& attrs = Attrs())
      : output(scope.AddNode("DepthwiseConv2dNativeBackpropInput",
                             {{"input_sizes", {input_sizes}},
                              {"filter", {filter}},
                              {"out_backprop", {out_backprop}}},
                             attrs.ToJson(strides, padding))) {}
  BF_CONV_OP_COMMON();
};

/// DepthwiseConv2dNativeBackpropFilter: input, filter_sizes (4 ints), out_backprop.
class DepthwiseConv2dNativeBackpropFilter {
 public:
  struct Attrs : conv_internal::WindowAttrs<Attrs> {};
  DepthwiseConv2dNativeBackpropFilter(const Scope& scope, const Output& input,
                                      const Output& filter_sizes, const Output& out_backprop,
                                      const std::vector<int64_t>& strides,
                                      const std::string& padding, const Attrs& attrs = Attrs())
      : output(scope.AddNode("DepthwiseConv2dNativeBackpropFilter",
                             {{"input", {input}},
                              {"filter_sizes", {filter_sizes}},
                              {"out_backprop", {out_backprop}}},
                             attrs.ToJson(strides, padding))) {}
  BF_CONV_OP_COMMON();
};

#undef BF_CONV_OP_COMMON

}  // namespace blockflow::ops
