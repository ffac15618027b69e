// TensorFlow GraphDef import: unit tests on small text GraphDefs, and the samples in
// samples/tf/ through `blockflow import-tf` in all three forms.
#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "blocks/register_blocks.h"
#include "runtime/tf/graphdef.h"
#include "runtime/tf/import.h"
#include "runtime/tf/shapes.h"
#include "test_util.h"

namespace blockflow::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using tfimport::GraphDefFormat;
using tfimport::ImportOptions;
using tfimport::ImportResult;

Expected<ImportResult> ImportText(const std::string& pbtxt, const ImportOptions& options = {}) {
  RegisterBuiltinBlocks();
  return tfimport::ImportGraphDef(pbtxt, "t.pbtxt", GraphDefFormat::kText, options,
                                  OpRegistry::Global());
}

std::string Errors(const Expected<ImportResult>& r) {
  return r.ok() ? std::string("(ok)") : r.status().message();
}

// The value of SampleValue in runtime/tools/make_tf_samples.cc, written out again here.
double SampleValue(int64_t i, int64_t offset) {
  return static_cast<double>(((i + offset) * 7 + 3) % 17 - 8) / 8.0;
}

TEST(ImportTfTest, ConstEncodingsAndTheRepeatLastRule) {
  Expected<ImportResult> r = ImportText(R"(
    node { name: "a" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } dim { size: 3 } }
        float_val: 1.5 float_val: -2 } } } }
    node { name: "z" op: "Const" attr { key: "dtype" value { type: DT_INT64 } }
      attr { key: "value" value { tensor { dtype: DT_INT64 tensor_shape { dim { size: 3 } } } } } }
    node { name: "h" op: "Const" attr { key: "dtype" value { type: DT_HALF } }
      attr { key: "value" value { tensor { dtype: DT_HALF tensor_shape { dim { size: 2 } } half_val: 15360 half_val: 49152 } } } }
    node { name: "c" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
      attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 2 } }
        tensor_content: "\007\000\000\000\371\377\377\377" } } } }
  )");
  ASSERT_TRUE(r.ok()) << Errors(r);
  const Graph& g = r->graph;
  ASSERT_EQ(g.nodes().size(), 4u);
  EXPECT_EQ(g.FindNode("a")->attrs["value"], json({1.5, -2.0, -2.0, -2.0, -2.0, -2.0}));
  EXPECT_EQ(g.FindNode("a")->attrs["shape"], json({2, 3}));
  EXPECT_EQ(g.FindNode("z")->attrs["value"], json({0, 0, 0}));
  EXPECT_EQ(g.FindNode("z")->attrs["dtype"], "int64");
  EXPECT_EQ(g.FindNode("h")->attrs["value"], json({1.0, -2.0}));  // 0x3C00 = 1, 0xC000 = -2
  EXPECT_EQ(g.FindNode("h")->attrs["dtype"], "float16");
  EXPECT_EQ(g.FindNode("c")->attrs["value"], json({7, -7}));
}

// NaN and Inf have no JSON number: they are written as Const's "nan"/"inf"/"-inf"
// strings (not null); int64 values beyond 2^53 keep every bit (they go to a .npy file,
// as a Const's JSON value passes through a double).
TEST(ImportTfTest, NonFiniteAndLargeInt64ConstValuesSurviveSaving) {
  Expected<ImportResult> r = ImportText(R"(
    node { name: "f" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 4 } }
        float_val: 1 float_val: nan float_val: -inf float_val: inf } } } }
    node { name: "i" op: "Const" attr { key: "dtype" value { type: DT_INT64 } }
      attr { key: "value" value { tensor { dtype: DT_INT64 tensor_shape { dim { size: 2 } }
        int64_val: 9007199254740993 int64_val: -9223372036854775807 } } } }
  )");
  ASSERT_TRUE(r.ok()) << Errors(r);
  EXPECT_EQ(r->graph.FindNode("f")->attrs["value"], json({1.0, "nan", "-inf", "inf"}));
  EXPECT_EQ(r->graph.FindNode("i")->attrs["value"],
            json({int64_t{9007199254740993}, int64_t{-9223372036854775807}}));
  // Saved and loaded again, the graph is valid and the values are exact.
  TempDir d;
  ASSERT_TRUE(tfimport::WriteImport(*r, d / "g.json").ok());
  Expected<Graph> g = LoadGraphFile(d / "g.json");
  ASSERT_TRUE(g.ok()) << g.status().message();
  GraphAnalysis a = AnalyzeGraph(*g, OpRegistry::Global());
  ASSERT_TRUE(a.ok()) << a.issues[0].ToString();
  const Tensor& f = *a.nodes[static_cast<size_t>(g->IndexOf("f"))].outputs[0].value;
  EXPECT_TRUE(std::isnan(f.GetAsDouble(1)));
  EXPECT_EQ(f.GetAsDouble(2), -INFINITY);
  const Tensor& i = *a.nodes[static_cast<size_t>(g->IndexOf("i"))].outputs[0].value;
  EXPECT_EQ(i.data<int64_t>()[0], int64_t{9007199254740993});
  EXPECT_EQ(i.data<int64_t>()[1], int64_t{-9223372036854775807});
}

// A node whose name climbs out of the output folder cannot make the import write there: the
// name is refused, and the writer checks every file it is given besides.
TEST(ImportTfTest, ConstFilesStayInsideTheOutputFolder) {
  const std::string node = R"(
    node { name: "NAME" op: "Const" attr { key: "dtype" value { type: DT_INT64 } }
      attr { key: "value" value { tensor { dtype: DT_INT64 tensor_shape { dim { size: 1 } }
        int64_val: 9007199254740993 } } } })";
  auto named = [&](const std::string& name) {
    std::string text = node;
    return ImportText(text.replace(text.find("NAME"), 4, name));
  };
  EXPECT_FALSE(named("../../evil").ok());
  Expected<ImportResult> r = named("ok");
  ASSERT_TRUE(r.ok()) << Errors(r);
  r->const_files.emplace_back("../../evil.npy", Tensor::FromVector<float>({1, 2}));
  TempDir d;
  std::filesystem::create_directories(d.path() / "a/b");
  const Status s = tfimport::WriteImport(*r, d / "a/b/g.json");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("outside the graph's folder"), std::string::npos) << s.message();
  for (const auto& entry : std::filesystem::recursive_directory_iterator(d.path())) {
    EXPECT_TRUE(entry.is_directory()) << "wrote " << entry.path();
  }
}

// A cut at an output whose dtype is not T (Shape: T is the input's dtype, out_type the
// output's) gives a Placeholder of the output's dtype.
// A few repeated values can describe a huge Const: its size is checked against the memory
// limit before anything is allocated.
TEST(ImportTfTest, ConstValuesAboveTheMemoryLimitAreRefusedBeforeAllocation) {
  const std::string pbtxt = R"(node { name: "c" op: "Const"
      attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "value" value { tensor { dtype: DT_FLOAT
          tensor_shape { dim { size: 1024 } dim { size: 1024 } } float_val: 1 } } } })";
  tfimport::ImportOptions options;
  options.memory_limit = 1 << 20;
  Expected<ImportResult> r = ImportText(pbtxt, options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("node 'c' (Const): attr 'value' is float32[1024,1024] "
                                      "(4.0 MiB), more than the memory limit of 1.0 MiB"),
            std::string::npos)
      << r.status().message();
  options.memory_limit = 8 << 20;
  EXPECT_TRUE(ImportText(pbtxt, options).ok()) << Errors(ImportText(pbtxt, options));
}

// A TensorFlow string attr is bytes; graph JSON holds text, so other bytes are refused (a
// fuzzing finding: they used to throw out of the JSON writer).
TEST(ImportTfTest, AttrBytesThatAreNotUtf8AreRefused) {
  Expected<ImportResult> r = ImportText(R"(
    node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "shape" value { shape { dim { size: 1 } dim { size: 4 } dim { size: 4 }
                                          dim { size: 1 } } } } }
    node { name: "w" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "shape" value { shape { dim { size: 1 } dim { size: 1 } dim { size: 1 }
                                          dim { size: 1 } } } } }
    node { name: "y" op: "Conv2D" input: "x" input: "w"
      attr { key: "T" value { type: DT_FLOAT } }
      attr { key: "strides" value { list { i: 1 i: 1 i: 1 i: 1 } } }
      attr { key: "padding" value { s: "\377" } } })");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(Errors(r).find("holds bytes that are not UTF-8 text"), std::string::npos) << Errors(r);
}

