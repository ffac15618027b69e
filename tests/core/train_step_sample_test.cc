// samples/mobilenet_block_train_step.json: the training-step sample runs with its default
// feeds, the optimized kernels agree with the reference ones, repeated runs reuse one prepared
// plan bit for bit, and intermediates are freed as the step goes.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "blocks/register_blocks.h"
#include "core/allocator.h"
#include "core/npy.h"
#include "core/session.h"

namespace blockflow {
namespace {

namespace fs = std::filesystem;

class TrainStepSample : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterBuiltinBlocks();
    const fs::path path = fs::path(BF_SAMPLES_DIR) / "mobilenet_block_train_step.json";
    Expected<Graph> g = LoadGraphFile(path.string());
    ASSERT_TRUE(g.ok()) << g.status().message();
    graph_ = std::move(g).value();
    for (const Node& n : graph_.nodes()) {
      if (n.op != "Placeholder") continue;
      Expected<Tensor> t =
          ReadNpy((fs::path(BF_SAMPLES_DIR) / n.ui["feed"].get<std::string>()).string());
      ASSERT_TRUE(t.ok()) << t.status().message();
      feeds_[n.id] = *t;
    }
  }
  Graph graph_;
  std::map<std::string, Tensor> feeds_;
};

TEST_F(TrainStepSample, IsATrainingStepOfSixConvolutions) {
  int convs = 0;
  for (const Node& n : graph_.nodes()) convs += n.op.find("Conv") != std::string::npos;
  EXPECT_GE(convs, 6);
  EXPECT_EQ(feeds_.size(), 2u);
  const std::vector<std::string> sinks = Session(graph_).DefaultFetches();
  EXPECT_EQ(sinks, (std::vector<std::string>{"dx", "w_pw_new", "w_dw_new"}));
  Expected<std::string> text = ReadFile(graph_.source_path);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(SerializeGraph(graph_), *text);
}

TEST_F(TrainStepSample, OptimizedMatchesReferenceAndRepeatsBitForBit) {
  const Session session(graph_);
  std::vector<Tensor> first, again, reference;
  ASSERT_TRUE(session.Run(feeds_, {}, &first).ok());
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(session.Run(feeds_, {}, &again).ok());
    for (size_t k = 0; k < first.size(); ++k) EXPECT_TRUE(again[k].BitwiseEquals(first[k])) << k;
  }
  EXPECT_EQ(session.cache_stats().plans_made, 1u);
  RunOptions ref;
  ref.force_reference_kernels = true;
  ASSERT_TRUE(session.Run(feeds_, {}, &reference, ref).ok());
  ASSERT_EQ(reference.size(), 3u);
  for (size_t k = 0; k < reference.size(); ++k) {
    double scale = 0, worst = 0;
    for (int64_t i = 0; i < reference[k].num_elements(); ++i) {
      scale = std::max(scale, std::fabs(reference[k].GetAsDouble(i)));
      worst = std::max(worst, std::fabs(first[k].GetAsDouble(i) - reference[k].GetAsDouble(i)));
    }
    EXPECT_LE(worst, 1e-5 * scale) << k;
    EXPECT_GT(scale, 0) << k;
  }
}

TEST_F(TrainStepSample, PeakMemoryIsBelowTheSumOfAllTensors) {
  const Session session(graph_);
  std::vector<Tensor> out;
  std::map<std::string, std::vector<Tensor>> all;
  RunOptions keep;
  keep.all_outputs = &all;
  BufferPool& pool = BufferPool::Global();
  ASSERT_TRUE(session.Run(feeds_, {}, &out, keep).ok());
  size_t sum = 0;
  for (const auto& [id, tensors] : all) {
    for (const Tensor& t : tensors) sum += t.num_bytes();
  }
  all.clear();
  out.clear();
  const size_t before = pool.stats().bytes_in_use;
  pool.ResetPeak();
  ASSERT_TRUE(session.Run(feeds_, {}, &out).ok());
  const size_t peak = pool.stats().peak_bytes_in_use - before;
  EXPECT_LT(peak, sum / 2) << "peak " << peak << " of " << sum;
}

}  // namespace
}  // namespace blockflow
