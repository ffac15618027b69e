// Node mapping: each entry of an import plan becomes a blockflow node. A kept NodeDef keeps
// its name and op, its data inputs fill the block's ports in order, its attrs map to graph
// JSON (TensorFlow-only ones dropped), and a Const's value goes inline or to a .npy file; a fed
// tensor becomes a Placeholder with the dtype and shape its producer declares.
//
//   ASSIGN_OR_RETURN(ImportResult r, MapPlan(gd, plan, options, registry));
#pragma once

#include "core/schema.h"
#include "runtime/tf/import.h"
#include "runtime/tf/plan.h"

namespace blockflow::tfimport {

/// Builds the graph of `plan` (without positions); every problem is reported, one per line.
Expected<ImportResult> MapPlan(const pb::GraphDef& gd, const ImportPlan& plan,
                               const ImportOptions& options, const OpRegistry& registry);

}  // namespace blockflow::tfimport