TEST(ImportTfTest, FeedDtypeComesFromTheOutputTypeAttr) {
  Expected<ImportResult> r = ImportText(R"(
    node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "shape" value { shape { dim { size: 1 } dim { size: 8 } } } } }
    node { name: "sh" op: "Shape" input: "x" attr { key: "T" value { type: DT_FLOAT } }
      attr { key: "out_type" value { type: DT_INT32 } }
      attr { key: "_output_shapes" value { list { shape { dim { size: 2 } } } } } }
    node { name: "y" op: "Identity" input: "sh" attr { key: "T" value { type: DT_INT32 } } }
  )",
                                        ImportOptions{{"y"}, {"sh"}});
  ASSERT_TRUE(r.ok()) << Errors(r);
  EXPECT_EQ(r->graph.FindNode("sh")->attrs, json({{"dtype", "int32"}, {"shape", {2}}}));
}

TEST(ImportTfTest, TooManyValuesAndBadTensorContentAreErrors) {
  Expected<ImportResult> r = ImportText(R"(
    node { name: "a" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 1 } } float_val: 1 float_val: 2 } } } }
    node { name: "b" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } } tensor_content: "abc" } } } }
    node { name: "huge" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "value" value { tensor { dtype: DT_FLOAT
        tensor_shape { dim { size: 100000 } dim { size: 100000 } dim { size: 100000 } } float_val: 0 } } } }
  )");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("node 'a' (Const): attr 'value': 2 values for shape [1]"),
            std::string::npos)
      << Errors(r);
  EXPECT_NE(r.status().message().find("node 'b' (Const): attr 'value': tensor_content has 3 bytes"),
            std::string::npos)
      << Errors(r);
  EXPECT_NE(r.status().message().find(
                "node 'huge' (Const): attr 'value': shape [100000,100000,100000] is too large"),
            std::string::npos)
      << Errors(r);
}

TEST(ImportTfTest, InputsAttrsAndControlEdges) {
  // Nodes listed consumers first; "^ctl" dropped; "n:1" kept; T and _class dropped.
  Expected<ImportResult> r = ImportText(R"(
    node { name: "scope/dx" op: "Conv2DBackpropInput" input: "s:1" input: "w" input: "dy" input: "^init"
      attr { key: "T" value { type: DT_FLOAT } }
      attr { key: "_class" value { list { s: "loc:@w" } } }
      attr { key: "strides" value { list { i: 1 i: 2 i: 2 i: 1 } } }
      attr { key: "padding" value { s: "SAME" } }
      attr { key: "data_format" value { s: "NHWC" } }
      attr { key: "use_cudnn_on_gpu" value { b: true } }
      attr { key: "explicit_paddings" value { list { } } }
      attr { key: "dilations" value { list { i: 1 i: 1 i: 1 i: 1 } } } }
    node { name: "s" op: "ShapeN" input: "dy" input: "x" attr { key: "N" value { i: 2 } }
      attr { key: "out_type" value { type: DT_INT32 } } }
    node { name: "init" op: "NoOp" }
    node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "shape" value { shape { dim { size: 1 } dim { size: 8 } dim { size: 8 } dim { size: 2 } } } } }
    node { name: "w" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "shape" value { shape { dim { size: 3 } dim { size: 3 } dim { size: 2 } dim { size: 4 } } } } }
    node { name: "dy" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "shape" value { shape { dim { size: -1 } dim { size: 4 } dim { size: 4 } dim { size: 4 } } } } }
  )");
  ASSERT_TRUE(r.ok()) << Errors(r);
  const Graph& g = r->graph;
  const Node* dx = g.FindNode("scope/dx");
  ASSERT_NE(dx, nullptr);
  EXPECT_EQ(dx->inputs.at("input_sizes")[0].ToString(), "s:1");
  EXPECT_EQ(dx->inputs.at("filter")[0].ToString(), "w");
  EXPECT_EQ(dx->inputs.at("out_backprop")[0].ToString(), "dy");
  EXPECT_EQ(dx->attrs, json({{"strides", {1, 2, 2, 1}},
                             {"padding", "SAME"},
                             {"data_format", "NHWC"},
                             {"dilations", {1, 1, 1, 1}}}));
  const Node* s = g.FindNode("s");
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->inputs.at("input").size(), 2u);
  EXPECT_EQ(s->attrs, json({{"out_type", "int32"}}));
  EXPECT_EQ(g.FindNode("dy")->attrs["shape"], json({-1, 4, 4, 4}));
  // Producers come before consumers.
  EXPECT_LT(g.IndexOf("s"), g.IndexOf("scope/dx"));
  EXPECT_LT(g.IndexOf("x"), g.IndexOf("s"));
  // The imported graph is valid, and ShapeN's value folds so the conv knows its size.
  GraphAnalysis a = AnalyzeGraph(g, OpRegistry::Global());
  ASSERT_TRUE(a.ok()) << a.issues[0].ToString();
  EXPECT_EQ(a.nodes[static_cast<size_t>(g.IndexOf("scope/dx"))].outputs[0].shape,
            (Shape{1, 8, 8, 2}));
}

TEST(ImportTfTest, UnsupportedOpsNameTheCutAndFeedsCutThere) {
  const std::string pbtxt = R"(
    node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "shape" value { shape { dim { size: 2 } dim { size: 3 } } } } }
    node { name: "u" op: "Unpack" input: "x" attr { key: "T" value { type: DT_FLOAT } }
      attr { key: "num" value { i: 2 } } attr { key: "axis" value { i: 0 } }
      attr { key: "_output_shapes" value { list { shape { dim { size: 3 } } shape { dim { size: 3 } } } } } }
    node { name: "y" op: "Identity" input: "u:1" attr { key: "T" value { type: DT_FLOAT } } }
  )";
  Expected<ImportResult> r = ImportText(pbtxt);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(
                "node 'u' (Unpack): blockflow has no block 'Unpack'; cut it off with --feed u:1"),
            std::string::npos)
      << Errors(r);

  ImportOptions cut;
  cut.feeds = {"u:1"};
  cut.fetches = {"y"};
  r = ImportText(pbtxt, cut);
  ASSERT_TRUE(r.ok()) << Errors(r);
  const Node* p = r->graph.FindNode("u_1");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->op, "Placeholder");
  EXPECT_EQ(p->attrs, json({{"dtype", "float32"}, {"shape", {3}}}));  // T and _output_shapes[1]
  EXPECT_EQ(r->graph.FindNode("y")->inputs.at("input")[0].ToString(), "u_1");
  EXPECT_EQ(r->graph.nodes().size(), 2u);  // x is not needed by y

  ImportOptions bad;
  bad.feeds = {"nope"};
  r = ImportText(pbtxt, bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--feed nope: there is no node 'nope'"), std::string::npos)
      << Errors(r);
}

TEST(ImportTfTest, MalformedInputsAreErrorsWithPosition) {
  Expected<ImportResult> r = ImportText("node { name: \"a\"\n op: Const }\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("t.pbtxt:2:"), std::string::npos) << Errors(r);
  RegisterBuiltinBlocks();
  r = tfimport::ImportGraphDef("\x0a\xff\xff", "t.pb", GraphDefFormat::kBinary, {},
                               OpRegistry::Global());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("t.pb: not a valid binary GraphDef"), std::string::npos)
      << Errors(r);
  r = tfimport::ImportGraphDef("{\"node\": [", "t.json", GraphDefFormat::kJson, {},
                               OpRegistry::Global());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("t.json: not a valid JSON GraphDef"), std::string::npos)
      << Errors(r);
  r = ImportText("node { name: \"a\" op: \"Identity\" input: \"missing\" }");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("input 'missing' names no node"), std::string::npos)
      << Errors(r);
}

// Parsers skip unknown fields, so a file that is no GraphDef (a blockflow graph, an
// empty file) parses as a GraphDef without nodes: an error, not an empty graph.
TEST(ImportTfTest, AGraphDefWithoutNodesIsAnError) {
  RegisterBuiltinBlocks();
  for (const auto& [bytes, format] : std::vector<std::pair<std::string, GraphDefFormat>>{
           {R"({"format": "blockflow.graph", "version": 1, "nodes": []})", GraphDefFormat::kJson},
           {"", GraphDefFormat::kBinary},
           {"", GraphDefFormat::kText}}) {
    Expected<ImportResult> r =
        tfimport::ImportGraphDef(bytes, "g.x", format, {}, OpRegistry::Global());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("g.x: the GraphDef has no nodes"), std::string::npos)
        << Errors(r);
  }
}

TEST(ImportTfTest, DetectsTheFormat) {
  using tfimport::DetectFormat;
  EXPECT_EQ(DetectFormat("a.pb", ""), GraphDefFormat::kBinary);
  EXPECT_EQ(DetectFormat("a.pbtxt", ""), GraphDefFormat::kText);
  EXPECT_EQ(DetectFormat("a.json", ""), GraphDefFormat::kJson);
  EXPECT_EQ(DetectFormat("a.graph", "  {\"node\": []}"), GraphDefFormat::kJson);
  EXPECT_EQ(DetectFormat("a.graph", "node { name: \"x\" }"), GraphDefFormat::kText);
  EXPECT_EQ(DetectFormat("a.graph", std::string("\x0a\x05\x0a\x01x", 5)), GraphDefFormat::kBinary);
}

