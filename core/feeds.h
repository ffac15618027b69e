// Feeds: the values of a graph's Placeholders, read from .npy files and checked against what
// analysis inferred for them, for every client of Session (the CLI, the editor, ...).
//
//   ASSIGN_OR_RETURN(Graph g, LoadGraphFile("g.json"));
//   GraphAnalysis a = AnalyzeGraph(g);
//   FeedSources sources;
//   sources.files = {{"dy", "dy.npy"}};   // as `blockflow run --feed dy=dy.npy`
//   ASSIGN_OR_RETURN(auto feeds, LoadFeeds(g, a, {"dx"}, sources));
//   RETURN_IF_ERROR(Session(g).Run(feeds, {"dx"}, &outputs));
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/tensor.h"

namespace blockflow {

/// A value named for Placeholder `id`: the .npy file `file` (a path as given, not relative
/// to the graph).
struct FeedFile {
  std::string id;
  std::string file;
};

/// Part of a Placeholder's file: `count` entries from `begin` along `axis` (a process's share
/// of a batch under `blockflow run --shard`), read with ReadNpySlice.
struct FeedSlice {
  int axis = 0;
  int64_t begin = 0;
  int64_t count = 0;
};

/// Where LoadFeeds looks for each Placeholder's value.
struct FeedSources {
  /// Files named explicitly (a command line's `--feed ID=FILE.npy`); they come first.
  std::vector<FeedFile> files;
  /// A Placeholder not in `files` reads its `ui.feed` file (relative to the graph's folder).
  bool use_ui_feed = false;
  /// Placeholder id → the part of its file to read; the others read the whole file.
  std::map<std::string, FeedSlice> slices;
  /// What a needed Placeholder without a value is told, after "node 'ID' (Placeholder): "; by
  /// default "needs a value: it is needed by the fetched outputs but was not fed".
  std::function<std::string(const Graph&, const Node&)> missing_message;
};

/// The values of the Placeholders that `fetches` ("id" or "id:K"; empty: the whole graph)
/// need, each read as its Placeholder's dtype and checked against its inferred shape in
/// `analysis` (an analysis of `graph` without feeds). Placeholders no fetch needs are not read,
/// but every entry of `sources.files` must name a Placeholder, once. Fetches naming no node are
/// ignored (the caller reports them). Every problem is reported, one per line, each naming the
/// node and the file: "node 'dy' (Placeholder): fed shape [2] from 'dy.npy', but ...".
Expected<std::map<std::string, Tensor>> LoadFeeds(const Graph& graph, const GraphAnalysis& analysis,
                                                  const std::vector<std::string>& fetches,
                                                  const FeedSources& sources);

}  // namespace blockflow
