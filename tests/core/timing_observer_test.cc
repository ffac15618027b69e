// The ready observers: per-node times and threads, memory one node at a time, the Chrome trace.
#include "core/timing_observer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <set>

#include "core/npy.h"
#include "test_graph.h"

namespace blockflow {
namespace {

// r = RandomUniform([256, 256]) (256 KiB of float32, pooled), s = r + r, t = Identity(s).
constexpr const char* kTimedGraph = R"({"format": "blockflow.graph", "version": 1, "nodes": [
  {"id": "shape", "op": "Const", "attrs": {"dtype": "int32", "shape": [2], "value": [256, 256]}},
  {"id": "r", "op": "RandomUniform", "inputs": {"shape": "shape"}, "attrs": {"seed": 1}},
  {"id": "s", "op": "Add", "inputs": {"x": "r", "y": "r"}},
  {"id": "t", "op": "Identity", "inputs": {"input": "s"}}]})";

// Counts the calls it sees.
class CountingObserver : public ExecutionObserver {
 public:
  void OnRunBegin(const std::vector<std::string>&) override { ++begins; }
  void OnNodeEnd(const Node&, double, const Status&) override { ++nodes; }
  void OnRunEnd(const Status&) override { ++ends; }
  int begins = 0, nodes = 0, ends = 0;
};

TEST(TimingObserverTest, RecordsEveryNodeAndWritesAChromeTrace) {
  const Graph g = testing::GraphFromJson(kTimedGraph);
  TimingObserver timing;
  CountingObserver counting;
  FanOutObserver fan({&timing, nullptr, &counting});
  RunOptions options;
  options.observer = &fan;
  std::vector<Tensor> out;
  ASSERT_TRUE(Session(g).Run({}, {"t"}, &out, options).ok());
  EXPECT_EQ(counting.begins, 1);
  EXPECT_EQ(counting.ends, 1);

  const std::vector<NodeTiming> timings = timing.timings();
  std::set<std::string> ids;
  for (const NodeTiming& t : timings) {
    ids.insert(t.id);
    EXPECT_GE(t.ms, 0.0);
    EXPECT_GE(t.start_us, 0.0);
    EXPECT_GE(t.thread, 1);
    EXPECT_TRUE(t.ok);
    EXPECT_FALSE(t.peak_bytes) << "memory is recorded only on request";
  }
  EXPECT_EQ(ids, (std::set<std::string>{"shape", "r", "s", "t"}));
  EXPECT_EQ(counting.nodes, static_cast<int>(timings.size()));
  EXPECT_GE(timing.run_ms(), 0.0);

  const std::string path = (std::filesystem::temp_directory_path() /
                            ("bf_trace_test_" + std::to_string(std::random_device()()) + ".json"))
                               .string();
  ASSERT_TRUE(timing.WriteChromeTrace(path).ok());
  Expected<std::string> text = ReadFile(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(text.ok());
  const nlohmann::json trace = nlohmann::json::parse(*text);  // throws on malformed JSON
  std::multiset<std::string> events;
  for (const nlohmann::json& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    events.insert(e.at("name").get<std::string>());
    for (const char* key : {"cat", "ts", "dur", "pid", "tid", "args"}) {
      EXPECT_TRUE(e.contains(key)) << key << " in " << e;
    }
    EXPECT_EQ(e["args"]["status"], "ok");
  }
  EXPECT_EQ(events, (std::multiset<std::string>{"shape", "r", "s", "t"}));
}

TEST(TimingObserverTest, MemoryIsRecordedOneNodeAtATime) {
  const Graph g = testing::GraphFromJson(kTimedGraph);
  TimingObserver timing(/*record_memory=*/true);
  EXPECT_TRUE(timing.records_memory());
  RunOptions options;
  timing.Attach(&options);
  EXPECT_EQ(options.observer, &timing);
  EXPECT_EQ(options.max_parallel_nodes, 1);
  std::vector<Tensor> out;
  ASSERT_TRUE(Session(g).Run({}, {"t"}, &out, options).ok());
  constexpr size_t kBytes = size_t{256} * 256 * sizeof(float);
  for (const NodeTiming& t : timing.timings()) {
    ASSERT_TRUE(t.peak_bytes) << t.id;
    // r and s each allocate their 256 KiB output while they run.
    if (t.id == "r" || t.id == "s") {
      EXPECT_GE(*t.peak_bytes, kBytes) << t.id;
    }
  }
  const nlohmann::json trace = timing.ChromeTrace();  // the loop must not outlive it
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (e["ph"] == "X") {
      EXPECT_TRUE(e["args"].contains("peak_bytes")) << e;
    }
  }
}

TEST(PoolPeakMeterTest, MeasuresWhatIsAllocatedSinceStart) {
  PoolPeakMeter meter;
  meter.Start();
  EXPECT_EQ(meter.Peak(), 0u);
  {
    Tensor big(DType::kFloat32, Shape{1 << 16});  // 256 KiB
    EXPECT_GE(meter.Peak(), size_t{1} << 18);
  }
  EXPECT_GE(meter.Peak(), size_t{1} << 18) << "the peak stays after the buffer is freed";
}

}  // namespace
}  // namespace blockflow