// ---------------------------------------------------------------------------
// The samples through the binary.

struct SeedSample {
  std::string name;
  std::string node;        // the conv node's name
  std::string equivalent;  // the same graph written by hand as blockflow JSON
};

json Values(int64_t count, int64_t offset, int64_t kept = -1) {
  json a = json::array();
  for (int64_t i = 0; i < count; ++i)
    a.push_back(SampleValue(kept >= 0 ? std::min(i, kept - 1) : i, offset));
  return a;
}

std::string GraphText(const json& nodes) {
  return json{{"format", "blockflow.graph"}, {"version", 1}, {"nodes", nodes}}.dump();
}

std::vector<SeedSample> SeedSamples() {
  std::vector<SeedSample> s;
  s.push_back(
      {"conv2d_backprop_filter", "conv_grad/Conv2DBackpropFilter",
       GraphText(
           {{{"id", "input"},
             {"op", "Const"},
             {"attrs", {{"dtype", "float32"}, {"shape", {1, 5, 5, 3}}, {"value", Values(75, 0)}}}},
            {{"id", "filter_sizes"},
             {"op", "Const"},
             {"attrs", {{"dtype", "int32"}, {"shape", {4}}, {"value", {3, 3, 3, 2}}}}},
            {{"id", "out_backprop"},
             {"op", "Const"},
             {"attrs",
              {{"dtype", "float32"}, {"shape", {1, 3, 3, 2}}, {"value", Values(18, 100)}}}},
            {{"id", "conv_grad/Conv2DBackpropFilter"},
             {"op", "Conv2DBackpropFilter"},
             {"inputs",
              {{"input", "input"},
               {"filter_sizes", "filter_sizes"},
               {"out_backprop", "out_backprop"}}},
             {"attrs", {{"strides", {1, 2, 2, 1}}, {"padding", "SAME"}}}}})});
  s.push_back(
      {"depthwise_conv2d_native_backprop_filter",
       "depthwise_grad/DepthwiseConv2dNativeBackpropFilter",
       GraphText({{{"id", "input"},
                   {"op", "Const"},
                   {"attrs",
                    {{"dtype", "float32"}, {"shape", {1, 6, 6, 2}}, {"value", Values(72, 300)}}}},
                  {{"id", "filter_sizes"},
                   {"op", "Const"},
                   {"attrs", {{"dtype", "int32"}, {"shape", {4}}, {"value", {3, 3, 2, 2}}}}},
                  {{"id", "out_backprop"},
                   {"op", "Const"},
                   {"attrs",
                    {{"dtype", "float32"}, {"shape", {1, 4, 4, 4}}, {"value", Values(64, 200)}}}},
                  {{"id", "dw"},
                   {"op", "DepthwiseConv2dNativeBackpropFilter"},
                   {"inputs",
                    {{"input", "input"},
                     {"filter_sizes", "filter_sizes"},
                     {"out_backprop", "out_backprop"}}},
                   {"attrs", {{"strides", {1, 1, 1, 1}}, {"padding", "VALID"}}}}})});
  s.push_back(
      {"depthwise_conv2d_native_backprop_input",
       "depthwise_grad/DepthwiseConv2dNativeBackpropInput",
       GraphText(
           {{{"id", "input_sizes"},
             {"op", "Const"},
             {"attrs", {{"dtype", "int32"}, {"shape", {4}}, {"value", {1, 6, 6, 2}}}}},
            {{"id", "filter"},
             {"op", "Const"},
             {"attrs",
              {{"dtype", "float64"}, {"shape", {3, 3, 2, 1}}, {"value", Values(18, 400)}}}},
            {{"id", "out_backprop"},
             {"op", "Const"},
             {"attrs",
              {{"dtype", "float64"}, {"shape", {1, 3, 3, 2}}, {"value", Values(18, 500, 7)}}}},
            {{"id", "dw"},
             {"op", "DepthwiseConv2dNativeBackpropInput"},
             {"inputs",
              {{"input_sizes", "input_sizes"},
               {"filter", "filter"},
               {"out_backprop", "out_backprop"}}},
             {"attrs", {{"strides", {1, 2, 2, 1}}, {"padding", "SAME"}}}}})});
  return s;
}

TEST(ImportTfCliTest, SeedSamplesRoundTripInAllThreeFormsWithTheSameNumbers) {
  const fs::path tf = SourceDir() / "samples" / "tf";
  for (const SeedSample& s : SeedSamples()) {
    SCOPED_TRACE(s.name);
    // The equivalent graph, written by hand.
    TempDir ref;
    WriteText(ref / "g.json", s.equivalent);
    CmdResult rr = RunBlockflow({"run", "g.json", "--out", "o"}, ref.path().string());
    ASSERT_EQ(rr.rc, 0) << rr.err;
    fs::path ref_file;
    for (const auto& f : fs::recursive_directory_iterator(ref / "o")) {
      if (f.path().extension() == ".npy") ref_file = f.path();
    }
    Expected<Tensor> expected = ReadNpy(ref_file.string());
    ASSERT_TRUE(expected.ok()) << expected.status().message();

    std::string first_graph;
    for (const char* ext : {".pb", ".pbtxt", ".json"}) {
      SCOPED_TRACE(ext);
      TempDir d;
      CmdResult imp = RunBlockflow({"import-tf", (tf / (s.name + ext)).string(), "-o", "g.json"},
                                   d.path().string());
      ASSERT_EQ(imp.rc, 0) << imp.err;
      const std::string graph = ReadText(d / "g.json");
      // The three forms give the same graph, byte for byte.
      if (first_graph.empty()) first_graph = graph;
      EXPECT_EQ(graph, first_graph);
      EXPECT_EQ(graph.find("\"T\""), std::string::npos) << "TensorFlow-only attrs must be dropped";
      EXPECT_EQ(graph.find("use_cudnn_on_gpu"), std::string::npos);
      CmdResult v = RunBlockflow({"validate", "g.json"}, d.path().string());
      EXPECT_EQ(v.rc, 0) << v.err;
      CmdResult run =
          RunBlockflow({"run", "g.json", "--fetch", s.node, "--out", "o"}, d.path().string());
      ASSERT_EQ(run.rc, 0) << run.err;
      Expected<Tensor> got = ReadNpy(d / ("o/" + s.node + ".npy"));
      ASSERT_TRUE(got.ok()) << got.status().message();
      EXPECT_TRUE(got->BitwiseEquals(*expected))
          << got->DebugString() << " vs " << expected->DebugString();
    }
  }
}

// The output may live anywhere: its Const files go beside it and resolve from there.
TEST(ImportTfCliTest, OutputInAnotherFolder) {
  const fs::path src = SourceDir() / "samples" / "tf" / "conv2d_backprop_filter.pbtxt";
  TempDir cwd, target;
  const std::string out = target / "deep/er/bpf.json";
  CmdResult imp = RunBlockflow({"import-tf", src.string(), "-o", out}, cwd.path().string());
  ASSERT_EQ(imp.rc, 0) << imp.err;
  EXPECT_TRUE(fs::exists(target / "deep/er/bpf_consts/input.npy"));
  CmdResult run = RunBlockflow({"run", out}, cwd.path().string());
  EXPECT_EQ(run.rc, 0) << run.err;
}

