// The import plan: which NodeDefs of a GraphDef become blockflow nodes, where the graph is cut
// (--feed) and in what order the nodes are written. Everything that makes the import
// impossible (unknown names, ops blockflow lacks, unused feeds) is reported here, each op
// blockflow lacks with the --feed that would cut it off.
//
//   ASSIGN_OR_RETURN(ImportPlan plan, PlanImport(gd, options, registry));
//   for (const PlanEntry& e : plan.order) ...   // a kept NodeDef, or a fed tensor
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "core/dtype.h"
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

/// What a --feed says about its tensor besides the name.
struct FeedSpec {
  std::string text;                          // as given
  std::optional<DType> dtype;                // from the file or given
  std::optional<std::vector<int64_t>> dims;  // from the file or given (-1 a free size)
  std::string ui_feed;                       // the file, relative to the graph's folder
};

/// What to import and in what order.
struct ImportPlan {
  std::map<std::string, int> by_name;        // NodeDef name → index
  std::vector<std::vector<TfInput>> inputs;  // data inputs of every NodeDef (control ones dropped)
  std::set<TensorRef> feeds;                 // every tensor where the graph is cut
  std::set<TensorRef> auto_cuts;             // of those, the ones cut_unsupported chose
  std::map<TensorRef, FeedSpec>
      feed_specs;                         // the --feed flags (the other feeds are cut_unsupported)
  int producer = 0;                       // GraphDef versions.producer
  std::set<std::string> kept;             // names of the NodeDefs to import
  std::vector<PlanEntry> order;           // producers before consumers
  std::vector<std::string> order_errors;  // cycles found while ordering
};

/// The Placeholder id for a fed tensor: NAME for output 0, NAME_K for output K.
std::string FedPlaceholderId(const TensorRef& tensor);

/// The names, data inputs and --feed flags of `gd`, checked (no roots, nothing kept yet).
Expected<ImportPlan> ReadGraph(const pb::GraphDef& gd, const ImportOptions& options);

/// Whether `op` is one of the six convolution ops (--gradients imports each such node).
bool IsConvolutionOp(const std::string& op);

/// Plans the import of `gd`: every problem that prevents it is reported, one per line.
Expected<ImportPlan> PlanImport(const pb::GraphDef& gd, const ImportOptions& options,
                                const OpRegistry& registry);

}  // namespace blockflow::tfimport
