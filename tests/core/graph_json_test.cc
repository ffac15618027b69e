#include <gtest/gtest.h>

#include "blocks/register_blocks.h"
#include "core/graph.h"
#include "core/text.h"

namespace blockflow {
namespace {

const char* kDesignExample = R"({
  "format": "blockflow.graph",
  "version": 1,
  "nodes": [
    {"id": "sizes", "op": "Const", "attrs": {"dtype": "int32", "shape": [4], "value": [1, 8, 8, 2]}},
    {"id": "dy",    "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [1, 4, 4, 2]}},
    {"id": "sum", "op": "Add", "inputs": {"y": "dy", "x": "dy:0"}, "ui": {"x": 420, "y": 160.5}},
    {"id": "gradients/conv_grad", "op": "Identity", "inputs": {"input": "sum"}}
  ]
})";

class GraphJsonTest : public ::testing::Test {
 protected:
  void SetUp() override { RegisterBuiltinBlocks(); }
};

TEST_F(GraphJsonTest, ParsesTheDesignExample) {
  auto g = ParseGraphJson(kDesignExample, "g.json", ".");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->nodes().size(), 4u);
  const Node* sum = g->FindNode("sum");
  ASSERT_NE(sum, nullptr);
  EXPECT_EQ(sum->inputs.at("x")[0], (Endpoint{"dy", 0}));
  EXPECT_EQ(sum->ui["x"], 420);
  EXPECT_NE(g->FindNode("gradients/conv_grad"), nullptr);
}

TEST_F(GraphJsonTest, SaveIsCanonicalAndRoundTripsByteForByte) {
  auto g = ParseGraphJson(kDesignExample, "g.json", ".");
  ASSERT_TRUE(g.ok());
  const std::string saved = SerializeGraph(*g);
  // Ports in schema order (x before y), one node per line, "dy:0" normalised to "dy".
  EXPECT_NE(
      saved.find(
          R"({"id": "sum", "op": "Add", "inputs": {"x": "dy", "y": "dy"}, "ui": {"x": 420, "y": 160.5}})"),
      std::string::npos)
      << saved;
  auto again = ParseGraphJson(saved, "saved.json", ".");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(SerializeGraph(*again), saved);
}

TEST_F(GraphJsonTest, MalformedJsonNamesFileLineAndColumn) {
  auto g = ParseGraphJson("{\n  \"format\": \"blockflow.graph\",\n  \"version\": 1,,\n}",
                          "bad.json", ".");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().message().rfind("bad.json:3:", 0), 0u) << g.status().message();
  EXPECT_NE(g.status().message().find("malformed JSON"), std::string::npos);
}

TEST_F(GraphJsonTest, StructuralErrors) {
  struct Case {
    std::string json, expect;
  } cases[] = {
      {R"([1, 2])", "must hold a JSON object"},
      {R"({"format": "x", "version": 1, "nodes": []})", "\"format\" must be \"blockflow.graph\""},
      {R"({"format": "blockflow.graph", "version": 2, "nodes": []})", "newer blockflow"},
      {R"({"format": "blockflow.graph", "version": 1})", "\"nodes\" must be a list"},
      {R"({"format": "blockflow.graph", "version": 1, "nodes": [], "extra": 1})",
       "unknown top-level key 'extra'"},
      {R"({"format": "blockflow.graph", "version": 1, "nodes": [{"op": "Const"}]})",
       "'id' must be a string"},
      {R"({"format": "blockflow.graph", "version": 1, "nodes": [{"id": "a b", "op": "Const"}]})",
       "invalid id"},
      {R"({"format": "blockflow.graph", "version": 1, "nodes": [{"id": "a", "op": "Const"}, {"id": "a", "op": "Const"}]})",
       "duplicate node id 'a'"},
      {R"({"format": "blockflow.graph", "version": 1, "nodes": [{"id": "a", "op": "Identity", "inputs": {"input": "b:x"}}]})",
       "malformed source \"b:x\""},
      {R"({"format": "blockflow.graph", "version": 1, "nodes": [{"id": "a", "op": "Const", "colour": 1}]})",
       "unknown key 'colour'"},
      {R"({"format": "blockflow.graph", "version": 1, "nodes": [{"id": "a", "op": "Const", "attrs": {"value": [1e999]}}]})",
       "malformed JSON: number overflow"},
      {R"({"format": "blockflow.graph", "version": 1, "nodes": [{"id": "../x", "op": "Const"}]})",
       "invalid id"},
      {R"({"format": "blockflow.graph", "version": 1, "nodes": [{"id": "/abs", "op": "Const"}]})",
       "invalid id"},
      {R"({"format": "blockflow.graph", "version": 1, "nodes": [{"id": "a//b", "op": "Const"}]})",
       "invalid id"},
      {R"({"format": "blockflow.graph", "version": 1, "nodes": [{"id": "a", "op": "Const", "ui": )" +
           std::string(100000, '[') + std::string(100000, ']') + "}]}",
       "nested deeper than 128 levels"},
  };
  for (const Case& c : cases) {
    auto g = ParseGraphJson(c.json, "g.json", ".");
    ASSERT_FALSE(g.ok()) << c.json;
    EXPECT_NE(g.status().message().find(c.expect), std::string::npos) << g.status().message();
    EXPECT_EQ(g.status().message().rfind("g.json", 0), 0u);
  }
}

