// The Scope constructors (blocks/conv/conv_ops.h): the graphs they build save to the expected
// JSON, and run through ClientSession to the same values as the kernels called directly.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "blocks/ops.h"
#include "blocks/register_blocks.h"
#include "conv_test_util.h"
#include "core/graph.h"
#include "core/scope.h"

namespace blockflow {
namespace {

using nlohmann::json;

json NodeJson(const Scope& root, const std::string& id) {
  const json g = json::parse(SerializeGraph(root.graph()));
  for (const json& n : g["nodes"]) {
    if (n["id"] == id) return n;
  }
  return json();
}

TEST(ConvScopeOps, DepthwiseBackpropInputSavesAndRuns) {
  RegisterBuiltinBlocks();
  std::mt19937_64 rng(3);
  Scope root = Scope::NewRootScope();
  auto sizes = ops::Const(root.WithOpName("sizes"), Tensor::FromVector<int32_t>({1, 8, 8, 2}));
  const Tensor w_value = conv::testing::RandomTensor(DType::kFloat32, Shape{3, 3, 2, 1}, rng);
  auto w = ops::Const(root.WithOpName("w"), w_value);
  auto dy = ops::Placeholder(root.WithOpName("dy"), DType::kFloat32, Shape{1, 4, 4, 2});
  auto dx = ops::DepthwiseConv2dNativeBackpropInput(root.WithOpName("dx"), sizes, w, dy,
                                                    {1, 2, 2, 1}, "SAME");
  ASSERT_TRUE(root.status().ok()) << root.status().message();
  ASSERT_TRUE(root.Validate().ok()) << root.Validate().message();

  EXPECT_EQ(NodeJson(root, "dx"),
            json::parse(R"({"id": "dx", "op": "DepthwiseConv2dNativeBackpropInput",
      "inputs": {"input_sizes": "sizes", "filter": "w", "out_backprop": "dy"},
      "attrs": {"strides": [1, 2, 2, 1], "padding": "SAME"}})"));
  // Ports are written in TensorFlow's order.
  EXPECT_NE(SerializeGraph(root.graph())
                .find(R"("inputs": {"input_sizes": "sizes", "filter": "w", "out_backprop": "dy"})"),
            std::string::npos);
  EXPECT_EQ(static_cast<Output>(dx).name(), "dx");
  EXPECT_EQ(dx.output.name(), "dx");

  const Tensor dy_value = conv::testing::RandomTensor(DType::kFloat32, Shape{1, 4, 4, 2}, rng);
  ClientSession session(root);
  std::vector<Tensor> out;
  Status s = session.Run({{dy, dy_value}}, {dx}, &out);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(out.size(), 1u);

  conv::testing::Problem p;
  p.depthwise = true;
  p.padding = "SAME";
  p.n = 1;
  p.h = 8;
  p.w = 8;
  p.c = 2;
  p.fh = 3;
  p.fw = 3;
  p.mult = 1;
  p.sh = 2;
  p.sw = 2;
  Expected<conv::testing::Resolved> r = conv::testing::Resolve(p);
  ASSERT_TRUE(r.ok());
  Expected<Tensor> expected =
      conv::testing::RunOp(conv::KernelKind::kReference, 1, *r, Tensor(), w_value, dy_value, 1);
  ASSERT_TRUE(expected.ok());
  ASSERT_EQ(out[0].shape(), (Shape{1, 8, 8, 2}));
  for (int64_t i = 0; i < out[0].num_elements(); ++i) {
    EXPECT_NEAR(out[0].GetAsDouble(i), expected->GetAsDouble(i), 1e-6) << i;
  }
}

TEST(ConvScopeOps, AttrsBuildersWriteOnlyWhatIsSet) {
  RegisterBuiltinBlocks();
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DType::kFloat64, Shape{1, 4, 9, 9});
  auto w = ops::Placeholder(root.WithOpName("w"), DType::kFloat64, Shape{3, 3, 2, 6});
  auto y = ops::Conv2D(root.WithOpName("y"), x, w, {1, 1, 2, 2}, "EXPLICIT",
                       ops::Conv2D::DataFormat("NCHW")
                           .Dilations({1, 1, 2, 1})
                           .ExplicitPaddings({0, 0, 0, 0, 1, 2, 0, 1})
                           .UseCudnnOnGpu(false));
  auto sizes = ops::Const(root.WithOpName("fs"), Tensor::FromVector<int32_t>({3, 3, 2, 6}));
  auto dw = ops::Conv2DBackpropFilter(
      root.WithOpName("dw"), x, sizes, y, {1, 1, 2, 2}, "EXPLICIT",
      ops::Conv2DBackpropFilter::ExplicitPaddings({0, 0, 0, 0, 1, 2, 0, 1})
          .DataFormat("NCHW")
          .Dilations({1, 1, 2, 1}));
  auto s2 = ops::Const(root.WithOpName("is"), Tensor::FromVector<int32_t>({1, 4, 9, 9}));
  auto dx =
      ops::Conv2DBackpropInput(root.WithOpName("dx"), s2, w, y, {1, 1, 2, 2}, "EXPLICIT",
                               ops::Conv2DBackpropInput::ExplicitPaddings({0, 0, 0, 0, 1, 2, 0, 1})
                                   .DataFormat("NCHW")
                                   .Dilations({1, 1, 2, 1}));
  auto xd = ops::Placeholder(root.WithOpName("xd"), DType::kFloat32, Shape{2, 5, 5, 3});
  auto wd = ops::Placeholder(root.WithOpName("wd"), DType::kFloat32, Shape{2, 2, 3, 2});
  auto yd = ops::DepthwiseConv2dNative(root.WithOpName("yd"), xd, wd, {1, 1, 2, 1}, "VALID");
  auto fsd = ops::Const(root.WithOpName("fsd"), Tensor::FromVector<int32_t>({2, 2, 3, 2}));
  auto dwd = ops::DepthwiseConv2dNativeBackpropFilter(
      root.WithOpName("dwd"), xd, fsd, yd, {1, 1, 2, 1}, "VALID",
      ops::DepthwiseConv2dNativeBackpropFilter::Dilations({1, 1, 1, 1}));
  (void)dw;
  (void)dx;
  (void)dwd;
  ASSERT_TRUE(root.Validate().ok()) << root.Validate().message();

