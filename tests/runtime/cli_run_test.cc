// The `blockflow` binary end to end: run, validate, bench, ops; exit statuses and
// error texts for bad graphs, bad feeds and bad command lines.
#include <poll.h>
#include <pty.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "test_util.h"

namespace blockflow::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// dx = DepthwiseConv2dNativeBackpropInput(sizes, w, dy), plus a Shape of it and a Sum
// over axes from a Const: a small graph touching Const/Placeholder/conv/Shape/Sum.
constexpr const char* kGraph = R"({
  "format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "sizes", "op": "Const", "attrs": {"dtype": "int32", "shape": [4], "value": [1, 8, 8, 2]}},
    {"id": "w", "op": "Const", "attrs": {"dtype": "float32", "shape": [3, 3, 2, 1], "value": 0.5}},
    {"id": "dy", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [1, -1, -1, 2]}},
    {"id": "dx", "op": "DepthwiseConv2dNativeBackpropInput",
     "inputs": {"input_sizes": "sizes", "filter": "w", "out_backprop": "dy"},
     "attrs": {"strides": [1, 2, 2, 1], "padding": "SAME", "data_format": "NHWC"}},
    {"id": "grad/shape", "op": "Shape", "inputs": {"input": "dx"}},
    {"id": "axes", "op": "Const", "attrs": {"dtype": "int32", "shape": [2], "value": [1, 2]}},
    {"id": "grad/sum", "op": "Sum", "inputs": {"input": "dx", "axis": "axes"}}
  ]})";

class CliRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteText(dir_ / "g.json", kGraph);
    std::vector<float> dy(32);
    for (size_t i = 0; i < dy.size(); ++i) dy[i] = static_cast<float>(i) * 0.25f - 3.0f;
    ASSERT_TRUE(WriteNpy(dir_ / "dy.npy", Tensor::FromVector(dy, Shape{1, 4, 4, 2})).ok());
  }
  CmdResult Run(const std::vector<std::string>& args) {
    return RunBlockflow(args, dir_.path().string());
  }
  TempDir dir_;
};

TEST_F(CliRunTest, RunPrintsTableAndWritesNpyFiles) {
  CmdResult r = Run({"run", "g.json", "--feed", "dy=dy.npy", "--out", "o", "--fetch", "dx",
                     "--fetch", "grad/shape", "--fetch", "grad/sum:0"});
  ASSERT_EQ(r.rc, 0) << r.err;
  for (const char* col : {"node", "port", "dtype", "shape", "min", "max", "mean"}) {
    EXPECT_NE(r.out.find(col), std::string::npos) << r.out;
  }
  EXPECT_NE(r.out.find("[1,8,8,2]"), std::string::npos) << r.out;
  Expected<Tensor> dx = ReadNpy(dir_ / "o/dx.npy");
  ASSERT_TRUE(dx.ok()) << dx.status().message();
  EXPECT_EQ(dx->shape(), (Shape{1, 8, 8, 2}));
  // A '/' in an id makes a subfolder.
  Expected<Tensor> shape = ReadNpy(dir_ / "o/grad/shape.npy");
  ASSERT_TRUE(shape.ok()) << shape.status().message();
  EXPECT_EQ(shape->ToInt64Vector(), (std::vector<int64_t>{1, 8, 8, 2}));
  Expected<Tensor> sum = ReadNpy(dir_ / "o/grad/sum.npy");
  ASSERT_TRUE(sum.ok());
  // The sum over H and W of dx equals the table's printed values: check it against dx.
  double c0 = 0;
  for (int64_t i = 0; i < dx->num_elements(); i += 2) c0 += dx->GetAsDouble(i);
  EXPECT_NEAR(sum->GetAsDouble(0), c0, 1e-3 * (1 + std::abs(c0)));
}

