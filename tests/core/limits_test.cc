// Resource limits (core/limits.h): byte counts, the memory limit held by analysis, feeds and
// the session's peak estimate, and the bounds on graph JSON and .npy headers. Every refusal
// happens before the tensor it names is allocated.
#include "core/limits.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/allocator.h"
#include "core/feeds.h"
#include "core/npy.h"
#include "core/session.h"
#include "test_graph.h"

namespace blockflow {
namespace {

namespace fs = std::filesystem;
using testing::GraphFromJson;

// A fresh folder under the system's temporary folder, removed at the end.
class LimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("bf_limits_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST(ByteSizeTest, ParsesSuffixes) {
  EXPECT_EQ(*ParseByteSize("1048576"), 1048576u);
  EXPECT_EQ(*ParseByteSize("512K"), 512u << 10);
  EXPECT_EQ(*ParseByteSize("64M"), 64u << 20);
  EXPECT_EQ(*ParseByteSize("64mb"), 64u << 20);
  EXPECT_EQ(*ParseByteSize("2G"), uint64_t{2} << 30);
  EXPECT_EQ(*ParseByteSize("100B"), 100u);
}

TEST(ByteSizeTest, RefusesWhatIsNotAByteCount) {
  const auto message = [](const std::string& text) {
    return ParseByteSize(text).status().message();
  };
  EXPECT_EQ(message("12Q"),
            "'12Q' is not a byte count: unknown suffix 'Q' (give bytes, or a number with K, M or "
            "G, such as 512M or 2G)");
  EXPECT_NE(message("M").find("it does not start with digits"), std::string::npos);
  EXPECT_NE(message("-5").find("it does not start with digits"), std::string::npos);
  EXPECT_NE(message("0").find("it must be more than zero"), std::string::npos);
  EXPECT_NE(message("99999999999999999999").find("it is too large"), std::string::npos);
  EXPECT_NE(message("99999999999G").find("it is too large"), std::string::npos);
  EXPECT_NE(message("1.5G").find("unknown suffix '.5G'"), std::string::npos);
}

TEST(ByteSizeTest, FormatsBytes) {
  EXPECT_EQ(FormatBytes(100), "100 bytes");
  EXPECT_EQ(FormatBytes(4 << 20), "4.0 MiB");
  EXPECT_EQ(FormatBytes(1.5L * (1 << 30)), "1.5 GiB");
}

// Half of usable memory by default, and usable memory is no more than the machine's.
TEST(ByteSizeTest, DefaultIsHalfOfMemory) {
  const uint64_t ram = static_cast<uint64_t>(::sysconf(_SC_PHYS_PAGES)) *
                       static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  EXPECT_LE(UsableMemory(), ram);
  EXPECT_GT(UsableMemory(), 0u);
  EXPECT_EQ(DefaultMemoryLimit(), UsableMemory() / 2);
  EXPECT_EQ(EffectiveMemoryLimit(0), DefaultMemoryLimit());
  EXPECT_EQ(EffectiveMemoryLimit(123), 123u);
}

// Every inferred output is held to the limit, with the node, the port, the size and the limit
// in the message; nothing is allocated (the pool's bytes in use do not move).
TEST_F(LimitsTest, AnalysisRefusesAnOutputAboveTheLimit) {
  Graph g = GraphFromJson(R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "shape", "op": "Const", "attrs": {"dtype": "int32", "shape": [2], "value": [1024, 1024]}},
    {"id": "r", "op": "RandomUniform", "inputs": {"shape": "shape"}, "attrs": {"dtype": "float32"}}
  ]})");
  g.memory_limit = 1 << 20;
  const size_t before = BufferPool::Global().stats().bytes_in_use;
  GraphAnalysis a = AnalyzeGraph(g);
  // The folded `shape` holds a few bytes; nothing near the 4 MiB.
  EXPECT_LT(BufferPool::Global().stats().bytes_in_use - before, 4096u);
  ASSERT_EQ(a.issues.size(), 1u);
  EXPECT_EQ(a.issues[0].ToString().rfind(
                "node 'r' (RandomUniform): output 0 ('output') is float32[1024,1024] (4.0 MiB), "
                "more than the memory limit of 1.0 MiB; raise it with",
                0),
            0u)
      << a.issues[0].ToString();
  EXPECT_NE(a.issues[0].message.find("--memory-limit BYTES"), std::string::npos);
  EXPECT_NE(a.issues[0].message.find("memory_limit=BYTES"), std::string::npos);
  g.memory_limit = 4 << 20;  // exactly enough
  EXPECT_TRUE(AnalyzeGraph(g).ok());
  // Without a limit the default holds: a 4 TB tensor is refused on any machine, named so.
  g.memory_limit = 0;
  g.nodes()[0].attrs["value"] = {1 << 20, 1 << 20};
  a = AnalyzeGraph(g);
  ASSERT_EQ(a.issues.size(), 1u);
  EXPECT_NE(a.issues[0].message.find("(4.0 TiB), more than the memory limit of "),
            std::string::npos)
      << a.issues[0].message;
  EXPECT_NE(a.issues[0].message.find("(half of this machine's "), std::string::npos);
}

