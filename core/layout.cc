#include "core/layout.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

namespace blockflow {
namespace {

// Depth = longest chain of producers; relaxed at most n times so that a cycle cannot loop
// forever (its nodes merely get some depth).
std::vector<int> Depths(const Graph& graph) {
  const auto& nodes = graph.nodes();
  const size_t n = nodes.size();
  std::vector<int> depth(n, 0);
  for (size_t pass = 0; pass < n; ++pass) {
    bool changed = false;
    for (size_t i = 0; i < n; ++i) {
      for (const auto& [port, eps] : nodes[i].inputs) {
        for (const Endpoint& ep : eps) {
          const int p = graph.IndexOf(ep.node);
          if (p < 0 || static_cast<size_t>(p) == i) continue;
          if (depth[i] < depth[static_cast<size_t>(p)] + 1) {
            depth[i] = depth[static_cast<size_t>(p)] + 1;
            changed = true;
          }
        }
      }
    }
    if (!changed) break;
  }
  return depth;
}

}  // namespace

std::optional<std::pair<double, double>> NodePositionXY(const Node& node) {
  if (!node.ui.is_object()) return std::nullopt;
  auto x = node.ui.find("x"), y = node.ui.find("y");
  if (x == node.ui.end() || y == node.ui.end() || !x->is_number() || !y->is_number()) {
    return std::nullopt;
  }
  return std::make_pair(x->get<double>(), y->get<double>());
}

void SetNodePosition(Node& node, double x, double y) {
  if (!node.ui.is_object()) node.ui = nlohmann::json::object();
  node.ui["x"] = static_cast<int64_t>(std::lround(x));
  node.ui["y"] = static_cast<int64_t>(std::lround(y));
}

void AssignMissingPositions(Graph& graph, const LayoutSpacing& spacing,
                            const OpRegistry& registry) {
  const std::vector<int> depth = Depths(graph);
  const Graph& view = graph;  // reading through the const accessors keeps the id index
  std::map<int, std::vector<size_t>> columns;
  std::optional<double> lowest;
  for (size_t i = 0; i < view.nodes().size(); ++i) {
    if (auto p = NodePositionXY(view.nodes()[i])) {
      lowest = std::max(lowest.value_or(p->second), p->second);
    } else {
      columns[depth[i]].push_back(i);
    }
  }
  const double top = lowest ? *lowest + spacing.below : spacing.top;
  auto& nodes = graph.nodes();
  for (const auto& [d, members] : columns) {
    double y = top;
    for (size_t i : members) {
      Node& node = nodes[i];
      SetNodePosition(node, spacing.left + d * spacing.column, y);
      const OpSchema* schema = registry.Find(node.op);
      const size_t rows =
          schema ? std::max(schema->inputs().size(), schema->outputs().size()) : size_t{1};
      y += spacing.row + spacing.per_port * static_cast<double>(std::max<size_t>(rows, 1));
    }
  }
}

}  // namespace blockflow