  EXPECT_EQ(NodeJson(root, "y"),
            json::parse(R"({"id": "y", "op": "Conv2D", "inputs": {"input": "x", "filter": "w"},
      "attrs": {"strides": [1, 1, 2, 2], "padding": "EXPLICIT", "use_cudnn_on_gpu": false,
                "explicit_paddings": [0, 0, 0, 0, 1, 2, 0, 1], "data_format": "NCHW",
                "dilations": [1, 1, 2, 1]}})"));
  EXPECT_EQ(NodeJson(root, "dw"), json::parse(R"({"id": "dw", "op": "Conv2DBackpropFilter",
      "inputs": {"input": "x", "filter_sizes": "fs", "out_backprop": "y"},
      "attrs": {"strides": [1, 1, 2, 2], "padding": "EXPLICIT",
                "explicit_paddings": [0, 0, 0, 0, 1, 2, 0, 1], "data_format": "NCHW",
                "dilations": [1, 1, 2, 1]}})"));
  EXPECT_EQ(NodeJson(root, "yd"), json::parse(R"({"id": "yd", "op": "DepthwiseConv2dNative",
      "inputs": {"input": "xd", "filter": "wd"},
      "attrs": {"strides": [1, 1, 2, 1], "padding": "VALID"}})"));
  EXPECT_EQ(NodeJson(root, "dwd")["attrs"],
            json::parse(R"({"strides": [1, 1, 2, 1], "padding": "VALID",
      "dilations": [1, 1, 1, 1]})"));

  // The inferred shapes: Conv2D NCHW, out = (9 + 1 + 2 - 5) / 2 + 1 = 4 rows, (9 + 0 + 1 - 3) / 2 +
  // 1 = 4 cols.
  GraphAnalysis a = AnalyzeGraph(root.graph());
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a.nodes[static_cast<size_t>(root.graph().IndexOf("y"))].outputs[0].shape,
            (Shape{1, 6, 4, 4}));
  EXPECT_EQ(a.nodes[static_cast<size_t>(root.graph().IndexOf("dx"))].outputs[0].shape,
            (Shape{1, 4, 9, 9}));
  EXPECT_EQ(a.nodes[static_cast<size_t>(root.graph().IndexOf("yd"))].outputs[0].shape,
            (Shape{2, 4, 2, 6}));

  // Saving and loading gives the same text.
  const std::string text = SerializeGraph(root.graph());
  Expected<Graph> again = ParseGraphJson(text, "mem.json", "");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(SerializeGraph(*again), text);
}

TEST(ConvScopeOps, ErrorsNameTheNode) {
  RegisterBuiltinBlocks();
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DType::kFloat32, Shape{1, 6, 7, 4});
  auto w = ops::Placeholder(root.WithOpName("w"), DType::kFloat32, Shape{3, 3, 3, 2});
  auto y = ops::Conv2D(root.WithOpName("gradients/conv"), x, w, {1, 1, 1, 1}, "VALID");
  (void)y;
  Status s = root.Validate();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(
                "node 'gradients/conv' (Conv2D): input depth 4 must be a positive multiple of the "
                "filter's in-depth 3"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace blockflow
