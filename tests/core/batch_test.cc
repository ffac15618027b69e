// Batch rules (core/batch.h): each block's declared rule, and their propagation through graphs
// from split Placeholders, including the cases that must be refused.
#include "core/batch.h"

#include <gtest/gtest.h>

#include "core/schema.h"
#include "test_graph.h"

namespace blockflow {
namespace {

using testing::GraphFromJson;

struct Analysed {
  Graph graph;
  BatchAnalysis batch;
  BatchValue Of(const std::string& id, int k = 0) const { return batch.Output(graph, id, k); }
};

// `nodes`: the JSON of the graph's nodes; `split`: Placeholder → axis.
Analysed Analyse(const std::string& nodes, const std::map<std::string, int>& split) {
  Analysed a;
  a.graph =
      GraphFromJson(R"({"format": "blockflow.graph", "version": 1, "nodes": [)" + nodes + "]}");
  const GraphAnalysis analysis = AnalyzeGraph(a.graph);
  EXPECT_TRUE(analysis.ok()) << (analysis.issues.empty() ? "" : analysis.issues[0].ToString());
  a.batch = AnalyzeBatch(a.graph, analysis, split, OpRegistry::Global());
  return a;
}

const char* kPlaceholders = R"(
  {"id": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [-1, 8, 8, 3]}},
  {"id": "dy", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [-1, 4, 4, 4]}},
  {"id": "w", "op": "Const", "attrs": {"dtype": "float32", "shape": [3, 3, 3, 4], "value": 0.5}},
  {"id": "fs", "op": "Const", "attrs": {"dtype": "int32", "shape": [4], "value": [3, 3, 3, 4]}},
  {"id": "c", "op": "Const", "attrs": {"dtype": "float32", "shape": [], "value": 2}},
  {"id": "axis0", "op": "Const", "attrs": {"dtype": "int32", "shape": [1], "value": [0]}},
  {"id": "axis1", "op": "Const", "attrs": {"dtype": "int32", "shape": [1], "value": [1]}},
  {"id": "dw", "op": "Conv2DBackpropFilter", "attrs": {"padding": "SAME", "strides": [1, 2, 2, 1]},
   "inputs": {"input": "x", "filter_sizes": "fs", "out_backprop": "dy"}})";

std::string With(const std::string& more) { return std::string(kPlaceholders) + "," + more; }

TEST(BatchRulesTest, ConvolutionsCarryOrSumTheBatch) {
  const Analysed a = Analyse(With(R"(
    {"id": "y", "op": "Conv2D", "attrs": {"padding": "SAME", "strides": [1, 2, 2, 1]},
     "inputs": {"input": "x", "filter": "w"}},
    {"id": "xs", "op": "Shape", "inputs": {"input": "x"}},
    {"id": "dx", "op": "Conv2DBackpropInput",
     "attrs": {"padding": "SAME", "strides": [1, 2, 2, 1]},
     "inputs": {"input_sizes": "xs", "filter": "w", "out_backprop": "dy"}})"),
                             {{"x", 0}, {"dy", 0}});
  EXPECT_EQ(a.Of("x"), BatchValue::Carries(0));
  EXPECT_EQ(a.Of("w"), BatchValue::Free());
  EXPECT_EQ(a.Of("y"), BatchValue::Carries(0));
  EXPECT_EQ(a.Of("dw"), BatchValue::Sums());
  EXPECT_EQ(a.Of("xs"), BatchValue::BatchShape(0));
  EXPECT_EQ(a.Of("dx"), BatchValue::Carries(0));
}

TEST(BatchRulesTest, NothingSplitIsBatchFree) {
  const Analysed a = Analyse(kPlaceholders, {});
  EXPECT_EQ(a.Of("dw"), BatchValue::Free());
}