// An import that converts but does not validate exits 1 and, like any failed import,
// writes nothing: no graph, no Const files.
TEST(ImportTfCliTest, AnInvalidResultWritesNothing) {
  TempDir d;
  WriteText(d / "bad.pbtxt", R"(
    node { name: "a" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } } float_val: 1 } } } }
    node { name: "b" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
      attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 2 } } int_val: 1 } } } }
    node { name: "big" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 100 } } float_val: 2 } } } }
    node { name: "c" op: "Add" input: "a" input: "b" attr { key: "T" value { type: DT_FLOAT } } }
  )");
  CmdResult r = RunBlockflow({"import-tf", "bad.pbtxt", "-o", "g.json"}, d.path().string());
  EXPECT_EQ(r.rc, 1) << r.err;
  // The error names the input: the output was never written.
  EXPECT_NE(r.err.find("error: bad.pbtxt: node 'c' (Add):"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("g.json"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(d / "g.json"));
  EXPECT_FALSE(fs::exists(d / "g_consts"));
}

TEST(ImportTfCliTest, TrainingExcerptNeedsFetchAndFeed) {
  const fs::path tf = SourceDir() / "samples" / "tf";
  const std::string bpi = "gradients/conv1/Conv2D_grad/tuple/control_dependency";
  const std::string bpf = "gradients/conv1/Conv2D_grad/tuple/control_dependency_1";
  for (const char* ext : {".pbtxt", ".pb", ".json"}) {
    SCOPED_TRACE(ext);
    const std::string src = (tf / (std::string("conv_train_step") + ext)).string();
    TempDir d;
    // Without a cut: every op blockflow lacks is named, with the --feed that removes it.
    CmdResult whole = RunBlockflow({"import-tf", src, "-o", "g.json"}, d.path().string());
    EXPECT_EQ(whole.rc, 1);
    for (const char* want :
         {"node 'conv1/weights' (VariableV2): blockflow has no block 'VariableV2'",
          "--feed conv1/weights", "node 'conv1/Relu' (Relu)",
          "node 'gradients/conv1/Relu_grad/ReluGrad' (ReluGrad)",
          "--feed gradients/conv1/Relu_grad/ReluGrad", "(ApplyGradientDescent)", "--fetch"}) {
      EXPECT_NE(whole.err.find(want), std::string::npos) << want << "\n" << whole.err;
    }
    EXPECT_FALSE(fs::exists(d / "g.json"));
    // Fetch only: ReluGrad and the variable remain in the way.
    CmdResult fetch_only =
        RunBlockflow({"import-tf", src, "-o", "g.json", "--fetch", bpf}, d.path().string());
    EXPECT_EQ(fetch_only.rc, 1);
    EXPECT_NE(fetch_only.err.find("--feed gradients/conv1/Relu_grad/ReluGrad"), std::string::npos)
        << fetch_only.err;
    EXPECT_EQ(fetch_only.err.find("ApplyGradientDescent"), std::string::npos) << fetch_only.err;

    CmdResult ok =
        RunBlockflow({"import-tf", src, "-o", "g.json", "--fetch", bpi, "--fetch", bpf, "--feed",
                      "gradients/conv1/Relu_grad/ReluGrad", "--feed", "conv1/weights/read"},
                     d.path().string());
    ASSERT_EQ(ok.rc, 0) << ok.err;
    Expected<Graph> g = LoadGraphFile(d / "g.json");
    ASSERT_TRUE(g.ok()) << g.status().message();
    EXPECT_EQ(g->FindNode("conv1/weights/read")->op, "Placeholder");
    EXPECT_EQ(g->FindNode("conv1/weights/read")->attrs["shape"], json({3, 3, 3, 4}));
    EXPECT_EQ(g->FindNode("gradients/conv1/Relu_grad/ReluGrad")->op, "Placeholder");
    EXPECT_EQ(g->FindNode("gradients/conv1/Conv2D_grad/ShapeN")->op, "ShapeN");
    EXPECT_EQ(g->FindNode("conv1/Conv2D"), nullptr);  // not needed by the fetches
    EXPECT_EQ(g->FindNode("gradients/conv1/Conv2D_grad/tuple/group_deps"), nullptr);

    // Run it with feeds; ShapeN's sizes fold, the gradients have the variable's shapes.
    std::vector<float> x(size_t{2} * 8 * 8 * 3), w(size_t{3} * 3 * 3 * 4),
        dy(size_t{2} * 8 * 8 * 4);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = static_cast<float>(SampleValue(static_cast<int64_t>(i), 1));
    for (size_t i = 0; i < w.size(); ++i)
      w[i] = static_cast<float>(SampleValue(static_cast<int64_t>(i), 2));
    for (size_t i = 0; i < dy.size(); ++i)
      dy[i] = static_cast<float>(SampleValue(static_cast<int64_t>(i), 3));
    ASSERT_TRUE(WriteNpy(d / "x.npy", Tensor::FromVector(x, Shape{2, 8, 8, 3})).ok());
    ASSERT_TRUE(WriteNpy(d / "w.npy", Tensor::FromVector(w, Shape{3, 3, 3, 4})).ok());
    ASSERT_TRUE(WriteNpy(d / "dy.npy", Tensor::FromVector(dy, Shape{2, 8, 8, 4})).ok());
    CmdResult run = RunBlockflow(
        {"run", "g.json", "--feed", "input=x.npy", "--feed", "conv1/weights/read=w.npy", "--feed",
         "gradients/conv1/Relu_grad/ReluGrad=dy.npy", "--out", "o"},
        d.path().string());
    ASSERT_EQ(run.rc, 0) << run.err;
    Expected<Tensor> dx = ReadNpy(d / ("o/" + bpi + ".npy"));
    Expected<Tensor> dw = ReadNpy(d / ("o/" + bpf + ".npy"));
    ASSERT_TRUE(dx.ok() && dw.ok());
    EXPECT_EQ(dx->shape(), (Shape{2, 8, 8, 3}));
    EXPECT_EQ(dw->shape(), (Shape{3, 3, 3, 4}));
    // Filter gradient at the centre tap, channel 0 → 0: sum over n,h,w of x * dy (SAME, 3x3, so the
    // centre tap sees every pixel).
    double centre = 0;
    for (int64_t p = 0; p < int64_t{2} * 8 * 8; ++p)
      centre += static_cast<double>(x[static_cast<size_t>(p * 3)]) * dy[static_cast<size_t>(p * 4)];
    EXPECT_NEAR(dw->GetAsDouble(((1 * 3 + 1) * 3 + 0) * 4 + 0), centre,
                1e-4 * (1 + std::abs(centre)));
  }
}

// ---------------------------------------------------------------------------
// Shapes of fed tensors: given, from a file, or inferred.

// Inference through blockflow's blocks and the shape-only rules of ops it lacks, on a graph
// without _output_shapes. Expected shapes worked out by hand from TensorFlow's rules.
TEST(ImportTfTest, FeedShapesAreInferredThroughOpsBlockflowLacks) {
  const std::string pbtxt = R"(
    node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "shape" value { shape { dim { size: 2 } dim { size: 28 } dim { size: 28 } dim { size: 3 } } } } }
    node { name: "w" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 5 } dim { size: 5 } dim { size: 3 } dim { size: 6 } } float_val: 0.5 } } } }
    node { name: "conv" op: "Conv2D" input: "x" input: "w" attr { key: "T" value { type: DT_FLOAT } }
      attr { key: "strides" value { list { i: 1 i: 1 i: 1 i: 1 } } } attr { key: "padding" value { s: "VALID" } } }
    node { name: "relu" op: "Relu" input: "conv" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "pool" op: "MaxPool" input: "relu" attr { key: "T" value { type: DT_FLOAT } }
      attr { key: "ksize" value { list { i: 1 i: 3 i: 3 i: 1 } } } attr { key: "strides" value { list { i: 1 i: 2 i: 2 i: 1 } } }
      attr { key: "padding" value { s: "SAME" } } }
    node { name: "avg" op: "AvgPool" input: "pool" attr { key: "T" value { type: DT_FLOAT } }
      attr { key: "ksize" value { list { i: 1 i: 3 i: 3 i: 1 } } } attr { key: "strides" value { list { i: 1 i: 2 i: 2 i: 1 } } }
      attr { key: "padding" value { s: "VALID" } } }
    node { name: "b" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 6 } } float_val: 1 } } } }
    node { name: "bias" op: "BiasAdd" input: "pool" input: "b" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "pads" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
      attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 4 } dim { size: 2 } }
        int_val: 0 int_val: 0 int_val: 1 int_val: 2 int_val: 0 int_val: 1 int_val: 0 int_val: 0 } } } }
    node { name: "pad" op: "Pad" input: "bias" input: "pads" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "axis" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
      attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { } int_val: -1 } } } }
    node { name: "cat" op: "ConcatV2" input: "pad" input: "pad" input: "axis" attr { key: "T" value { type: DT_FLOAT } }
      attr { key: "N" value { i: 2 } } }
    node { name: "flat_shape" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
      attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 2 } } int_val: 2 int_val: -1 } } } }
    node { name: "flat" op: "Reshape" input: "cat" input: "flat_shape" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "fc_w" op: "VariableV2" attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "shape" value { shape { dim { size: 10 } dim { size: 1848 } } } } }
    node { name: "fc" op: "MatMul" input: "flat" input: "fc_w" attr { key: "T" value { type: DT_FLOAT } }
      attr { key: "transpose_b" value { b: true } } }
    node { name: "dim" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
      attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { } int_val: 1 } } } }
    node { name: "expand" op: "ExpandDims" input: "fc" input: "dim" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "squeeze" op: "Squeeze" input: "expand" attr { key: "T" value { type: DT_FLOAT } }
      attr { key: "squeeze_dims" value { list { i: 1 } } } }
    node { name: "out" op: "Identity" input: "squeeze" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "out_avg" op: "Identity" input: "avg" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "shape_x" op: "Shape" input: "x" attr { key: "T" value { type: DT_FLOAT } }
      attr { key: "out_type" value { type: DT_INT32 } } }
    node { name: "i0" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
      attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 1 } } int_val: 0 } } } }
    node { name: "i1" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
      attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 1 } } int_val: 1 } } } }
    node { name: "batch" op: "StridedSlice" input: "shape_x" input: "i0" input: "i1" input: "i1"
      attr { key: "T" value { type: DT_INT32 } } attr { key: "Index" value { type: DT_INT32 } }
      attr { key: "shrink_axis_mask" value { i: 1 } } }
    node { name: "minus1" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
      attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { } int_val: -1 } } } }
    node { name: "flat2_shape" op: "Pack" input: "batch" input: "minus1"
      attr { key: "T" value { type: DT_INT32 } } attr { key: "N" value { i: 2 } } attr { key: "axis" value { i: 0 } } }
    node { name: "flat2" op: "Reshape" input: "x" input: "flat2_shape" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "tanh2" op: "Tanh" input: "flat2" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "xc" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "shape" value { shape { dim { size: 2 } dim { size: 3 } dim { size: 28 } dim { size: 27 } } } } }
    node { name: "pool_nchw" op: "MaxPool" input: "xc" attr { key: "T" value { type: DT_FLOAT } }
      attr { key: "ksize" value { list { i: 1 i: 1 i: 2 i: 2 } } } attr { key: "strides" value { list { i: 1 i: 1 i: 2 i: 2 } } }
      attr { key: "padding" value { s: "VALID" } } attr { key: "data_format" value { s: "NCHW" } } }
    node { name: "bgrad_nchw" op: "BiasAddGrad" input: "pool_nchw" attr { key: "T" value { type: DT_FLOAT } }
      attr { key: "data_format" value { s: "NCHW" } } }
  )";
  // conv VALID 5x5: 24x24x6; pool SAME 3x3/2: 12x12; avg VALID 3x3/2: 5x5; pad: 12+1+2=15 rows,
  // 12+0+1=13 cols; concat on channels: 12; reshape: [2, 15*13*12=2340]...
  RegisterBuiltinBlocks();
  Expected<tfimport::pb::GraphDef> gd =
      tfimport::ParseGraphDef(pbtxt, "t.pbtxt", GraphDefFormat::kText);
  ASSERT_TRUE(gd.ok()) << gd.status().message();
  Expected<tfimport::ImportPlan> plan = tfimport::ReadGraph(*gd, {});
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  tfimport::GraphFacts facts(*gd, *plan, OpRegistry::Global());
  struct Want {
    const char* feed;
    std::vector<int64_t> shape;
  };
  for (const Want& w : std::vector<Want>{{"relu", {2, 24, 24, 6}},
                                         {"pool", {2, 12, 12, 6}},
                                         {"avg", {2, 5, 5, 6}},
                                         {"bias", {2, 12, 12, 6}},
                                         {"pad", {2, 15, 13, 6}},
                                         {"cat", {2, 15, 13, 12}},
                                         {"flat", {2, 2340}},
                                         {"fc", {2, 10}},
                                         {"expand", {2, 1, 10}},
                                         {"squeeze", {2, 10}},
                                         {"pool_nchw", {2, 3, 14, 13}},
                                         {"bgrad_nchw", {3}},
                                         {"tanh2", {2, 2352}}}) {
    SCOPED_TRACE(w.feed);
    EXPECT_EQ(facts.Get({w.feed, 0}).dims, w.shape) << facts.Get({w.feed, 0}).unknown;
    EXPECT_EQ(facts.Get({w.feed, 0}).dtype, DType::kFloat32);
  }
  // Through the import: the cut at 'squeeze' takes the inferred shape.
  ImportOptions o;
  o.fetches = {"out"};
  o.feeds = {"squeeze"};
  Expected<ImportResult> r = ImportText(pbtxt, o);
  ASSERT_TRUE(r.ok()) << Errors(r);
  EXPECT_EQ(r->graph.FindNode("squeeze")->attrs, json({{"dtype", "float32"}, {"shape", {2, 10}}}));
}

