// Runs any block on given inputs the way a Session runs it (analysis, PrepareNode, RunNodeKernel
// with pooled outputs), and compares its optimized kernel with its reference kernel, as ncnn's
// testutil.h does for every layer.
//
//   BlockCase c{"Conv2D", {{"strides", {1, 1, 1, 1}}, {"padding", "SAME"}}, {{"input", x},
//                                                                           {"filter", w}}};
//   EXPECT_TRUE(CompareBlockKernels(c, /*threads=*/{1, 2}));
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "blocks/register_blocks.h"
#include "core/graph.h"
#include "core/session.h"

namespace blockflow::testing {

/// One block to run: its op, attrs, and a value for each input port, in port order.
struct BlockCase {
  std::string op;
  nlohmann::json attrs;
  std::vector<std::pair<std::string, Tensor>> inputs;
};

/// How close the optimized result must be: |ref - opt| <= tol * (1 + |ref|) for float32 and
/// float64; float16 and bfloat16 bit for bit (their inputs are chosen so that both kernels'
/// float32 sums are exact).
struct Tolerance {
  double float32 = 2e-5;
  double float64 = 1e-12;
};

/// A block case analysed as a Session analyses it: each input a fed Placeholder, the block node
/// "block" (so the shape function sees input values such as sizes).
class AnalyzedBlock {
 public:
  explicit AnalyzedBlock(const BlockCase& c) {
    RegisterBuiltinBlocks();
    schema_ = OpRegistry::Global().Find(c.op);
    Node block;
    block.id = "block";
    block.op = c.op;
    block.attrs = c.attrs;
    for (const auto& [port, value] : c.inputs) {
      Node p;
      p.id = "in_" + port;
      p.op = "Placeholder";
      p.attrs = {{"dtype", std::string(DTypeName(value.dtype()))}, {"shape", value.shape().dims()}};
      Keep(graph_.AddNode(p));
      feeds_[p.id] = value;
      block.inputs[port] = {Endpoint{p.id, 0}};
    }
    Keep(graph_.AddNode(block));
    if (!schema_) Keep(NotFound("no op " + c.op));
    if (!status_.ok()) return;
    analysis_ = AnalyzeGraph(graph_, OpRegistry::Global(), &feeds_);
    const NodeInfo& info = analysis_.nodes.back();
    if (!info.ok) {
      status_ = InvalidArgument(info.errors.empty() ? "analysis failed" : info.errors.front());
      return;
    }
    for (const auto& [port, value] : c.inputs) inputs_.push_back(&feeds_.at("in_" + port));
  }

  const Status& status() const { return status_; }
  const NodeInfo& info() const { return analysis_.nodes.back(); }

  /// Runs the block once; `reference` forces the reference kernel. `state` as RunNodeKernel's.
  Expected<std::vector<Tensor>> Run(bool reference, int threads,
                                    const std::atomic<bool>* cancel = nullptr,
                                    const void* state = nullptr) const {
    RETURN_IF_ERROR(status_);
    RunOptions options;
    options.num_threads = threads;
    options.force_reference_kernels = reference;
    options.cancel = cancel;
    std::vector<Tensor> outputs;
    RETURN_IF_ERROR(RunNodeKernel(*schema_, info(), inputs_, &outputs, options, "", state));
    return outputs;
  }

 private:
  // Keeps the first error.
  void Keep(const Status& s) {
    if (status_.ok()) status_ = s;
  }

  const OpSchema* schema_ = nullptr;
  Graph graph_;
  std::map<std::string, Tensor> feeds_;
  GraphAnalysis analysis_;
  std::vector<const Tensor*> inputs_;
  Status status_;
};

/// Checks that `opt` matches `ref` within `tol` (see Tolerance); names `what` on failure.
inline ::testing::AssertionResult TensorsClose(const Tensor& ref, const Tensor& opt,
                                               const std::string& what, Tolerance tol = {}) {
  if (ref.dtype() != opt.dtype() || ref.shape() != opt.shape()) {
    return ::testing::AssertionFailure()
           << what << ": " << ref.DebugString() << " vs " << opt.DebugString();
  }
  const DType dtype = ref.dtype();
  for (int64_t i = 0; i < ref.num_elements(); ++i) {
    const double r = ref.GetAsDouble(i), o = opt.GetAsDouble(i);
    if (dtype == DType::kFloat16 || dtype == DType::kBFloat16) {
      uint16_t a, b;
      std::memcpy(&a, static_cast<const uint16_t*>(ref.raw()) + i, 2);
      std::memcpy(&b, static_cast<const uint16_t*>(opt.raw()) + i, 2);
      if (a != b) {
        return ::testing::AssertionFailure()
               << what << " element " << i << ": " << r << " vs " << o << " (bits differ)";
      }
      continue;
    }
    const double t = (dtype == DType::kFloat64 ? tol.float64 : tol.float32) * (1 + std::fabs(r));
    if (!(std::fabs(r - o) <= t)) {  // also catches NaN
      return ::testing::AssertionFailure() << what << " element " << i << ": " << r << " vs " << o;
    }
  }
  return ::testing::AssertionSuccess();
}

/// Runs the block with the reference kernel forced and with its optimized kernel at each of
/// `threads` thread counts, through RunNodeKernel, and compares every output (TensorsClose).
/// The reference runs once, at the first count.
inline ::testing::AssertionResult CompareBlockKernels(const BlockCase& c,
                                                      const std::vector<int>& threads,
                                                      Tolerance tol = {}) {
  const AnalyzedBlock block(c);
  if (!block.status().ok()) {
    return ::testing::AssertionFailure() << c.op << ": " << block.status().message();
  }
  if (threads.empty()) return ::testing::AssertionFailure() << c.op << ": no thread counts";
  Expected<std::vector<Tensor>> ref = block.Run(/*reference=*/true, threads.front());
  if (!ref.ok()) return ::testing::AssertionFailure() << c.op << ": " << ref.status().message();
  for (int t : threads) {
    Expected<std::vector<Tensor>> opt = block.Run(/*reference=*/false, t);
    if (!opt.ok()) {
      return ::testing::AssertionFailure()
             << c.op << " threads " << t << ": " << opt.status().message();
    }
    for (size_t k = 0; k < ref->size(); ++k) {
      ::testing::AssertionResult r = TensorsClose(
          (*ref)[k], (*opt)[k],
          c.op + " output " + std::to_string(k) + " threads " + std::to_string(t), tol);
      if (!r) return r;
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace blockflow::testing
