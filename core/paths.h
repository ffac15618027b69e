// Where a graph's file names point: Const `file` attrs and Placeholder `ui.feed` names are
// relative to the graph file's folder, so that a graph and its data move together.
//
//   ASSIGN_OR_RETURN(Graph g, LoadGraphFile("samples/g.json"));
//   std::string w = ResolveGraphPath(g, "g/w.npy");   // "samples/g/w.npy"
#pragma once

#include <optional>
#include <string>

#include "core/graph.h"

namespace blockflow {

/// `file` resolved against the folder `base_dir` (normalised: "a/./b/../c" is "a/c"); an
/// absolute `file`, or an empty `base_dir` (a graph not yet saved), leaves it as it is.
std::string ResolveGraphPath(const std::string& base_dir, const std::string& file);
/// `file`, a file name of `graph`, resolved against the graph's folder.
std::string ResolveGraphPath(const Graph& graph, const std::string& file);

/// Whether `file`, named by a graph whose folder is `base_dir`, stays inside that folder: not
/// absolute, no `..` that leaves it, no symbolic link out of it (checked on the real paths, as
/// far as they exist). A graph with no folder (built in code, never loaded or saved) may name
/// any file. The error names the file, where it resolves and the rule.
Status CheckInsideGraphFolder(const std::string& base_dir, const std::string& file);

/// The node's `ui.feed` file name as written in the graph, when it has one.
std::optional<std::string> UiFeedFile(const Node& node);

}  // namespace blockflow
