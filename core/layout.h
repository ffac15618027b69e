// Automatic layout: positions (`ui.x`, `ui.y`) for nodes that have none, in columns by
// dependency depth, producers left of their consumers. The editor places new and loaded
// nodes with it, the TensorFlow importer every node it writes.
//
//   AssignMissingPositions(graph);                          // the editor's spacing
//   AssignMissingPositions(graph, {.left = 40, .top = 40, .column = 260, .row = 110,
//                                  .per_port = 0});          // a compact grid
#pragma once

#include <optional>
#include <utility>

#include "core/graph.h"
#include "core/schema.h"

namespace blockflow {

/// The spacing of an automatic layout, in scene units.
struct LayoutSpacing {
  double left = 0;       // x of the first column
  double top = 0;        // y of the first row when no node has a position yet
  double column = 380;   // from one column to the next
  double row = 90;       // from one node to the next in a column, plus `per_port` per port row
  double per_port = 40;  // per row of ports (the larger of the op's inputs and outputs, at least 1)
  double below = 220;    // new nodes start this far below the lowest placed node
};

/// The position stored in a node's `ui` ({"x", "y"}), if any.
std::optional<std::pair<double, double>> NodePositionXY(const Node& node);

/// Stores a position in a node's `ui` as whole numbers.
void SetNodePosition(Node& node, double x, double y);

/// Gives every node without a position one: column = depth (the longest chain of producers),
/// nodes of a column stacked in node order below any node already placed.
void AssignMissingPositions(Graph& graph, const LayoutSpacing& spacing = {},
                            const OpRegistry& registry = OpRegistry::Global());

}  // namespace blockflow
