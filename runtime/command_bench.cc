// `blockflow bench`: the steady state of a graph, after warm-up runs with the buffer pool warm:
// the whole graph's run time, peak memory and minor page faults, then each block's kernel
// timed alone with its inputs ready.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/session.h"
#include "core/timing_observer.h"
#include "runtime/args.h"
#include "runtime/cli.h"
#include "runtime/commands.h"
#include "runtime/prepare.h"
#include "runtime/table.h"
#include "runtime/usage.h"

namespace blockflow::cli {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Minor page faults of the process so far (every thread).
long MinorFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// The smallest, median and largest of some times.
struct Spread {
  double min = 0, median = 0, max = 0;
};

Spread SpreadOf(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  const double median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  return {ms.front(), median, ms.back()};
}

// One block timed alone.
struct BenchRow {
  std::string id, op;
  Spread ms;
  size_t peak_bytes = 0;  // the most pool bytes one call added at its peak
};

// The whole graph, run repeatedly.
struct GraphRow {
  double run_ms_median = 0;
  size_t peak_bytes = 0;  // the most pool bytes one run added at its peak
  double minor_faults_per_run = 0;
};

// A node's input tensors for timing it alone: from the full run's outputs, the values
// analysis folded, or the feeds. False when one cannot be found.
bool GatherInputs(const Prepared& p, const Node& node, const OpSchema& schema,
                  const std::map<std::string, std::vector<Tensor>>& all,
                  std::vector<const Tensor*>* inputs) {
  for (const PortDef& port : schema.inputs()) {
    auto it = node.inputs.find(port.name);
    if (it == node.inputs.end()) continue;
    for (const Endpoint& e : it->second) {
      const size_t k = static_cast<size_t>(e.index);
      auto produced = all.find(e.node);
      if (produced != all.end() && k < produced->second.size()) {
        inputs->push_back(&produced->second[k]);
        continue;
      }
      const int src = p.graph.IndexOf(e.node);
      if (src < 0) return false;
      const NodeInfo& src_info = p.analysis.nodes[static_cast<size_t>(src)];
      if (k < src_info.outputs.size() && src_info.outputs[k].value) {
        inputs->push_back(src_info.outputs[k].value.get());
        continue;
      }
      auto fed = p.feeds.find(e.node);
      if (fed == p.feeds.end()) return false;
      inputs->push_back(&fed->second);
    }
  }
  return true;
}

// Runs the whole graph `warmup` times, then `repeat` times measured. Cancelled when the
// cancel flag is set.
Expected<GraphRow> BenchGraph(const Prepared& p, const BenchArgs& a, const RunOptions& options) {
  const Session session(p.graph);
  for (int r = 0; r < a.warmup; ++r) {
    std::vector<Tensor> outputs;
    RETURN_IF_ERROR(session.Run(p.feeds, p.fetches, &outputs, options));
  }
  std::vector<double> ms;
  GraphRow row;
  const long faults_before = MinorFaults();
  for (int r = 0; r < a.repeat; ++r) {
    std::vector<Tensor> outputs;  // freed before the next run, as a steady caller would
    PoolPeakMeter memory;
    memory.Start();
    const Clock::time_point t0 = Clock::now();
    RETURN_IF_ERROR(session.Run(p.feeds, p.fetches, &outputs, options));
    ms.push_back(MsSince(t0));
    row.peak_bytes = std::max(row.peak_bytes, memory.Peak());
  }
  row.minor_faults_per_run = static_cast<double>(MinorFaults() - faults_before) / a.repeat;
  row.run_ms_median = SpreadOf(ms).median;
  return row;
}

// Times one node's kernel alone: prepared once, `warmup` untimed calls, `repeat` timed ones.
Expected<BenchRow> BenchNode(const Node& node, const OpSchema& schema, const NodeInfo& info,
                             const std::vector<const Tensor*>& inputs, const BenchArgs& a,
                             const RunOptions& options, const std::string& base_dir) {
  ASSIGN_OR_RETURN(std::shared_ptr<const void> state, PrepareNode(schema, info));
  BenchRow row{node.id, node.op, {}, 0};
  std::vector<double> ms;
  for (int r = 0; r < a.warmup + a.repeat; ++r) {
    if (CancelFlag().load()) return Cancelled();
    std::vector<Tensor> outs;
    PoolPeakMeter memory;
    memory.Start();
    const Clock::time_point t0 = Clock::now();
    RETURN_IF_ERROR(RunNodeKernel(schema, info, inputs, &outs, options, base_dir, state.get()));
    const double t = MsSince(t0);
    if (r < a.warmup) continue;
    ms.push_back(t);
    row.peak_bytes = std::max(row.peak_bytes, memory.Peak());
  }
  row.ms = SpreadOf(std::move(ms));
  return row;
}

void PrintBench(const BenchArgs& a, const GraphRow& graph, const std::vector<BenchRow>& rows,
                std::ostream& out) {
  double total = 0;
  for (const BenchRow& r : rows) total += r.ms.median;
  if (a.json) {
    nlohmann::ordered_json j;  // keys in the contract's order
    j["nodes"] = nlohmann::ordered_json::array();
    for (const BenchRow& r : rows) {
      j["nodes"].push_back(nlohmann::ordered_json{{"id", r.id},
                                                  {"op", r.op},
                                                  {"ms_min", r.ms.min},
                                                  {"ms_median", r.ms.median},
                                                  {"ms_max", r.ms.max},
                                                  {"peak_bytes", r.peak_bytes}});
    }
    j["total_ms_median"] = total;
    j["run_ms_median"] = graph.run_ms_median;
    j["peak_bytes"] = graph.peak_bytes;
    j["minor_faults_per_run"] = graph.minor_faults_per_run;
    out << j.dump(2) << "\n";
    return;
  }
  Table t({"node", "op", "ms_min", "ms_median", "ms_max", "peak"},
          {false, false, true, true, true, true});
  for (const BenchRow& r : rows) {
    t.Add({r.id, r.op, FormatMs(r.ms.min), FormatMs(r.ms.median), FormatMs(r.ms.max),
           FormatBytes(r.peak_bytes)});
  }
  t.Print(out);
  out << "total (sum of medians): " << FormatMs(total) << " ms over " << rows.size() << " blocks, "
      << a.repeat << " runs each after " << a.warmup << " warm-up, "
      << (a.threads > 0 ? a.threads : DefaultNumThreads()) << " threads\n";
  char faults[32];
  std::snprintf(faults, sizeof faults, "%.1f", graph.minor_faults_per_run);
  out << "whole graph: run_ms_median " << FormatMs(graph.run_ms_median) << " ms, peak "
      << FormatBytes(graph.peak_bytes) << ", " << faults << " minor faults per run\n";
}

// Prints a failed step's error; the exit status for it.
int Failed(const BenchArgs& a, const Status& s, std::ostream& err) {
  PrintError(err, a.graph, s.message());
  return s.code() == StatusCode::kCancelled ? kExitCancelled : kExitFailure;
}

}  // namespace