TEST_F(CliRunTest, DefaultFetchesAreTheSinksAndOutputKUsesDotK) {
  CmdResult r = Run({"run", "g.json", "--feed", "dy=dy.npy", "--out", "o"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir_ / "o/grad/shape.npy"));
  EXPECT_TRUE(fs::exists(dir_ / "o/grad/sum.npy"));
  EXPECT_FALSE(fs::exists(dir_ / "o/dx.npy"));  // dx feeds other nodes

  // ShapeN output 1 goes to ID.1.npy.
  WriteText(dir_ / "n.json", R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "a", "op": "Const", "attrs": {"dtype": "float32", "shape": [2, 3], "value": 1}},
    {"id": "b", "op": "Const", "attrs": {"dtype": "float32", "shape": [4], "value": 2}},
    {"id": "n", "op": "ShapeN", "inputs": {"input": ["a", "b"]}, "attrs": {"out_type": "int64"}}]})");
  r = Run({"run", "n.json", "--out", "o2"});
  ASSERT_EQ(r.rc, 0) << r.err;
  Expected<Tensor> n0 = ReadNpy(dir_ / "o2/n.npy");
  Expected<Tensor> n1 = ReadNpy(dir_ / "o2/n.1.npy");
  ASSERT_TRUE(n0.ok() && n1.ok());
  EXPECT_EQ(n0->dtype(), DType::kInt64);
  EXPECT_EQ(n0->ToInt64Vector(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(n1->ToInt64Vector(), (std::vector<int64_t>{4}));
}

// bfloat16 travels as '<u2' raw bits: fed from such a file, written back as one.
TEST_F(CliRunTest, BFloat16FeedsAndOutputsAreU2Bits) {
  WriteText(dir_ / "bf.json", R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "x", "op": "Placeholder", "attrs": {"dtype": "bfloat16", "shape": [2, 2]}},
    {"id": "y", "op": "Identity", "inputs": {"input": "x"}}]})");
  Tensor x(DType::kBFloat16, Shape{2, 2});
  for (int i = 0; i < 4; ++i) x.SetFromDouble(i, 0.5 * i - 0.75);
  ASSERT_TRUE(WriteNpy(dir_ / "x.npy", x).ok());
  EXPECT_NE(ReadText(dir_ / "x.npy").find("<u2"), std::string::npos);
  CmdResult r = Run({"run", "bf.json", "--feed", "x=x.npy", "--out", "o"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("bfloat16"), std::string::npos) << r.out;
  EXPECT_NE(ReadText(dir_ / "o/y.npy").find("<u2"), std::string::npos);
  Expected<Tensor> y = ReadNpy(dir_ / "o/y.npy", DType::kBFloat16);
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_TRUE(y->BitwiseEquals(x));
}

TEST_F(CliRunTest, ReferenceThreadsAndProfileGiveTheSameValues) {
  CmdResult a = Run({"run", "g.json", "--feed", "dy=dy.npy", "--fetch", "dx", "--out", "a"});
  CmdResult b = Run({"run", "g.json", "--feed", "dy=dy.npy", "--fetch", "dx", "--out", "b",
                     "--reference", "--threads", "1", "--profile"});
  ASSERT_EQ(a.rc, 0) << a.err;
  ASSERT_EQ(b.rc, 0) << b.err;
  EXPECT_NE(b.out.find("profile"), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("DepthwiseConv2dNativeBackpropInput"), std::string::npos) << b.out;
  // Consts are folded at analysis: they run no kernel and are not timed.
  EXPECT_NE(b.out.find("folded"), std::string::npos) << b.out;
  EXPECT_EQ(b.out.find(" Const "), std::string::npos) << b.out;
  Expected<Tensor> ta = ReadNpy(dir_ / "a/dx.npy"), tb = ReadNpy(dir_ / "b/dx.npy");
  ASSERT_TRUE(ta.ok() && tb.ok());
  ASSERT_EQ(ta->num_elements(), tb->num_elements());
  for (int64_t i = 0; i < ta->num_elements(); ++i) {
    EXPECT_NEAR(ta->GetAsDouble(i), tb->GetAsDouble(i), 1e-5) << i;
  }
}

