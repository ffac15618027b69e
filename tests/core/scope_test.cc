#include "core/scope.h"

#include <gtest/gtest.h>

#include "blocks/ops.h"

namespace blockflow {
namespace {

TEST(ScopeTest, BuildsRunsAndSavesLikeJson) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root.WithOpName("x"), Tensor::FromVector<float>({1, 2, 3}));
  auto p = ops::Placeholder(root.WithOpName("p"), DType::kFloat32, Shape{3});
  auto layer = root.NewSubScope("layer");
  auto sum = ops::Add(layer, x, p);
  auto prod = ops::Mul(layer.WithOpName("prod"), sum, x);
  ASSERT_TRUE(root.status().ok());
  EXPECT_EQ(sum.node(), "layer/Add");
  EXPECT_EQ(prod.node(), "layer/prod");
  ASSERT_TRUE(root.Validate().ok()) << root.Validate().message();

  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_TRUE(session.Run({{p, Tensor::FromVector<float>({10, 20, 30})}}, {prod}, &out).ok());
  EXPECT_EQ(out[0].data<float>()[2], 99.0f);  // (3 + 30) * 3

  const std::string json = SerializeGraph(root.graph());
  EXPECT_NE(
      json.find(
          R"({"id": "x", "op": "Const", "attrs": {"dtype": "float32", "shape": [3], "value": [1.0, 2.0, 3.0]}})"),
      std::string::npos)
      << json;
  EXPECT_NE(
      json.find(R"({"id": "layer/prod", "op": "Mul", "inputs": {"x": "layer/Add", "y": "x"}})"),
      std::string::npos)
      << json;
  auto loaded = ParseGraphJson(json, "g.json", ".");
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(SerializeGraph(*loaded), json);
}

TEST(ScopeTest, DuplicateNamesAreRecorded) {
  Scope root = Scope::NewRootScope();
  ops::Const(root.WithOpName("a"), Tensor::FromVector<float>({1}));
  ops::Const(root.WithOpName("a"), Tensor::FromVector<float>({2}));
  EXPECT_NE(root.status().message().find("duplicate node id 'a'"), std::string::npos);
  ClientSession session(root);
  std::vector<Tensor> out;
  EXPECT_FALSE(session.Run({Output("a", 0)}, &out).ok());
}

TEST(ScopeTest, ClientSessionKeepsItsPlanUntilTheScopeGrows) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root.WithOpName("x"), Tensor::FromVector<float>({1, 2, 3}));
  auto p = ops::Placeholder(root.WithOpName("p"), DType::kFloat32, Shape{3});
  auto sum = ops::Add(root, x, p);
  ClientSession session(root);
  std::vector<Tensor> out;
  for (float v : {1.0f, 2.0f, 3.0f}) {
    ASSERT_TRUE(session.Run({{p, Tensor::FromVector<float>({v, v, v})}}, {sum}, &out).ok());
    EXPECT_EQ(out[0].data<float>()[2], 3.0f + v);
  }
  // A node added after the first run is seen by the next one.
  auto prod = ops::Mul(root, sum, x);
  ASSERT_TRUE(session.Run({{p, Tensor::FromVector<float>({1, 1, 1})}}, {prod}, &out).ok());
  EXPECT_EQ(out[0].data<float>()[2], 12.0f);  // (3 + 1) * 3
}

}  // namespace
}  // namespace blockflow
