// TensorFlow GraphDef import: unit tests on small text GraphDefs, and the samples in
// samples/tf/ through `blockflow import-tf` in all three forms.
#include <cmath>
#include <nlohmann/json.hpp>

#include "blocks/register_blocks.h"
#include "runtime/tf/import.h"
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

}  // namespace
}  // namespace blockflow::testing
