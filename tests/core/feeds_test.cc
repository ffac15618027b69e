// Feeds for every client of Session: only what the fetches need, checked against the
// Placeholder's analysis, every problem named by node and file.
#include "core/feeds.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "core/npy.h"
#include "test_graph.h"

namespace blockflow {
namespace {

namespace fs = std::filesystem;

// a (Placeholder [2]) → out; b (Placeholder [-1, 3]) → other; c is a Const.
constexpr const char* kGraph = R"({"format": "blockflow.graph", "version": 1, "nodes": [
  {"id": "a", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [2]},
   "ui": {"feed": "data/a.npy"}},
  {"id": "b", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [-1, 3]}},
  {"id": "c", "op": "Const", "attrs": {"dtype": "float32", "shape": [2], "value": [1, 2]}},
  {"id": "out", "op": "Add", "inputs": {"x": "a", "y": "c"}},
  {"id": "other", "op": "Identity", "inputs": {"input": "b"}}]})";

class FeedsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("bf_feeds_test_" + std::to_string(std::random_device()()));
    fs::create_directories(dir_ / "data");
    graph_ = testing::GraphFromJson(kGraph, dir_.string());
    analysis_ = AnalyzeGraph(graph_);
    ASSERT_TRUE(analysis_.ok());
    ASSERT_TRUE(WriteNpy(Path("data/a.npy"), Tensor::FromVector<float>({1, 2})).ok());
    ASSERT_TRUE(WriteNpy(Path("b.npy"), Tensor::FromVector<float>({1, 2, 3}, Shape{1, 3})).ok());
    ASSERT_TRUE(WriteNpy(Path("a3.npy"), Tensor::FromVector<float>({1, 2, 3})).ok());
    ASSERT_TRUE(WriteNpy(Path("a64.npy"), Tensor::FromVector<double>({1, 2})).ok());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  Expected<std::map<std::string, Tensor>> Load(const std::vector<std::string>& fetches,
                                               const FeedSources& sources) const {
    return LoadFeeds(graph_, analysis_, fetches, sources);
  }

  fs::path dir_;
  Graph graph_;
  GraphAnalysis analysis_;
};

TEST_F(FeedsTest, LoadsOnlyWhatTheFetchesNeed) {
  FeedSources sources;
  sources.files = {{"a", Path("data/a.npy")}, {"b", Path("missing.npy")}};
  Expected<std::map<std::string, Tensor>> feeds = Load({"out"}, sources);
  ASSERT_TRUE(feeds.ok()) << feeds.status().message();  // b's file is never read
  ASSERT_EQ(feeds->size(), 1u);
  EXPECT_EQ(feeds->at("a").shape(), (Shape{2}));
  // Empty fetches: the whole graph, so b is needed and its file is read.
  feeds = Load({}, sources);
  ASSERT_FALSE(feeds.ok());
  EXPECT_NE(feeds.status().message().find("node 'b' (Placeholder): feed: "), std::string::npos)
      << feeds.status().message();
  EXPECT_NE(feeds.status().message().find("missing.npy"), std::string::npos);
}

TEST_F(FeedsTest, UiFeedFilesResolveAgainstTheGraphsFolder) {
  FeedSources sources;
  sources.use_ui_feed = true;
  Expected<std::map<std::string, Tensor>> feeds = Load({"out"}, sources);
  ASSERT_TRUE(feeds.ok()) << feeds.status().message();
  EXPECT_TRUE(feeds->at("a").BitwiseEquals(Tensor::FromVector<float>({1, 2})));
  // A file given explicitly wins over ui.feed.
  sources.files = {{"a", Path("a3.npy")}};
  feeds = Load({"out"}, sources);
  ASSERT_FALSE(feeds.ok());
  // Without use_ui_feed, ui.feed is not read: a is missing.
  feeds = Load({"out"}, FeedSources());
  ASSERT_FALSE(feeds.ok());
  EXPECT_EQ(feeds.status().message(),
            "node 'a' (Placeholder): needs a value: it is needed by the fetched outputs but was "
            "not fed");
}

TEST_F(FeedsTest, MismatchesNameTheNodeTheFileAndTheRule) {
  FeedSources sources;
  sources.files = {{"a", Path("a64.npy")}};
  Expected<std::map<std::string, Tensor>> feeds = Load({"out"}, sources);
  ASSERT_FALSE(feeds.ok());
  const std::string dtype = feeds.status().message();
  EXPECT_EQ(dtype.rfind("node 'a' (Placeholder): feed: ", 0), 0u) << dtype;
  EXPECT_NE(dtype.find("a64.npy"), std::string::npos) << dtype;
  EXPECT_NE(dtype.find("float64"), std::string::npos) << dtype;
  EXPECT_NE(dtype.find("float32"), std::string::npos) << dtype;

  sources.files = {{"a", Path("a3.npy")}};
  feeds = Load({"out"}, sources);
  ASSERT_FALSE(feeds.ok());
  EXPECT_EQ(feeds.status().message(), "node 'a' (Placeholder): fed shape [3] from '" +
                                          Path("a3.npy") + "', but the Placeholder's shape is [2]");

  // -1 takes any size; the rank must match.
  sources.files = {{"b", Path("b.npy")}};
  feeds = Load({"other"}, sources);
  ASSERT_TRUE(feeds.ok()) << feeds.status().message();
  sources.files = {{"b", Path("a3.npy")}};
  EXPECT_FALSE(Load({"other"}, sources).ok());
}

TEST_F(FeedsTest, ReportsEveryProblemOnePerLine) {
  FeedSources sources;
  sources.files = {{"nope", "x.npy"}, {"c", "x.npy"}, {"b", Path("b.npy")}, {"b", "y.npy"}};
  sources.missing_message = [](const Graph&, const Node& node) {
    return "pass --feed " + node.id + "=FILE.npy";
  };
  Expected<std::map<std::string, Tensor>> feeds = Load({}, sources);
  ASSERT_FALSE(feeds.ok());
  EXPECT_EQ(feeds.status().message(),
            "cannot feed 'nope' from 'x.npy': there is no node 'nope' in the graph\n"
            "node 'c' (Const): cannot be fed from 'x.npy': only a Placeholder can be fed\n"
            "node 'b' (Placeholder): is fed twice\n"
            "node 'a' (Placeholder): pass --feed a=FILE.npy");
}

}  // namespace
}  // namespace blockflow