TEST_F(CliRunTest, BadFeedsFailWithTheNodeNamed) {
  ASSERT_TRUE(WriteNpy(dir_ / "dy64.npy", Tensor(DType::kFloat64, Shape{1, 4, 4, 2})).ok());
  ASSERT_TRUE(WriteNpy(dir_ / "dy3.npy", Tensor(DType::kFloat32, Shape{1, 4, 4, 3})).ok());
  ASSERT_TRUE(WriteNpy(dir_ / "dy5.npy", Tensor(DType::kFloat32, Shape{1, 5, 5, 2})).ok());
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> expected;
  };
  const std::vector<Case> cases = {
      {{"run", "g.json"}, {"error: g.json: node 'dy' (Placeholder): needs a value", "--feed dy="}},
      {{"run", "g.json", "--feed", "dy=dy64.npy"},
       {"node 'dy' (Placeholder)", "float64", "float32"}},
      {{"run", "g.json", "--feed", "dy=dy3.npy"},
       {"node 'dy' (Placeholder): fed shape [1,4,4,3]", "[1,?,?,2]"}},
      {{"run", "g.json", "--feed", "w=dy.npy"},
       {"node 'w' (Const)", "only a Placeholder can be fed"}},
      {{"run", "g.json", "--feed", "nope=dy.npy"}, {"there is no node 'nope'"}},
      {{"run", "g.json", "--feed", "dy=missing.npy"}, {"node 'dy' (Placeholder)", "missing.npy"}},
      {{"run", "g.json", "--feed", "dy=g.json"}, {"node 'dy' (Placeholder)", "not a valid .npy"}},
      {{"run", "g.json", "--feed", "dy=dy.npy", "--fetch", "nope"}, {"there is no node 'nope'"}},
      {{"run", "g.json", "--feed", "dy=dy.npy", "--fetch", "dx:2"}, {"node 'dx'", "has 1 output"}},
      // A fed size that the conv rejects: the run fails in the block, which is named.
      {{"run", "g.json", "--feed", "dy=dy5.npy"},
       {"error: g.json: node 'dx' (DepthwiseConv2dNativeBackpropInput): "}},
  };
  for (const Case& c : cases) {
    CmdResult r = Run(c.args);
    EXPECT_EQ(r.rc, 1) << c.args.back() << "\n" << r.err;
    for (const std::string& e : c.expected)
      EXPECT_NE(r.err.find(e), std::string::npos) << "want: " << e << "\n" << r.err;
    EXPECT_TRUE(r.out.empty() || r.out.find("mean") == std::string::npos) << r.out;
  }
}

TEST_F(CliRunTest, BadGraphFilesFailWithTheFileNamed) {
  WriteText(dir_ / "malformed.json",
            "{\"format\": \"blockflow.graph\",\n \"version\": 1,\n \"nodes\": [\n");
  WriteText(dir_ / "empty.json", "");
  WriteText(dir_ / "notgraph.json", R"({"hello": 1})");
  WriteText(dir_ / "unknown_op.json", R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "x", "op": "Conv3D", "attrs": {}}]})");
  WriteText(dir_ / "wrong_dtype.json", R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "a", "op": "Const", "attrs": {"dtype": "int32", "shape": [4], "value": [1, 8, 8, 2]}},
    {"id": "b", "op": "Const", "attrs": {"dtype": "float32", "shape": [4], "value": 1}},
    {"id": "c", "op": "Add", "inputs": {"x": "a", "y": "b"}}]})");
  WriteText(dir_ / "bad_conv.json", R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "sizes", "op": "Const", "attrs": {"dtype": "int32", "shape": [4], "value": [1, 8, 8, 2]}},
    {"id": "w", "op": "Const", "attrs": {"dtype": "float32", "shape": [3, 3, 2, 1], "value": 0.5}},
    {"id": "dy", "op": "Const", "attrs": {"dtype": "float32", "shape": [1, 4, 4, 2], "value": 1}},
    {"id": "dx", "op": "DepthwiseConv2dNativeBackpropInput",
     "inputs": {"input_sizes": "sizes", "filter": "w", "out_backprop": "dy"},
     "attrs": {"strides": [1, 2, 2], "padding": "SAME"}}]})");
  struct Case {
    std::string file;
    std::vector<std::string> expected;
  };
  const std::vector<Case> cases = {
      {"malformed.json", {"error: malformed.json:", "malformed JSON"}},
      {"empty.json", {"error: empty.json:", "malformed JSON"}},
      {"notgraph.json", {"error: notgraph.json:"}},
      {"unknown_op.json", {"error: unknown_op.json: node 'x' (Conv3D): unknown op 'Conv3D'"}},
      {"wrong_dtype.json", {"error: wrong_dtype.json: node 'c' (Add):", "int32", "float32"}},
      {"bad_conv.json",
       {"error: bad_conv.json: node 'dx' (DepthwiseConv2dNativeBackpropInput):", "strides"}},
      {"does_not_exist.json", {"error: ", "does_not_exist.json"}},
      {".", {"error: ", "'.'"}},
  };
  for (const Case& c : cases) {
    for (const char* cmd : {"run", "validate", "bench"}) {
      CmdResult r = Run({cmd, c.file});
      EXPECT_EQ(r.rc, 1) << cmd << " " << c.file << "\n" << r.err;
      for (const std::string& e : c.expected) {
        EXPECT_NE(r.err.find(e), std::string::npos)
            << cmd << " " << c.file << " want: " << e << "\n"
            << r.err;
      }
    }
  }
  // A graph file whose name begins the message ("node" and "node 'x' ...") is still named.
  WriteText(dir_ / "node", ReadText(dir_ / "unknown_op.json"));
  CmdResult named = Run({"validate", "node"});
  EXPECT_NE(named.err.find("error: node: node 'x' (Conv3D): unknown op"), std::string::npos)
      << named.err;
  // The malformed file's error carries line:column.
  CmdResult r = Run({"validate", "malformed.json"});
  EXPECT_NE(r.err.find("malformed.json:4:"), std::string::npos) << r.err;
}

