// `blockflow` end to end under resource limits and faults: --memory-limit on run, validate and
// bench; and `run --out` killed with SIGKILL while it writes, which must leave no partial .npy.
#include <signal.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "test_util.h"

namespace blockflow::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// r = RandomUniform(dims), float32; s = Sum of r over every axis.
json RandomGraph(const std::vector<int64_t>& dims) {
  json nodes = json::array();
  nodes.push_back({{"id", "shape"},
                   {"op", "Const"},
                   {"attrs", {{"dtype", "int64"}, {"shape", {dims.size()}}, {"value", dims}}}});
  nodes.push_back({{"id", "r"},
                   {"op", "RandomUniform"},
                   {"inputs", {{"shape", "shape"}}},
                   {"attrs", {{"dtype", "float32"}}}});
  return {{"format", "blockflow.graph"}, {"version", 1}, {"nodes", nodes}};
}

class LimitsCliTest : public ::testing::Test {
 protected:
  TempDir dir_;
};

// A 4 MiB output against a 1 MiB limit: refused by validate, run and bench (exit 1), with the
// node, the port, the size and the limit; accepted once the limit is raised.
TEST_F(LimitsCliTest, MemoryLimitOnValidateRunAndBench) {
  WriteText(dir_ / "g.json", RandomGraph({1024, 1024}).dump());
  const std::string expected =
      "error: g.json: node 'r' (RandomUniform): output 0 ('output') is float32[1024,1024] "
      "(4.0 MiB), more than the memory limit of 1.0 MiB; raise it with --memory-limit BYTES";
  for (const std::string command : {"validate", "run", "bench"}) {
    CmdResult r = RunBlockflow({command, "g.json", "--memory-limit", "1M"}, dir_.path().string());
    EXPECT_EQ(r.rc, 1) << command << ": " << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << command << ": " << r.err;
    r = RunBlockflow({command, "g.json", "--memory-limit=4M", "--repeat", "1", "--warmup", "0"},
                     dir_.path().string());
    if (command == "bench") {
      EXPECT_EQ(r.rc, 0) << command << ": " << r.err;
    } else {  // --repeat is bench's alone
      EXPECT_EQ(r.rc, 2) << command << ": " << r.err;
      r = RunBlockflow({command, "g.json", "--memory-limit=4M"}, dir_.path().string());
      EXPECT_EQ(r.rc, 0) << command << ": " << r.err;
    }
  }
}

// Without the flag the default (half of memory) holds: 4 TiB is refused on any machine.
TEST_F(LimitsCliTest, DefaultMemoryLimitRefusesHugeTensors) {
  WriteText(dir_ / "g.json", RandomGraph({1 << 20, 1 << 20}).dump());
  CmdResult r = RunBlockflow({"run", "g.json"}, dir_.path().string());
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.err.find("node 'r' (RandomUniform): output 0 ('output') is float32[1048576,1048576] "
                       "(4.0 TiB), more than the memory limit of "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("(half of this machine's "), std::string::npos) << r.err;
}

// A feed is refused from its header, naming the Placeholder and the file.
TEST_F(LimitsCliTest, MemoryLimitRefusesABigFeed) {
  WriteText(dir_ / "f.json", R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [-1, 1024]}}]})");
  ASSERT_TRUE(WriteNpy(dir_ / "x.npy", Tensor(DType::kFloat32, Shape{512, 1024})).ok());
  CmdResult r = RunBlockflow({"run", "f.json", "--feed", "x=x.npy", "--memory-limit", "1M"},
                             dir_.path().string());
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.err.find("error: f.json: node 'x' (Placeholder): feed 'x.npy' is "
                       "float32[512,1024] (2.0 MiB), more than the memory limit of 1.0 MiB"),
            std::string::npos)
      << r.err;
  r = RunBlockflow({"run", "f.json", "--feed", "x=x.npy", "--memory-limit", "2M"},
                   dir_.path().string());
  EXPECT_EQ(r.rc, 0) << r.err;
}

