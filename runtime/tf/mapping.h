// Node mapping: each entry of an import plan becomes a blockflow node. A kept NodeDef keeps
// its name and op, its data inputs fill the block's ports in order, its attrs map to graph
// JSON (TensorFlow-only ones dropped), and a Const's value goes inline or to a .npy file; a fed
// tensor becomes a Placeholder with the dtype and shape its producer declares.
//
//   ASSIGN_OR_RETURN(ImportResult r, MapPlan(gd, plan, options, registry));
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/schema.h"
#include "runtime/tf/import.h"
#include "runtime/tf/plan.h"
#include "runtime/tf/shapes.h"

namespace blockflow::tfimport {

/// A NodeDef's attrs in graph JSON for blockflow's `schema`: TensorFlow-only attrs dropped
/// silently, others the block lacks dropped with a line in `notes`.
Expected<nlohmann::json> ConvertOpAttrs(const pb::NodeDef& n, const OpSchema& schema,
                                        std::vector<std::string>* notes);
/// Wires `eps`, a NodeDef's data inputs, to the schema's ports in order, a list port taking
/// what the others leave.
Status WireEndpoints(const pb::NodeDef& n, const std::vector<Endpoint>& eps, const OpSchema& schema,
                     Node* node);

/// Builds the graph of `plan` (without positions); every problem is reported, one per line.
/// `facts` (made from a plan of the same GraphDef and feeds) may be shared between calls;
/// null: made here.
Expected<ImportResult> MapPlan(const pb::GraphDef& gd, const ImportPlan& plan,
                               const ImportOptions& options, const OpRegistry& registry,
                               GraphFacts* facts = nullptr);

}  // namespace blockflow::tfimport
