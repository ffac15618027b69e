// `blockflow validate`: every node's inferred dtypes and shapes, and every error.
#include <memory>

#include "core/graph.h"
#include "runtime/args.h"
#include "runtime/cli.h"
#include "runtime/commands.h"
#include "runtime/table.h"
#include "runtime/usage.h"

namespace blockflow::cli {
namespace {

// A short rendering of a known constant value (small tensors only).
std::string ValueText(const std::shared_ptr<const Tensor>& value) {
  if (!value) return "";
  if (value->num_elements() > 8) return "(known)";
  std::string s = "[";
  for (int64_t i = 0; i < value->num_elements(); ++i) {
    if (i) s += ",";
    s += FormatNumber(value->GetAsDouble(i));
  }
  return s + "]";
}

}  // namespace

int CommandValidate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Expected<ParsedArgs> p = ParseFlags(args, {{"--allow-outside-files"}, {"--memory-limit", true}});
  if (auto rc = HelpOrUsageError("validate", p, out, err)) return *rc;
  if (p->positional.size() != 1) {
    return UsageError(err, "validate",
                      p->positional.empty() ? "missing GRAPH.json" : "expected one GRAPH.json");
  }
  uint64_t memory_limit = 0;
  if (auto m = p->Last("--memory-limit")) {
    Expected<uint64_t> bytes = ParseMemoryLimitFlag(*m);
    if (!bytes.ok()) return UsageError(err, "validate", bytes.status().message());
    memory_limit = *bytes;
  }
  const std::string path = p->positional[0];
  Expected<Graph> g = LoadGraphFile(path);
  if (!g.ok()) {
    PrintError(err, path, g.status().message());
    return kExitFailure;
  }
  g->allow_outside_files = p->Has("--allow-outside-files");
  g->memory_limit = memory_limit;
  GraphAnalysis a = AnalyzeGraph(*g, OpRegistry::Global());
  Table table({"node", "op", "port", "dtype", "shape", "value"});
  const auto& nodes = g->nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeInfo& info = a.nodes[i];
    if (!info.ok) {
      table.Add({nodes[i].id, nodes[i].op, "-", "error", "", ""});
      continue;
    }
    if (info.outputs.empty()) table.Add({nodes[i].id, nodes[i].op, "-", "", "", ""});
    for (size_t k = 0; k < info.outputs.size(); ++k) {
      const PortInfo& o = info.outputs[k];
      table.Add({k == 0 ? nodes[i].id : "", k == 0 ? nodes[i].op : "", std::to_string(k),
                 std::string(DTypeName(o.dtype)), o.shape.ToString(), ValueText(o.value)});
    }
  }
  table.Print(out);
  for (const NodeIssue& issue : a.issues) PrintError(err, path, issue.ToString());
  out << path << ": " << nodes.size() << " node" << (nodes.size() == 1 ? "" : "s") << ", "
      << a.issues.size() << " error" << (a.issues.size() == 1 ? "" : "s") << "\n";
  return a.ok() ? kExitOk : kExitFailure;
}

}  // namespace blockflow::cli