TEST(BatchRulesTest, LinearOpsKeepSumsAndRefuseBatchFreeTerms) {
  const Analysed a = Analyse(With(R"(
    {"id": "scaled", "op": "Mul", "inputs": {"x": "dw", "y": "c"}},
    {"id": "twice", "op": "Add", "inputs": {"x": "dw", "y": "scaled"}},
    {"id": "moved", "op": "Sub", "inputs": {"x": "w", "y": "scaled"}},
    {"id": "square", "op": "Mul", "inputs": {"x": "dw", "y": "dw"}},
    {"id": "id", "op": "Identity", "inputs": {"input": "scaled"}},
    {"id": "later", "op": "Mul", "inputs": {"x": "moved", "y": "c"}})"),
                             {{"x", 0}, {"dy", 0}});
  EXPECT_EQ(a.Of("scaled"), BatchValue::Sums());  // a sum times a constant
  EXPECT_EQ(a.Of("twice"), BatchValue::Sums());   // a sum plus a sum
  EXPECT_EQ(a.Of("id"), BatchValue::Sums());
  const BatchValue moved = a.Of("moved");
  ASSERT_EQ(moved.kind, BatchKind::kUndecided);
  EXPECT_NE(moved.why.find("node 'moved' (Sub): adds a batch-free value to a sum over the batch"),
            std::string::npos)
      << moved.why;
  EXPECT_EQ(a.Of("square").kind, BatchKind::kUndecided);
  EXPECT_NE(a.Of("square").why.find("multiplies two sums"), std::string::npos);
  // Undecided passes on with the place where the batch was lost.
  EXPECT_EQ(a.Of("later").kind, BatchKind::kUndecided);
  EXPECT_EQ(a.Of("later").why, moved.why);
}

TEST(BatchRulesTest, ElementwiseOpsOnSplitTensorsStaySplit) {
  const Analysed a = Analyse(With(R"(
    {"id": "row", "op": "Const", "attrs": {"dtype": "float32", "shape": [1, 8, 8, 3], "value": 1}},
    {"id": "full", "op": "Const", "attrs": {"dtype": "float32", "shape": [2, 8, 8, 3], "value": 1}},
    {"id": "a", "op": "Add", "inputs": {"x": "x", "y": "row"}},
    {"id": "b", "op": "Mul", "inputs": {"x": "a", "y": "x"}},
    {"id": "total", "op": "Sum", "inputs": {"input": "x", "axis": "axis0"}},
    {"id": "mixed", "op": "Add", "inputs": {"x": "x", "y": "total"}},
    {"id": "fb", "op": "Add", "inputs": {"x": "x", "y": "full"}})"),
                             {{"x", 0}, {"dy", 0}});
  EXPECT_EQ(a.Of("a"), BatchValue::Carries(0));
  EXPECT_EQ(a.Of("b"), BatchValue::Carries(0));
  EXPECT_EQ(a.Of("total"), BatchValue::Sums());
  EXPECT_EQ(a.Of("mixed").kind, BatchKind::kUndecided);
  // A batch-free operand with values along the split axis would meet other samples.
  EXPECT_EQ(a.Of("fb").kind, BatchKind::kUndecided);
  EXPECT_NE(a.Of("fb").why.find("has size 2 along the split axis 0"), std::string::npos);
}

TEST(BatchRulesTest, SumOverTheSplitAxisIsASum) {
  const Analysed a = Analyse(With(R"(
    {"id": "s0", "op": "Sum", "inputs": {"input": "x", "axis": "axis0"}},
    {"id": "s1", "op": "Sum", "inputs": {"input": "x", "axis": "axis1"}},
    {"id": "k1", "op": "Sum", "attrs": {"keep_dims": true}, "inputs": {"input": "x", "axis": "axis1"}},
    {"id": "sd", "op": "Sum", "inputs": {"input": "dw", "axis": "axis0"}})"),
                             {{"x", 2}, {"dy", 0}});
  EXPECT_EQ(a.Of("x"), BatchValue::Carries(2));
  EXPECT_EQ(a.Of("s0"), BatchValue::Carries(1));  // axis 2 moves left past the reduced axis 0
  EXPECT_EQ(a.Of("s1"), BatchValue::Carries(1));
  EXPECT_EQ(a.Of("k1"), BatchValue::Carries(2));
  // x split along axis 2 does not pair with dy split along axis 0 in a convolution.
  EXPECT_EQ(a.Of("dw").kind, BatchKind::kUndecided);
  EXPECT_NE(a.Of("dw").why.find("split along axis 2"), std::string::npos) << a.Of("dw").why;

  const Analysed b = Analyse(With(R"(
    {"id": "s0", "op": "Sum", "inputs": {"input": "x", "axis": "axis0"}},
    {"id": "sd", "op": "Sum", "inputs": {"input": "dw", "axis": "axis0"}})"),
                             {{"x", 0}, {"dy", 0}});
  EXPECT_EQ(b.Of("s0"), BatchValue::Sums());
  EXPECT_EQ(b.Of("sd"), BatchValue::Sums());  // a sum of a sum
}

