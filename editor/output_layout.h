// The layout a result view shows a node's output in, from the schema's port layout roles.
#pragma once

#include <string>

namespace blockflow {
class Graph;
class OpRegistry;
}  // namespace blockflow

namespace blockflow::editor {

/// "NHWC", "NCHW", "HWIO" or "" for output `k` of node `id`: the output port's own role when
/// it has one (a filter gradient is HWIO); else the role of the first input it feeds (a Const
/// or Placeholder wired into a `filter` port is HWIO; into an activation port, that node's
/// data_format).
std::string OutputLayoutFor(const Graph& graph, const OpRegistry& registry, const std::string& id,
                            int k);

}  // namespace blockflow::editor
