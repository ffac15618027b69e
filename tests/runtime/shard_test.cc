// Sharded runs without MPI: shares of a batch, combine plans and their refusals, the combine
// itself over the single-process communicator, and a whole `run --shard` in-process (P = 1).
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "blocks/register_blocks.h"
#include "core/npy.h"
#include "runtime/cli.h"
#include "runtime/shard/combine.h"
#include "runtime/shard/communicator.h"
#include "runtime/shard/sharded_run.h"
#include "test_util.h"

namespace blockflow::cli {
namespace {

namespace fs = std::filesystem;

Tensor Iota(DType dtype, Shape shape, double start = 0) {
  Tensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.num_elements(); ++i) t.SetFromDouble(i, start + static_cast<double>(i));
  return t;
}

TEST(ShardTest, SharesCoverTheBatchInRankOrder) {
  EXPECT_EQ(ShareOf(10, 0, 4).begin, 0);
  EXPECT_EQ(ShareOf(10, 0, 4).count, 3);
  EXPECT_EQ(ShareOf(10, 1, 4).begin, 3);
  EXPECT_EQ(ShareOf(10, 2, 4).begin, 6);
  EXPECT_EQ(ShareOf(10, 2, 4).count, 2);
  EXPECT_EQ(ShareOf(10, 3, 4).begin, 8);
  // A batch smaller than P: the last ranks get nothing, at the end of the batch.
  EXPECT_EQ(ShareOf(2, 2, 4).count, 0);
  EXPECT_EQ(ShareOf(2, 3, 4).begin, 2);
  for (int p = 1; p <= 7; ++p) {
    int64_t next = 0;
    for (int r = 0; r < p; ++r) {
      const BatchShare s = ShareOf(5, r, p);
      EXPECT_EQ(s.begin, next);
      next += s.count;
    }
    EXPECT_EQ(next, 5);
  }
}

TEST(ShardTest, SliceAndConcatAreInverse) {
  const Tensor t = Iota(DType::kFloat32, Shape{3, 5, 2});
  for (int axis = 0; axis < 3; ++axis) {
    const int64_t n = t.shape().dim(axis);
    std::vector<Tensor> parts = {SliceAxis(t, axis, 0, n / 2), SliceAxis(t, axis, n / 2, 0),
                                 SliceAxis(t, axis, n / 2, n - n / 2)};
    Expected<Tensor> joined = ConcatAxis(parts, axis);
    ASSERT_TRUE(joined.ok()) << joined.status().message();
    EXPECT_TRUE(joined->BitwiseEquals(t)) << "axis " << axis;
  }
  EXPECT_FALSE(ConcatAxis({t, Iota(DType::kFloat32, Shape{3, 4, 2})}, 0).ok());
}

TEST(ShardTest, PlanFollowsTheBatchRulesAndRefusesWithTheCombineHint) {
  RegisterBuiltinBlocks();
  Expected<Graph> g =
      LoadGraphFile((testing::SourceDir() / "samples/mobilenet_block_train_step.json").string());
  ASSERT_TRUE(g.ok());
  const GraphAnalysis analysis = AnalyzeGraph(*g);
  const BatchAnalysis batch =
      AnalyzeBatch(*g, analysis, {{"x", 0}, {"target", 0}}, OpRegistry::Global());
  Expected<std::vector<Combine>> plan =
      PlanCombine(*g, batch, {"dx", "dw_pw", "step_dw", "inv_count"}, {});
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ((*plan)[0].rule, CombineRule::kGather);
  EXPECT_EQ((*plan)[1].rule, CombineRule::kSum);
  EXPECT_EQ((*plan)[2].rule, CombineRule::kSum);
  EXPECT_EQ((*plan)[3].rule, CombineRule::kFirst);

  plan = PlanCombine(*g, batch, {"dx", "w_pw_new", "h_shape"}, {});
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().message(),
            "node 'w_pw_new' (Sub): fetched, but the blocks' batch rules cannot tell how to "
            "combine w_pw_new over the processes: it adds a batch-free value to a sum over the "
            "batch: each process would add it once, P times in all. Fetch a value from before "
            "that point, or, if you know how it combines, pass --combine "
            "w_pw_new=gather|sum|first\n"
            "node 'h_shape' (Shape): fetched, but the blocks' batch rules cannot tell how to "
            "combine h_shape over the processes: it is the shape of a split tensor, which "
            "differs from process to process. Fetch a value from before that point, or, if you "
            "know how it combines, pass --combine h_shape=gather|sum|first");

  // --combine decides; one for an output that is not fetched is an error.
  plan = PlanCombine(*g, batch, {"w_pw_new"}, {{"w_pw_new", "first"}});
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ((*plan)[0].rule, CombineRule::kFirst);
  plan = PlanCombine(*g, batch, {"dx"}, {{"dy", "sum"}});
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("--combine dy=sum: 'dy' is not fetched"),
            std::string::npos);
}