// What no rule can tell is an error that names the node where the unknown starts and the two
// --feed forms that give the shape.
TEST(ImportTfTest, AShapeThatCannotBeToldSaysWhereAndHowToGiveIt) {
  const std::string pbtxt = R"(
    node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "shape" value { shape { dim { size: 8 } } } } }
    node { name: "u" op: "Unique" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "r" op: "Relu" input: "u" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "y" op: "Identity" input: "r" attr { key: "T" value { type: DT_FLOAT } } }
  )";
  ImportOptions o;
  o.fetches = {"y"};
  o.feeds = {"r"};
  Expected<ImportResult> r = ImportText(pbtxt, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "--feed r: cannot tell the shape of 'r': node 'u' (Unique): blockflow has no block "
            "'Unique' and no shape rule for it; give them with --feed r:float32[d0,d1,...] (-1 "
            "for a free size) or --feed r=FILE.npy");
  o.feeds = {"r:float32[-1]"};
  r = ImportText(pbtxt, o);
  ASSERT_TRUE(r.ok()) << Errors(r);
  EXPECT_EQ(r->graph.FindNode("r")->attrs, json({{"dtype", "float32"}, {"shape", {-1}}}));
}

// A dtype blockflow lacks, or none at all, is named at the node that has it.
TEST(ImportTfTest, AFeedWhoseDtypeCannotBeToldSaysWhy) {
  const std::string pbtxt = R"(
    node { name: "s" op: "Placeholder" attr { key: "dtype" value { type: DT_STRING } }
      attr { key: "shape" value { shape { dim { size: 2 } } } } }
    node { name: "q" op: "SomeOp" input: "s" }
    node { name: "y" op: "Identity" input: "q" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "y2" op: "Identity" input: "s" attr { key: "T" value { type: DT_STRING } } }
  )";
  ImportOptions o;
  o.fetches = {"y"};
  o.feeds = {"q"};
  Expected<ImportResult> r = ImportText(pbtxt, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "--feed q: cannot tell the dtype of 'q': node 'q' (SomeOp): no attr gives the dtype "
            "of output 0; give them with --feed q:float32[d0,d1,...] (-1 for a free size) or "
            "--feed q=FILE.npy");
  o.fetches = {"y2"};
  o.feeds = {"s"};
  r = ImportText(pbtxt, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--feed s: cannot tell the dtype of 's': node 's' "
                                      "(Placeholder): output 0: dtype DT_STRING has no blockflow "
                                      "equivalent"),
            std::string::npos)
      << Errors(r);
  o.feeds = {"q:float32[4]"};
  o.fetches = {"y"};
  r = ImportText(pbtxt, o);
  EXPECT_TRUE(r.ok()) << Errors(r);
}

TEST(ImportTfTest, MalformedFeedFlagsAreErrors) {
  const std::string pbtxt = R"(
    node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "shape" value { shape { dim { size: 8 } } } } }
    node { name: "y" op: "Identity" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
  )";
  for (const auto& [feed, want] : std::vector<std::pair<std::string, std::string>>{
           {"x:float33[8]", "--feed x:float33[8]: 'float33' is not a dtype"},
           {"x:float32[8,", "--feed x:float32[8,: expected NAME[:K]:DTYPE[d0,d1,...]"},
           {"x:float32[8,-2]", "--feed x:float32[8,-2]: expected NAME[:K]:DTYPE[d0,d1,...]"},
           {"x=", "--feed x=: expected NAME[:K]=FILE.npy"},
           {"x=missing.npy", "--feed x=missing.npy: "},
           {"nope:int32[1]", "--feed nope:int32[1]: there is no node 'nope'"}}) {
    SCOPED_TRACE(feed);
    ImportOptions o;
    o.fetches = {"y"};
    o.feeds = {feed};
    Expected<ImportResult> r = ImportText(pbtxt, o);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().message().rfind(want, 0), 0u) << Errors(r);
  }
}

// TensorFlow before GraphDef version 22 wrote `shape {}` for a Placeholder of any shape.
TEST(ImportTfCliTest, OldProducerPlaceholdersHaveAnUnknownShape) {
  const fs::path src = SourceDir() / "tests/data/tf/old_producer.pbtxt";
  TempDir d;
  CmdResult r = RunBlockflow({"import-tf", src.string(), "-o", "g.json"}, d.path().string());
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "error: " + src.string() +
                       ": node 'x' (Placeholder): its shape is unknown (`shape {}` in a GraphDef "
                       "of producer 21, before 22, means any shape, not a scalar); blockflow "
                       "needs its rank (sizes may be -1): give them with --feed "
                       "x:float32[d0,d1,...] (-1 for a free size) or --feed x=FILE.npy\n");
  EXPECT_FALSE(fs::exists(d / "g.json"));
  // From version 22 on, the same attr is a scalar (and the Reshape then fails, naming itself).
  std::string text = ReadText(src.string());
  text.replace(text.find("producer: 21"), 12, "producer: 22");
  WriteText(d / "new.pbtxt", text);
  r = RunBlockflow({"import-tf", "new.pbtxt", "-o", "g.json"}, d.path().string());
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("error: new.pbtxt: node 'Reshape' (Reshape)"), std::string::npos) << r.err;
  // Given a shape, it imports and runs: [3,784] → [3,28,28,1] → conv SAME → [3,28,28,4].
  r = RunBlockflow({"import-tf", src.string(), "-o", "g.json", "--feed", "x:float32[-1,784]"},
                   d.path().string());
  ASSERT_EQ(r.rc, 0) << r.err;
  std::vector<float> x(size_t{3} * 784, 0.25f);
  ASSERT_TRUE(WriteNpy(d / "x.npy", Tensor::FromVector(x, Shape{3, 784})).ok());
  r = RunBlockflow({"run", "g.json", "--feed", "x=x.npy", "--fetch", "conv1/Conv2D"},
                   d.path().string());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("[3,28,28,4]"), std::string::npos) << r.out;
}