int CommandBench(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Expected<BenchArgs> parsed = ParseBenchArgs(args);
  if (auto rc = HelpOrUsageError("bench", parsed, out, err)) return *rc;
  const BenchArgs& a = *parsed;
  const RunOptions options = RunOptionsFor(a);
  std::optional<Prepared> p =
      Prepare(a.graph, a.feeds, {}, err, a.allow_outside_files, a.memory_limit);
  if (!p) return kExitFailure;

  // One full run gives every executed node's outputs, hence every node's inputs.
  std::map<std::string, std::vector<Tensor>> all;
  {
    RunOptions keep = options;
    keep.all_outputs = &all;
    std::vector<Tensor> ignored;
    Status s = Session(p->graph).Run(p->feeds, p->fetches, &ignored, keep);
    if (!s.ok()) return Failed(a, s, err);
  }
  Expected<GraphRow> graph = BenchGraph(*p, a, options);
  if (!graph.ok()) return Failed(a, graph.status(), err);

  std::vector<BenchRow> rows;
  const auto& nodes = p->graph.nodes();
  for (int index : p->analysis.topo_order) {
    const Node& node = nodes[static_cast<size_t>(index)];
    // Nodes the run skipped, and those whose values were known before it (constants, feeds
    // and what folds from them), run no kernel at run time: nothing to time.
    if (!all.count(node.id) || !RunsKernel(*p, static_cast<size_t>(index))) continue;
    const std::string who = "node '" + node.id + "' (" + node.op + "): ";
    const OpSchema& schema = *OpRegistry::Global().Find(node.op);
    std::vector<const Tensor*> inputs;
    if (!GatherInputs(*p, node, schema, all, &inputs)) {
      PrintError(err, a.graph, who + "bench could not gather its inputs");
      return kExitFailure;
    }
    Expected<BenchRow> row = BenchNode(node, schema, p->analysis.nodes[static_cast<size_t>(index)],
                                       inputs, a, options, p->graph.base_dir);
    if (!row.ok()) {
      return Failed(a,
                    row.status().code() == StatusCode::kCancelled ? row.status()
                                                                  : row.status().WithPrefix(who),
                    err);
    }
    rows.push_back(std::move(row).value());
  }
  PrintBench(a, graph.value(), rows, out);
  return kExitOk;
}

}  // namespace blockflow::cli
