// The session's memory and preparation: tensor lifetimes, prepared plans, the Const file cache,
// and concurrent runs of one Session.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "blocks/register_blocks.h"
#include "core/allocator.h"
#include "core/file_cache.h"
#include "core/npy.h"
#include "core/session.h"

namespace blockflow {
namespace {

namespace fs = std::filesystem;

Graph ParseOrDie(const std::string& text, const std::string& base_dir = "") {
  Expected<Graph> g = ParseGraphJson(text, "test.json", base_dir);
  BF_CHECK(g.ok(), g.status().message());
  return std::move(g).value();
}

std::string GraphJson(const std::string& nodes) {
  return R"({"format": "blockflow.graph", "version": 1, "nodes": [)" + nodes + "]}";
}

Tensor RandomTensor(Shape shape, uint32_t seed) {
  Tensor t(DType::kFloat32, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

// x → 20 × Mul(·, 2) → y: each intermediate is 1 MB.
std::string MulChain(int length) {
  std::string nodes =
      R"({"id": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [256, 1024]}},)"
      R"({"id": "two", "op": "Const", "attrs": {"dtype": "float32", "shape": [], "value": 2}})";
  std::string prev = "x";
  for (int i = 0; i < length; ++i) {
    const std::string id = "m" + std::to_string(i);
    nodes +=
        R"(,{"id": ")" + id + R"(", "op": "Mul", "inputs": {"x": ")" + prev + R"(", "y": "two"}})";
    prev = id;
  }
  return GraphJson(nodes);
}

TEST(SessionMemory, PeakFollowsTheLiveSetOnAChain) {
  RegisterBuiltinBlocks();
  constexpr size_t kOutput = size_t{256} * 1024 * sizeof(float);
  const Session session(ParseOrDie(MulChain(20)));
  const std::map<std::string, Tensor> feeds{{"x", RandomTensor(Shape{256, 1024}, 1)}};
  std::vector<Tensor> out;
  ASSERT_TRUE(session.Run(feeds, {"m19"}, &out).ok());  // warm the pool and the plan
  out.clear();
  BufferPool& pool = BufferPool::Global();
  const size_t before = pool.stats().bytes_in_use;
  pool.ResetPeak();
  ASSERT_TRUE(session.Run(feeds, {"m19"}, &out).ok());
  const size_t peak = pool.stats().peak_bytes_in_use - before;
  // One input and one output live at a time (plus small bookkeeping), never all twenty.
  EXPECT_LE(peak, 2 * kOutput + (size_t{64} << 10)) << "peak " << peak;
  EXPECT_GE(peak, 2 * kOutput);
  const float* x = feeds.at("x").data<float>();
  const float* y = out[0].data<float>();
  for (int64_t i = 0; i < out[0].num_elements(); i += 997) {
    EXPECT_EQ(y[i], x[i] * 1048576.0f) << i;  // 2^20: exact in float
  }
  // Only the fetched output stays alive after the run.
  EXPECT_LE(pool.stats().bytes_in_use - before, kOutput);
}

TEST(SessionMemory, AllOutputsKeepsEveryIntermediate) {
  RegisterBuiltinBlocks();
  const Session session(ParseOrDie(MulChain(5)));
  const std::map<std::string, Tensor> feeds{{"x", RandomTensor(Shape{256, 1024}, 2)}};
  std::map<std::string, std::vector<Tensor>> all;
  RunOptions options;
  options.all_outputs = &all;
  std::vector<Tensor> out;
  ASSERT_TRUE(session.Run(feeds, {"m4"}, &out, options).ok());
  for (int i = 0; i < 5; ++i) {
    const std::vector<Tensor>& t = all.at("m" + std::to_string(i));
    ASSERT_EQ(t.size(), 1u);
    ASSERT_EQ(t[0].shape(), (Shape{256, 1024}));
    EXPECT_EQ(t[0].data<float>()[7], feeds.at("x").data<float>()[7] * float(2 << i));
  }
}

TEST(SessionPrepared, ReusedPlanGivesBitwiseTheFreshResult) {
  RegisterBuiltinBlocks();
  const std::string text = GraphJson(R"(
    {"id": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [-1, 9, 9, 3]}},
    {"id": "w", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [3, 3, 3, 2]}},
    {"id": "dy", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [-1, 5, 5, 6]}},
    {"id": "xs", "op": "Shape", "inputs": {"input": "x"}},
    {"id": "fs", "op": "Const", "attrs": {"dtype": "int32", "value": [3, 3, 3, 2]}},
    {"id": "dx", "op": "DepthwiseConv2dNativeBackpropInput",
     "inputs": {"input_sizes": "xs", "filter": "w", "out_backprop": "dy"},
     "attrs": {"strides": [1, 2, 2, 1], "padding": "SAME"}},
    {"id": "dw", "op": "DepthwiseConv2dNativeBackpropFilter",
     "inputs": {"input": "x", "filter_sizes": "fs", "out_backprop": "dy"},
     "attrs": {"strides": [1, 2, 2, 1], "padding": "SAME"}})");
  const Session session(ParseOrDie(text));
  auto feeds_for = [](int64_t batch, uint32_t seed) {
    return std::map<std::string, Tensor>{{"x", RandomTensor(Shape{batch, 9, 9, 3}, seed)},
                                         {"w", RandomTensor(Shape{3, 3, 3, 2}, seed + 1)},
                                         {"dy", RandomTensor(Shape{batch, 5, 5, 6}, seed + 2)}};
  };
  for (uint32_t seed : {10u, 20u, 30u}) {
    const auto feeds = feeds_for(2, seed);
    std::vector<Tensor> prepared, fresh;
    ASSERT_TRUE(session.Run(feeds, {"dx", "dw"}, &prepared).ok());
    ASSERT_TRUE(Session(ParseOrDie(text)).Run(feeds, {"dx", "dw"}, &fresh).ok());
    ASSERT_EQ(prepared.size(), 2u);
    EXPECT_TRUE(prepared[0].BitwiseEquals(fresh[0])) << seed;
    EXPECT_TRUE(prepared[1].BitwiseEquals(fresh[1])) << seed;
  }
  EXPECT_EQ(session.cache_stats().plans_made, 1u);
  EXPECT_EQ(session.cache_stats().plans_reused, 2u);
  // Another batch size is another signature: a new plan, with the right shapes.
  std::vector<Tensor> out;
  ASSERT_TRUE(session.Run(feeds_for(3, 40), {"dx", "dw"}, &out).ok());
  EXPECT_EQ(out[0].shape(), (Shape{3, 9, 9, 3}));
  EXPECT_EQ(session.cache_stats().plans_made, 2u);
  EXPECT_EQ(session.cache_stats().plans, 2u);
  // A different fetch list too.
  ASSERT_TRUE(session.Run(feeds_for(2, 50), {"dw"}, &out).ok());
  EXPECT_EQ(session.cache_stats().plans_made, 3u);
}

TEST(SessionPrepared, SmallIntegerFeedValuesArePartOfTheSignature) {
  RegisterBuiltinBlocks();
  const Session session(ParseOrDie(GraphJson(R"(
    {"id": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [16]}},
    {"id": "s", "op": "Placeholder", "attrs": {"dtype": "int32", "shape": [2]}},
    {"id": "r", "op": "Reshape", "inputs": {"tensor": "x", "shape": "s"}})")));
  const Tensor x = RandomTensor(Shape{16}, 3);
  std::vector<Tensor> out;
  ASSERT_TRUE(
      session.Run({{"x", x}, {"s", Tensor::FromVector<int32_t>({2, 8})}}, {"r"}, &out).ok());
  EXPECT_EQ(out[0].shape(), (Shape{2, 8}));
  ASSERT_TRUE(
      session.Run({{"x", x}, {"s", Tensor::FromVector<int32_t>({4, 4})}}, {"r"}, &out).ok());
  EXPECT_EQ(out[0].shape(), (Shape{4, 4}));
  EXPECT_EQ(session.cache_stats().plans_made, 2u);
}

TEST(SessionPrepared, ErrorsAreNotCachedAndStayClear) {
  RegisterBuiltinBlocks();
  const Session session(ParseOrDie(MulChain(2)));
  std::vector<Tensor> out;
  for (int i = 0; i < 2; ++i) {
    Status s = session.Run({}, {"m1"}, &out);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("node 'x' (Placeholder): needs a value"), std::string::npos)
        << s.message();
  }
  EXPECT_EQ(session.cache_stats().plans, 0u);
}

class ConstFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterBuiltinBlocks();
    dir_ = fs::temp_directory_path() /
           ("bf_const_cache_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes `t` to name and moves its mtime `tick` seconds on, so a rewrite within one clock
  // tick still looks changed.
  void Write(const std::string& name, const Tensor& t, int tick) {
    ASSERT_TRUE(WriteNpy((dir_ / name).string(), t).ok());
    fs::last_write_time(dir_ / name, fs::file_time_type::clock::now() + std::chrono::seconds(tick));
  }
  fs::path dir_;
};

TEST_F(ConstFileTest, LargeConstIsReadOnceAndAgainAfterTheFileChanges) {
  // 2^17 floats: above the analysis's fold limit, so the Const kernel reads it through the cache.
  const Shape shape{128, 1024};
  Write("w.npy", RandomTensor(shape, 1), 1);
  const Session session(ParseOrDie(
      GraphJson(R"({"id": "w", "op": "Const", "attrs": {"dtype": "float32", "file": "w.npy"}},
               {"id": "y", "op": "Identity", "inputs": {"input": "w"}})"),
      dir_.string()));
  std::vector<Tensor> a, b, c;
  ASSERT_TRUE(session.Run({}, {"y"}, &a).ok());
  ASSERT_TRUE(session.Run({}, {"y"}, &b).ok());
  EXPECT_EQ(session.file_cache().stats().loads, 1u);
  EXPECT_EQ(session.file_cache().stats().hits, 1u);
  EXPECT_EQ(a[0].raw(), b[0].raw());  // the same cached buffer
  const Tensor replaced = RandomTensor(shape, 2);
  Write("w.npy", replaced, 2);  // same size, new mtime
  ASSERT_TRUE(session.Run({}, {"y"}, &c).ok());
  EXPECT_EQ(session.file_cache().stats().loads, 2u);
  EXPECT_TRUE(c[0].BitwiseEquals(replaced));
  // A different size: a new shape, so a new plan too.
  const Tensor smaller = RandomTensor(Shape{64, 1024}, 3);
  Write("w.npy", smaller, 3);
  ASSERT_TRUE(session.Run({}, {"y"}, &c).ok());
  EXPECT_TRUE(c[0].BitwiseEquals(smaller));
}

TEST_F(ConstFileTest, SmallFoldedConstIsReadAgainAfterTheFileChanges) {
  Write("s.npy", Tensor::FromVector<int32_t>({2, 8}), 1);
  const Session session(ParseOrDie(
      GraphJson(R"({"id": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [16]}},
               {"id": "s", "op": "Const", "attrs": {"dtype": "int32", "file": "s.npy"}},
               {"id": "r", "op": "Reshape", "inputs": {"tensor": "x", "shape": "s"}})"),
      dir_.string()));
  const std::map<std::string, Tensor> feeds{{"x", RandomTensor(Shape{16}, 4)}};
  std::vector<Tensor> out;
  ASSERT_TRUE(session.Run(feeds, {"r"}, &out).ok());
  EXPECT_EQ(out[0].shape(), (Shape{2, 8}));
  Write("s.npy", Tensor::FromVector<int32_t>({8, 2}), 2);
  ASSERT_TRUE(session.Run(feeds, {"r"}, &out).ok());
  EXPECT_EQ(out[0].shape(), (Shape{8, 2}));
  EXPECT_EQ(session.cache_stats().plans_made, 2u);
}

TEST_F(ConstFileTest, LargeAlignedNpyIsMappedPrivately) {
  const Tensor t = RandomTensor(Shape{512, 1024}, 5);  // 2 MB
  Write("big.npy", t, 1);
  Expected<Tensor> mapped = ReadNpy((dir_ / "big.npy").string());
  ASSERT_TRUE(mapped.ok()) << mapped.status().message();
  EXPECT_TRUE(mapped->BitwiseEquals(t));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(mapped->raw()) % 64, 0u);
  // Writing to the tensor never reaches the file.
  mapped->data<float>()[0] = 12345.0f;
  Expected<Tensor> again = ReadNpy((dir_ / "big.npy").string());
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->BitwiseEquals(t));
}

