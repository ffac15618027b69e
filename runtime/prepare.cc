#include "runtime/prepare.h"

#include "core/feeds.h"
#include "core/paths.h"
#include "core/session.h"
#include "runtime/cli.h"
#include "runtime/usage.h"

namespace blockflow::cli {
namespace {

// Prints every issue of an analysis; true when there were none.
bool ReportIssues(const GraphAnalysis& analysis, const std::string& path, std::ostream& err) {
  for (const NodeIssue& issue : analysis.issues) PrintError(err, path, issue.ToString());
  return analysis.ok();
}

// Checks that every fetch names an output of the graph; prints each problem.
bool CheckFetches(const Graph& graph, const GraphAnalysis& analysis, const std::string& path,
                  const std::vector<std::string>& fetches, std::ostream& err) {
  bool ok = true;
  for (const std::string& f : fetches) {
    std::optional<Endpoint> ep = Endpoint::Parse(f);
    if (!ep) {
      PrintError(err, path, "--fetch " + f + ": expected ID or ID:K");
      ok = false;
      continue;
    }
    const int index = graph.IndexOf(ep->node);
    if (index < 0) {
      PrintError(err, path, "--fetch " + f + ": there is no node '" + ep->node + "' in the graph");
      ok = false;
      continue;
    }
    const Node& node = graph.nodes()[static_cast<size_t>(index)];
    const size_t num_outputs = analysis.nodes[static_cast<size_t>(index)].outputs.size();
    if (ep->index < 0 || static_cast<size_t>(ep->index) >= num_outputs) {
      PrintError(err, path,
                 "node '" + node.id + "' (" + node.op + "): --fetch " + f + ": it has " +
                     std::to_string(num_outputs) + " output" + (num_outputs == 1 ? "" : "s"));
      ok = false;
    }
  }
  return ok;
}

// What a needed Placeholder without a --feed (and without a ui.feed file) is told.
std::string MissingFeedHint(const Graph& /*graph*/, const Node& node) {
  return "needs a value: pass --feed " + node.id + "=FILE.npy";
}

}  // namespace

RunOptions RunOptionsFor(const GraphArgs& a) {
  RunOptions options;
  options.num_threads = a.threads;
  options.force_reference_kernels = a.reference;
  options.cancel = &CancelFlag();
  return options;
}

bool RunsKernel(const Prepared& p, size_t index) {
  return !p.analysis.nodes[index].IsFolded() && !p.feeds.count(p.graph.nodes()[index].id);
}

std::optional<Prepared> Prepare(const std::string& path,
                                const std::vector<std::pair<std::string, std::string>>& feed_files,
                                const std::vector<std::string>& fetches, std::ostream& err,
                                bool allow_outside_files, uint64_t memory_limit) {
  Expected<Graph> g = LoadGraphFile(path);
  if (!g.ok()) {
    PrintError(err, path, g.status().message());
    return std::nullopt;
  }
  g->allow_outside_files = allow_outside_files;
  g->memory_limit = memory_limit;
  return Prepare(std::move(g).value(), path, feed_files, fetches, err);
}

std::optional<Prepared> Prepare(Graph graph, const std::string& path,
                                const std::vector<std::pair<std::string, std::string>>& feed_files,
                                const std::vector<std::string>& fetches, std::ostream& err,
                                const PrepareOptions& options) {
  Prepared p{std::move(graph), {}, fetches, {}, {}};
  p.unfed = AnalyzeGraph(p.graph, OpRegistry::Global());
  const GraphAnalysis& unfed = p.unfed;
  if (!ReportIssues(unfed, path, err)) return std::nullopt;
  if (p.fetches.empty()) p.fetches = SinkOutputs(p.graph, unfed);
  const bool fetches_ok = CheckFetches(p.graph, unfed, path, p.fetches, err);
  FeedSources sources;
  for (const auto& [id, file] : feed_files) sources.files.push_back({id, file});
  sources.missing_message = MissingFeedHint;
  // A Placeholder no --feed names reads the file its graph records (ui.feed), as in the
  // editor: an imported graph (import-tf --feed NAME=FILE.npy) runs as it is.
  sources.use_ui_feed = true;
  sources.slices = options.slices;
  Expected<std::map<std::string, Tensor>> feeds = LoadFeeds(p.graph, unfed, p.fetches, sources);
  if (!feeds.ok()) PrintError(err, path, feeds.status().message());
  if (!fetches_ok || !feeds.ok()) return std::nullopt;
  p.feeds = std::move(feeds).value();
  if (p.feeds.empty() || !options.analyse_fed) {
    p.analysis = unfed;
    return p;
  }
  // Fed shapes can expose errors that unknown dims hid; report all of them, not the first.
  p.analysis = AnalyzeGraph(p.graph, OpRegistry::Global(), &p.feeds);
  if (!ReportIssues(p.analysis, path, err)) return std::nullopt;
  return p;
}

}  // namespace blockflow::cli
