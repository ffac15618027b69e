// The golden convolution cases (tests/data/golden, see its README) through the
// `blockflow` binary, as tools/check_golden.py runs them: each case becomes a graph
// of Const nodes and one block "out"; `blockflow run g.json --fetch out --out o`
// must write o/out.npy within the case's tolerance, or fail with exit 1 and an
// error for a negative case.
#include <cmath>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace blockflow::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path GoldenDir() { return BLOCKFLOW_GOLDEN_DIR; }

// The graph check_golden.py builds for a case, written into `dir`.
void WriteCaseGraph(const fs::path& case_dir, const json& c, const TempDir& dir) {
  json nodes = json::array();
  json wiring = json::object();
  for (const json& in : c["inputs"]) {
    const std::string port = in["port"];
    if (in["dtype"] == "int32" && in.contains("value") && !in["value"].is_null()) {
      nodes.push_back(
          {{"id", port},
           {"op", "Const"},
           {"attrs",
            {{"dtype", "int32"}, {"shape", {in["value"].size()}}, {"value", in["value"]}}}});
    } else if (in.contains("file") && in["file"].is_string() &&
               !in["file"].get<std::string>().empty()) {
      fs::copy_file(case_dir / in["file"].get<std::string>(), dir / (port + ".npy"));
      nodes.push_back({{"id", port},
                       {"op", "Const"},
                       {"attrs", {{"dtype", in["dtype"]}, {"file", port + ".npy"}}}});
    } else {
      continue;
    }
    wiring[port] = port;
  }
  json attrs = json::object();
  for (const auto& [k, v] : c["attrs"].items()) {
    if (k != "T" && k != "use_cudnn_on_gpu") attrs[k] = v;
  }
  if (attrs.value("padding", "") != "EXPLICIT" && attrs.contains("explicit_paddings") &&
      attrs["explicit_paddings"].empty()) {
    attrs.erase("explicit_paddings");
  }
  nodes.push_back({{"id", "out"}, {"op", c["op"]}, {"inputs", wiring}, {"attrs", attrs}});
  WriteText(dir / "g.json",
            json{{"format", "blockflow.graph"}, {"version", 1}, {"nodes", nodes}}.dump());
}

TEST(GoldenCliTest, EveryCaseThroughBlockflowRun) {
  ASSERT_TRUE(fs::is_directory(GoldenDir())) << "golden cases missing: " << GoldenDir();
  int total = 0, positive = 0, negative = 0;
  for (const auto& entry : fs::directory_iterator(GoldenDir())) {
    const fs::path& case_dir = entry.path();
    if (!fs::exists(case_dir / "case.json")) continue;
    ++total;
    const std::string name = case_dir.filename().string();
    SCOPED_TRACE(name);
    const json c = json::parse(ReadText((case_dir / "case.json").string()));
    TempDir dir;
    WriteCaseGraph(case_dir, c, dir);
    CmdResult r =
        RunBlockflow({"run", "g.json", "--fetch", "out", "--out", "o"}, dir.path().string());
    if (c.value("expect_error", false)) {
      ++negative;
      EXPECT_EQ(r.rc, 1) << r.err;
      EXPECT_NE(r.err.find("error: g.json: node 'out' (" + c["op"].get<std::string>() + "): "),
                std::string::npos)
          << r.err;
      EXPECT_FALSE(fs::exists(dir / "o/out.npy"));
      continue;
    }
    ++positive;
    ASSERT_EQ(r.rc, 0) << r.err;
    const DType dtype = *ParseDType(c["dtype"].get<std::string>());
    Expected<Tensor> got = ReadNpy(dir / "o/out.npy", dtype);
    Expected<Tensor> want =
        ReadNpy((case_dir / c["output"]["file"].get<std::string>()).string(), dtype);
    ASSERT_TRUE(got.ok()) << got.status().message();
    ASSERT_TRUE(want.ok()) << want.status().message();
    ASSERT_EQ(got->dtype(), dtype);
    ASSERT_EQ(got->shape(), want->shape());
    const double rtol = c["tolerance"]["rtol"], atol = c["tolerance"]["atol"];
    int bad = 0;
    for (int64_t i = 0; i < want->num_elements() && bad < 5; ++i) {
      const double a = got->GetAsDouble(i), e = want->GetAsDouble(i);
      if (!(std::abs(a - e) <= atol + rtol * std::abs(e))) {
        ++bad;
        ADD_FAILURE() << "element " << i << ": got " << a << ", expected " << e;
      }
    }
  }
  EXPECT_GT(positive, 0);
  EXPECT_GT(negative, 0);
  std::printf("golden through the CLI: %d cases (%d positive, %d negative)\n", total, positive,
              negative);
}

}  // namespace
}  // namespace blockflow::testing
