#include "runtime/shard/sharded_run.h"

#include <chrono>
#include <cstdlib>
#include <functional>
#include <sstream>

#include "core/batch.h"
#include "core/npy.h"
#include "core/paths.h"
#include "core/session.h"
#include "core/text.h"
#include "runtime/cli.h"
#include "runtime/output_files.h"
#include "runtime/prepare.h"
#include "runtime/shard/combine.h"
#include "runtime/usage.h"

namespace blockflow::cli {
namespace {

// Agreement at the end of each step: did every process get through it? Problems are collected
// per process and printed by the lowest failing rank only, so P processes print one report.
class Steps {
 public:
  Steps(Communicator& comm, std::ostream& err) : comm_(comm), err_(err) {}
  /// Where this process writes its problems (in the contract's `error: ...` form).
  std::ostream& problems() { return problems_; }
  void Fail() { failed_ = true; }
  /// Collective: true when no process failed; else the lowest failing rank prints.
  bool Agree() {
    const int lowest = comm_.LowestFailure(failed_);
    if (lowest < 0) return true;
    if (lowest == comm_.rank()) {
      err_ << problems_.str();
      if (comm_.size() > 1) {
        err_ << "note: rank " << lowest << " of " << comm_.size()
             << " failed; every process stopped and nothing was written\n";
      }
    }
    return false;
  }

 private:
  Communicator& comm_;
  std::ostream& err_;
  std::ostringstream problems_;
  bool failed_ = false;
};

// What --shard asks of this process.
struct ShardPlan {
  int64_t batch = 0;
  BatchShare share;
  std::map<std::string, int> split;  // Placeholder id → axis
  PrepareOptions options;
  std::string fingerprint;  // what every process must agree on
};

// Checks each --shard against the graph and its --feed file's header (never its data), and
// makes the split Placeholders' batch dimension unknown, so that each process's analysis takes
// its own share.
Expected<ShardPlan> PlanShards(const RunArgs& a, int rank, int size, Graph* graph) {
  const GraphAnalysis declared = AnalyzeGraph(*graph, OpRegistry::Global());
  std::vector<std::string> errors;
  for (const NodeIssue& issue : declared.issues) errors.push_back(issue.ToString());
  if (!errors.empty()) return InvalidArgument(JoinLines(errors));
  ShardPlan plan;
  plan.batch = -1;
  std::string first;
  for (const ShardFlag& s : a.shards) {
    const int i = graph->IndexOf(s.id);
    if (i < 0) {
      errors.push_back("--shard " + s.id + ": there is no node '" + s.id + "' in the graph");
      continue;
    }
    const Node& node = graph->nodes()[static_cast<size_t>(i)];
    const std::string who = NodeName(*graph, node.id) + ": ";
    const OpSchema* schema = OpRegistry::Global().Find(node.op);
    if (!schema || !IsFedBlock(*schema)) {
      errors.push_back(who + "--shard: only a Placeholder's batch can be split");
      continue;
    }
    std::string file;
    for (const auto& [id, f] : a.feeds) {
      if (id == s.id) file = f;
    }
    if (file.empty()) {
      std::string hint = who + "--shard " + s.id + " needs --feed " + s.id + "=FILE.npy";
      if (std::optional<std::string> ui = UiFeedFile(node)) {
        hint += " (the graph suggests --feed " + s.id + "=" + ResolveGraphPath(*graph, *ui) + ")";
      }
      errors.push_back(hint);
      continue;
    }
    const PortInfo& want = declared.nodes[static_cast<size_t>(i)].outputs[0];
    Expected<std::pair<DType, Shape>> info = ReadNpyInfo(file, want.dtype);
    if (!info.ok()) {
      errors.push_back(who + "feed: " + info.status().message());
      continue;
    }
    const Shape& whole = info->second;
    if (s.axis >= whole.rank()) {
      errors.push_back(who + "--shard " + s.id + ":" + std::to_string(s.axis) + ": '" + file +
                       "' has shape " + whole.ToString() + ", which has no axis " +
                       std::to_string(s.axis));
      continue;
    }
    if (whole.rank() != want.shape.rank() || !want.shape.IsCompatibleWith(whole)) {
      errors.push_back(who + "fed shape " + whole.ToString() + " from '" + file +
                       "', but the Placeholder's shape is " + want.shape.ToString());
      continue;
    }
    const int64_t b = whole.dim(s.axis);
    if (plan.batch < 0) {
      plan.batch = b;
      first = s.id;
    } else if (b != plan.batch) {
      errors.push_back(who + "--shard " + s.id + " splits a batch of " + std::to_string(b) +
                       ", but --shard " + first + " one of " + std::to_string(plan.batch) +
                       ": the split Placeholders must share their batch size");
      continue;
    }
    plan.split[s.id] = s.axis;
    plan.fingerprint += s.id + ":" + std::to_string(s.axis) + "=" + whole.ToString() + ";";
  }
  if (!errors.empty()) return InvalidArgument(JoinLines(errors));
  if (plan.batch == 0) {
    return InvalidArgument("--shard " + first + ": the batch is empty (size 0 along axis " +
                           std::to_string(plan.split[first]) + "); there is nothing to split");
  }
  plan.share = ShareOf(plan.batch, rank, size);
  for (const auto& [id, axis] : plan.split) {
    plan.options.slices[id] = FeedSlice{axis, plan.share.begin, plan.share.count};
    Node& node = *graph->FindNode(id);
    if (node.attrs.is_object() && node.attrs.contains("shape") && node.attrs["shape"].is_array() &&
        static_cast<size_t>(axis) < node.attrs["shape"].size()) {
      node.attrs["shape"][static_cast<size_t>(axis)] = -1;
    }
  }
  plan.options.analyse_fed = plan.share.count > 0;
  return plan;
}

// BLOCKFLOW_SHARD_TIMING=1: rank 0 reports each phase's time, the slowest rank's (docs/mpi.md).
class PhaseTimer {
 public:
  // Rank 0's environment decides for all: a launcher may not pass it to every node, and a
  // timer on some ranks only would wait for the others forever.
  explicit PhaseTimer(Communicator& comm) : comm_(comm) {
    std::string flag = std::getenv("BLOCKFLOW_SHARD_TIMING") ? "1" : "";
    comm_.Broadcast(&flag, 0);
    on_ = !flag.empty();
  }
  /// Collective when on: ends the current phase, named `name`.
  void Lap(const char* name) {
    if (!on_) return;
    const auto now = std::chrono::steady_clock::now();
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(now - start_).count();
    const uint64_t slowest = comm_.MinMax(static_cast<uint64_t>(us)).second;
    report_ += std::string(report_.empty() ? "" : ", ") + name + " " +
               std::to_string(static_cast<double>(slowest) / 1000.0) + " ms";
    start_ = std::chrono::steady_clock::now();
  }
  void Print(std::ostream& err) const {
    if (on_ && comm_.rank() == 0) err << "timing (slowest rank): " << report_ << "\n";
  }