TEST(BatchRulesTest, ReshapeAndTransposeFollowTheSplitAxis) {
  const Analysed a = Analyse(With(R"(
    {"id": "flat_shape", "op": "Const", "attrs": {"dtype": "int32", "shape": [2], "value": [-1, 192]}},
    {"id": "bad_shape", "op": "Const", "attrs": {"dtype": "int32", "shape": [2], "value": [2, -1]}},
    {"id": "perm", "op": "Const", "attrs": {"dtype": "int32", "shape": [4], "value": [3, 1, 2, 0]}},
    {"id": "flat", "op": "Reshape", "inputs": {"tensor": "x", "shape": "flat_shape"}},
    {"id": "bad", "op": "Reshape", "inputs": {"tensor": "x", "shape": "bad_shape"}},
    {"id": "t", "op": "Transpose", "inputs": {"x": "x", "perm": "perm"}},
    {"id": "z", "op": "ZerosLike", "inputs": {"x": "x"}})"),
                             {{"x", 0}, {"dy", 0}});
  EXPECT_EQ(a.Of("flat"), BatchValue::Carries(0));
  EXPECT_EQ(a.Of("bad").kind, BatchKind::kUndecided);
  EXPECT_EQ(a.Of("t"), BatchValue::Carries(3));
  EXPECT_EQ(a.Of("z"), BatchValue::Carries(0));
}

TEST(BatchRulesTest, AFixedBatchSizeForASplitInputGradientIsRefused) {
  const Analysed a = Analyse(With(R"(
    {"id": "sizes", "op": "Const", "attrs": {"dtype": "int32", "shape": [4], "value": [2, 8, 8, 3]}},
    {"id": "dx", "op": "Conv2DBackpropInput",
     "attrs": {"padding": "SAME", "strides": [1, 2, 2, 1]},
     "inputs": {"input_sizes": "sizes", "filter": "w", "out_backprop": "dy"}})"),
                             {{"x", 0}, {"dy", 0}});
  EXPECT_EQ(a.Of("dx").kind, BatchKind::kUndecided);
  EXPECT_NE(a.Of("dx").why.find("take the sizes from the Shape of a split tensor"),
            std::string::npos);
}

TEST(BatchRulesTest, TheTrainingStepSample) {
  RegisterBuiltinBlocks();
  Expected<Graph> g =
      LoadGraphFile(std::string(BF_SAMPLES_DIR) + "/mobilenet_block_train_step.json");
  ASSERT_TRUE(g.ok()) << g.status().message();
  const GraphAnalysis analysis = AnalyzeGraph(*g);
  const BatchAnalysis b =
      AnalyzeBatch(*g, analysis, {{"x", 0}, {"target", 0}}, OpRegistry::Global());
  EXPECT_EQ(b.Output(*g, "dy", 0), BatchValue::Carries(0));
  EXPECT_EQ(b.Output(*g, "dx", 0), BatchValue::Carries(0));
  EXPECT_EQ(b.Output(*g, "dw_pw", 0), BatchValue::Sums());
  EXPECT_EQ(b.Output(*g, "dw_dw", 0), BatchValue::Sums());
  EXPECT_EQ(b.Output(*g, "step_pw", 0), BatchValue::Sums());
  EXPECT_EQ(b.Output(*g, "w_pw_new", 0).kind, BatchKind::kUndecided);
  EXPECT_EQ(b.Output(*g, "h_shape", 0), BatchValue::BatchShape(0));
}

TEST(BatchRulesTest, UndeclaredOpsAreFreeOnlyWhenTheirInputsAre) {
  OpRegistry registry;
  registry.Register(OpSchema("Opaque")
                        .Input("x", {DType::kFloat32})
                        .Output("y", {DType::kFloat32})
                        .SetShapeFn([](InferContext& c) {
                          c.SetOutput(0, c.input(0));
                          return Status::OK();
                        }));
  const OpSchema& schema = *registry.Find("Opaque");
  const std::string id = "n";
  const AttrMap attrs;
  const std::vector<PortInfo> inputs(1), outputs(1);
  const std::vector<int> starts = {0};
  const std::vector<BatchValue> free = {BatchValue::Free()}, split = {BatchValue::Carries(0)};
  EXPECT_EQ(ApplyBatchRule(schema.outputs()[0].batch,
                           {id, schema, attrs, inputs, starts, free, outputs, 0}),
            BatchValue::Free());
  const BatchValue v = ApplyBatchRule(schema.outputs()[0].batch,
                                      {id, schema, attrs, inputs, starts, split, outputs, 0});
  EXPECT_EQ(v.kind, BatchKind::kUndecided);
  EXPECT_EQ(v.why,
            "node 'n' (Opaque): Opaque does not declare how its output depends on a split batch, "
            "and input values here depend on it");
}

}  // namespace
}  // namespace blockflow
