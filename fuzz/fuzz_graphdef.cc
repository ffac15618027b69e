// Fuzz target: TensorFlow GraphDef bytes -> ImportGraphDef -> AnalyzeGraph.
//
// The encoding is sniffed from the bytes, as `blockflow import-tf` does for a file without a
// known extension (so the samples' .pb, .pbtxt and .json files are seeds as they are). Each
// input is imported whole, then cut: the last node fetched and the first fed, the planner's
// cutting path. Nothing is written: the import result is only analysed.
#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "blocks/register_blocks.h"
#include "core/graph.h"
#include "fuzz/fuzz_util.h"
#include "runtime/tf/graphdef.h"
#include "runtime/tf/import.h"

namespace {

namespace tfi = blockflow::tfimport;

void ImportAndAnalyse(const std::string& bytes, tfi::GraphDefFormat format,
                      const tfi::ImportOptions& options) {
  blockflow::Expected<tfi::ImportResult> result =
      tfi::ImportGraphDef(bytes, "fuzz-graph", format, options, blockflow::OpRegistry::Global());
  if (!result.ok()) {
    blockflow::fuzz::Check(!result.status().message().empty(), "a refused GraphDef says why");
    return;
  }
  result->graph.memory_limit = blockflow::fuzz::kMemoryLimit;
  const blockflow::GraphAnalysis analysis = blockflow::AnalyzeGraph(result->graph);
  blockflow::fuzz::Check(analysis.nodes.size() == result->graph.nodes().size(),
                         "analysis covers every imported node");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool registered = [] {
    blockflow::RegisterBuiltinBlocks();
    // protobuf logs every malformed string to stderr; the import's own errors say enough.
    google::protobuf::SetLogHandler(nullptr);
    return true;
  }();
  (void)registered;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const tfi::GraphDefFormat format = tfi::DetectFormat("fuzz-graph", bytes);
  tfi::ImportOptions whole;
  whole.memory_limit = blockflow::fuzz::kMemoryLimit;
  ImportAndAnalyse(bytes, format, whole);

  blockflow::Expected<tfi::pb::GraphDef> gd = tfi::ParseGraphDef(bytes, "fuzz-graph", format);
  if (gd.ok() && gd->node_size() > 1) {
    tfi::ImportOptions cut = whole;
    cut.fetches = {gd->node(gd->node_size() - 1).name()};
    cut.feeds = {gd->node(0).name()};
    ImportAndAnalyse(bytes, format, cut);
  }
  return 0;
}
