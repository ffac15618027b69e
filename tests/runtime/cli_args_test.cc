// Argument parsing of the `blockflow` command line, and in-process exit statuses.
#include <gtest/gtest.h>

#include <sstream>

#include "runtime/cli.h"
#include "test_util.h"

namespace blockflow::cli {
namespace {

TEST(ParseFlagsTest, SplitsPositionalsFlagsAndValues) {
  Expected<ParsedArgs> p =
      ParseFlags({"g.json", "--feed", "a=x.npy", "--feed=b=y.npy", "--profile", "--", "--odd"},
                 {{"--feed", true, true}, {"--profile"}});
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->positional, (std::vector<std::string>{"g.json", "--odd"}));
  EXPECT_EQ(p->All("--feed"), (std::vector<std::string>{"a=x.npy", "b=y.npy"}));
  EXPECT_TRUE(p->Has("--profile"));
  EXPECT_FALSE(p->help);
}

TEST(ParseFlagsTest, ReportsUnknownMissingAndRepeatedFlags) {
  Expected<ParsedArgs> unknown = ParseFlags({"--bogus"}, {{"--json"}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown option '--bogus'"), std::string::npos);

  Expected<ParsedArgs> missing = ParseFlags({"--out"}, {{"--out", true}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("'--out' needs a value"), std::string::npos);

  Expected<ParsedArgs> twice = ParseFlags({"--out", "a", "--out", "b"}, {{"--out", true}});
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("given twice"), std::string::npos);

  Expected<ParsedArgs> switch_value = ParseFlags({"--json=1"}, {{"--json"}});
  ASSERT_FALSE(switch_value.ok());
  EXPECT_NE(switch_value.status().message().find("takes no value"), std::string::npos);
}

TEST(ParseFlagsTest, HelpIsRecognisedAnywhere) {
  Expected<ParsedArgs> p = ParseFlags({"g.json", "-h"}, {});
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->help);
}

TEST(ParseRunArgsTest, ParsesEveryFlag) {
  Expected<RunArgs> r =
      ParseRunArgs({"g.json", "--feed", "dy=dy.npy", "--fetch", "dx", "--fetch", "s:1", "--out",
                    "o", "--threads", "3", "--profile", "--reference"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->graph, "g.json");
  ASSERT_EQ(r->feeds.size(), 1u);
  EXPECT_EQ(r->feeds[0].first, "dy");
  EXPECT_EQ(r->feeds[0].second, "dy.npy");
  EXPECT_EQ(r->fetches, (std::vector<std::string>{"dx", "s:1"}));
  EXPECT_EQ(r->out_dir, "o");
  EXPECT_EQ(r->threads, 3);
  EXPECT_TRUE(r->profile);
  EXPECT_TRUE(r->reference);
}

TEST(ParseRunArgsTest, RejectsBadValues) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{}, "missing GRAPH.json"},
      {{"a.json", "b.json"}, "unexpected argument 'b.json'"},
      {{"g.json", "--threads", "0"}, "--threads '0': expected an integer >= 1"},
      {{"g.json", "--threads", "four"}, "expected an integer"},
      {{"g.json", "--feed", "dy"}, "expected ID=FILE.npy"},
      {{"g.json", "--feed", "=x.npy"}, "expected ID=FILE.npy"},
      {{"g.json", "--fetch", "dx:x:"}, "expected ID or ID:K"},
  };
  for (const Case& c : cases) {
    Expected<RunArgs> r = ParseRunArgs(c.args);
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_NE(r.status().message().find(c.message), std::string::npos) << r.status().message();
  }
}

TEST(ParseBenchArgsTest, DefaultsAndFlags) {
  Expected<BenchArgs> b = ParseBenchArgs({"g.json"});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->warmup, 2);
  EXPECT_EQ(b->repeat, 10);
  EXPECT_FALSE(b->json);
  b = ParseBenchArgs({"g.json", "--warmup", "0", "--repeat", "5", "--json", "--threads", "2"});
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->warmup, 0);
  EXPECT_EQ(b->repeat, 5);
  EXPECT_EQ(b->threads, 2);
  EXPECT_TRUE(b->json);
  EXPECT_FALSE(ParseBenchArgs({"g.json", "--repeat", "0"}).ok());
}