TEST_F(CliRunTest, BadCommandLinesExitTwoWithUsage) {
  const std::vector<std::vector<std::string>> cases = {
      {},
      {"frobnicate"},
      {"--bogus"},
      {"run"},
      {"run", "g.json", "--bogus"},
      {"run", "g.json", "--threads", "0"},
      {"run", "g.json", "--feed", "dy"},
      {"run", "g.json", "--out"},
      {"run", "g.json", "extra.json"},
      {"validate"},
      {"validate", "a.json", "b.json"},
      {"bench", "g.json", "--repeat", "0"},
      {"bench", "g.json", "--warmup", "-1"},
      {"ops", "--json", "--markdown"},
      {"ops", "extra"},
      {"import-tf"},
      {"import-tf", "x.pbtxt"},
      {"import-tf", "x.pbtxt", "-o"},
  };
  for (const auto& args : cases) {
    CmdResult r = Run(args);
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(r.rc, 2) << joined << "\n" << r.err;
    EXPECT_NE(r.err.find("error: "), std::string::npos) << joined << "\n" << r.err;
    EXPECT_NE(r.err.find("usage: blockflow"), std::string::npos) << joined << "\n" << r.err;
  }
  for (const char* cmd : {"run", "validate", "bench", "ops", "import-tf"}) {
    CmdResult r = Run({cmd, "--help"});
    EXPECT_EQ(r.rc, 0) << cmd;
    EXPECT_NE(r.out.find(std::string("usage: blockflow ") + cmd), std::string::npos) << r.out;
  }
  CmdResult v = Run({"--version"});
  EXPECT_EQ(v.rc, 0);
  EXPECT_EQ(v.out.rfind("blockflow ", 0), 0u) << v.out;
  CmdResult h = Run({"--help"});
  EXPECT_EQ(h.rc, 0);
  EXPECT_NE(h.out.find("import-tf"), std::string::npos);
}

// Output 1 of node "a" and output 0 of node "a.1" both map to a.1.npy: the run is
// refused before it starts rather than one output silently overwriting the other.
TEST_F(CliRunTest, FetchesThatShareAnOutputFileAreRejected) {
  WriteText(dir_ / "c.json", R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "x", "op": "Const", "attrs": {"dtype": "float32", "shape": [2, 3], "value": 1}},
    {"id": "a.1", "op": "Identity", "inputs": {"input": "x"}},
    {"id": "a", "op": "ShapeN", "inputs": {"input": ["x", "x"]}}]})");
  CmdResult r = Run({"run", "c.json", "--out", "o"});
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.err.find("error: c.json: node 'a' (ShapeN): output 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("node 'a.1' (Identity)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("a.1.npy"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "o"));
  // Without --out nothing collides; the same tensor fetched twice is written once.
  EXPECT_EQ(Run({"run", "c.json"}).rc, 0);
  r = Run({"run", "c.json", "--fetch", "a.1", "--fetch", "a.1:0", "--out", "o"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir_ / "o/a.1.npy"));
}

