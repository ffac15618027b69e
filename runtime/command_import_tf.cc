// `blockflow import-tf`: a TensorFlow GraphDef to a validated blockflow graph, or with
// --gradients one graph per convolution node.
#include <filesystem>

#include "core/graph.h"
#include "runtime/args.h"
#include "runtime/cli.h"
#include "runtime/commands.h"
#include "runtime/table.h"
#include "runtime/usage.h"
#ifdef BLOCKFLOW_HAVE_IMPORT_TF
#include "runtime/tf/import.h"
#endif

namespace blockflow::cli {

#ifdef BLOCKFLOW_HAVE_IMPORT_TF
namespace {

namespace fs = std::filesystem;

// The folder a graph written to `path` lives in.
std::string FolderOf(const std::string& path) {
  const fs::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : ".";
}

// Validates and writes one import. Problems found before anything is written are the input's
// (named by `input`); a failed write names the file that was being written.
bool WriteChecked(const tfimport::ImportResult& r, const std::string& input,
                  const std::string& output, std::ostream& err) {
  Status w = tfimport::WriteValidImport(r, output, OpRegistry::Global());
  if (!w.ok()) {
    PrintError(err, w.code() == StatusCode::kIo ? output : input, w.message());
    return false;
  }
  return true;
}

std::string Summary(const tfimport::ImportResult& r) {
  size_t placeholders = 0;
  for (const Node& n : r.graph.nodes()) placeholders += n.op == "Placeholder";
  std::string s = std::to_string(r.graph.nodes().size()) + " nodes (" +
                  std::to_string(placeholders) + " Placeholder" + (placeholders == 1 ? "" : "s") +
                  ")";
  if (!r.const_files.empty())
    s += ", " + std::to_string(r.const_files.size()) + " Const .npy files";
  return s;
}

int ImportGradients(const std::string& path, const std::string& output, bool single,
                    tfimport::ImportOptions options, std::ostream& out, std::ostream& err) {
  options.graph_dir = single ? FolderOf(output) : output;
  Expected<std::pair<std::string, tfimport::GraphDefFormat>> file =
      tfimport::ReadGraphDefFile(path);
  if (!file.ok()) {
    PrintError(err, path, file.status().message());
    return kExitFailure;
  }
  Expected<std::vector<tfimport::GradientImport>> grads =
      tfimport::ImportGradients(file->first, path, file->second, options, OpRegistry::Global());
  if (!grads.ok()) {
    PrintError(err, path, grads.status().message());
    return kExitFailure;
  }
  if (!single) {
    std::error_code ec;
    fs::create_directories(output, ec);
    if (ec) {
      PrintError(err, output, "cannot create the folder: " + ec.message());
      return kExitFailure;
    }
  }
  Table table({"node", "op", "geometry", "fed", "result"});
  size_t ok = 0;
  for (tfimport::GradientImport& g : *grads) {
    std::string fed;
    for (const std::string& f : g.fed) fed += (fed.empty() ? "" : " ") + f;
    std::string result;
    if (g.status.ok() && !single) {
      Status w = tfimport::WriteValidImport(g.result, (fs::path(output) / g.file).string(),
                                            OpRegistry::Global());
      if (!w.ok()) g.status = w;
      result = w.ok() ? "ok: " + g.file : "";
    } else if (g.status.ok()) {
      result = "ok";
    }
    if (!g.status.ok()) {
      // The first line of the reason: the table has one line per node.
      const std::string& m = g.status.message();
      result = m.substr(0, m.find('\n'));
      fed = fed.empty() ? "-" : fed;
    }
    ok += g.status.ok();
    table.Add({g.node, g.op, g.geometry, fed.empty() ? "-" : fed, result});
  }
  table.Print(out);
  if (single && ok > 0) {
    options.const_dir = fs::path(output).stem().string() + "_consts";
    Expected<tfimport::ImportResult> r = tfimport::ImportGradientsTogether(
        file->first, path, file->second, *grads, options, OpRegistry::Global());
    if (!r.ok()) {
      PrintError(err, path, r.status().message());
      return kExitFailure;
    }
    if (!WriteChecked(*r, path, output, err)) return kExitFailure;
    out << "wrote " << output << ": " << Summary(*r) << ", " << ok << " of " << grads->size()
        << " convolution nodes\n";
  } else {
    out << "wrote " << ok << " of " << grads->size() << " convolution nodes"
        << (single ? "" : " to " + output) << "\n";
  }
  for (const tfimport::GradientImport& g : *grads) {
    if (!g.status.ok()) PrintError(err, path, "node '" + g.node + "': " + g.status.message());
  }
  return ok == grads->size() ? kExitOk : kExitFailure;
}

}  // namespace
#endif

int CommandImportTf(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Expected<ParsedArgs> p = ParseFlags(args, {{"-o", true},
                                             {"--output", true},
                                             {"--fetch", true, true},
                                             {"--feed", true, true},
                                             {"--gradients"},
                                             {"--single"},
                                             {"--verbose"}});
  if (auto rc = HelpOrUsageError("import-tf", p, out, err)) return *rc;
  if (p->positional.size() != 1) {
    return UsageError(err, "import-tf",
                      p->positional.empty() ? "missing GRAPHDEF" : "expected one GRAPHDEF");
  }
  const bool gradients = p->Has("--gradients");
  const bool single = p->Has("--single");
  std::optional<std::string> output = p->Last("-o");
  if (!output) output = p->Last("--output");
  if (!output || output->empty()) {
    return UsageError(err, "import-tf",
                      gradients && !single ? "missing -o DIR" : "missing -o GRAPH.json");
  }
  if (single && !gradients) return UsageError(err, "import-tf", "--single needs --gradients");
  if (gradients && p->Has("--fetch")) {
    return UsageError(err, "import-tf",
                      "--gradients chooses the nodes itself: give no --fetch with it");
  }
#ifdef BLOCKFLOW_HAVE_IMPORT_TF
  const std::string& path = p->positional[0];
  tfimport::ImportOptions options;
  options.fetches = p->All("--fetch");
  options.feeds = p->All("--feed");
  options.detail_lines = p->Has("--verbose") ? 0 : 20;
  if (gradients) return ImportGradients(path, *output, single, options, out, err);
  options.const_dir = std::filesystem::path(*output).stem().string() + "_consts";
  options.graph_dir = FolderOf(*output);
  Expected<tfimport::ImportResult> r =
      tfimport::ImportGraphDefFile(path, options, OpRegistry::Global());
  if (!r.ok()) {
    PrintError(err, path, r.status().message());
    return kExitFailure;
  }
  for (const std::string& note : r->notes) err << "note: " << path << ": " << note << "\n";
  // The result must be a valid graph: say so now rather than at run time, and write
  // nothing (no graph, no Const files) when it is not.
  if (!WriteChecked(*r, path, *output, err)) return kExitFailure;
  out << "wrote " << *output << ": " << Summary(*r) << "\n";
  return kExitOk;
#else
  err << "error: this blockflow was built without TensorFlow import "
         "(BLOCKFLOW_BUILD_IMPORT_TF=OFF, or protobuf was not found)\n";
  return kExitFailure;
#endif
}

}  // namespace blockflow::cli
