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

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
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

/// The six ops, in the order of the aliases below: the op name, its input ports in order (a
/// forward op has two), and whether it is a Conv2D* op (those also take `use_cudnn_on_gpu`).
struct ConvOpSpec {
  const char* op;
  std::array<const char*, 3> inputs;
  bool conv2d;
};
inline constexpr ConvOpSpec kConvOps[] = {
    {"Conv2D", {"input", "filter"}, true},
    {"Conv2DBackpropInput", {"input_sizes", "filter", "out_backprop"}, true},
    {"Conv2DBackpropFilter", {"input", "filter_sizes", "out_backprop"}, true},
    {"DepthwiseConv2dNative", {"input", "filter"}, false},
    {"DepthwiseConv2dNativeBackpropInput", {"input_sizes", "filter", "out_backprop"}, false},
    {"DepthwiseConv2dNativeBackpropFilter", {"input", "filter_sizes", "out_backprop"}, false},
};

/// The block class of kConvOps[I]: constructed from a scope, the op's inputs in port order,
/// strides, padding and the optional attrs; converts to its Output.
template <size_t I>
class ConvOp {
  static constexpr ConvOpSpec kSpec = kConvOps[I];
  static constexpr bool kGradient = kSpec.inputs[2] != nullptr;

 public:
  struct Attrs : std::conditional_t<kSpec.conv2d, Conv2DAttrs<Attrs>, WindowAttrs<Attrs>> {};

  /// A forward op: input and filter.
  ConvOp(const Scope& scope, const Output& input, const Output& filter,
         const std::vector<int64_t>& strides, const std::string& padding,
         const Attrs& attrs = Attrs()) requires(!kGradient)
      : output(Add(scope, {input, filter}, attrs.ToJson(strides, padding))) {}
  /// A gradient: (input_sizes, filter, out_backprop) or (input, filter_sizes, out_backprop).
  ConvOp(const Scope& scope, const Output& first, const Output& second, const Output& out_backprop,
         const std::vector<int64_t>& strides, const std::string& padding,
         const Attrs& attrs = Attrs()) requires(kGradient)
      : output(Add(scope, {first, second, out_backprop}, attrs.ToJson(strides, padding))) {}

  operator Output() const { return output; }  // NOLINT(google-explicit-constructor): as in TF
  // NOLINTBEGIN(performance-unnecessary-value-param): sinks, moved into the Attrs
  static Attrs ExplicitPaddings(std::vector<int64_t> x) {
    return Attrs().ExplicitPaddings(std::move(x));
  }
  static Attrs DataFormat(std::string x) { return Attrs().DataFormat(std::move(x)); }
  static Attrs Dilations(std::vector<int64_t> x) { return Attrs().Dilations(std::move(x)); }
  // NOLINTEND(performance-unnecessary-value-param)
  static Attrs UseCudnnOnGpu(bool x) requires(kSpec.conv2d) { return Attrs().UseCudnnOnGpu(x); }

  Output output;

 private:
  static Output Add(const Scope& scope, std::initializer_list<Output> inputs,
                    const nlohmann::json& attrs) {
    std::vector<std::pair<std::string, std::vector<Output>>> ports;
    for (const Output& in : inputs) ports.push_back({kSpec.inputs[ports.size()], {in}});
    return scope.AddNode(kSpec.op, ports, attrs);
  }
};

}  // namespace conv_internal

/// Conv2D: input [N,H,W,C] (or NCHW), filter [fh, fw, C / groups, out].
using Conv2D = conv_internal::ConvOp<0>;
/// Conv2DBackpropInput: input_sizes (4 ints, or 2 [H, W]), filter, out_backprop.
using Conv2DBackpropInput = conv_internal::ConvOp<1>;
/// Conv2DBackpropFilter: input, filter_sizes (4 ints), out_backprop.
using Conv2DBackpropFilter = conv_internal::ConvOp<2>;
/// DepthwiseConv2dNative: input [N,H,W,C] (or NCHW), filter [fh, fw, C, M].
using DepthwiseConv2dNative = conv_internal::ConvOp<3>;
/// DepthwiseConv2dNativeBackpropInput: input_sizes (4 ints), filter, out_backprop.
using DepthwiseConv2dNativeBackpropInput = conv_internal::ConvOp<4>;
/// DepthwiseConv2dNativeBackpropFilter: input, filter_sizes (4 ints), out_backprop.
using DepthwiseConv2dNativeBackpropFilter = conv_internal::ConvOp<5>;

}  // namespace blockflow::ops