TEST_F(GraphJsonTest, EndpointsParse) {
  EXPECT_EQ(Endpoint::Parse("a/b.c-d:12"), (Endpoint{"a/b.c-d", 12}));
  EXPECT_FALSE(Endpoint::Parse("").has_value());
  EXPECT_FALSE(Endpoint::Parse("a:").has_value());
  EXPECT_FALSE(Endpoint::Parse("a:-1").has_value());
  EXPECT_EQ((Endpoint{"n", 2}).ToString(), "n:2");
  EXPECT_TRUE(IsValidNodeId("gradients/conv_grad/Conv2DBackpropFilter"));
  EXPECT_TRUE(IsValidNodeId("a.b-c_d"));
  EXPECT_FALSE(IsValidNodeId("a/./b"));
  EXPECT_FALSE(IsValidNodeId("a/"));
}

Node MakeNode(const std::string& id) {
  Node n;
  n.id = id;
  n.op = "Const";
  return n;
}

TEST_F(GraphJsonTest, LookupsFollowRenamesAndRemovals) {
  Graph g;
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(g.AddNode(MakeNode("n" + std::to_string(i))).ok());
  EXPECT_EQ(g.IndexOf("n999"), 999);
  EXPECT_FALSE(g.AddNode(MakeNode("n5")).ok());
  g.FindNode("n5")->id = "renamed";  // edited in place, as the editor does
  EXPECT_EQ(g.IndexOf("n5"), -1);
  EXPECT_EQ(g.IndexOf("renamed"), 5);
  EXPECT_TRUE(g.AddNode(MakeNode("n5")).ok());
  EXPECT_FALSE(g.AddNode(MakeNode("renamed")).ok());
  EXPECT_TRUE(g.RemoveNode("n0"));
  EXPECT_EQ(g.IndexOf("renamed"), 4);
  EXPECT_TRUE(g.AddNode(MakeNode("n0")).ok());
  EXPECT_EQ(g.IndexOf("n0"), 1000);
}

TEST_F(GraphJsonTest, RemoveNodeDropsItsWires) {
  auto g = ParseGraphJson(kDesignExample, "g.json", ".");
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(g->RemoveNode("dy"));
  EXPECT_TRUE(g->FindNode("sum")->inputs.empty());
  EXPECT_FALSE(g->RemoveNode("dy"));
  EXPECT_EQ(g->UniqueId("sum"), "sum_1");
}

}  // namespace
// Graph JSON is text: strings from elsewhere (a GraphDef's bytes attrs) are checked first.
TEST(Utf8Test, WellFormedOnly) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("NHWC"));
  EXPECT_TRUE(IsValidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));  // é € 😀
  EXPECT_FALSE(IsValidUtf8("\xff"));                                      // never a lead byte
  EXPECT_FALSE(IsValidUtf8("\x80"));              // a lone continuation byte
  EXPECT_FALSE(IsValidUtf8("\xc3"));              // cut short
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // a surrogate
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // past U+10FFFF
}

}  // namespace blockflow
