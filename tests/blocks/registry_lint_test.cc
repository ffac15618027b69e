// The registry keeps CONTRIBUTING.md's checklist: every block, port and attribute has a doc
// line (docs/blocks.md has no blank cells), every block is used by a sample graph under
// samples/, and every block with an optimized kernel has a compare test.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "blocks/register_blocks.h"
#include "core/graph.h"

namespace blockflow {
namespace {

namespace fs = std::filesystem;

const fs::path kSourceDir = BF_SOURCE_DIR;

// The test that compares the optimized kernel of each block with its reference kernel, by
// block. A block that gains an optimized kernel needs a compare test listed here.
const std::map<std::string, std::string> kCompareTests = {
    {"Conv2D", "tests/blocks/conv/compare_test.cc"},
    {"Conv2DBackpropInput", "tests/blocks/conv/compare_test.cc"},
    {"Conv2DBackpropFilter", "tests/blocks/conv/compare_test.cc"},
    {"DepthwiseConv2dNative", "tests/blocks/conv/compare_test.cc"},
    {"DepthwiseConv2dNativeBackpropInput", "tests/blocks/conv/compare_test.cc"},
    {"DepthwiseConv2dNativeBackpropFilter", "tests/blocks/conv/compare_test.cc"},
};

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The blockflow graphs under samples/ (not the TensorFlow GraphDefs of samples/tf/).
std::vector<fs::path> SampleGraphs() {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(kSourceDir / "samples")) {
    if (entry.path().extension() == ".json") out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(RegistryLint, EveryBlockPortAndAttributeHasADoc) {
  RegisterBuiltinBlocks();
  for (const OpSchema* s : OpRegistry::Global().All()) {
    EXPECT_FALSE(s->doc().empty()) << s->name();
    for (const PortDef& p : s->inputs()) {
      EXPECT_FALSE(p.doc.empty()) << s->name() << " input " << p.name;
    }
    for (const OutputDef& p : s->outputs()) {
      EXPECT_FALSE(p.doc.empty()) << s->name() << " output " << p.name;
    }
    for (const AttrDef& a : s->attrs()) {
      EXPECT_FALSE(a.doc.empty()) << s->name() << " attr " << a.name;
    }
  }
}

TEST(RegistryLint, EveryBlockHasASampleGraph) {
  RegisterBuiltinBlocks();
  std::set<std::string> used;
  const std::vector<fs::path> samples = SampleGraphs();
  ASSERT_FALSE(samples.empty());
  for (const fs::path& path : samples) {
    Expected<Graph> g = LoadGraphFile(path.string());
    ASSERT_TRUE(g.ok()) << g.status().message();
    EXPECT_TRUE(AnalyzeGraph(*g).ok()) << path.filename() << " does not validate";
    // Saved as blockflow saves graphs, so that opening and saving a sample changes nothing.
    EXPECT_EQ(SerializeGraph(*g), ReadAll(path)) << path.filename();
    for (const Node& n : g->nodes()) used.insert(n.op);
  }
  for (const OpSchema* s : OpRegistry::Global().All()) {
    EXPECT_TRUE(used.count(s->name()))
        << s->name() << " is used by no graph in samples/: add a small runnable sample";
  }
}

TEST(RegistryLint, EveryOptimizedKernelHasACompareTest) {
  RegisterBuiltinBlocks();
  std::set<std::string> optimized;
  for (const OpSchema* s : OpRegistry::Global().All()) {
    if (s->has_optimized_kernel()) optimized.insert(s->name());
  }
  EXPECT_FALSE(optimized.empty());
  for (const std::string& op : optimized) {
    EXPECT_TRUE(kCompareTests.count(op))
        << op << " has an optimized kernel but no compare test listed in " << __FILE__;
  }
  for (const auto& [op, file] : kCompareTests) {
    EXPECT_TRUE(optimized.count(op)) << op << " is listed but has no optimized kernel";
    const std::string text = ReadAll(kSourceDir / file);
    ASSERT_FALSE(text.empty()) << file << " is missing";
    EXPECT_NE(text.find("KernelKind::kOptimized"), std::string::npos) << file;
    EXPECT_NE(text.find("KernelKind::kReference"), std::string::npos) << file;
  }
}

}  // namespace
}  // namespace blockflow