// A graph names files only inside its own folder, unless --allow-outside-files: a Const `file`
// that climbs out with '..', or is absolute, or a link that points out, and a Placeholder's
// ui.feed, are refused by run, validate and bench, naming the node, the path and the rule.
TEST_F(CliRunTest, GraphFilesOutsideTheGraphFolderAreRefused) {
  ASSERT_TRUE(
      WriteNpy(dir_ / "secret.npy", Tensor::FromVector(std::vector<float>{7, 8}, Shape{2})).ok());
  fs::create_directories(dir_ / "g");
  fs::create_symlink(dir_ / "secret.npy", dir_ / "g/link.npy");
  ASSERT_TRUE(
      WriteNpy(dir_ / "g/inside.npy", Tensor::FromVector(std::vector<float>{1}, Shape{1})).ok());
  auto const_graph = [&](const std::string& name, const std::string& file) {
    WriteText(dir_ / ("g/" + name), R"({"format": "blockflow.graph", "version": 1, "nodes": [
      {"id": "w", "op": "Const", "attrs": {"dtype": "float32", "file": ")" +
                                        file + R"("}}]})");
  };
  const_graph("up.json", "../secret.npy");
  const_graph("abs.json", dir_ / "secret.npy");
  const_graph("link.json", "link.npy");
  const_graph("ok.json", "sub/../inside.npy");
  WriteText(dir_ / "g/feed.json", R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [2]},
     "ui": {"feed": "../secret.npy"}}]})");
  const std::string rule = "a graph may name only files inside its own folder";
  for (const char* cmd : {"run", "validate", "bench"}) {
    for (const char* graph : {"g/up.json", "g/abs.json", "g/link.json", "g/feed.json"}) {
      SCOPED_TRACE(std::string(cmd) + " " + graph);
      CmdResult r = Run({cmd, graph});
      EXPECT_EQ(r.rc, 1) << r.err;
      const bool feed = std::string(graph) == "g/feed.json";
      EXPECT_NE(r.err.find(feed ? "node 'x' (Placeholder): ui.feed: file '../secret.npy'"
                                : "node 'w' (Const): attr 'file': file '"),
                std::string::npos)
          << r.err;
      EXPECT_NE(r.err.find(rule), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("--allow-outside-files"), std::string::npos) << r.err;
      if (std::string(cmd) != "validate") {
        EXPECT_EQ(r.out.find('7'), std::string::npos) << "the file was read: " << r.out;
      }
    }
  }
  EXPECT_NE(Run({"run", "g/abs.json"}).err.find("is an absolute path"), std::string::npos);
  EXPECT_NE(Run({"run", "g/link.json"}).err.find("outside the graph's folder"), std::string::npos);
  // Inside the folder, even through '..' that comes back, is fine; the flag lifts the rule.
  EXPECT_EQ(Run({"run", "g/ok.json"}).rc, 0);
  for (const char* graph : {"g/up.json", "g/abs.json", "g/link.json"}) {
    CmdResult r = Run({"run", graph, "--allow-outside-files"});
    EXPECT_EQ(r.rc, 0) << graph << ": " << r.err;
    EXPECT_NE(r.out.find('7'), std::string::npos) << r.out;
    EXPECT_EQ(Run({"validate", graph, "--allow-outside-files"}).rc, 0) << graph;
  }
  CmdResult fed = Run({"validate", "g/feed.json", "--allow-outside-files"});
  EXPECT_EQ(fed.rc, 0) << fed.err;
}

// An --out that cannot hold the outputs fails before the run, and a run whose outputs
// cannot all be written writes none of them.
TEST_F(CliRunTest, UnwritableOutFailsBeforeTheRunAndWritesNothing) {
  WriteText(dir_ / "file", "not a folder");
  CmdResult r = Run({"run", "g.json", "--feed", "dy=dy.npy", "--out", "file"});
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.err.find("error: g.json: --out file: "), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("mean"), std::string::npos) << "nothing may run: " << r.out;
  EXPECT_EQ(ReadText(dir_ / "file"), "not a folder");

  // o/grad is a file: grad/shape cannot go to o/grad/shape.npy, so dx is not written either.
  WriteText(dir_ / "o/grad", "in the way");
  r = Run({"run", "g.json", "--feed", "dy=dy.npy", "--out", "o", "--fetch", "dx", "--fetch",
           "grad/shape"});
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.err.find("node 'grad/shape' (Shape)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("o/grad"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "o/dx.npy"));
  size_t entries = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir_ / "o")) entries += !e.is_directory();
  EXPECT_EQ(entries, 1u) << "only the blocking file may remain";
}