// A bad --memory-limit is a usage error (exit 2) that names the flag.
TEST_F(LimitsCliTest, BadMemoryLimitIsAUsageError) {
  WriteText(dir_ / "g.json", RandomGraph({4}).dump());
  for (const std::string command : {"validate", "run", "bench"}) {
    CmdResult r = RunBlockflow({command, "g.json", "--memory-limit", "12Q"}, dir_.path().string());
    EXPECT_EQ(r.rc, 2) << command;
    EXPECT_NE(r.err.find("error: --memory-limit: '12Q' is not a byte count: unknown suffix 'Q'"),
              std::string::npos)
        << command << ": " << r.err;
  }
}

// True when process `pid` has a file open under `folder` (an output being written: with
// O_TMPFILE it has no name in the folder yet, but /proc shows where it lives).
bool WritesUnder(pid_t pid, const fs::path& folder) {
  std::error_code ec;
  const std::string prefix = folder.string() + "/";
  for (fs::directory_iterator it("/proc/" + std::to_string(pid) + "/fd", ec), end; !ec && it != end;
       it.increment(ec)) {
    std::error_code link_ec;
    const std::string target = fs::read_symlink(it->path(), link_ec).string();
    if (!link_ec && target.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

// `run --out` killed with SIGKILL while it writes a 128 MiB output, polled for through the
// child's open files: no .npy in the folder is partial, and no temporary is left behind
// (the output has no name until it is complete and flushed).
TEST_F(LimitsCliTest, SigkillDuringOutputWriteLeavesNoPartialFile) {
  const int64_t n = int64_t{32} << 20;  // floats
  WriteText(dir_ / "big.json", RandomGraph({n}).dump());
  int killed_while_writing = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    fs::create_directories(dir_ / ("o" + std::to_string(attempt)));
    const fs::path out = fs::canonical(dir_ / ("o" + std::to_string(attempt)));
    Process p({"run", "big.json", "--out", out.string(), "--threads", "2"}, dir_.path().string());
    ASSERT_GT(p.pid(), 0);
    // Kill as soon as it writes (later attempts a little later, in other phases of the write).
    const auto t0 = std::chrono::steady_clock::now();
    bool writing = false;
    while (!writing && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60)) {
      writing = WritesUnder(p.pid(), out);
      if (!writing) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    if (writing && attempt) std::this_thread::sleep_for(std::chrono::milliseconds(10 * attempt));
    kill(p.pid(), SIGKILL);
    CmdResult r = p.Wait();
    EXPECT_EQ(r.rc, 128 + SIGKILL) << "the run ended before it was killed: " << r.err;
    killed_while_writing += writing;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(out, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      EXPECT_EQ(name, "r.npy") << "left behind: " << it->path();
      if (name != "r.npy") continue;
      Expected<Tensor> t = ReadNpy(it->path().string());
      ASSERT_TRUE(t.ok()) << "a partial output: " << t.status().message();
      EXPECT_EQ(t->num_elements(), n);
    }
  }
  EXPECT_GT(killed_while_writing, 0) << "never saw the output being written";
}

// Outputs still arrive whole, replacing what was there, with nothing else beside them.
TEST_F(LimitsCliTest, OutputsReplaceOldFilesAndLeaveNothingElse) {
  WriteText(dir_ / "g.json", RandomGraph({3, 5}).dump());
  const fs::path out = fs::path(dir_.path()) / "o";
  fs::create_directories(out / "sub");
  WriteText((out / "r.npy").string(), "old");
  CmdResult r = RunBlockflow({"run", "g.json", "--out", "o"}, dir_.path().string());
  ASSERT_EQ(r.rc, 0) << r.err;
  Expected<Tensor> t = ReadNpy((out / "r.npy").string());
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->shape(), Shape({3, 5}));
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(out)) names.insert(e.path().filename().string());
  EXPECT_EQ(names, (std::set<std::string>{"r.npy", "sub"}));
}

}  // namespace
}  // namespace blockflow::testing