TEST(ShardTest, CombineJoinsPiecesAndAddsSamplesInOrder) {
  auto comm = MakeSingleProcessCommunicator();
  const std::vector<Combine> plan = {
      {CombineRule::kGather, 1}, {CombineRule::kSum, 0}, {CombineRule::kFirst, 0}};
  std::vector<std::vector<Tensor>> local = {
      {Iota(DType::kFloat32, Shape{2, 1}), Iota(DType::kFloat32, Shape{2, 2}, 10)},
      {Iota(DType::kFloat16, Shape{3}), Iota(DType::kFloat16, Shape{3}, 1),
       Iota(DType::kFloat16, Shape{3}, 2)},
      {Tensor::Scalar<int32_t>(7)}};
  CombineResult r = CombineOutputs(*comm, plan, {"a", "b", "c"}, local, /*deterministic=*/true);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.outputs.size(), 3u);
  EXPECT_EQ(r.outputs[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(r.outputs[0].GetAsDouble(1), 10);  // row 0: 0 | 10 11
  EXPECT_EQ(r.outputs[0].GetAsDouble(3), 1);   // row 1: 1 | 12 13
  EXPECT_EQ(r.outputs[1].dtype(), DType::kFloat16);
  EXPECT_EQ(r.outputs[1].GetAsDouble(0), 3);  // 0 + 1 + 2
  EXPECT_EQ(r.outputs[1].GetAsDouble(2), 9);  // 2 + 3 + 4
  EXPECT_EQ(r.outputs[2].GetAsDouble(0), 7);

  // Pieces whose shapes disagree with rank 0's are refused before any data moves.
  local = {{Iota(DType::kFloat32, Shape{2})},
           {Iota(DType::kFloat32, Shape{3}), Iota(DType::kFloat32, Shape{4})},
           {Tensor::Scalar<int32_t>(7)}};
  r = CombineOutputs(*comm, plan, {"a", "b", "c"}, local, /*deterministic=*/true);
  EXPECT_FALSE(r.status.ok());
  EXPECT_EQ(r.failed_rank, 0);
}

TEST(ShardTest, ShardFlagsParseAndNeedEachOther) {
  Expected<RunArgs> a = ParseRunArgs(
      {"g.json", "--shard", "x", "--shard", "t:2", "--combine", "y:1=sum", "--deterministic"});
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_EQ(a->shards.size(), 2u);
  EXPECT_EQ(a->shards[1].id, "t");
  EXPECT_EQ(a->shards[1].axis, 2);
  EXPECT_EQ(a->combine[0].fetch, "y:1");
  EXPECT_EQ(a->combine[0].rule, "sum");
  EXPECT_TRUE(a->deterministic);
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"g.json", "--combine", "y=sum"},
        {"g.json", "--deterministic"},
        {"g.json", "--shard", "x:-1"},
        {"g.json", "--shard", "x", "--shard", "x:1"},
        {"g.json", "--shard", "x", "--combine", "y=mean"},
        {"g.json", "--shard", "x", "--profile"}}) {
    EXPECT_FALSE(ParseRunArgs(bad).ok()) << bad.back();
  }
}

// `run --shard` in one process gives the bits of a plain run.
TEST(ShardTest, OneProcessShardedRunMatchesAPlainRun) {
  RegisterBuiltinBlocks();
  testing::TempDir dir;
  const std::string sample = (testing::SourceDir() / "samples").string();
  const std::vector<std::string> common = {
      sample + "/mobilenet_block_train_step.json",
      "--feed",
      "x=" + sample + "/mobilenet_block_train_step/x.npy",
      "--feed",
      "target=" + sample + "/mobilenet_block_train_step/target.npy",
      "--fetch",
      "dx",
      "--fetch",
      "dw_pw",
      "--fetch",
      "inv_count",
      "--threads",
      "1"};
  std::vector<std::string> plain = {"run"};
  plain.insert(plain.end(), common.begin(), common.end());
  plain.insert(plain.end(), {"--out", (dir.path() / "plain").string()});
  std::ostringstream out, err;
  ASSERT_EQ(Main(plain, out, err), kExitOk) << err.str();

  std::vector<std::string> sharded(common.begin(), common.end());
  sharded.insert(sharded.end(),
                 {"--shard", "x", "--shard", "target", "--out", (dir.path() / "sharded").string()});
  Expected<RunArgs> a = ParseRunArgs(sharded);
  ASSERT_TRUE(a.ok()) << a.status().message();
  auto comm = MakeSingleProcessCommunicator();
  std::ostringstream out2, err2;
  ASSERT_EQ(RunSharded(*a, *comm, out2, err2), kExitOk) << err2.str();
  EXPECT_EQ(out.str(), out2.str());
  for (const char* f : {"dx.npy", "dw_pw.npy", "inv_count.npy"}) {
    Expected<Tensor> p = ReadNpy((dir.path() / "plain" / f).string());
    Expected<Tensor> s = ReadNpy((dir.path() / "sharded" / f).string());
    ASSERT_TRUE(p.ok() && s.ok()) << f;
    EXPECT_TRUE(p->BitwiseEquals(*s)) << f;
  }

  // A fetch the rules refuse: exit 1, the hint, nothing written.
  sharded = std::vector<std::string>(common.begin(), common.begin() + 5);
  sharded.insert(sharded.end(),
                 {"--shard", "x", "--shard", "target", "--out", (dir.path() / "refused").string()});
  a = ParseRunArgs(sharded);
  ASSERT_TRUE(a.ok());
  std::ostringstream out3, err3;
  EXPECT_EQ(RunSharded(*a, *comm, out3, err3), kExitFailure);
  EXPECT_NE(err3.str().find("pass --combine w_pw_new=gather|sum|first"), std::string::npos)
      << err3.str();
  EXPECT_FALSE(fs::exists(dir.path() / "refused"));
}

TEST(ShardTest, WithoutMpiShardSaysHowToGetIt) {
  const std::string text = MissingMpiError().message();
  EXPECT_NE(text.find("libopenmpi-dev openmpi-bin"), std::string::npos) << text;
  EXPECT_NE(text.find("-DBLOCKFLOW_MPI=ON"), std::string::npos) << text;
  // A build without MPI gives it for --shard (the `mpi` label runs --shard with MPI).
  if (!HaveMpi()) {
    std::ostringstream out, err;
    EXPECT_EQ(Main({"run", "g.json", "--shard", "x"}, out, err), kExitUsage);
    EXPECT_NE(err.str().find(text), std::string::npos) << err.str();
  }
}

}  // namespace
}  // namespace blockflow::cli
