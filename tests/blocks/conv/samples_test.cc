// The six convolution sample graphs (samples/<op>.json) load, validate, and run with their
// Placeholder's default feed (ui.feed); the optimized run matches the reference run.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "blocks/register_blocks.h"
#include "core/graph.h"
#include "core/npy.h"
#include "core/session.h"

namespace blockflow {
namespace {

namespace fs = std::filesystem;

struct Sample {
  const char* file;
  const char* op;
  Shape output;
};

// Names the sample in test logs instead of dumping its bytes.
void PrintTo(const Sample& s, std::ostream* os) { *os << s.file; }

class ConvSampleTest : public ::testing::TestWithParam<Sample> {};

TEST_P(ConvSampleTest, RunsWithItsDefaultFeed) {
  RegisterBuiltinBlocks();
  const Sample& s = GetParam();
  const fs::path path = fs::path(BF_SAMPLES_DIR) / (std::string(s.file) + ".json");
  Expected<Graph> g = LoadGraphFile(path.string());
  ASSERT_TRUE(g.ok()) << g.status().message();
  std::map<std::string, Tensor> feeds;
  std::string block_id;
  uintmax_t bytes = fs::file_size(path);
  for (const Node& n : g->nodes()) {
    ASSERT_TRUE(n.ui.is_object() && n.ui.contains("x") && n.ui.contains("y"))
        << n.id << " has no ui position";
    if (n.op == "Placeholder") {
      ASSERT_TRUE(n.ui.contains("feed")) << n.id;
      const fs::path feed = fs::path(BF_SAMPLES_DIR) / n.ui["feed"].get<std::string>();
      bytes += fs::file_size(feed);
      Expected<Tensor> t = ReadNpy(feed.string());
      ASSERT_TRUE(t.ok()) << t.status().message();
      feeds[n.id] = *t;
    } else if (n.op == s.op) {
      block_id = n.id;
    } else if (n.attrs.contains("file")) {
      bytes += fs::file_size(fs::path(BF_SAMPLES_DIR) / n.attrs["file"].get<std::string>());
    }
  }
  EXPECT_LT(bytes, 100u * 1024u) << "samples stay small";
  ASSERT_FALSE(block_id.empty()) << "no " << s.op << " node";
  ASSERT_EQ(feeds.size(), 1u);
  // Saved as blockflow saves graphs, so opening and saving a sample leaves it unchanged.
  Expected<std::string> text = ReadFile(path.string());
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(SerializeGraph(*g), *text);
  // Without the feed the graph still validates (shapes come from the Placeholder's attr).
  EXPECT_TRUE(AnalyzeGraph(*g).ok());

  Session session(*g);
  std::vector<Tensor> fast, slow;
  Status st = session.Run(feeds, {block_id}, &fast);
  ASSERT_TRUE(st.ok()) << st.message();
  RunOptions ref;
  ref.force_reference_kernels = true;
  st = session.Run(feeds, {block_id}, &slow, ref);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(fast[0].shape(), s.output);
  ASSERT_EQ(slow[0].shape(), s.output);
  double max_abs = 0;
  for (int64_t i = 0; i < fast[0].num_elements(); ++i) {
    EXPECT_NEAR(fast[0].GetAsDouble(i), slow[0].GetAsDouble(i), 1e-5) << i;
    max_abs = std::max(max_abs, std::fabs(slow[0].GetAsDouble(i)));
  }
  EXPECT_GT(max_abs, 0.05) << "the sample computes something non-trivial";
}

INSTANTIATE_TEST_SUITE_P(
    Samples, ConvSampleTest,
    ::testing::Values(Sample{"conv2d", "Conv2D", Shape{1, 8, 8, 4}},
                      Sample{"conv2d_backprop_input", "Conv2DBackpropInput", Shape{1, 8, 8, 3}},
                      Sample{"conv2d_backprop_filter", "Conv2DBackpropFilter", Shape{3, 3, 3, 4}},
                      Sample{"depthwise_conv2d_native", "DepthwiseConv2dNative", Shape{1, 8, 8, 6}},
                      Sample{"depthwise_conv2d_native_backprop_input",
                             "DepthwiseConv2dNativeBackpropInput", Shape{1, 8, 8, 3}},
                      Sample{"depthwise_conv2d_native_backprop_filter",
                             "DepthwiseConv2dNativeBackpropFilter", Shape{3, 3, 3, 2}}),
    [](const ::testing::TestParamInfo<Sample>& param_info) {
      return std::string(param_info.param.file);
    });

}  // namespace
}  // namespace blockflow
