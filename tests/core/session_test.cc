#include "core/session.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include "blocks/register_blocks.h"

namespace blockflow {
namespace {

// Test-only ops, in a registry of their own next to the basic blocks.
std::atomic<int> g_active{0}, g_max_active{0};

OpRegistry& TestRegistry() {
  static OpRegistry* r = [] {
    auto* reg = new OpRegistry();
    RegisterBasicBlocks(*reg);
    auto same = [](InferContext& c) {
      c.SetOutput(0, c.input(0).dtype, c.input(0).shape);
      return Status::OK();
    };
    // Waits (up to 5 s) until another Rendezvous is running too; records the concurrency seen.
    reg->Register(OpSchema("Rendezvous")
                      .SetIsStateful()
                      .Input("x", AllDTypes())
                      .Output("y", AllDTypes())
                      .SetShapeFn(same)
                      .SetReferenceKernel([](KernelContext& k) {
                        const int now = ++g_active;
                        int seen = g_max_active.load();
                        while (now > seen && !g_max_active.compare_exchange_weak(seen, now)) {
                        }
                        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
                        while (g_max_active.load() < 2 && std::chrono::steady_clock::now() < end)
                          std::this_thread::yield();
                        --g_active;
                        k.outputs = {k.input(0)};
                        return Status::OK();
                      }));
    reg->Register(OpSchema("Spin")
                      .SetIsStateful()
                      .Input("x", AllDTypes())
                      .Output("y", AllDTypes())
                      .SetShapeFn(same)
                      .SetReferenceKernel([](KernelContext& k) {
                        const auto end =
                            std::chrono::steady_clock::now() + std::chrono::seconds(10);
                        while (!k.cancelled()) {
                          if (std::chrono::steady_clock::now() > end)
                            return Internal("never cancelled");
                          std::this_thread::sleep_for(std::chrono::milliseconds(1));
                        }
                        return Cancelled();
                      }));
    reg->Register(OpSchema("Split2")
                      .Input("x", AllDTypes())
                      .Output("a", AllDTypes())
                      .Output("b", AllDTypes())
                      .SetShapeFn([](InferContext& c) {
                        c.SetOutput(0, c.input(0).dtype, c.input(0).shape);
                        c.SetOutput(1, c.input(0).dtype, c.input(0).shape);
                        return Status::OK();
                      })
                      .SetReferenceKernel([](KernelContext& k) {
                        k.outputs = {k.input(0), k.input(0)};
                        return Status::OK();
                      }));
    reg->Register(OpSchema("Fail")
                      .SetIsStateful()
                      .Input("x", AllDTypes())
                      .Output("y", AllDTypes())
                      .SetShapeFn(same)
                      .SetReferenceKernel([](KernelContext&) { return InvalidArgument("boom"); }));
    return reg;
  }();
  return *r;
}

Graph MakeGraph(const std::string& nodes) {
  auto g = ParseGraphJson(
      R"({"format": "blockflow.graph", "version": 1, "nodes": [)" + nodes + "]}", "g.json", ".");
  EXPECT_TRUE(g.ok()) << g.status().message();
  return *g;
}

class Recorder : public ExecutionObserver {
 public:
  void OnNodeBegin(const Node& node) override {
    std::lock_guard<std::mutex> lock(mu);
    begun.push_back(node.id);
    if (cancel_on == node.id) cancel->store(true);
  }
  void OnNodeEnd(const Node& node, double ms, const Status& s) override {
    std::lock_guard<std::mutex> lock(mu);
    ended.push_back(node.id);
    EXPECT_GE(ms, 0.0);
  }
  std::mutex mu;
  std::vector<std::string> begun, ended;
  std::string cancel_on;
  std::atomic<bool>* cancel = nullptr;
};

const char* kChain =
    R"({"id": "a", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [2]}},
  {"id": "b", "op": "Add", "inputs": {"x": "a", "y": "a"}},
  {"id": "c", "op": "Mul", "inputs": {"x": "b", "y": "a"}},
  {"id": "unused", "op": "Sub", "inputs": {"x": "a", "y": "a"}})";

TEST(SessionTest, RunsOnlyWhatFetchesNeedInOrder) {
  Session s(MakeGraph(kChain), TestRegistry());
  Recorder rec;
  RunOptions opt;
  opt.observer = &rec;
  std::vector<Tensor> out;
  ASSERT_TRUE(s.Run({{"a", Tensor::FromVector<float>({1, 2})}}, {"c"}, &out, opt).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data<float>()[1], 8.0f);  // (2 + 2) * 2
  EXPECT_EQ(rec.begun, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(rec.ended.size(), 3u);
}

TEST(SessionTest, DefaultFetchesAreTheSinks) {
  Session s(MakeGraph(kChain), TestRegistry());
  EXPECT_EQ(s.DefaultFetches(), (std::vector<std::string>{"c", "unused"}));
}

TEST(SessionTest, DefaultFetchesArePerOutput) {
  Session s(MakeGraph(R"({"id": "a", "op": "Const", "attrs": {"dtype": "float32", "value": [1]}},
      {"id": "s", "op": "Split2", "inputs": {"x": "a"}},
      {"id": "i", "op": "Identity", "inputs": {"input": "s"}})"),
            TestRegistry());
  EXPECT_EQ(s.DefaultFetches(), (std::vector<std::string>{"s:1", "i"}));
}

TEST(SessionTest, ACycleFailsEvenWithoutFetches) {
  Session s(MakeGraph(R"({"id": "a", "op": "Identity", "inputs": {"input": "b"}},
      {"id": "b", "op": "Identity", "inputs": {"input": "a"}})"),
            TestRegistry());
  std::vector<Tensor> out;
  Status st = s.Run({}, {}, &out);
  EXPECT_NE(st.message().find("closes a cycle"), std::string::npos) << st.message();
}

TEST(SessionTest, AFailureStopsRunningSiblings) {
  Session s(MakeGraph(R"({"id": "a", "op": "Const", "attrs": {"dtype": "float32", "value": [1]}},
      {"id": "spin", "op": "Spin", "inputs": {"x": "a"}},
      {"id": "f", "op": "Fail", "inputs": {"x": "a"}})"),
            TestRegistry());
  RunOptions opt;
  opt.max_parallel_nodes = 2;
  std::vector<Tensor> out;
  // Without the stop signal Spin would run for 10 s and report "never cancelled".
  EXPECT_EQ(s.Run({}, {"spin", "f"}, &out, opt).message(), "node 'f' (Fail): boom");
}

TEST(SessionTest, TheRootCauseIsReported) {
  Session s(MakeGraph(R"({"id": "t", "op": "Identity", "inputs": {"input": "a"}},
      {"id": "a", "op": "Const", "attrs": {"dtype": "int32", "value": [1.5]}})"),
            TestRegistry());
  std::vector<Tensor> out;
  EXPECT_NE(s.Run({}, {"t"}, &out).message().find("node 'a' (Const): attr 'value' holds 1.5"),
            std::string::npos);
}

TEST(SessionTest, SmallComputedSizesFold) {
  Session s(MakeGraph(R"({"id": "c", "op": "Const", "attrs": {"dtype": "int32", "value": [2, 3]}},
      {"id": "dims", "op": "Add", "inputs": {"x": "c", "y": "c"}},
      {"id": "v", "op": "Const", "attrs": {"dtype": "float32", "shape": [], "value": 1}},
      {"id": "f", "op": "Fill", "inputs": {"dims": "dims", "value": "v"}})"),
            TestRegistry());
  std::vector<Tensor> out;
  ASSERT_TRUE(s.Run({}, {"f"}, &out).ok());
  EXPECT_EQ(out[0].shape(), (Shape{4, 6}));
}

TEST(SessionTest, IndependentNodesRunInParallel) {
  g_active = 0;
  g_max_active = 0;
  Session s(MakeGraph(R"({"id": "a", "op": "Const", "attrs": {"dtype": "float32", "value": [1]}},
      {"id": "r1", "op": "Rendezvous", "inputs": {"x": "a"}},
      {"id": "r2", "op": "Rendezvous", "inputs": {"x": "a"}})"),
            TestRegistry());
  RunOptions opt;
  opt.max_parallel_nodes = 2;
  std::vector<Tensor> out;
  ASSERT_TRUE(s.Run({}, {"r1", "r2"}, &out, opt).ok());
  EXPECT_EQ(g_max_active.load(), 2);
}

TEST(SessionTest, CancellationStopsTheRun) {
  Session s(MakeGraph(R"({"id": "a", "op": "Const", "attrs": {"dtype": "float32", "value": [1]}},
      {"id": "spin", "op": "Spin", "inputs": {"x": "a"}},
      {"id": "after", "op": "Identity", "inputs": {"input": "spin"}})"),
            TestRegistry());
  std::atomic<bool> cancel{false};
  Recorder rec;
  rec.cancel_on = "spin";
  rec.cancel = &cancel;
  RunOptions opt;
  opt.cancel = &cancel;
  opt.observer = &rec;
  std::vector<Tensor> out;
  Status st = s.Run({}, {"after"}, &out, opt);
  EXPECT_EQ(st.code(), StatusCode::kCancelled) << st.message();
  EXPECT_EQ(std::count(rec.begun.begin(), rec.begun.end(), "after"), 0);
}

TEST(SessionTest, ErrorsNameNodeAndOp) {
  Session s(MakeGraph(std::string(kChain) + R"(, {"id": "f", "op": "Fail", "inputs": {"x": "c"}})"),
            TestRegistry());
  std::vector<Tensor> out;
  const std::map<std::string, Tensor> feed = {{"a", Tensor::FromVector<float>({1, 2})}};
  Status st = s.Run(feed, {"f"}, &out);
  EXPECT_EQ(st.message(), "node 'f' (Fail): boom");

  struct Case {
    std::map<std::string, Tensor> feeds;
    std::vector<std::string> fetches;
    std::string expect;
  } cases[] = {
      {{}, {"c"}, "node 'a' (Placeholder): needs a value"},
      {{{"a", Tensor::FromVector<double>({1, 2})}},
       {"c"},
       "node 'a' (Placeholder): fed a float64 tensor, but dtype is float32"},
      {{{"a", Tensor::FromVector<float>({1, 2, 3})}},
       {"c"},
       "node 'a' (Placeholder): fed shape [3] does not match shape [2]"},
      {{{"b", Tensor::FromVector<float>({1, 2})}}, {"c"}, "node 'b' (Add): cannot be fed"},
      {{{"zz", Tensor::FromVector<float>({1, 2})}}, {"c"}, "there is no node 'zz'"},
      {feed, {"c:1"}, "node 'c' has 1 output(s)"},
      {feed, {"nope"}, "cannot fetch 'nope'"},
  };
  for (const Case& c : cases) {
    Status e = s.Run(c.feeds, c.fetches, &out);
    EXPECT_NE(e.message().find(c.expect), std::string::npos) << e.message();
  }
}

TEST(SessionTest, BrokenNodesOutsideTheFetchDoNotMatter) {
  Session s(MakeGraph(std::string(kChain) + R"(, {"id": "broken", "op": "NoSuchOp"})"),
            TestRegistry());
  std::vector<Tensor> out;
  EXPECT_TRUE(s.Run({{"a", Tensor::FromVector<float>({1, 2})}}, {"c"}, &out).ok());
  EXPECT_FALSE(s.Run({{"a", Tensor::FromVector<float>({1, 2})}}, {"broken"}, &out).ok());
}

TEST(SessionTest, AllOutputsAreReported) {
  Session s(MakeGraph(kChain), TestRegistry());
  std::map<std::string, std::vector<Tensor>> all;
  RunOptions opt;
  opt.all_outputs = &all;
  std::vector<Tensor> out;
  ASSERT_TRUE(s.Run({{"a", Tensor::FromVector<float>({1, 2})}}, {"c"}, &out, opt).ok());
  EXPECT_EQ(all.size(), 3u);
  EXPECT_EQ(all["b"][0].data<float>()[0], 2.0f);
}

// The default thread count is OMP_NUM_THREADS's first number when it is set to one, as OpenMP
// programs take it (mpirun -x OMP_NUM_THREADS=1 keeps one process per core from
// oversubscribing), else every core the process may run on.
TEST(DefaultNumThreads, FollowsOmpNumThreads) {
  EXPECT_EQ(ParseOmpNumThreads("3"), 3);
  EXPECT_EQ(ParseOmpNumThreads("5,2"), 5);  // nested levels: the outer one
  EXPECT_EQ(ParseOmpNumThreads(" 4 "), 4);
  EXPECT_EQ(ParseOmpNumThreads("4 , 2"), 4);
  for (const char* bad : {"", " ", "0", "-2", "two", "4x", "4.5", "99999999999"})
    EXPECT_EQ(ParseOmpNumThreads(bad), std::nullopt) << "'" << bad << "'";
  EXPECT_EQ(ParseOmpNumThreads(nullptr), std::nullopt);
  const std::optional<int> env = ParseOmpNumThreads(std::getenv("OMP_NUM_THREADS"));
  EXPECT_EQ(DefaultNumThreads(), env ? *env : std::max(1, omp_get_num_procs()));
}

}  // namespace
}  // namespace blockflow