 private:
  Communicator& comm_;
  bool on_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::string report_;
};

uint64_t Fingerprint(const std::string& text) {
  // FNV-1a: the same on every process (std::hash need not be).
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

bool IsNonZeroLaunchRank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    const char* v = std::getenv(name);
    if (v && *v) return std::string(v) != "0";
  }
  return false;
}

int RunSharded(const RunArgs& a, Communicator& comm, std::ostream& out, std::ostream& err) {
  const int rank = comm.rank();
  Steps step(comm, err);
  std::ostream& problems = step.problems();
  PhaseTimer timer(comm);

  // 1. The graph, this process's share of the split feeds, and how each fetch is combined.
  std::optional<Prepared> p;
  ShardPlan shards;
  std::vector<Combine> plan;
  std::vector<PlannedFile> files;
  bool nothing_to_run = false;
  [&] {
    Expected<Graph> g = LoadGraphFile(a.graph);
    if (!g.ok()) {
      PrintError(problems, a.graph, g.status().message());
      return step.Fail();
    }
    g->allow_outside_files = a.allow_outside_files;
    g->memory_limit = a.memory_limit;
    Expected<ShardPlan> planned = PlanShards(a, rank, comm.size(), &*g);
    if (!planned.ok()) {
      PrintError(problems, a.graph, planned.status().message());
      return step.Fail();
    }
    shards = std::move(planned).value();
    p = Prepare(std::move(g).value(), a.graph, a.feeds, a.fetches, problems, shards.options);
    if (!p) return step.Fail();
    if (p->fetches.empty()) {
      nothing_to_run = true;
      return;
    }
    const BatchAnalysis batch =
        AnalyzeBatch(p->graph, p->unfed, shards.split, OpRegistry::Global());
    Expected<std::vector<Combine>> combine = PlanCombine(p->graph, batch, p->fetches, a.combine);
    if (!combine.ok()) {
      PrintError(problems, a.graph, combine.status().message());
      return step.Fail();
    }
    plan = std::move(combine).value();
    shards.fingerprint += a.deterministic ? "deterministic;" : "";
    for (size_t i = 0; i < plan.size(); ++i) {
      shards.fingerprint += p->fetches[i] + "=" + std::string(CombineRuleName(plan[i].rule)) +
                            std::to_string(plan[i].axis) + ";";
    }
    if (rank == 0 && !a.out_dir.empty()) {
      Expected<std::vector<PlannedFile>> out_files = PlanOutputs(p->graph, p->fetches, a.out_dir);
      if (!out_files.ok()) {
        PrintError(problems, a.graph, out_files.status().message());
        return step.Fail();
      }
      files = std::move(out_files).value();
    }
  }();
  if (!step.Agree()) return kExitFailure;
  if (nothing_to_run) {
    if (rank == 0) err << "note: " << a.graph << ": the graph has no outputs; nothing to run\n";
    return kExitOk;
  }
  // Processes started with different commands or files would otherwise wait for each other
  // forever in mismatched collectives.
  const auto [lo, hi] = comm.MinMax(Fingerprint(shards.fingerprint));
  if (lo != hi) {
    if (rank == 0) {
      PrintError(err, a.graph,
                 "the processes disagree on the split feeds' shapes, the fetches or how they "
                 "combine; start every process with the same command and files");
    }
    return kExitFailure;
  }

  timer.Lap("prepare");

  // 2. The run, on this process's share (none past the end of a batch smaller than P).
  std::vector<std::vector<Tensor>> local(p->fetches.size());
  if (shards.share.count > 0) {
    Session session(p->graph);
    const RunOptions options = RunOptionsFor(a);
    // --deterministic: one run per sample, so that no piece depends on how the batch was split.
    const int64_t runs = a.deterministic ? shards.share.count : 1;
    for (int64_t k = 0; k < runs; ++k) {
      std::map<std::string, Tensor> feeds = p->feeds;
      if (a.deterministic) {
        for (const auto& [id, axis] : shards.split) {
          feeds[id] = SliceAxis(p->feeds.at(id), axis, k, 1);
        }
      }
      std::vector<Tensor> outputs;
      Status s = session.Run(feeds, p->fetches, &outputs, options);
      if (s.ok() && CancelFlag().load()) s = Cancelled();
      if (!s.ok() || outputs.size() != p->fetches.size()) {
        PrintError(problems, a.graph,
                   s.ok() ? "internal error: wrong number of outputs" : s.message());
        step.Fail();
        break;
      }
      for (size_t i = 0; i < outputs.size(); ++i) {
        if (k == 0 || plan[i].rule != CombineRule::kFirst)
          local[i].push_back(std::move(outputs[i]));
      }
    }
  }
  if (!step.Agree()) return kExitFailure;
  timer.Lap("run");

  // 3. Combine over the processes.
  CombineResult combined =
      CombineOutputs(comm, plan, p->fetches, std::move(local), a.deterministic);
  if (combined.failed_rank >= 0) {
    if (combined.failed_rank == rank) {
      PrintError(err, a.graph, combined.status.message());
      err << "note: rank " << rank << " of " << comm.size()
          << " failed; every process stopped and nothing was written\n";
    }
    return kExitFailure;
  }

  timer.Lap("combine");

  // 4. Rank 0 prints and writes, all files or none.
  if (rank == 0) {
    Status w = combined.status;
    if (w.ok()) {
      PrintFetchedOutputs(p->fetches, combined.outputs, out);
      if (!a.out_dir.empty()) {
        w = WriteOutputs(p->graph, p->fetches, files, combined.outputs, CancelFlag());
      }
    }
    if (!w.ok()) {
      PrintError(problems, a.graph, w.message());
      step.Fail();
    }
  }
  if (!step.Agree()) return kExitFailure;
  timer.Lap("write");
  timer.Print(err);
  if (rank == 0 && !a.out_dir.empty()) {
    err << "wrote " << files.size() << " file" << (files.size() == 1 ? "" : "s") << " to "
        << a.out_dir << " (" << comm.size() << " process" << (comm.size() == 1 ? "" : "es")
        << ", batch " << shards.batch << ")\n";
  }
  return kExitOk;
}

}  // namespace blockflow::cli
