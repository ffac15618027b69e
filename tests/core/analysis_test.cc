#include <gtest/gtest.h>

#include "blocks/register_blocks.h"
#include "core/graph.h"

namespace blockflow {
namespace {

std::string Graph1(const std::string& nodes) {
  return R"({"format": "blockflow.graph", "version": 1, "nodes": [)" + nodes + "]}";
}

GraphAnalysis Analyze(const std::string& nodes) {
  RegisterBuiltinBlocks();
  auto g = ParseGraphJson(Graph1(nodes), "g.json", ".");
  EXPECT_TRUE(g.ok()) << g.status().message();
  return AnalyzeGraph(*g);
}

std::string AllIssues(const GraphAnalysis& a) {
  std::string s;
  for (const auto& i : a.issues) s += i.ToString() + "\n";
  return s;
}

const char* kX =
    R"({"id": "x", "op": "Const", "attrs": {"dtype": "float32", "shape": [2, 3], "value": 1.5}})";

TEST(AnalysisTest, InfersShapesAndFoldsConstants) {
  auto a = Analyze(std::string(kX) + R"(,
    {"id": "y", "op": "Const", "attrs": {"dtype": "float32", "value": [1, 2, 3]}},
    {"id": "s", "op": "Add", "inputs": {"x": "x", "y": "y"}},
    {"id": "p", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [-1, 3]}},
    {"id": "m", "op": "Mul", "inputs": {"x": "p", "y": "y"}})");
  ASSERT_TRUE(a.ok()) << AllIssues(a);
  EXPECT_EQ(a.nodes[2].outputs[0].shape, (Shape{2, 3}));
  EXPECT_EQ(a.nodes[0].outputs[0].value->GetAsDouble(5), 1.5);
  EXPECT_EQ(a.nodes[4].outputs[0].shape, (Shape{-1, 3}));
  EXPECT_EQ(a.nodes[4].outputs[0].shape.ToString(), "[?,3]");
}

TEST(AnalysisTest, ReportsEveryErrorWithNodeOpAndRule) {
  auto a = Analyze(std::string(kX) + R"(,
    {"id": "u", "op": "Conv2DBackpropFiltr"},
    {"id": "i", "op": "Identity", "inputs": {"inptu": "x"}},
    {"id": "d", "op": "Identity", "inputs": {"input": "nowhere"}},
    {"id": "k", "op": "Identity", "inputs": {"input": "x:3"}},
    {"id": "t", "op": "Sum", "inputs": {"input": "x", "axis": "x"}, "attrs": {"keep_dims": "yes"}},
    {"id": "c", "op": "Const", "attrs": {"dtype": "float99", "value": 1}},
    {"id": "c2", "op": "Const", "attrs": {"value": 1}},
    {"id": "e", "op": "Const", "attrs": {"dtype": "int32", "value": [1, 2], "shape": [3]}})");
  const std::string all = AllIssues(a);
  for (const char* expect : {
           "node 'u' (Conv2DBackpropFiltr): unknown op 'Conv2DBackpropFiltr'",
           "node 'i' (Identity): unknown input port 'inptu' (did you mean 'input'?)",
           "node 'i' (Identity): input 'input' is not connected",
           "node 'd' (Identity): input 'input' reads 'nowhere', but there is no node 'nowhere'",
           "node 'k' (Identity): input 'input' reads output 3 of 'x', which has 1 output(s)",
           "node 't' (Sum): attr 'keep_dims' must be true or false, got \"yes\"",
           "node 'c' (Const): attr 'dtype' must be a dtype name",
           "node 'c2' (Const): attr 'dtype' is required",
           "node 'e' (Const): attr 'value' has 2 numbers but shape [3] needs 3",
       }) {
    EXPECT_NE(all.find(expect), std::string::npos) << "missing: " << expect << "\nin:\n" << all;
  }
  EXPECT_EQ(a.issues.size(), 9u) << all;
}

TEST(AnalysisTest, DTypeMismatchAndSameDType) {
  auto a = Analyze(std::string(kX) + R"(,
    {"id": "n", "op": "Const", "attrs": {"dtype": "int32", "value": [1, 2, 3]}},
    {"id": "s", "op": "Add", "inputs": {"x": "x", "y": "n"}},
    {"id": "b", "op": "Const", "attrs": {"dtype": "bool", "value": [true]}},
    {"id": "z", "op": "Add", "inputs": {"x": "b", "y": "b"}})");
  const std::string all = AllIssues(a);
  EXPECT_NE(
      all.find("node 's' (Add): inputs 'x' (float32) and 'y' (int32) must have the same dtype"),
      std::string::npos)
      << all;
  EXPECT_NE(all.find("node 'z' (Add): input 'x' must be float16, bfloat16, float32, float64, "
                     "int32, int64, but 'b' is bool"),
            std::string::npos)
      << all;
}

TEST(AnalysisTest, CyclesAreFound) {
  auto a = Analyze(R"({"id": "a", "op": "Identity", "inputs": {"input": "b"}},
                      {"id": "b", "op": "Identity", "inputs": {"input": "a"}},
                      {"id": "c", "op": "Identity", "inputs": {"input": "c"}})");
  const std::string all = AllIssues(a);
  EXPECT_NE(all.find("node 'a' (Identity): input 'input' from 'b' closes a cycle"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("node 'c' (Identity): input 'input' reads the node's own output"),
            std::string::npos)
      << all;
  auto g = ParseGraphJson(
      Graph1(std::string(kX) + R"(, {"id": "i", "op": "Identity", "inputs": {"input": "x"}})"),
      "g.json", ".");
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(WouldCreateCycle(*g, "i", "x"));
  EXPECT_FALSE(WouldCreateCycle(*g, "x", "i"));
}

TEST(AnalysisTest, ShapeErrorsFromShapeFunctions) {
  auto a = Analyze(std::string(kX) + R"(,
    {"id": "y", "op": "Const", "attrs": {"dtype": "float32", "value": [1, 2]}},
    {"id": "s", "op": "Add", "inputs": {"x": "x", "y": "y"}})");
  const std::string all = AllIssues(a);
  EXPECT_NE(all.find("node 's' (Add): shapes [2,3] and [2] cannot be broadcast"), std::string::npos)
      << all;
}

}  // namespace
}  // namespace blockflow