TEST_F(ConstFileTest, CacheReportsUnreadableFiles) {
  TensorFileCache cache;
  Expected<Tensor> t = cache.Load((dir_ / "missing.npy").string());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("missing.npy"), std::string::npos);
}

TEST(SessionConcurrency, TwoThreadsRunOneSessionAtOnce) {
  RegisterBuiltinBlocks();
  const Session session(ParseOrDie(MulChain(6)));
  std::atomic<int> failures{0};
  auto loop = [&](uint32_t seed) {
    for (int r = 0; r < 25; ++r) {
      const Tensor x = RandomTensor(Shape{256, 1024}, seed + static_cast<uint32_t>(r));
      std::vector<Tensor> out;
      RunOptions options;
      options.num_threads = 1;
      if (!session.Run({{"x", x}}, {"m5"}, &out, options).ok()) {
        ++failures;
        continue;
      }
      for (int64_t i = 0; i < x.num_elements(); i += 4093) {
        if (out[0].data<float>()[i] != x.data<float>()[i] * 64.0f) ++failures;
      }
    }
  };
  std::thread a(loop, 100), b(loop, 200);
  a.join();
  b.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_LE(session.cache_stats().plans_made, 2u);  // both may miss the first time
}

}  // namespace
}  // namespace blockflow