// Queue outputs: dtypes from component_types, shapes from the queue's shapes attr (and the
// dequeue count); a queue without shapes is named where the problem starts.
TEST(ImportTfCliTest, QueueOutputsCanBeFed) {
  const fs::path src = SourceDir() / "tests/data/tf/queue_input.pbtxt";
  TempDir d;
  CmdResult r = RunBlockflow({"import-tf", src.string(), "-o", "g.json", "--fetch",
                              "gradients/conv/Conv2D_grad/Conv2DBackpropFilter", "--feed", "batch",
                              "--feed", "batch:1", "--feed", "conv/weights/read"},
                             d.path().string());
  ASSERT_EQ(r.rc, 0) << r.err;
  Expected<Graph> g = LoadGraphFile(d / "g.json");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->FindNode("batch")->attrs, json({{"dtype", "float32"}, {"shape", {2, 8, 8, 3}}}));
  EXPECT_EQ(g->FindNode("batch_1")->attrs, json({{"dtype", "float32"}, {"shape", {2, 8, 8, 4}}}));
  r = RunBlockflow({"import-tf", src.string(), "-o", "e.json", "--fetch", "eval/Conv2D", "--feed",
                    "eval/batch", "--feed", "conv/weights/read"},
                   d.path().string());
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "error: " + src.string() +
                       ": --feed eval/batch: cannot tell the shape of 'eval/batch': node "
                       "'eval/fifo_queue' (FIFOQueueV2): its component shapes are not given (no "
                       "shapes attr); give them with --feed eval/batch:float32[d0,d1,...] (-1 for "
                       "a free size) or --feed eval/batch=FILE.npy\n");
  r = RunBlockflow({"import-tf", src.string(), "-o", "e.json", "--fetch", "eval/Conv2D", "--feed",
                    "eval/batch:float32[-1,8,8,3]", "--feed", "conv/weights/read"},
                   d.path().string());
  EXPECT_EQ(r.rc, 0) << r.err;
}

// The three ways to give a feed's shape on the training-step sample (no _output_shapes): inferred,
// given, and from a .npy file that becomes the Placeholder's ui.feed, so that `blockflow run`
// needs no --feed.
TEST(ImportTfCliTest, EachFeedShapeForm) {
  const std::string src = (SourceDir() / "samples/tf/conv_train_step.pbtxt").string();
  const std::string bpf = "gradients/conv1/Conv2D_grad/Conv2DBackpropFilter";
  const std::string relu_grad = "gradients/conv1/Relu_grad/ReluGrad";
  TempDir d;
  // Inferred: ReluGrad's shape through Identity, Fill, Shape, Sub, Relu and Conv2D.
  CmdResult r = RunBlockflow({"import-tf", src, "-o", "a.json", "--fetch", bpf, "--feed", relu_grad,
                              "--feed", "conv1/weights"},
                             d.path().string());
  ASSERT_EQ(r.rc, 0) << r.err;
  Expected<Graph> g = LoadGraphFile(d / "a.json");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->FindNode(relu_grad)->attrs["shape"], json({2, 8, 8, 4}));
  EXPECT_EQ(g->FindNode("conv1/weights")->attrs["shape"], json({3, 3, 3, 4}));
  // Given, with a free size.
  r = RunBlockflow({"import-tf", src, "-o", "b.json", "--fetch", bpf, "--feed",
                    relu_grad + ":float32[-1,8,8,4]", "--feed", "conv1/weights"},
                   d.path().string());
  ASSERT_EQ(r.rc, 0) << r.err;
  g = LoadGraphFile(d / "b.json");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->FindNode(relu_grad)->attrs["shape"], json({-1, 8, 8, 4}));
  // From files inside the output's folder (written from another working folder), recorded
  // relative to the graph; the graph then runs without any --feed.
  std::vector<float> x(size_t{2} * 8 * 8 * 3), w(size_t{3} * 3 * 3 * 4), dy(size_t{2} * 8 * 8 * 4);
  auto fill = [](std::vector<float>& v, int64_t offset) {
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = static_cast<float>(SampleValue(static_cast<int64_t>(i), offset));
  };
  fill(x, 1);
  fill(w, 2);
  fill(dy, 3);
  fs::create_directories(d.path() / "out/data");
  ASSERT_TRUE(WriteNpy(d / "out/data/x.npy", Tensor::FromVector(x, Shape{2, 8, 8, 3})).ok());
  ASSERT_TRUE(WriteNpy(d / "out/data/w.npy", Tensor::FromVector(w, Shape{3, 3, 3, 4})).ok());
  ASSERT_TRUE(WriteNpy(d / "out/data/dy.npy", Tensor::FromVector(dy, Shape{2, 8, 8, 4})).ok());
  r = RunBlockflow({"import-tf", src, "-o", "out/c.json", "--fetch", bpf, "--feed",
                    relu_grad + "=out/data/dy.npy", "--feed", "conv1/weights=out/data/w.npy",
                    "--feed", "input=out/data/x.npy"},
                   d.path().string());
  ASSERT_EQ(r.rc, 0) << r.err;
  g = LoadGraphFile(d / "out/c.json");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->FindNode(relu_grad)->ui["feed"], "data/dy.npy");
  EXPECT_EQ(g->FindNode("input")->ui["feed"], "data/x.npy");
  EXPECT_EQ(g->FindNode("input")->attrs["shape"], json({2, 8, 8, 3}));
  r = RunBlockflow({"run", "out/c.json", "--fetch", bpf, "--out", "o"}, d.path().string());
  ASSERT_EQ(r.rc, 0) << r.err;
  Expected<Tensor> dw = ReadNpy(d / ("o/" + bpf + ".npy"));
  ASSERT_TRUE(dw.ok());
  double centre = 0;  // the centre tap, channel 0 → 0 (SAME 3x3: it sees every pixel)
  for (size_t p = 0; p < size_t{2} * 8 * 8; ++p)
    centre += static_cast<double>(x[p * 3]) * dy[p * 4];
  EXPECT_NEAR(dw->GetAsDouble(((1 * 3 + 1) * 3 + 0) * 4 + 0), centre,
              1e-4 * (1 + std::abs(centre)));
  // A file outside the output's folder is refused, naming the rule and the other way.
  ASSERT_TRUE(WriteNpy(d / "x_outside.npy", Tensor::FromVector(x, Shape{2, 8, 8, 3})).ok());
  r = RunBlockflow({"import-tf", src, "-o", "out/e.json", "--fetch", bpf, "--feed", relu_grad,
                    "--feed", "conv1/weights", "--feed", "input=x_outside.npy"},
                   d.path().string());
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "error: " + src +
                       ": --feed input=x_outside.npy: 'x_outside.npy' is outside the output "
                       "graph's folder 'out', and a graph names only files inside its folder; "
                       "copy it there, or give the shape with --feed input:float32[2,8,8,3] and "
                       "the file when you run the graph (blockflow run --feed)\n");
  EXPECT_FALSE(fs::exists(d / "out/e.json"));
}

// ---------------------------------------------------------------------------
// --gradients: every convolution node, each graph run and compared with the same op built
// directly in blockflow on the same data.

struct ConvCase {
  std::string node;                       // the GraphDef's node, fetched in its graph
  std::string op;                         // the blockflow op of the direct graph
  std::map<std::string, std::string> in;  // port → Placeholder of the imported graph feeding it
  std::string sizes_port;                 // the sizes port (none for Conv2D)
  std::vector<int> sizes;                 // its value
  int stride;
  std::set<std::string> fed;  // every Placeholder of the imported graph
};

