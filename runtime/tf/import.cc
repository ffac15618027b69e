#include "runtime/tf/import.h"

#include "core/layout.h"
#include "core/npy.h"
#include "runtime/tf/graphdef.h"
#include "runtime/tf/mapping.h"
#include "runtime/tf/plan.h"

namespace blockflow::tfimport {

Expected<ImportResult> ImportGraphDef(const std::string& bytes, const std::string& origin,
                                      GraphDefFormat format, const ImportOptions& options,
                                      const OpRegistry& registry) {
  if (format == GraphDefFormat::kAuto) format = DetectFormat(origin, bytes);
  ASSIGN_OR_RETURN(pb::GraphDef gd, ParseGraphDef(bytes, origin, format));
  if (gd.node_size() == 0) {
    // The parsers skip unknown fields, so any JSON object, an empty file and many byte
    // strings parse as an empty GraphDef: importing one is a mistake, not an empty graph.
    return InvalidArgument(origin +
                           ": the GraphDef has no nodes (is this a TensorFlow GraphDef? a "
                           "blockflow graph needs no import)");
  }
  ASSIGN_OR_RETURN(ImportPlan plan, PlanImport(gd, options, registry));
  ASSIGN_OR_RETURN(ImportResult result, MapPlan(gd, plan, options, registry));
  // A compact grid, so that the editor shows an imported graph readably.
  AssignMissingPositions(
      result.graph, {.left = 40, .top = 40, .column = 260, .row = 110, .per_port = 0}, registry);
  return result;
}

Expected<ImportResult> ImportGraphDefFile(const std::string& path, const ImportOptions& options,
                                          const OpRegistry& registry) {
  ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  return ImportGraphDef(bytes, path, DetectFormat(path, bytes), options, registry);
}

}  // namespace blockflow::tfimport
