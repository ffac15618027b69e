// `blockflow import-tf`: a TensorFlow GraphDef to a validated blockflow graph.
#include <filesystem>

#include "core/graph.h"
#include "runtime/args.h"
#include "runtime/cli.h"
#include "runtime/commands.h"
#include "runtime/usage.h"
#ifdef BLOCKFLOW_HAVE_IMPORT_TF
#include "runtime/tf/import.h"
#endif

namespace blockflow::cli {

int CommandImportTf(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Expected<ParsedArgs> p = ParseFlags(
      args, {{"-o", true}, {"--output", true}, {"--fetch", true, true}, {"--feed", true, true}});
  if (auto rc = HelpOrUsageError("import-tf", p, out, err)) return *rc;
  if (p->positional.size() != 1) {
    return UsageError(err, "import-tf",
                      p->positional.empty() ? "missing GRAPHDEF" : "expected one GRAPHDEF");
  }
  std::optional<std::string> output = p->Last("-o");
  if (!output) output = p->Last("--output");
  if (!output || output->empty()) return UsageError(err, "import-tf", "missing -o GRAPH.json");
#ifdef BLOCKFLOW_HAVE_IMPORT_TF
  const std::string& path = p->positional[0];
  tfimport::ImportOptions options;
  options.fetches = p->All("--fetch");
  options.feeds = p->All("--feed");
  options.const_dir = std::filesystem::path(*output).stem().string() + "_consts";
  Expected<tfimport::ImportResult> r =
      tfimport::ImportGraphDefFile(path, options, OpRegistry::Global());
  if (!r.ok()) {
    PrintError(err, path, r.status().message());
    return kExitFailure;
  }
  for (const std::string& note : r->notes) err << "note: " << path << ": " << note << "\n";
  // The result must be a valid graph: say so now rather than at run time, and write
  // nothing (no graph, no Const files) when it is not.
  Status w = tfimport::WriteValidImport(*r, *output, OpRegistry::Global());
  if (!w.ok()) {
    PrintError(err, *output, w.message());
    return kExitFailure;
  }
  size_t placeholders = 0;
  for (const Node& n : r->graph.nodes()) placeholders += n.op == "Placeholder";
  out << "wrote " << *output << ": " << r->graph.nodes().size() << " nodes (" << placeholders
      << " Placeholder" << (placeholders == 1 ? "" : "s") << ")";
  if (!r->const_files.empty()) out << ", " << r->const_files.size() << " Const .npy files";
  out << "\n";
  return kExitOk;
#else
  err << "error: this blockflow was built without TensorFlow import "
         "(BLOCKFLOW_BUILD_IMPORT_TF=OFF, or protobuf was not found)\n";
  return kExitFailure;
#endif
}

}  // namespace blockflow::cli
