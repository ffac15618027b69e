#include "editor/output_layout.h"

#include <algorithm>

#include "core/graph.h"
#include "core/schema.h"

namespace blockflow::editor {

std::string OutputLayoutFor(const Graph& graph, const OpRegistry& registry, const std::string& id,
                            int k) {
  const Node* node = graph.FindNode(id);
  const OpSchema* schema = node ? registry.Find(node->op) : nullptr;
  if (!schema || k < 0) return "";
  if (!schema->outputs().empty()) {
    const OutputDef& def =
        schema->outputs()[std::min(static_cast<size_t>(k), schema->outputs().size() - 1)];
    if (def.layout != LayoutRole::kNone) return PortLayout(def.layout, *schema, node->attrs);
  }
  // No role of its own: take it from the inputs it feeds, a filter port first.
  std::string activation;
  for (const Node& consumer : graph.nodes()) {
    const OpSchema* cs = registry.Find(consumer.op);
    if (!cs) continue;
    for (const auto& [port, eps] : consumer.inputs) {
      if (std::find(eps.begin(), eps.end(), Endpoint{id, k}) == eps.end()) continue;
      const int pi = cs->InputIndex(port);
      if (pi < 0) continue;
      const LayoutRole role = cs->inputs()[static_cast<size_t>(pi)].layout;
      if (role == LayoutRole::kFilter) return PortLayout(role, *cs, consumer.attrs);
      if (role == LayoutRole::kActivation && activation.empty())
        activation = PortLayout(role, *cs, consumer.attrs);
    }
  }
  return activation;
}

}  // namespace blockflow::editor
