// What `run` and `bench` do before running: load and validate the graph, check the fetches,
// read the feeds the fetches need (core/feeds.h) and analyse the graph with them. Problems are
// printed in the contract's error form.
//
//   std::optional<Prepared> p = Prepare("g.json", {{"dy", "dy.npy"}}, {}, std::cerr);
//   if (!p) return kExitFailure;
//   Session(p->graph).Run(p->feeds, p->fetches, &outputs);
#pragma once

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "core/feeds.h"
#include "core/graph.h"
#include "core/session.h"
#include "core/tensor.h"
#include "runtime/args.h"

namespace blockflow::cli {

/// A graph loaded, validated and fed, with its fetches checked.
struct Prepared {
  Graph graph;
  std::map<std::string, Tensor> feeds;  // the Placeholders the fetches need
  std::vector<std::string> fetches;     // "id" or "id:K"
  GraphAnalysis analysis;               // with the fed shapes
  GraphAnalysis unfed;                  // before the feeds were read
};

/// What a sharded run (`--shard`) changes in Prepare.
struct PrepareOptions {
  /// Placeholder id → the part of its --feed file to read.
  std::map<std::string, FeedSlice> slices;
  /// False: skip the analysis with the fed shapes (a process with no share of the batch);
  /// `analysis` is then the unfed one.
  bool analyse_fed = true;
};

/// The run options `a` asks for: threads, reference kernels, cancellation by Ctrl-C.
RunOptions RunOptionsFor(const GraphArgs& a);

/// True when node `index` of `p.graph` runs a kernel: it is neither folded at analysis nor fed.
bool RunsKernel(const Prepared& p, size_t index);

/// Loads `path` and prepares a run of `fetches` (empty: every output that feeds nothing) with
/// the `--feed` files `feed_files`. Prints every problem to `err` and returns nullopt on failure.
std::optional<Prepared> Prepare(const std::string& path,
                                const std::vector<std::pair<std::string, std::string>>& feed_files,
                                const std::vector<std::string>& fetches, std::ostream& err,
                                bool allow_outside_files = false, uint64_t memory_limit = 0);
/// As above, for a graph already loaded from `path`.
std::optional<Prepared> Prepare(Graph graph, const std::string& path,
                                const std::vector<std::pair<std::string, std::string>>& feed_files,
                                const std::vector<std::string>& fetches, std::ostream& err,
                                const PrepareOptions& options = {});

}  // namespace blockflow::cli