// A Const from a file: its header gives the size, and the file is never read.
TEST_F(LimitsTest, AnalysisRefusesABigConstFile) {
  ASSERT_TRUE(WriteNpy(Path("w.npy"), Tensor(DType::kFloat64, Shape{512, 512})).ok());
  Graph g = GraphFromJson(R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "w", "op": "Const", "attrs": {"dtype": "float64", "file": "w.npy"}}]})",
                          dir_.string());
  g.memory_limit = 1000000;
  GraphAnalysis a = AnalyzeGraph(g);
  ASSERT_EQ(a.issues.size(), 1u);
  EXPECT_NE(a.issues[0].ToString().find("node 'w' (Const): output 0 ('output') is "
                                        "float64[512,512] (2.0 MiB), more than the memory "
                                        "limit of 976.6 KiB"),
            std::string::npos)
      << a.issues[0].ToString();
}

// Feeds: refused from their header, before the file is read, one by one and all together.
TEST_F(LimitsTest, FeedsAboveTheLimitAreRefusedFromTheirHeader) {
  ASSERT_TRUE(WriteNpy(Path("x.npy"), Tensor(DType::kFloat32, Shape{256, 1024})).ok());
  ASSERT_TRUE(WriteNpy(Path("y.npy"), Tensor(DType::kFloat32, Shape{256, 1024})).ok());
  Graph g = GraphFromJson(R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [-1, 1024]}},
    {"id": "y", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [-1, 1024]}},
    {"id": "s", "op": "Add", "inputs": {"x": "x", "y": "y"}}]})",
                          dir_.string());
  FeedSources sources;
  sources.files = {{"x", Path("x.npy")}, {"y", Path("y.npy")}};
  g.memory_limit = 512 << 10;
  Expected<std::map<std::string, Tensor>> feeds = LoadFeeds(g, AnalyzeGraph(g), {"s"}, sources);
  ASSERT_FALSE(feeds.ok());
  EXPECT_NE(feeds.status().message().find("node 'x' (Placeholder): feed '" + Path("x.npy") +
                                          "' is float32[256,1024] (1.0 MiB), more than the "
                                          "memory limit of 512.0 KiB"),
            std::string::npos)
      << feeds.status().message();
  // Each fits, both do not.
  g.memory_limit = 1536 << 10;
  feeds = LoadFeeds(g, AnalyzeGraph(g), {"s"}, sources);
  ASSERT_FALSE(feeds.ok());
  EXPECT_NE(feeds.status().message().find("node 'y' (Placeholder): feed '" + Path("y.npy") +
                                          "' brings the feeds read so far to 2.0 MiB, more "
                                          "than the memory limit of 1.5 MiB"),
            std::string::npos)
      << feeds.status().message();
  g.memory_limit = 2 << 20;
  EXPECT_TRUE(LoadFeeds(g, AnalyzeGraph(g), {"s"}, sources).ok());
}

// The session's peak estimate: three tensors of 4 MiB alive at once (two inputs and the sum)
// pass a limit of 10 MiB that each alone fits; the run is refused before it allocates.
TEST_F(LimitsTest, SessionRefusesARunWhosePeakPassesTheLimit) {
  Graph g = GraphFromJson(R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "shape", "op": "Const", "attrs": {"dtype": "int32", "shape": [2], "value": [1024, 1024]}},
    {"id": "a", "op": "RandomUniform", "inputs": {"shape": "shape"}, "attrs": {"dtype": "float32"}},
    {"id": "b", "op": "RandomUniform", "inputs": {"shape": "shape"},
     "attrs": {"dtype": "float32", "seed": 1}},
    {"id": "s", "op": "Add", "inputs": {"x": "a", "y": "b"}}]})");
  g.memory_limit = 10 << 20;
  EXPECT_TRUE(AnalyzeGraph(g).ok());
  Session session(g);
  std::vector<Tensor> out;
  const size_t before = BufferPool::Global().stats().bytes_in_use;
  Status s = session.Run({}, {"s"}, &out);
  EXPECT_EQ(BufferPool::Global().stats().bytes_in_use, before);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("node 's' (Add): the run would hold 12.0 MiB of tensors at once"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("more than the memory limit of 10.0 MiB"), std::string::npos);
  // Fetching only `a`, the peak is 4 MiB.
  EXPECT_TRUE(session.Run({}, {"a"}, &out).ok());
  g.memory_limit = 12 << 20;
  EXPECT_TRUE(Session(g).Run({}, {"s"}, &out).ok());

  // t = s + a: `b` is freed once `s` has run, so the peak stays 12 MiB; keeping every output
  // (as the editor does) holds 16 MiB by the end.
  Node t;
  t.id = "t";
  t.op = "Add";
  t.inputs = {{"x", {Endpoint{"s", 0}}}, {"y", {Endpoint{"a", 0}}}};
  ASSERT_TRUE(g.AddNode(t).ok());
  g.memory_limit = 14 << 20;
  Session chain(g);
  EXPECT_TRUE(chain.Run({}, {"t"}, &out).ok());
  std::map<std::string, std::vector<Tensor>> all;
  RunOptions keep;
  keep.all_outputs = &all;
  s = chain.Run({}, {}, &out, keep);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("node 't' (Add): the run would hold 16.0 MiB of tensors at once "
                             "while this node runs (every output so far, as all are kept)"),
            std::string::npos)
      << s.message();
  EXPECT_TRUE(all.empty());
}

