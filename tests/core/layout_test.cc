// Automatic layout: columns by dependency depth, new nodes below the placed ones.
#include "core/layout.h"

#include <gtest/gtest.h>

#include "test_graph.h"

namespace blockflow {
namespace {

// shape → r → s → t, a chain of depth 3.
constexpr const char* kLayoutGraph = R"({"format": "blockflow.graph", "version": 1, "nodes": [
  {"id": "shape", "op": "Const", "attrs": {"dtype": "int32", "shape": [2], "value": [2, 2]}},
  {"id": "r", "op": "RandomUniform", "inputs": {"shape": "shape"}},
  {"id": "s", "op": "Add", "inputs": {"x": "r", "y": "r"}},
  {"id": "t", "op": "Identity", "inputs": {"input": "s"}}]})";

TEST(LayoutTest, ColumnsByDepthBelowPlacedNodes) {
  Graph g = testing::GraphFromJson(kLayoutGraph);
  const LayoutSpacing spacing{.left = 40, .top = 10, .column = 100, .row = 50, .per_port = 0};
  AssignMissingPositions(g, spacing);
  auto pos = [&](const std::string& id) { return *NodePositionXY(*g.FindNode(id)); };
  EXPECT_EQ(pos("shape"), std::make_pair(40.0, 10.0));
  EXPECT_EQ(pos("r"), std::make_pair(140.0, 10.0));
  EXPECT_EQ(pos("s"), std::make_pair(240.0, 10.0));
  EXPECT_EQ(pos("t"), std::make_pair(340.0, 10.0));
  // A new node goes below the placed ones, in its own column; placed nodes stay.
  Node extra;
  extra.id = "u";
  extra.op = "Identity";
  extra.inputs["input"] = {Endpoint{"r", 0}};
  ASSERT_TRUE(g.AddNode(extra).ok());
  SetNodePosition(*g.FindNode("t"), 500.4, 70.6);
  AssignMissingPositions(g, spacing);
  EXPECT_EQ(pos("t"), std::make_pair(500.0, 71.0));
  EXPECT_EQ(pos("u"), std::make_pair(240.0, 71.0 + spacing.below));
}

TEST(LayoutTest, RowsGrowWithTheOpsPorts) {
  Graph g = testing::GraphFromJson(kLayoutGraph);
  Node extra;
  extra.id = "c2";
  extra.op = "Const";
  extra.attrs = {{"dtype", "int32"}, {"value", 1}};
  ASSERT_TRUE(g.AddNode(extra).ok());
  AssignMissingPositions(g);  // the editor's spacing: Const has 0 inputs and 1 output
  const LayoutSpacing editor;
  EXPECT_EQ(NodePositionXY(*g.FindNode("c2"))->second, editor.row + editor.per_port);
  EXPECT_EQ(NodePositionXY(*g.FindNode("c2"))->first, 0.0);
}

}  // namespace
}  // namespace blockflow
