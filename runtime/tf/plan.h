// The import plan: which NodeDefs of a GraphDef become blockflow nodes, where the graph is cut
// (--feed) and in what order the nodes are written. Everything that makes the import
// impossible (unknown names, ops blockflow lacks, unused feeds) is reported here, each op
// blockflow lacks with the --feed that would cut it off.
//
//   ASSIGN_OR_RETURN(ImportPlan plan, PlanImport(gd, options, registry));
//   for (const PlanEntry& e : plan.order) ...   // a kept NodeDef, or a fed tensor
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "core/schema.h"
#include "runtime/tf/graphdef.h"
#include "runtime/tf/import.h"

namespace blockflow::tfimport {

/// A tensor of the GraphDef: node name and output index.
using TensorRef = std::pair<std::string, int>;

/// A NodeDef that becomes a blockflow node of the same name.
struct KeptNode {
  int index;  // in GraphDef::node
};
/// A tensor where the graph is cut: it becomes a Placeholder (FedPlaceholderId).
struct FedTensor {
  TensorRef tensor;
};
/// One node of the imported graph, in the order it is written.
using PlanEntry = std::variant<KeptNode, FedTensor>;

/// What to import and in what order.
struct ImportPlan {
  std::map<std::string, int> by_name;        // NodeDef name → index
  std::vector<std::vector<TfInput>> inputs;  // data inputs of every NodeDef (control ones dropped)
  std::set<TensorRef> feeds;                 // every tensor named by --feed (all of them are used)
  std::set<std::string> kept;                // names of the NodeDefs to import
  std::vector<PlanEntry> order;              // producers before consumers
  std::vector<std::string> order_errors;     // cycles found while ordering
};

/// The Placeholder id for a fed tensor: NAME for output 0, NAME_K for output K.
std::string FedPlaceholderId(const TensorRef& tensor);

/// Plans the import of `gd`: every problem that prevents it is reported, one per line.
Expected<ImportPlan> PlanImport(const pb::GraphDef& gd, const ImportOptions& options,
                                const OpRegistry& registry);

}  // namespace blockflow::tfimport