// Graph JSON: size, node count and nesting are bounded, each with its own message.
TEST_F(LimitsTest, GraphJsonIsBounded) {
  std::string big = R"({"format": "blockflow.graph", "version": 1, "nodes": []})";
  big.append(kMaxGraphJsonBytes, ' ');
  Expected<Graph> g = ParseGraphJson(big, "big.json", ".");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().message(),
            "big.json: the graph file is 64.0 MiB, more than the 64.0 MiB a graph file may hold; "
            "keep large tensors in .npy files that a Const names with \"file\"");
  // The file's size alone refuses it (it is never read).
  {
    std::ofstream f(Path("big.json"));
    f << big;
  }
  EXPECT_NE(LoadGraphFile(Path("big.json"))
                .status()
                .message()
                .find("the graph file is 64.0 MiB, more than the 64.0 MiB a graph file may hold"),
            std::string::npos);

  std::string many = R"({"format": "blockflow.graph", "version": 1, "nodes": [)";
  for (size_t i = 0; i <= kMaxGraphNodes; ++i) {
    many += (i ? ",{\"id\":\"n" : "{\"id\":\"n") + std::to_string(i) + "\",\"op\":\"NoOp\"}";
  }
  many += "]}";
  const auto t0 = std::chrono::steady_clock::now();
  g = ParseGraphJson(many, "many.json", ".");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Linear: well under a second on a quiet machine (the callback parser took 20 s).
  EXPECT_LT(seconds, 5.0);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().message(),
            "many.json: the graph has 200001 nodes, more than the 200000 a graph may have");

  // 128 levels are fine (a parse error follows: it is no graph); 129 are not, and the message
  // gives where. Brackets inside strings do not count.
  std::string deep =
      "\n" + std::string(kMaxGraphJsonDepth, '[') + std::string(kMaxGraphJsonDepth, ']');
  g = ParseGraphJson(deep, "deep.json", ".");
  EXPECT_EQ(g.status().message(), "deep.json: a graph file must hold a JSON object");
  g = ParseGraphJson("[\"" + std::string(1000, '[') + "\"]", "deep.json", ".");
  EXPECT_EQ(g.status().message(), "deep.json: a graph file must hold a JSON object");
  deep = "\n" + std::string(kMaxGraphJsonDepth + 1, '[') + std::string(kMaxGraphJsonDepth + 1, ']');
  g = ParseGraphJson(deep, "deep.json", ".");
  EXPECT_EQ(g.status().message(),
            "deep.json:2:129: malformed JSON: values nested deeper than 128 levels");
}

// A .npy header longer than kMaxNpyHeaderBytes is refused by its length, before it is read.
TEST_F(LimitsTest, NpyHeaderIsBounded) {
  // Version 2.0: a 4-byte header length, here 100000.
  std::string bytes = "\x93NUMPY\x02";
  bytes += '\0';
  const uint32_t len = 100000;
  for (int i = 0; i < 4; ++i) bytes += static_cast<char>((len >> (8 * i)) & 0xff);
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }";
  header.resize(len - 1, ' ');
  bytes += header + "\n";
  bytes += std::string(4, '\0');
  {
    std::ofstream f(Path("h.npy"), std::ios::binary);
    f << bytes;
  }
  const std::string expected =
      ": not a valid .npy file: the header is 100000 bytes long, more than the 65535 blockflow "
      "reads";
  EXPECT_EQ(ParseNpy(bytes, "h.npy").status().message(), "h.npy" + expected);
  EXPECT_EQ(ReadNpy(Path("h.npy")).status().message(), Path("h.npy") + expected);
  EXPECT_EQ(ReadNpyInfo(Path("h.npy")).status().message(), Path("h.npy") + expected);
}

}  // namespace
}  // namespace blockflow