// Writes seeded random values for every Placeholder of `graph` (shapes from their attrs)
// into `dir`; returns id → file.
std::map<std::string, std::string> RandomFeeds(const Graph& graph, const fs::path& dir,
                                               uint32_t seed) {
  std::map<std::string, std::string> files;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const Node& n : graph.nodes()) {
    if (n.op != "Placeholder") continue;
    std::vector<int64_t> dims = n.attrs["shape"].get<std::vector<int64_t>>();
    Shape shape(dims);
    std::vector<float> v(static_cast<size_t>(shape.num_elements()));
    for (float& f : v) f = u(rng);
    std::string file = n.id;
    std::replace(file.begin(), file.end(), '/', '.');
    file = (dir / (file + ".npy")).string();
    EXPECT_TRUE(WriteNpy(file, Tensor::FromVector(v, shape)).ok());
    files[n.id] = file;
  }
  return files;
}

void CheckGradients(const std::string& src, const std::vector<ConvCase>& cases) {
  TempDir d;
  CmdResult r = RunBlockflow({"import-tf", src, "--gradients", "-o", "grads"}, d.path().string());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')).find("node"), 0u) << r.out;
  for (const char* col : {"op", "geometry", "fed", "result"})
    EXPECT_NE(r.out.substr(0, r.out.find('\n')).find(col), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote " + std::to_string(cases.size()) + " of " +
                       std::to_string(cases.size()) + " convolution nodes to grads"),
            std::string::npos)
      << r.out;
  size_t files = 0;
  for (const auto& f : fs::directory_iterator(d.path() / "grads"))
    files += f.path().extension() == ".json";
  EXPECT_EQ(files, cases.size());
  std::map<std::string, Tensor> per_node;
  uint32_t seed = 1;
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(c.node);
    std::string file = c.node;
    std::replace(file.begin(), file.end(), '/', '.');
    EXPECT_NE(r.out.find("ok: " + file + ".json"), std::string::npos) << r.out;
    Expected<Graph> g = LoadGraphFile(d / ("grads/" + file + ".json"));
    ASSERT_TRUE(g.ok()) << g.status().message();
    std::set<std::string> fed;
    for (const Node& n : g->nodes()) {
      if (n.op == "Placeholder") fed.insert(n.id);
    }
    EXPECT_EQ(fed, c.fed);
    fs::create_directories(d.path() / ("data" + std::to_string(seed)));
    std::map<std::string, std::string> feeds =
        RandomFeeds(*g, d.path() / ("data" + std::to_string(seed)), seed);
    ++seed;
    std::vector<std::string> args = {"run", "grads/" + file + ".json", "--fetch", c.node, "--out",
                                     "o1"};
    for (const auto& [id, f] : feeds) args.insert(args.end(), {"--feed", id + "=" + f});
    CmdResult run = RunBlockflow(args, d.path().string());
    ASSERT_EQ(run.rc, 0) << run.err;
    Expected<Tensor> got = ReadNpy(d / ("o1/" + c.node + ".npy"));
    ASSERT_TRUE(got.ok()) << got.status().message();
    // The same op built directly, fed the same files.
    json nodes = json::array();
    json inputs = json::object();
    std::vector<std::string> direct_args = {"run", "direct.json", "--fetch", "conv", "--out", "o2"};
    for (const auto& [port, id] : c.in) {
      const Node* p = g->FindNode(id);
      ASSERT_NE(p, nullptr) << id;
      nodes.push_back({{"id", "p_" + port}, {"op", "Placeholder"}, {"attrs", p->attrs}});
      inputs[port] = "p_" + port;
      direct_args.insert(direct_args.end(), {"--feed", "p_" + port + "=" + feeds.at(id)});
    }
    if (!c.sizes_port.empty()) {
      nodes.push_back({{"id", "sizes"},
                       {"op", "Const"},
                       {"attrs", {{"dtype", "int32"}, {"shape", {4}}, {"value", c.sizes}}}});
      inputs[c.sizes_port] = "sizes";
    }
    nodes.push_back({{"id", "conv"},
                     {"op", c.op},
                     {"inputs", inputs},
                     {"attrs", {{"strides", {1, c.stride, c.stride, 1}}, {"padding", "SAME"}}}});
    WriteText(d / "direct.json", GraphText(nodes));
    CmdResult direct = RunBlockflow(direct_args, d.path().string());
    ASSERT_EQ(direct.rc, 0) << direct.err;
    Expected<Tensor> want = ReadNpy(d / "o2/conv.npy");
    ASSERT_TRUE(want.ok());
    EXPECT_TRUE(got->BitwiseEquals(*want)) << got->DebugString() << " vs " << want->DebugString();
    per_node.emplace(c.node, std::move(got).value());
    fs::remove_all(d.path() / "o1");
    fs::remove_all(d.path() / "o2");
  }
  // --single: one graph holding every node.
  r = RunBlockflow({"import-tf", src, "--gradients", "--single", "-o", "all.json"},
                   d.path().string());
  ASSERT_EQ(r.rc, 0) << r.err;
  Expected<Graph> all = LoadGraphFile(d / "all.json");
  ASSERT_TRUE(all.ok());
  for (const ConvCase& c : cases) EXPECT_NE(all->FindNode(c.node), nullptr) << c.node;
  CmdResult v = RunBlockflow({"validate", "all.json"}, d.path().string());
  EXPECT_EQ(v.rc, 0) << v.err;
}

TEST(ImportTfCliTest, GradientsOfTheTrainingStepSample) {
  const std::string relu_grad = "gradients/conv1/Relu_grad/ReluGrad";
  CheckGradients((SourceDir() / "samples/tf/conv_train_step.pbtxt").string(),
                 {{"conv1/Conv2D",
                   "Conv2D",
                   {{"input", "input"}, {"filter", "conv1/weights"}},
                   "",
                   {},
                   1,
                   {"input", "conv1/weights"}},
                  {"gradients/conv1/Conv2D_grad/Conv2DBackpropInput",
                   "Conv2DBackpropInput",
                   {{"filter", "conv1/weights"}, {"out_backprop", relu_grad}},
                   "input_sizes",
                   {2, 8, 8, 3},
                   1,
                   {"input", "conv1/weights", relu_grad}},
                  {"gradients/conv1/Conv2D_grad/Conv2DBackpropFilter",
                   "Conv2DBackpropFilter",
                   {{"input", "input"}, {"out_backprop", relu_grad}},
                   "filter_sizes",
                   {3, 3, 3, 4},
                   1,
                   {"input", "conv1/weights", relu_grad}}});
}

// A training graph with Relu and MaxPool between its convolutions, BiasAdd, Reshape and MatMul
// after them, and no _output_shapes: every cut's shape is inferred.
TEST(ImportTfCliTest, GradientsOfACnnTrainingStep) {
  const std::string g1 = "gradients/conv1/Relu_grad/ReluGrad";
  const std::string g2 = "gradients/conv2/Relu_grad/ReluGrad";
  CheckGradients((SourceDir() / "tests/data/tf/cnn_train_step.pbtxt").string(),
                 {{"conv1/Conv2D",
                   "Conv2D",
                   {{"input", "x"}, {"filter", "conv1/weights"}},
                   "",
                   {},
                   1,
                   {"x", "conv1/weights"}},
                  {"conv2/Conv2D",
                   "Conv2D",
                   {{"input", "pool1/MaxPool"}, {"filter", "conv2/weights"}},
                   "",
                   {},
                   2,
                   {"pool1/MaxPool", "conv2/weights"}},
                  {"gradients/conv2/Conv2D_grad/Conv2DBackpropInput",
                   "Conv2DBackpropInput",
                   {{"filter", "conv2/weights"}, {"out_backprop", g2}},
                   "input_sizes",
                   {2, 6, 6, 8},
                   2,
                   {"pool1/MaxPool", "conv2/weights", g2}},
                  {"gradients/conv2/Conv2D_grad/Conv2DBackpropFilter",
                   "Conv2DBackpropFilter",
                   {{"input", "pool1/MaxPool"}, {"out_backprop", g2}},
                   "filter_sizes",
                   {3, 3, 8, 16},
                   2,
                   {"pool1/MaxPool", "conv2/weights", g2}},
                  {"gradients/conv1/Conv2D_grad/Conv2DBackpropFilter",
                   "Conv2DBackpropFilter",
                   {{"input", "x"}, {"out_backprop", g1}},
                   "filter_sizes",
                   {3, 3, 3, 8},
                   1,
                   {"x", "conv1/weights", g1}}});
}

