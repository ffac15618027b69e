// Auto-layout for the editor: layered drawing, producers left of their consumers, through
// Graphviz's `dot` (libgvc) when the build has it, else a simple layering (longest-path layers,
// barycentre ordering). Each connected part of the graph is laid out on its own, and the parts
// are packed side by side in rows, so that many small independent pipelines fill a screen-shaped
// area instead of one tall column.
//
//   std::map<std::string, QPointF> pos =
//       ComputeLayout(graph, {}, [&](const std::string& id) { return SizeOf(id); });
//   ArrangeNodes(scene, {}, /*undoable=*/true);   // the same, applied to a scene's nodes
#pragma once

#include <QPointF>
#include <QSizeF>
#include <QString>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/graph.h"

namespace blockflow::editor {

class GraphScene;

/// Spacing of a layout, in scene units.
struct LayoutOptions {
  double layer_gap = 110;  // between layers (left to right)
  double node_gap = 34;    // between nodes of a layer
  double part_gap = 120;   // between packed parts
  double aspect = 1.6;     // aimed width / height of the packed parts (a wide screen)
  bool use_graphviz = true;
};

/// The size of a node's drawn box (scene units).
using NodeSizeFn = std::function<QSizeF(const std::string& id)>;

/// Top-left positions for the nodes `ids` of `graph` (empty: every node), laid out by the wires
/// among them; the laid-out box's top-left is (0, 0).
std::map<std::string, QPointF> ComputeLayout(const Graph& graph,
                                             const std::vector<std::string>& ids,
                                             const NodeSizeFn& size_of,
                                             const LayoutOptions& options = {});

/// What ComputeLayout uses: "Graphviz dot 2.43.0" or "simple layering (no Graphviz)".
QString LayoutEngineName();

/// Lays out the nodes `ids` of the scene's graph (empty: every drawn node) with their drawn
/// sizes. A whole graph starts at its old top-left corner, a selection at the top-left of its
/// old box. `undoable`: one "Arrange" edit; else the positions replace the old ones without
/// history (a graph opened without positions). Returns the number of nodes placed.
int ArrangeNodes(GraphScene* scene, const std::vector<std::string>& ids, bool undoable);

}  // namespace blockflow::editor