TEST(MainTest, ExitStatusesForCommandLines) {
  std::ostringstream out, err;
  EXPECT_EQ(Main({}, out, err), kExitUsage);
  EXPECT_EQ(Main({"frobnicate"}, out, err), kExitUsage);
  EXPECT_NE(err.str().find("unknown command 'frobnicate'"), std::string::npos);
  EXPECT_EQ(Main({"--version"}, out, err), kExitOk);
  EXPECT_NE(out.str().find("blockflow "), std::string::npos);
  for (const char* cmd : {"run", "validate", "bench", "ops", "import-tf"}) {
    std::ostringstream o, e;
    EXPECT_EQ(Main({cmd, "--help"}, o, e), kExitOk) << cmd;
    EXPECT_NE(o.str().find(std::string("usage: blockflow ") + cmd), std::string::npos) << o.str();
  }
  std::ostringstream o, e;
  EXPECT_EQ(Main({"ops", "--json", "--markdown"}, o, e), kExitUsage);
  EXPECT_NE(e.str().find("usage: blockflow ops"), std::string::npos) << e.str();
}

// Every flag a command accepts is explained in its --help (not only in the usage line).
TEST(MainTest, HelpExplainsEveryFlag) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> commands = {
      {"run", {"--feed", "--fetch", "--out", "--threads", "--profile", "--reference"}},
      {"bench", {"--feed", "--warmup", "--repeat", "--threads", "--reference", "--json"}},
      {"ops", {"--json", "--markdown"}},
      {"import-tf", {"-o, --output", "--fetch", "--feed"}},
  };
  for (const auto& [cmd, flags] : commands) {
    std::ostringstream o, e;
    ASSERT_EQ(Main({cmd, "--help"}, o, e), kExitOk) << cmd;
    for (const std::string& f : flags) {
      EXPECT_NE(o.str().find("\n  " + f), std::string::npos) << cmd << " " << f << "\n" << o.str();
    }
  }
}

// `blockflow --help` names every environment variable the runtime and the kernels read.
TEST(MainTest, HelpNamesTheEnvironment) {
  std::ostringstream o, e;
  ASSERT_EQ(Main({"--help"}, o, e), kExitOk);
  for (const char* var :
       {"OMP_NUM_THREADS", "BLOCKFLOW_TEAMS=pool", "BLOCKFLOW_POOL_LIMIT", "BLOCKFLOW_CONV_ISA",
        "BLOCKFLOW_CONV_WINOGRAD=0", "BLOCKFLOW_SHARD_TIMING=1"}) {
    EXPECT_NE(o.str().find(std::string("\n  ") + var), std::string::npos) << var << "\n" << o.str();
  }
}

// A Ctrl-C that arrives while the graph and feeds load still cancels: the run does not
// start and nothing is written.
TEST(MainTest, CtrlCBeforeTheRunStartsCancelsIt) {
  blockflow::testing::TempDir d;
  blockflow::testing::WriteText(d / "g.json", R"({"format": "blockflow.graph", "version": 1,
    "nodes": [{"id": "x", "op": "Const", "attrs": {"dtype": "float32", "shape": [2], "value": 1}},
              {"id": "y", "op": "Identity", "inputs": {"input": "x"}}]})");
  CancelFlag().store(true);
  std::ostringstream o, e;
  const int rc = Main({"run", d / "g.json", "--out", d / "o"}, o, e);
  CancelFlag().store(false);
  EXPECT_EQ(rc, kExitCancelled) << e.str();
  EXPECT_NE(e.str().find("cancelled"), std::string::npos) << e.str();
  EXPECT_FALSE(std::filesystem::exists(d / "o"));
}

}  // namespace
}  // namespace blockflow::cli
