// Shape-inference validation of the six blocks: every TensorFlow rule rejected at analysis with
// a message naming the value and the rule, and inference of what can be known with -1 dims.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "blocks/register_blocks.h"
#include "core/graph.h"

namespace blockflow {
namespace {

using nlohmann::json;

json Placeholder(const std::string& id, const std::vector<int64_t>& shape,
                 const std::string& dtype = "float32") {
  return {{"id", id}, {"op", "Placeholder"}, {"attrs", {{"dtype", dtype}, {"shape", shape}}}};
}
json Sizes(const std::string& id, const std::vector<int64_t>& v,
           const std::string& dtype = "int32") {
  return {{"id", id},
          {"op", "Const"},
          {"attrs", {{"dtype", dtype}, {"shape", {static_cast<int64_t>(v.size())}}, {"value", v}}}};
}

// Analyzes a graph of `inputs` nodes wired into one `op` node "out"; returns its analysis.
struct Result {
  bool ok = false;
  std::string errors;
  Shape shape;
};
Result Analyze(const std::string& op, const std::vector<json>& inputs,
               const std::vector<std::string>& ports, const json& attrs) {
  RegisterBuiltinBlocks();
  json g = {{"format", "blockflow.graph"}, {"version", 1}, {"nodes", json::array()}};
  json wiring = json::object();
  for (size_t i = 0; i < inputs.size(); ++i) {
    g["nodes"].push_back(inputs[i]);
    wiring[ports[i]] = inputs[i]["id"];
  }
  g["nodes"].push_back({{"id", "out"}, {"op", op}, {"inputs", wiring}, {"attrs", attrs}});
  Expected<Graph> graph = ParseGraphJson(g.dump(), "test.json", "");
  EXPECT_TRUE(graph.ok()) << graph.status().message();
  Result r;
  if (!graph.ok()) return r;
  GraphAnalysis a = AnalyzeGraph(*graph);
  r.ok = a.ok();
  for (const NodeIssue& i : a.issues) r.errors += i.ToString() + "\n";
  const int idx = graph->IndexOf("out");
  if (r.ok && !a.nodes[static_cast<size_t>(idx)].outputs.empty())
    r.shape = a.nodes[static_cast<size_t>(idx)].outputs[0].shape;
  return r;
}

json Attrs(std::vector<int64_t> strides, const std::string& padding, json extra = json::object()) {
  json a = {{"strides", strides}, {"padding", padding}};
  for (const auto& [k, v] : extra.items()) a[k] = v;
  return a;
}

Result Conv(const std::vector<int64_t>& in, const std::vector<int64_t>& filter, const json& attrs) {
  return Analyze("Conv2D", {Placeholder("x", in), Placeholder("w", filter)}, {"input", "filter"},
                 attrs);
}

void ExpectError(const Result& r, const std::vector<std::string>& parts) {
  ASSERT_FALSE(r.ok) << "accepted";
  for (const std::string& p : parts)
    EXPECT_NE(r.errors.find(p), std::string::npos) << "missing '" << p << "' in:\n" << r.errors;
}

TEST(ConvValidation, AttrRules) {
  const std::vector<int64_t> in = {1, 6, 7, 3}, f = {3, 3, 3, 2};
  ExpectError(Conv(in, f, Attrs({1, 2, 2}, "VALID")),
              {"node 'out' (Conv2D): ", "strides [1,2,2] must have 4 values"});
  ExpectError(Conv(in, f, Attrs({1, 0, 2, 1}, "VALID")),
              {"strides [1,0,2,1] must all be positive, but one is 0"});
  ExpectError(Conv(in, f, Attrs({1, 1, 1, 2}, "VALID")),
              {"strides [1,1,1,2]", "batch and channel strides must be 1"});
  ExpectError(Conv(in, f, Attrs({1, 1, 1, 1}, "VALID", {{"dilations", {1, 2, 2}}})),
              {"dilations [1,2,2] must have 4 values"});
  ExpectError(Conv(in, f, Attrs({1, 1, 1, 1}, "VALID", {{"dilations", {1, -1, 1, 1}}})),
              {"dilations [1,-1,1,1] must all be positive"});
  ExpectError(Conv(in, f, Attrs({1, 1, 1, 1}, "VALID", {{"dilations", {2, 1, 1, 1}}})),
              {"batch and channel dilations must be 1"});
  ExpectError(Conv(in, f, Attrs({1, 1, 1, 1}, "EXPLICIT")),
              {"explicit_paddings [] must have 8 values", "when padding is EXPLICIT, but has 0"});
  ExpectError(
      Conv(in, f,
           Attrs({1, 1, 1, 1}, "EXPLICIT", {{"explicit_paddings", {0, 0, 1, -1, 1, 1, 0, 0}}})),
      {"explicit_paddings [0,0,1,-1,1,1,0,0] must be non-negative"});
  ExpectError(
      Conv(in, f,
           Attrs({1, 1, 1, 1}, "EXPLICIT", {{"explicit_paddings", {0, 0, 1, 1, 1, 1, 0, 2}}})),
      {"batch and channel pairs must be 0"});
  ExpectError(
      Conv({1, 3, 6, 7}, f,
           Attrs({1, 1, 1, 1}, "EXPLICIT",
                 {{"data_format", "NCHW"}, {"explicit_paddings", {0, 0, 1, 1, 0, 0, 0, 0}}})),
      {"batch and channel pairs must be 0 (data_format NCHW)"});
  ExpectError(
      Conv(in, f, Attrs({1, 1, 1, 1}, "VALID", {{"explicit_paddings", {0, 0, 0, 0, 0, 0, 0, 0}}})),
      {"must be empty unless padding is EXPLICIT (padding is VALID)"});
}

TEST(ConvValidation, ShapeRules) {
  ExpectError(Conv({6, 7, 3}, {3, 3, 3, 2}, Attrs({1, 1, 1, 1}, "VALID")),
              {"input shape [6,7,3] must have rank 4"});
  ExpectError(Conv({1, 6, 7, 3}, {3, 3, 3}, Attrs({1, 1, 1, 1}, "VALID")),
              {"filter shape [3,3,3] must have rank 4"});
  ExpectError(Conv({1, 6, 7, 4}, {3, 3, 3, 2}, Attrs({1, 1, 1, 1}, "VALID")),
              {"input depth 4 must be a positive multiple of the filter's in-depth 3"});
  ExpectError(Conv({1, 6, 7, 4}, {3, 3, 2, 3}, Attrs({1, 1, 1, 1}, "VALID")),
              {"filter out-depth 3 must be a multiple of the number of groups 2"});
  ExpectError(Conv({1, 3, 3, 2}, {7, 7, 2, 2}, Attrs({1, 1, 1, 1}, "VALID")),
              {"rows: the output size would be negative (-3)", "effective filter size 7"});
  // Dilation enlarges the effective filter: 3 taps at dilation 3 span 7 rows.
  ExpectError(
      Conv({1, 5, 9, 2}, {3, 1, 2, 2}, Attrs({1, 1, 1, 1}, "VALID", {{"dilations", {1, 3, 1, 1}}})),
      {"effective filter size 7 (filter 3, dilation 3"});
  ExpectError(Analyze("DepthwiseConv2dNative",
                      {Placeholder("x", {1, 6, 7, 3}), Placeholder("w", {3, 3, 1, 2})},
                      {"input", "filter"}, Attrs({1, 1, 1, 1}, "VALID")),
              {"filter in_channels 1 must equal the input depth 3"});
  // Unknown dims never hide what is already wrong.
  ExpectError(Conv({-1, -1, -1, 4}, {3, 3, 3, 2}, Attrs({1, 1, 1, 1}, "SAME")), {"input depth 4"});
}

TEST(ConvValidation, BackpropInputRules) {
  const json attrs = Attrs({1, 2, 2, 1}, "VALID");
  auto bpi = [&](const std::string& op, const json& sizes, const std::vector<int64_t>& f,
                 const std::vector<int64_t>& dy, const json& a) {
    return Analyze(op, {sizes, Placeholder("w", f), Placeholder("dy", dy)},
                   {"input_sizes", "filter", "out_backprop"}, a);
  };
  // The message shows both shapes, the input, filter, strides and padding.
  ExpectError(bpi("DepthwiseConv2dNativeBackpropInput", Sizes("s", {1, 8, 8, 2}), {3, 3, 2, 1},
                  {1, 4, 4, 2}, attrs),
              {"node 'out' (DepthwiseConv2dNativeBackpropInput): out_backprop shape [1,4,4,2] must "
               "equal the forward "
               "output shape [1,3,3,2] for input [1,8,8,2], filter [3,3,2,1], strides [1,2,2,1], "
               "padding VALID"});
  ExpectError(
      bpi("Conv2DBackpropInput", Sizes("s", {1, 8, 8, 2}), {3, 3, 2, 5}, {1, 3, 3, 4}, attrs),
      {"out_backprop shape [1,3,3,4] must equal the forward output shape [1,3,3,5]"});
  ExpectError(bpi("Conv2DBackpropInput", Sizes("s", {1, 8, 8}), {3, 3, 2, 5}, {1, 3, 3, 5}, attrs),
              {"input_sizes [1,8,8] has 3 values"});
  ExpectError(bpi("DepthwiseConv2dNativeBackpropInput", Sizes("s", {8, 8}), {3, 3, 2, 1},
                  {1, 3, 3, 2}, attrs),
              {"input_sizes [8,8] has 2 values; it must hold 4 values"});
  ExpectError(
      bpi("Conv2DBackpropInput", Sizes("s", {1, -8, 8, 2}), {3, 3, 2, 5}, {1, 3, 3, 5}, attrs),
      {"input_sizes [1,-8,8,2] must be non-negative"});
  // Grouped: the input depth must be a multiple of the filter's in-depth.
  ExpectError(
      bpi("Conv2DBackpropInput", Sizes("s", {1, 8, 8, 5}), {3, 3, 2, 4}, {1, 3, 3, 4}, attrs),
      {"input depth 5 must be a positive multiple of the filter's in-depth 2"});
  // 2-value input_sizes: batch from out_backprop, depth from the filter.
  Result ok = bpi("Conv2DBackpropInput", Sizes("s", {8, 7}), {3, 3, 2, 5}, {3, 3, 3, 5}, attrs);
  ASSERT_TRUE(ok.ok) << ok.errors;
  EXPECT_EQ(ok.shape, (Shape{3, 8, 7, 2}));
  ok = bpi("Conv2DBackpropInput", Sizes("s", {8, 7}), {3, 3, 2, 5}, {3, 5, 3, 3},
           Attrs({1, 1, 2, 2}, "VALID", {{"data_format", "NCHW"}}));
  ASSERT_TRUE(ok.ok) << ok.errors;
  EXPECT_EQ(ok.shape, (Shape{3, 2, 8, 7}));
  // int64 sizes are accepted too.
  ok = bpi("Conv2DBackpropInput", Sizes("s", {1, 8, 8, 2}, "int64"), {3, 3, 2, 5}, {1, 3, 3, 5},
           attrs);
  ASSERT_TRUE(ok.ok) << ok.errors;
  EXPECT_EQ(ok.shape, (Shape{1, 8, 8, 2}));
}

TEST(ConvValidation, BackpropFilterRules) {
  const json attrs = Attrs({1, 1, 1, 1}, "VALID");
  auto bpf = [&](const std::string& op, const std::vector<int64_t>& in, const json& sizes,
                 const std::vector<int64_t>& dy) {
    return Analyze(op, {Placeholder("x", in), sizes, Placeholder("dy", dy)},
                   {"input", "filter_sizes", "out_backprop"}, attrs);
  };
  ExpectError(bpf("Conv2DBackpropFilter", {2, 6, 7, 3}, Sizes("s", {3, 3, 3}), {2, 4, 5, 4}),
              {"filter_sizes [3,3,3] has 3 values; it must hold 4 values"});
  ExpectError(bpf("Conv2DBackpropFilter", {2, 6, 7, 3}, Sizes("s", {3, -3, 3, 4}), {2, 4, 5, 4}),
              {"filter_sizes [3,-3,3,4] must be non-negative"});
  ExpectError(bpf("Conv2DBackpropFilter", {2, 6, 7, 3}, Sizes("s", {3, 3, 3, 4}), {2, 4, 6, 4}),
              {"out_backprop shape [2,4,6,4] must equal the forward output shape [2,4,5,4] for "
               "input [2,6,7,3], "
               "filter [3,3,3,4], strides [1,1,1,1], padding VALID"});
  ExpectError(bpf("DepthwiseConv2dNativeBackpropFilter", {2, 6, 7, 3}, Sizes("s", {3, 3, 2, 2}),
                  {2, 4, 5, 4}),
              {"filter in_channels 2 must equal the input depth 3"});
  ExpectError(bpf("DepthwiseConv2dNativeBackpropFilter", {2, 6, 7, 3}, Sizes("s", {3, 3, 3, 2}),
                  {2, 4, 5, 3}),
              {"forward output shape [2,4,5,6]"});
  Result ok = bpf("Conv2DBackpropFilter", {2, 6, 7, 4}, Sizes("s", {3, 3, 2, 6}), {2, 4, 5, 6});
  ASSERT_TRUE(ok.ok) << ok.errors;
  EXPECT_EQ(ok.shape, (Shape{3, 3, 2, 6}));
}

TEST(ConvValidation, UnknownDimsInferWhatTheyCan) {
  Result r = Conv({-1, 8, -1, 4}, {3, 3, 4, 6}, Attrs({1, 2, 2, 1}, "SAME"));
  ASSERT_TRUE(r.ok) << r.errors;
  EXPECT_EQ(r.shape, (Shape{-1, 4, -1, 6}));
  r = Conv({2, 4, 9, -1}, {3, 3, 4, 6}, Attrs({1, 1, 2, 1}, "VALID", {{"data_format", "NCHW"}}));
  ASSERT_TRUE(r.ok) << r.errors;
  EXPECT_EQ(r.shape, (Shape{2, 6, 4, -1}));
  r = Analyze("DepthwiseConv2dNative",
              {Placeholder("x", {1, 5, 5, -1}), Placeholder("w", {3, 3, 4, 2})},
              {"input", "filter"}, Attrs({1, 1, 1, 1}, "SAME"));
  ASSERT_TRUE(r.ok) << r.errors;
  EXPECT_EQ(r.shape, (Shape{1, 5, 5, 8}));
  // Sizes whose values are unknown until run time.
  r = Analyze("Conv2DBackpropInput",
              {Placeholder("s", {4}, "int32"), Placeholder("w", {3, 3, 2, 6}),
               Placeholder("dy", {2, 4, 4, 6})},
              {"input_sizes", "filter", "out_backprop"}, Attrs({1, 1, 1, 1}, "SAME"));
  ASSERT_TRUE(r.ok) << r.errors;
  EXPECT_EQ(r.shape, (Shape{2, -1, -1, -1}));
  r = Analyze("Conv2DBackpropInput",
              {Placeholder("s", {2}, "int32"), Placeholder("w", {3, 3, 2, 6}),
               Placeholder("dy", {2, 4, 4, 6})},
              {"input_sizes", "filter", "out_backprop"}, Attrs({1, 1, 1, 1}, "SAME"));
  ASSERT_TRUE(r.ok) << r.errors;
  EXPECT_EQ(r.shape, (Shape{2, -1, -1, 2}));
  r = Analyze("DepthwiseConv2dNativeBackpropInput",
              {Placeholder("s", {4}, "int32"), Placeholder("w", {3, 3, 5, 2}),
               Placeholder("dy", {2, 4, 4, 10})},
              {"input_sizes", "filter", "out_backprop"}, Attrs({1, 1, 1, 1}, "SAME"));
  ASSERT_TRUE(r.ok) << r.errors;
  EXPECT_EQ(r.shape, (Shape{2, -1, -1, 5}));
  r = Analyze("Conv2DBackpropFilter",
              {Placeholder("x", {2, 6, 7, 4}), Placeholder("s", {4}, "int32"),
               Placeholder("dy", {2, 4, 5, 6})},
              {"input", "filter_sizes", "out_backprop"}, Attrs({1, 1, 1, 1}, "VALID"));
  ASSERT_TRUE(r.ok) << r.errors;
  EXPECT_EQ(r.shape, (Shape{-1, -1, -1, 6}));
  r = Analyze("DepthwiseConv2dNativeBackpropFilter",
              {Placeholder("x", {2, 6, 7, 4}), Placeholder("s", {4}, "int32"),
               Placeholder("dy", {2, 4, 5, 12})},
              {"input", "filter_sizes", "out_backprop"}, Attrs({1, 1, 1, 1}, "VALID"));
  ASSERT_TRUE(r.ok) << r.errors;
  EXPECT_EQ(r.shape, (Shape{-1, -1, 4, 3}));
}

TEST(ConvValidation, SchemaAttrs) {
  RegisterBuiltinBlocks();
  for (const char* op :
       {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "DepthwiseConv2dNative",
        "DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter"}) {
    const OpSchema* s = OpRegistry::Global().Find(op);
    ASSERT_NE(s, nullptr) << op;
    EXPECT_EQ(s->category(), "Convolution");
    ASSERT_EQ(s->outputs().size(), 1u);
    EXPECT_EQ(s->outputs()[0].name, "output");
    const bool conv2d = std::string(op).rfind("Conv2D", 0) == 0;
    EXPECT_EQ(s->FindAttr("use_cudnn_on_gpu") != nullptr, conv2d) << op;
    ASSERT_NE(s->FindAttr("strides"), nullptr);
    EXPECT_TRUE(s->FindAttr("strides")->required);
    EXPECT_EQ(s->FindAttr("dilations")->default_value, json({1, 1, 1, 1}));
    EXPECT_EQ(s->FindAttr("data_format")->default_value, "NHWC");
    EXPECT_EQ(s->FindAttr("explicit_paddings")->default_value, json::array());
    for (const PortDef& p : s->inputs()) EXPECT_FALSE(p.doc.empty()) << op << " " << p.name;
    for (const AttrDef& a : s->attrs()) EXPECT_FALSE(a.doc.empty()) << op << " " << a.name;
    EXPECT_TRUE(s->has_optimized_kernel());
  }
  // use_cudnn_on_gpu is accepted (and ignored) by Conv2D, unknown to the depthwise blocks.
  Result r =
      Conv({1, 6, 7, 3}, {3, 3, 3, 2}, Attrs({1, 1, 1, 1}, "VALID", {{"use_cudnn_on_gpu", false}}));
  EXPECT_TRUE(r.ok) << r.errors;
  r = Analyze("DepthwiseConv2dNative",
              {Placeholder("x", {1, 6, 7, 3}), Placeholder("w", {3, 3, 3, 2})}, {"input", "filter"},
              Attrs({1, 1, 1, 1}, "VALID", {{"use_cudnn_on_gpu", false}}));
  EXPECT_FALSE(r.ok);
}

}  // namespace
}  // namespace blockflow