// conv2d_transpose builds its output shape with Pack (an op blockflow lacks) from
// tf.shape(dy)[0] and constants: the cut there becomes a Const of the inferred value, so the
// graph knows its output shape.
TEST(ImportTfTest, GradientsCutAKnownIntegerTensorAsAConst) {
  const std::string pbtxt = R"(
node { name: "dy" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } attr { key: "shape" value { shape { dim { size: 2 } dim { size: 4 } dim { size: 4 } dim { size: 8 } } } } }
node { name: "w" op: "VariableV2" attr { key: "dtype" value { type: DT_FLOAT } } attr { key: "shape" value { shape { dim { size: 3 } dim { size: 3 } dim { size: 3 } dim { size: 8 } } } } }
node { name: "shape_dy" op: "Shape" input: "dy" attr { key: "T" value { type: DT_FLOAT } } attr { key: "out_type" value { type: DT_INT32 } } }
node { name: "i0" op: "Const" attr { key: "dtype" value { type: DT_INT32 } } attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 1 } } int_val: 0 } } } }
node { name: "i1" op: "Const" attr { key: "dtype" value { type: DT_INT32 } } attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 1 } } int_val: 1 } } } }
node { name: "b" op: "StridedSlice" input: "shape_dy" input: "i0" input: "i1" input: "i1" attr { key: "T" value { type: DT_INT32 } } attr { key: "shrink_axis_mask" value { i: 1 } } }
node { name: "h" op: "Const" attr { key: "dtype" value { type: DT_INT32 } } attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { } int_val: 8 } } } }
node { name: "c" op: "Const" attr { key: "dtype" value { type: DT_INT32 } } attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { } int_val: 3 } } } }
node { name: "out_shape" op: "Pack" input: "b" input: "h" input: "h" input: "c" attr { key: "T" value { type: DT_INT32 } } attr { key: "N" value { i: 4 } } }
node { name: "deconv" op: "Conv2DBackpropInput" input: "out_shape" input: "w" input: "dy" attr { key: "T" value { type: DT_FLOAT } } attr { key: "strides" value { list { i: 1 i: 2 i: 2 i: 1 } } } attr { key: "padding" value { s: "SAME" } } }
)";
  RegisterBuiltinBlocks();
  Expected<std::vector<tfimport::GradientImport>> g =
      tfimport::ImportGradients(pbtxt, "t.pbtxt", GraphDefFormat::kText, {}, OpRegistry::Global());
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->size(), 1u);
  const tfimport::GradientImport& d = (*g)[0];
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(d.node, "deconv");
  EXPECT_EQ(d.file, "deconv.json");
  EXPECT_EQ(d.geometry, "x [2,8,8,3] w [3,3,3,8] y [2,4,4,8] s 2,2 SAME NHWC");
  EXPECT_EQ(d.fed, (std::vector<std::string>{"dy", "w"}));
  const Node* sizes = d.result.graph.FindNode("out_shape");
  ASSERT_NE(sizes, nullptr);
  EXPECT_EQ(sizes->op, "Const");
  EXPECT_EQ(sizes->attrs["value"], json({2, 8, 8, 3}));
  GraphAnalysis a = AnalyzeGraph(d.result.graph, OpRegistry::Global());
  ASSERT_TRUE(a.ok()) << a.issues[0].ToString();
  EXPECT_EQ(a.nodes[static_cast<size_t>(d.result.graph.IndexOf("deconv"))].outputs[0].shape,
            (Shape{2, 8, 8, 3}));
}

// A node that cannot be imported gets its reason in the table; the others are written, and
// the exit status says that not all were.
TEST(ImportTfCliTest, GradientsTableGivesTheReasonOfANodeWithoutAGraph) {
  const std::string src = (SourceDir() / "tests/data/tf/queue_input.pbtxt").string();
  TempDir d;
  CmdResult r = RunBlockflow({"import-tf", src, "--gradients", "-o", "q"}, d.path().string());
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("ok: conv.Conv2D.json"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("x [2,8,8,3] w [3,3,3,4] y [2,8,8,4] s 1,1 SAME NHWC  conv/weights batch "
                       "batch_1"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("eval/Conv2D"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--feed eval/batch: cannot tell the shape of 'eval/batch': node "
                       "'eval/fifo_queue' (FIFOQueueV2)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("wrote 2 of 3 convolution nodes to q"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(d / "q/gradients.conv.Conv2D_grad.Conv2DBackpropFilter.json"));
  EXPECT_FALSE(fs::exists(d / "q/eval.Conv2D.json"));
  // Given the queue's shape, every node imports.
  r = RunBlockflow(
      {"import-tf", src, "--gradients", "-o", "q2", "--feed", "eval/batch:float32[-1,8,8,3]"},
      d.path().string());
  EXPECT_EQ(r.rc, 0) << r.err;
  r = RunBlockflow({"import-tf", src, "--gradients", "--fetch", "x", "-o", "q3"},
                   d.path().string());
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--gradients chooses the nodes itself"), std::string::npos) << r.err;
}

// ---------------------------------------------------------------------------
// The summary of a whole-graph import that cannot be done.

TEST(ImportTfCliTest, SummaryOfAWholeGraphImport) {
  const std::string src = (SourceDir() / "tests/data/tf/cnn_train_step.pbtxt").string();
  TempDir d;
  CmdResult r = RunBlockflow({"import-tf", src, "-o", "g.json"}, d.path().string());
  EXPECT_EQ(r.rc, 1);
  const std::string e = "error: " + src + ": ";
  const std::string head =
      e +
      "19 nodes use 9 ops blockflow lacks: ApplyGradientDescent x4, VariableV2 x4, MatMul "
      "x3, Relu x2, ReluGrad x2, BiasAdd x1, BiasAddGrad x1, MaxPool x1, MaxPoolGrad x1\n" +
      e + "the largest part blockflow can import has 6 of the 43 nodes; import it with --fetch " +
      "gradients/loss/sub_grad/Identity --feed fc/MatMul\n" + e +
      "the GraphDef holds 5 convolution nodes: import-tf GRAPHDEF --gradients -o DIR writes a "
      "runnable graph for each\n" +
      e +
      "node 'conv1/weights' (VariableV2): blockflow has no block 'VariableV2'; cut it off "
      "with --feed conv1/weights, or choose outputs with --fetch NAME\n";
  EXPECT_EQ(r.err.substr(0, head.size()), head) << r.err;
  // 3 summary lines and one per node: 19 fit in 20.
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 3 + 19) << r.err;
  EXPECT_FALSE(fs::exists(d / "g.json"));
  // The suggestion works.
  r = RunBlockflow({"import-tf", src, "-o", "g.json", "--fetch", "gradients/loss/sub_grad/Identity",
                    "--feed", "fc/MatMul"},
                   d.path().string());
  EXPECT_EQ(r.rc, 0) << r.err;
  // With --fetch: the --feed list that makes it import.
  r = RunBlockflow({"import-tf", src, "-o", "h.json", "--fetch",
                    "gradients/conv2/Conv2D_grad/Conv2DBackpropFilter"},
                   d.path().string());
  EXPECT_EQ(r.rc, 1);
  const std::string cut =
      "to import what the fetches need, cut off those ops with --feed "
      "gradients/conv2/Relu_grad/ReluGrad --feed conv2/weights --feed pool1/MaxPool";
  EXPECT_NE(r.err.find(cut), std::string::npos) << r.err;
  r = RunBlockflow({"import-tf", src, "-o", "h.json", "--fetch",
                    "gradients/conv2/Conv2D_grad/Conv2DBackpropFilter", "--feed", "pool1/MaxPool",
                    "--feed", "gradients/conv2/Relu_grad/ReluGrad", "--feed", "conv2/weights"},
                   d.path().string());
  EXPECT_EQ(r.rc, 0) << r.err;
}

// Past 20 nodes the summary shows the first 20 and says how many more --verbose lists.
TEST(ImportTfCliTest, SummaryShowsTwentyNodesUnlessVerbose) {
  std::string text =
      R"(node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "shape" value { shape { dim { size: 2 } } } } })";
  for (int i = 0; i < 30; ++i) {
    text += "\nnode { name: \"r" + std::to_string(i) + "\" op: \"" +
            (i % 3 == 0 ? "Relu" : "Tanh") +
            "\" input: \"x\" attr { key: \"T\" value { type: DT_FLOAT } } }";
  }
  TempDir d;
  WriteText(d / "many.pbtxt", text);
  CmdResult r = RunBlockflow({"import-tf", "many.pbtxt", "-o", "g.json"}, d.path().string());
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err.rfind("error: many.pbtxt: 30 nodes use 2 ops blockflow lacks: Tanh x20, Relu "
                        "x10\nerror: many.pbtxt: the largest part blockflow can import has 1 of "
                        "the 31 nodes; import it with --fetch x\n",
                        0),
            0u)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 2 + 20 + 1) << r.err;
  EXPECT_NE(r.err.find("error: many.pbtxt: ... and 10 more nodes blockflow cannot import "
                       "(--verbose lists them all)\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("node 'r29'"), std::string::npos);
  r = RunBlockflow({"import-tf", "many.pbtxt", "-o", "g.json", "--verbose"}, d.path().string());
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 2 + 30) << r.err;
  EXPECT_NE(r.err.find("node 'r29' (Tanh)"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace blockflow::testing
