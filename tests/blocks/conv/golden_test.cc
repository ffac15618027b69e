// Runs every golden case (tests/data/golden/<case>/case.json) through Session: a graph of
// Const nodes (the case's .npy files) feeding the op. Positive cases must match expected.npy
// within the case's tolerance (bit for bit for float16/bfloat16), on the optimized and the
// reference kernels; negative cases must fail at analysis with a message naming the rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "blocks/register_blocks.h"
#include "core/graph.h"
#include "core/npy.h"
#include "core/session.h"

namespace blockflow {
namespace {

namespace fs = std::filesystem;

// Case folders of one set under tests/data ("golden": the shared reference set;
// "golden_random": seeded cases from tests/tools/make_golden_cases.py), as "set/name".
std::vector<std::string> CaseNames(const std::string& set = "golden") {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(fs::path(BF_DATA_DIR) / set)) {
    if (fs::exists(e.path() / "case.json"))
      names.push_back(set + "/" + e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> AllCaseNames() {
  std::vector<std::string> names = CaseNames("golden"), extra = CaseNames("golden_random");
  names.insert(names.end(), extra.begin(), extra.end());
  return names;
}

nlohmann::json ReadJson(const fs::path& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

// The graph of one case: Const nodes named after the ports, and the op as node "out".
Graph CaseGraph(const fs::path& dir, const nlohmann::json& c) {
  Graph g;
  g.base_dir = dir.string();
  g.source_path = (dir / "case.json").string();
  Node out;
  out.id = "out";
  out.op = c["op"].get<std::string>();
  for (const auto& in : c["inputs"]) {
    Node k;
    k.id = in["port"].get<std::string>();
    k.op = "Const";
    k.attrs = {{"dtype", in["dtype"]}, {"file", in["file"]}};
    EXPECT_TRUE(g.AddNode(k).ok());
    out.inputs[k.id] = {Endpoint{k.id, 0}};
  }
  for (const auto& [key, value] : c["attrs"].items()) {
    if (key != "T") out.attrs[key] = value;  // T is implied by the input dtypes
  }
  EXPECT_TRUE(g.AddNode(out).ok());
  return g;
}

// What a negative case's error message must mention (the rule it breaks).
const std::map<std::string, std::vector<std::string>>& NegativeMessages() {
  static const std::map<std::string, std::vector<std::string>> m = {
      {"neg_conv_batch_stride", {"strides [2,1,1,1]", "batch and channel strides must be 1"}},
      {"neg_conv_bpf_out_depth",
       {"out_backprop shape [2,4,5,3]", "forward output shape [2,4,5,4]"}},
      {"neg_conv_bpi_input_sizes_len3", {"input_sizes [2,6,7]", "has 3 values", "or 2 values"}},
      {"neg_conv_bpi_out_backprop_rows",
       {"out_backprop shape [2,5,5,4]", "forward output shape [2,4,5,4]", "padding VALID"}},
      {"neg_conv_depth_not_divisible", {"input depth 4", "multiple of the filter's in-depth 3"}},
      {"neg_conv_explicit_batch_pad",
       {"explicit_paddings [1,0,1,1,1,1,0,0]", "batch and channel pairs must be 0"}},
      {"neg_conv_explicit_len6", {"explicit_paddings [0,0,1,1,1,1]", "must have 8 values"}},
      {"neg_conv_nchw_channel_dilation",
       {"dilations [1,2,1,1]", "batch and channel dilations must be 1", "NCHW"}},
      {"neg_conv_same_with_explicit_list",
       {"explicit_paddings [0,0,1,1,1,1,0,0]",
        "must be empty unless padding "
        "is EXPLICIT"}},
      {"neg_conv_strides_len3", {"strides [1,2,2]", "must have 4 values"}},
      {"neg_conv_valid_negative_output",
       {"output size would be negative (-3)", "input size 3", "effective filter size 7"}},
      {"neg_dw_bpi_out_depth", {"out_backprop shape [1,4,5,3]", "forward output shape [1,4,5,6]"}},
      {"neg_dw_filter_depth", {"filter in_channels 1", "must equal the input depth 3"}},
  };
  return m;
}

// Largest errors seen per dtype, printed at the end.
struct ErrorStats {
  double max_abs = 0, max_rel = 0;
  double max_tolerance_used = 0;  // max of |diff| / (atol + rtol * |expected|)
  int cases = 0;
};
std::map<std::string, ErrorStats>& Stats() {
  static std::map<std::string, ErrorStats> s;
  return s;
}

class GoldenTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { RegisterBuiltinBlocks(); }
  static void TearDownTestSuite() {
    for (const auto& [dtype, s] : Stats()) {
      std::cout << "[golden] " << dtype << ": " << s.cases << " cases, max abs error " << s.max_abs
                << ", max rel error " << s.max_rel << " (nonzero expected values), at most "
                << s.max_tolerance_used << " of the tolerance\n";
    }
  }
};

TEST_P(GoldenTest, Case) {
  const fs::path dir = fs::path(BF_DATA_DIR) / GetParam();
  const bool shared_set = GetParam().rfind("golden/", 0) == 0;
  const nlohmann::json c = ReadJson(dir / "case.json");
  const Graph g = CaseGraph(dir, c);

  if (c["expect_error"].get<bool>()) {
    // The error must come from analysis (the shape function), before any kernel runs.
    GraphAnalysis a = AnalyzeGraph(g);
    ASSERT_FALSE(a.ok()) << "negative case accepted: " << c.value("why", "");
    std::string all;
    for (const NodeIssue& issue : a.issues) all += issue.ToString() + "\n";
    EXPECT_NE(all.find("node 'out' (" + c["op"].get<std::string>() + "): "), std::string::npos)
        << all;
    if (shared_set) {
      auto it = NegativeMessages().find(dir.filename().string());
      ASSERT_NE(it, NegativeMessages().end())
          << "no expected message for this negative case: " << all;
      for (const std::string& part : it->second)
        EXPECT_NE(all.find(part), std::string::npos) << part << "\n" << all;
    }
    // Running fails too, and produces no output.
    Session session(g);
    std::vector<Tensor> out;
    EXPECT_FALSE(session.Run({}, {"out"}, &out).ok());
    EXPECT_TRUE(out.empty());
    return;
  }

  const std::string dtype_name = c["dtype"].get<std::string>();
  const DType dtype = *ParseDType(dtype_name);
  Expected<Tensor> expected =
      ReadNpy((dir / c["output"]["file"].get<std::string>()).string(),
              dtype == DType::kBFloat16 ? DType::kBFloat16 : DType::kInvalid);
  ASSERT_TRUE(expected.ok()) << expected.status().message();
  const double rtol = c["tolerance"]["rtol"].get<double>(),
               atol = c["tolerance"]["atol"].get<double>();

  for (bool reference : {false, true}) {
    SCOPED_TRACE(reference ? "reference kernels" : "optimized kernels");
    Session session(g);
    RunOptions options;
    options.force_reference_kernels = reference;
    options.num_threads = 2;
    std::vector<Tensor> out;
    Status s = session.Run({}, {"out"}, &out, options);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(out.size(), 1u);
    const Tensor& y = out[0];
    ASSERT_EQ(y.dtype(), dtype);
    ASSERT_EQ(y.shape(), expected->shape());
    ErrorStats& st = Stats()[dtype_name];
    if (!reference) ++st.cases;
    for (int64_t i = 0; i < y.num_elements(); ++i) {
      const double a = y.GetAsDouble(i), e = expected->GetAsDouble(i);
      const double diff = std::fabs(a - e);
      ASSERT_LE(diff, atol + rtol * std::fabs(e)) << "element " << i << ": " << a << " vs " << e;
      st.max_abs = std::max(st.max_abs, diff);
      st.max_tolerance_used = std::max(st.max_tolerance_used, diff / (atol + rtol * std::fabs(e)));
      if (e != 0) st.max_rel = std::max(st.max_rel, diff / std::fabs(e));
    }
    if (dtype == DType::kFloat16 || dtype == DType::kBFloat16) {
      EXPECT_TRUE(y.BitwiseEquals(*expected)) << "16-bit results must match bit for bit";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Golden, GoldenTest, ::testing::ValuesIn(AllCaseNames()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name = param_info.param;
                           std::replace(name.begin(), name.end(), '/', '_');
                           return name;
                         });

TEST(GoldenSet, HasEveryCase) {
  // The copy in tests/data/golden holds all 69 cases of the shared set (56 valid, 13 negative).
  const std::vector<std::string> names = CaseNames();
  EXPECT_EQ(names.size(), 69u);
  int negative = 0;
  for (const std::string& n : names) negative += n.rfind("golden/neg_", 0) == 0;
  EXPECT_EQ(negative, 13);
  EXPECT_EQ(CaseNames("golden_random").size(), 84u);
}

}  // namespace
}  // namespace blockflow