TEST_F(CliRunTest, ValidatePrintsShapesAndListsEveryError) {
  CmdResult ok = Run({"validate", "g.json"});
  ASSERT_EQ(ok.rc, 0) << ok.err;
  EXPECT_NE(ok.out.find("[1,?,?,2]"), std::string::npos)
      << ok.out;  // the Placeholder's unknown dims
  EXPECT_NE(ok.out.find("[1,8,8,2]"), std::string::npos) << ok.out;  // dx, and Shape's folded value
  EXPECT_NE(ok.out.find("0 errors"), std::string::npos) << ok.out;

  WriteText(dir_ / "bad.json", R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "a", "op": "Const", "attrs": {"dtype": "float32", "shape": [2], "value": [1, 2]}},
    {"id": "x", "op": "Conv3D"},
    {"id": "y", "op": "Add", "inputs": {"x": "a", "y": "ghost"}},
    {"id": "z", "op": "Identity", "inputs": {"input": "a"}, "attrs": {"colour": "red"}},
    {"id": "s", "op": "Shape", "inputs": {"input": "a"}, "attrs": {"out_type": "int16"}},
    {"id": "ok", "op": "Identity", "inputs": {"input": "a"}}]})");
  CmdResult r = Run({"validate", "bad.json"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("error: bad.json: node 'x' (Conv3D): unknown op"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("error: bad.json: node 'y' (Add):"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ghost"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("error: bad.json: node 'z' (Identity):"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("colour"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("error: bad.json: node 's' (Shape):"), std::string::npos) << r.err;
  EXPECT_GE(std::count(r.err.begin(), r.err.end(), '\n'), 4) << r.err;
  // The valid nodes still get their shapes.
  EXPECT_NE(r.out.find("ok"), std::string::npos);
  EXPECT_NE(r.out.find("[2]"), std::string::npos) << r.out;
}

TEST_F(CliRunTest, OpsJsonParsesAndDescribesTheSchemas) {
  CmdResult r = Run({"ops", "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  json j = json::parse(r.out);
  ASSERT_TRUE(j["ops"].is_array());
  std::set<std::string> names;
  for (const json& op : j["ops"]) names.insert(op["name"].get<std::string>());
  for (const char* name :
       {"Const", "Placeholder", "Identity", "Shape", "ShapeN", "NoOp", "Conv2DBackpropFilter",
        "DepthwiseConv2dNativeBackpropFilter", "DepthwiseConv2dNativeBackpropInput"}) {
    EXPECT_TRUE(names.count(name)) << name;
  }
  for (const json& op : j["ops"]) {
    if (op["name"] == "Shape") {
      ASSERT_EQ(op["attrs"].size(), 1u);
      EXPECT_EQ(op["attrs"][0]["name"], "out_type");
      EXPECT_EQ(op["attrs"][0]["default"], "int32");
      EXPECT_EQ(op["attrs"][0]["allowed"], json({"int32", "int64"}));
      EXPECT_EQ(op["inputs"][0]["dtypes"].size(), 7u);
    }
    if (op["name"] == "Const") {
      for (const json& a : op["attrs"]) {
        if (a["name"] == "dtype") {
          EXPECT_TRUE(a["required"].get<bool>());
        }
        if (a["name"] == "file") {
          EXPECT_FALSE(a["required"].get<bool>());  // optional, no default
        }
      }
    }
    if (op["name"] == "ShapeN") {
      EXPECT_TRUE(op["inputs"][0]["list"].get<bool>());
      EXPECT_TRUE(op["variadic_outputs"].get<bool>());
    }
    if (op["name"] == "DepthwiseConv2dNativeBackpropInput") {
      std::vector<std::string> ports;
      for (const json& p : op["inputs"]) ports.push_back(p["name"]);
      EXPECT_EQ(ports, (std::vector<std::string>{"input_sizes", "filter", "out_backprop"}));
      bool padding = false;
      for (const json& a : op["attrs"]) {
        if (a["name"] == "padding") {
          padding = true;
          EXPECT_EQ(a["type"], "enum");
        }
      }
      EXPECT_TRUE(padding);
    }
  }
  CmdResult text = Run({"ops"});
  ASSERT_EQ(text.rc, 0);
  EXPECT_NE(text.out.find("ShapeN"), std::string::npos);
  CmdResult md = Run({"ops", "--markdown"});
  ASSERT_EQ(md.rc, 0);
  EXPECT_EQ(md.out.rfind("# Block catalogue", 0), 0u);
}

TEST_F(CliRunTest, BenchJsonHasTheContractKeys) {
  CmdResult r =
      Run({"bench", "g.json", "--feed", "dy=dy.npy", "--warmup", "1", "--repeat", "3", "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  json j = json::parse(r.out);
  std::set<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.insert(k);
  EXPECT_EQ(keys, (std::set<std::string>{"nodes", "total_ms_median", "run_ms_median", "peak_bytes",
                                         "minor_faults_per_run"}));
  ASSERT_TRUE(j["nodes"].is_array());
  bool saw_dx = false;
  double sum = 0;
  for (const json& n : j["nodes"]) {
    std::set<std::string> nk;
    for (const auto& [k, v] : n.items()) nk.insert(k);
    EXPECT_EQ(nk,
              (std::set<std::string>{"id", "op", "ms_min", "ms_median", "ms_max", "peak_bytes"}));
    EXPECT_LE(n["ms_min"].get<double>(), n["ms_median"].get<double>());
    EXPECT_LE(n["ms_median"].get<double>(), n["ms_max"].get<double>());
    EXPECT_GE(n["ms_min"].get<double>(), 0.0);
    EXPECT_TRUE(n["peak_bytes"].is_number_unsigned()) << n;
    sum += n["ms_median"].get<double>();
    if (n["id"] == "dx") {
      saw_dx = true;
      EXPECT_EQ(n["op"], "DepthwiseConv2dNativeBackpropInput");
      // Its output, [1,8,8,2] float32, is allocated while it runs.
      EXPECT_GE(n["peak_bytes"].get<size_t>(), size_t{1} * 8 * 8 * 2 * sizeof(float)) << n;
    }
    // Fed Placeholders run no kernel: they are not timed.
    EXPECT_NE(n["id"], "dy");
  }
  EXPECT_TRUE(saw_dx) << r.out;
  EXPECT_NEAR(j["total_ms_median"].get<double>(), sum, 1e-9 + 1e-9 * sum);
  EXPECT_GT(j["run_ms_median"].get<double>(), 0.0);
  // The whole graph holds at least dx while it runs.
  EXPECT_GE(j["peak_bytes"].get<size_t>(), size_t{1} * 8 * 8 * 2 * sizeof(float));
  EXPECT_GE(j["minor_faults_per_run"].get<double>(), 0.0);

  CmdResult text = Run({"bench", "g.json", "--feed", "dy=dy.npy", "--repeat", "2"});
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find("ms_median"), std::string::npos);
  EXPECT_NE(text.out.find("peak"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("whole graph: run_ms_median "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("minor faults per run"), std::string::npos) << text.out;
  CmdResult missing = Run({"bench", "g.json"});
  EXPECT_EQ(missing.rc, 1);
  EXPECT_NE(missing.err.find("node 'dy' (Placeholder): needs a value"), std::string::npos)
      << missing.err;
}

// --trace writes a Chrome trace: one complete event per node that ran, in microseconds.
TEST_F(CliRunTest, TraceWritesOneCompleteEventPerNode) {
  CmdResult r = Run({"run", "g.json", "--feed", "dy=dy.npy", "--trace", "t/run.trace.json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const json trace = json::parse(ReadText(dir_ / "t/run.trace.json"));
  ASSERT_TRUE(trace["traceEvents"].is_array()) << trace;
  std::multiset<std::string> names;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    names.insert(e["name"].get<std::string>());
    EXPECT_GE(e["ts"].get<double>(), 0.0) << e;
    EXPECT_GE(e["dur"].get<double>(), 0.0) << e;
    EXPECT_TRUE(e["pid"].is_number_integer() && e["tid"].is_number_integer()) << e;
    EXPECT_EQ(e["cat"], e["args"]["op"]) << e;
  }
  // Every node runs once (the default fetches need them all).
  EXPECT_EQ(names, (std::multiset<std::string>{"sizes", "w", "dy", "dx", "grad/shape", "axes",
                                               "grad/sum"}));
  // With --profile each node's memory is in its event too.
  r = Run({"run", "g.json", "--feed", "dy=dy.npy", "--profile", "--trace", "p.json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("peak"), std::string::npos) << r.out;
  const json profiled = json::parse(ReadText(dir_ / "p.json"));  // outlives the loop
  for (const json& e : profiled["traceEvents"]) {
    if (e["ph"] == "X") {
      EXPECT_TRUE(e["args"].contains("peak_bytes")) << e;
    }
  }
}

// A --trace path that cannot be written fails before the run, naming the path in the way.
TEST_F(CliRunTest, UnwritableTraceFailsBeforeTheRun) {
  WriteText(dir_ / "file", "not a folder");
  fs::create_directories(dir_ / "folder");
  for (const std::string& trace : {std::string("file/t.json"), std::string("folder")}) {
    CmdResult r = Run({"run", "g.json", "--feed", "dy=dy.npy", "--trace", trace});
    EXPECT_EQ(r.rc, 1) << r.err;
    EXPECT_NE(r.err.find("error: g.json: --trace " + trace + ": '"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("mean"), std::string::npos) << "nothing may run: " << r.out;
  }
  EXPECT_EQ(ReadText(dir_ / "file"), "not a folder");
  CmdResult empty = Run({"run", "g.json", "--trace="});
  EXPECT_EQ(empty.rc, 2) << empty.err;
  EXPECT_NE(empty.err.find("--trace needs a file name"), std::string::npos) << empty.err;
}

// A graph that runs long enough to interrupt: `adds` chained Adds over 4M floats.
json LongAddChain(int adds) {
  json nodes = json::array();
  nodes.push_back({{"id", "shape"},
                   {"op", "Const"},
                   {"attrs", {{"dtype", "int32"}, {"shape", {2}}, {"value", {2048, 2048}}}}});
  nodes.push_back({{"id", "r"},
                   {"op", "RandomUniform"},
                   {"inputs", {{"shape", "shape"}}},
                   {"attrs", {{"dtype", "float32"}}}});
  std::string prev = "r";
  for (int i = 0; i < adds; ++i) {
    const std::string id = "add" + std::to_string(i);
    nodes.push_back({{"id", id}, {"op", "Add"}, {"inputs", {{"x", prev}, {"y", "r"}}}});
    prev = id;
  }
  return {{"format", "blockflow.graph"}, {"version", 1}, {"nodes", nodes}};
}

// Ctrl-C during a long run: exit 130 with "cancelled", and no output files.
TEST_F(CliRunTest, SigintCancelsCleanlyWithoutOutputs) {
  // A chain of element-wise Adds over 4M floats: long enough to interrupt.
  WriteText(dir_ / "long.json", LongAddChain(400).dump());
  Process p({"run", "long.json", "--out", "o", "--threads", "1"}, dir_.path().string());
  ASSERT_GT(p.pid(), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  kill(p.pid(), SIGINT);
  const auto t0 = std::chrono::steady_clock::now();
  CmdResult r = p.Wait();
  const double wait_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.rc, 130) << r.err;
  EXPECT_NE(r.err.find("cancelled"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "o")) << "a cancelled run must not write outputs";
  EXPECT_LT(wait_s, 5.0) << "cancellation should stop the run promptly";
}

// On a terminal, a run longer than about a second shows a progress line on stderr;
// Ctrl-C then stops it. stderr is a pseudo-terminal here so that isatty() holds.
TEST_F(CliRunTest, ProgressLineOnATerminal) {
  WriteText(dir_ / "long.json", LongAddChain(2000).dump());
  int master = -1, slave = -1;
  ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  const std::string bin = BlockflowBinary();
  const std::string graph = dir_ / "long.json";
  std::vector<std::string> args = {bin, "run", graph, "--threads", "1"};
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, slave, 2);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addclose(&fa, master);
  pid_t pid = -1;
  ASSERT_EQ(posix_spawn(&pid, bin.c_str(), &fa, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  close(slave);
  // Read the terminal until the progress line shows (or 10 s pass).
  std::string seen;
  const auto t0 = std::chrono::steady_clock::now();
  while (seen.find("nodes done") == std::string::npos &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10)) {
    pollfd pfd{master, POLLIN, 0};
    if (poll(&pfd, 1, 100) > 0) {
      char buf[256];
      const ssize_t n = read(master, buf, sizeof buf);
      if (n <= 0) break;
      seen.append(buf, static_cast<size_t>(n));
    }
  }
  kill(pid, SIGINT);
  for (;;) {  // drain until the child closes the terminal
    pollfd pfd{master, POLLIN, 0};
    if (poll(&pfd, 1, 5000) <= 0) break;
    char buf[256];
    const ssize_t n = read(master, buf, sizeof buf);
    if (n <= 0) break;
    seen.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  waitpid(pid, &status, 0);
  close(master);
  EXPECT_NE(seen.find("running: "), std::string::npos) << seen;
  EXPECT_NE(seen.find("/2002 nodes done"), std::string::npos) << seen;
  ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 130);
  EXPECT_NE(seen.find("cancelled"), std::string::npos) << seen;
}

// Every sample graph runs with its Placeholders fed from their ui.feed files.
TEST(SamplesTest, EverySampleRunsAndWritesReadableNpy) {
  const fs::path samples = SourceDir() / "samples";
  int count = 0;
  for (const auto& entry : fs::directory_iterator(samples)) {
    if (entry.path().extension() != ".json") continue;
    ++count;
    SCOPED_TRACE(entry.path().filename().string());
    json g = json::parse(ReadText(entry.path().string()));
    std::vector<std::string> args = {"run", entry.path().string()};
    for (const json& n : g["nodes"]) {
      if (n["op"] == "Placeholder" && n.contains("ui") && n["ui"].contains("feed")) {
        args.push_back("--feed");
        args.push_back(n["id"].get<std::string>() + "=" +
                       (samples / n["ui"]["feed"].get<std::string>()).string());
      }
    }
    TempDir out;
    args.push_back("--out");
    args.push_back(out.path().string());
    CmdResult r = RunBlockflow(args);
    ASSERT_EQ(r.rc, 0) << r.err;
    int files = 0;
    for (const auto& f : fs::recursive_directory_iterator(out.path())) {
      if (f.path().extension() != ".npy") continue;
      ++files;
      Expected<Tensor> t = ReadAnyNpy(f.path().string());
      EXPECT_TRUE(t.ok()) << f.path() << ": " << t.status().message();
    }
    EXPECT_GT(files, 0) << r.out;
  }
  EXPECT_GT(count, 0) << "no samples/*.json found in " << samples;
}

}  // namespace
}  // namespace blockflow::testing
