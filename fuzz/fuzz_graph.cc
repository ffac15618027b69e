// Fuzz target: graph JSON v1 text -> ParseGraphJson -> AnalyzeGraph -> SerializeGraph.
//
// The graph's folder is an empty scratch folder, so a Const or feed file the input names is
// either refused by file confinement or not found; nothing outside it is read.
#include <cstddef>
#include <cstdint>
#include <string>

#include "blocks/register_blocks.h"
#include "core/graph.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool registered = [] {
    blockflow::RegisterBuiltinBlocks();
    return true;
  }();
  (void)registered;
  const std::string text(reinterpret_cast<const char*>(data), size);
  blockflow::Expected<blockflow::Graph> graph =
      blockflow::ParseGraphJson(text, "fuzz.json", blockflow::fuzz::ScratchFolder());
  if (!graph.ok()) {
    blockflow::fuzz::Check(!graph.status().message().empty(), "a refused graph says why");
    return 0;
  }
  graph->memory_limit = blockflow::fuzz::kMemoryLimit;
  const blockflow::GraphAnalysis analysis = blockflow::AnalyzeGraph(*graph);
  blockflow::fuzz::Check(analysis.nodes.size() == graph->nodes().size(),
                         "analysis covers every node");
  for (const blockflow::NodeIssue& issue : analysis.issues) {
    blockflow::fuzz::Check(!issue.message.empty(), "every issue has a message");
  }
  // What loaded must save and load again (the editor's round trip).
  const std::string saved = blockflow::SerializeGraph(*graph);
  blockflow::Expected<blockflow::Graph> again =
      blockflow::ParseGraphJson(saved, "fuzz-saved.json", blockflow::fuzz::ScratchFolder());
  blockflow::fuzz::Check(again.ok(), "a loaded graph reloads after saving");
  if (again.ok()) {
    blockflow::fuzz::Check(again->nodes().size() == graph->nodes().size(),
                           "the round trip keeps every node");
  }
  return 0;
}
