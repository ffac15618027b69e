// `blockflow run`: runs a graph, prints the fetched tensors, and on request writes them
// (--out), a per-block profile (--profile) and a Chrome trace (--trace).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <sstream>

#include "core/session.h"
#include "core/timing_observer.h"
#include "runtime/args.h"
#include "runtime/cli.h"
#include "runtime/commands.h"
#include "runtime/output_files.h"
#include "runtime/prepare.h"
#include "runtime/progress.h"
#include "runtime/shard/communicator.h"
#include "runtime/shard/sharded_run.h"
#include "runtime/table.h"
#include "runtime/usage.h"

namespace blockflow::cli {
namespace {

// --profile: every block that ran a kernel, with its time, share and peak memory.
void PrintProfile(const Prepared& p, const TimingObserver& timing, double wall_ms,
                  std::ostream& out) {
  // Nodes whose values were known before the run (constants, fed Placeholders, what folds
  // from them) run no kernel; list only the blocks that computed something.
  std::vector<NodeTiming> times;
  size_t folded = 0;
  for (NodeTiming& t : timing.timings()) {
    if (RunsKernel(p, static_cast<size_t>(p.graph.IndexOf(t.id)))) {
      times.push_back(std::move(t));
    } else {
      ++folded;
    }
  }
  double sum = 0;
  for (const NodeTiming& t : times) sum += t.ms;
  out << "\nprofile: " << times.size() << " block" << (times.size() == 1 ? "" : "s")
      << " ran (kernel time " << FormatMs(sum) << " ms, wall " << FormatMs(wall_ms) << " ms); "
      << folded << " node" << (folded == 1 ? "" : "s") << " folded (values known before the run)\n";
  Table prof({"node", "op", "ms", "%", "peak"}, {false, false, true, true, true});
  for (const NodeTiming& t : times) {
    char pct[16];
    std::snprintf(pct, sizeof pct, "%.1f", sum > 0 ? 100.0 * t.ms / sum : 0.0);
    prof.Add({t.id, t.op, FormatMs(t.ms), pct, t.peak_bytes ? FormatBytes(*t.peak_bytes) : "-"});
  }
  prof.Print(out);
}

}  // namespace

int CommandRun(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Expected<RunArgs> parsed = ParseRunArgs(args);
  // Under an MPI launcher every process parses the same command line: one prints.
  std::ostringstream quiet;
  const bool silent = IsNonZeroLaunchRank();
  if (auto rc = HelpOrUsageError("run", parsed, silent ? quiet : out, silent ? quiet : err)) {
    return *rc;
  }
  const RunArgs& a = *parsed;
  if (!a.shards.empty()) {
    Expected<std::unique_ptr<Communicator>> comm = MakeMpiCommunicator();
    if (!comm.ok()) {
      PrintError(silent ? quiet : err, a.graph, comm.status().message());
      return kExitUsage;
    }
    return RunSharded(a, **comm, out, err);
  }

  // The cancel flag is not reset here: a Ctrl-C while the graph and feeds load counts.
  std::optional<Prepared> p =
      Prepare(a.graph, a.feeds, a.fetches, err, a.allow_outside_files, a.memory_limit);
  if (!p) return kExitFailure;
  if (p->fetches.empty()) {
    // A valid graph with no outputs (empty, or only NoOps): nothing to compute is not an error.
    err << "note: " << a.graph << ": the graph has no outputs; nothing to run\n";
    return kExitOk;
  }
  // Checked before the run, so that a long run is not wasted on an unusable --out or --trace.
  std::vector<PlannedFile> files;
  if (!a.out_dir.empty()) {
    Expected<std::vector<PlannedFile>> planned = PlanOutputs(p->graph, p->fetches, a.out_dir);
    if (!planned.ok()) {
      PrintError(err, a.graph, planned.status().message());
      return kExitFailure;
    }
    files = std::move(planned).value();
  }
  if (!a.trace.empty()) {
    if (Status s = CheckOutputFile("--trace", a.trace); !s.ok()) {
      PrintError(err, a.graph, s.message());
      return kExitFailure;
    }
  }

  // The profile's memory column needs the nodes one at a time.
  TimingObserver timing(/*record_memory=*/a.profile);
  ProgressObserver progress(isatty(STDERR_FILENO) == 1, err);
  FanOutObserver observer({&timing, &progress});
  RunOptions options = RunOptionsFor(a);
  timing.Attach(&options);
  options.observer = &observer;
  std::vector<Tensor> outputs;
  const auto t0 = std::chrono::steady_clock::now();
  Status s = Session(p->graph).Run(p->feeds, p->fetches, &outputs, options);
  const double wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (s.code() == StatusCode::kCancelled || (CancelFlag().load() && s.ok())) {
    PrintError(err, a.graph, "cancelled; no outputs were written");
    return kExitCancelled;
  }
  if (!s.ok()) {
    PrintError(err, a.graph, s.message());
    return kExitFailure;
  }
  if (outputs.size() != p->fetches.size()) {
    PrintError(err, a.graph,
               "internal error: " + std::to_string(outputs.size()) + " outputs for " +
                   std::to_string(p->fetches.size()) + " fetches");
    return kExitFailure;
  }
  PrintFetchedOutputs(p->fetches, outputs, out);
  if (a.profile) PrintProfile(*p, timing, wall_ms, out);
  if (!a.out_dir.empty()) {
    Status w = WriteOutputs(p->graph, p->fetches, files, outputs, CancelFlag());
    if (!w.ok()) {
      PrintError(err, a.graph, w.message());
      return w.code() == StatusCode::kCancelled ? kExitCancelled : kExitFailure;
    }
    err << "wrote " << files.size() << " file" << (files.size() == 1 ? "" : "s") << " to "
        << a.out_dir << "\n";
  }
  if (!a.trace.empty()) {
    if (Status w = timing.WriteChromeTrace(a.trace); !w.ok()) {
      PrintError(err, a.graph, w.WithPrefix("--trace " + a.trace + ": ").message());
      return kExitFailure;
    }
    err << "wrote trace " << a.trace << "\n";
  }
  return kExitOk;
}

}  // namespace blockflow::cli
