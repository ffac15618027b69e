// Writing an import: the graph and its Const .npy files, checked as they will load first.
#include <unistd.h>

#include <filesystem>

#include "core/npy.h"
#include "core/paths.h"
#include "core/text.h"
#include "runtime/tf/import.h"

namespace blockflow::tfimport {
namespace {

// Every Const file stays inside the graph's folder, whatever the node names were.
Status CheckFilesInside(const ImportResult& result, const std::filesystem::path& dir) {
  for (const auto& [file, tensor] : result.const_files) {
    if (!CheckInsideGraphFolder(dir.string(), file).ok()) {
      return InvalidArgument("cannot write a Const's values to '" + file +
                             "': it would be outside the graph's folder '" + dir.string() + "'");
    }
  }
  return Status();
}

// The folder a graph written to `path` lives in ("." for a bare file name).
std::filesystem::path GraphDir(const std::string& path) {
  const std::filesystem::path p(path);
  return p.has_parent_path() ? p.parent_path() : ".";
}

}  // namespace

Status WriteValidImport(const ImportResult& result, const std::string& path,
                        const OpRegistry& registry) {
  namespace fs = std::filesystem;
  const fs::path dir = GraphDir(path);
  // The Const files go to a fresh staging folder beside the graph first, so that the
  // graph can be checked as it will load without touching what is already there.
  const fs::path stage =
      dir / ("." + fs::path(path).filename().string() + ".import." + std::to_string(::getpid()));
  RETURN_IF_ERROR(CheckFilesInside(result, dir));
  std::error_code ec;
  if (fs::exists(stage, ec))
    return IoError("staging folder '" + stage.string() + "' already exists");
  struct RemoveStage {
    const fs::path& stage;
    ~RemoveStage() {
      std::error_code e;
      fs::remove_all(stage, e);
    }
  } remove_stage{stage};
  for (const auto& [file, tensor] : result.const_files) {
    RETURN_IF_ERROR(WriteNpy((stage / file).string(), tensor));
  }
  Graph staged = result.graph;
  staged.base_dir = stage.string();
  GraphAnalysis analysis = AnalyzeGraph(staged, registry);
  if (!analysis.ok()) {
    std::vector<std::string> issues;
    for (const NodeIssue& issue : analysis.issues) issues.push_back(issue.ToString());
    return InvalidArgument(JoinLines(issues));
  }
  for (const auto& [file, tensor] : result.const_files) {
    fs::create_directories((dir / file).parent_path(), ec);
    fs::rename(stage / file, dir / file, ec);
    if (ec) return IoError("cannot write '" + (dir / file).string() + "': " + ec.message());
  }
  return SaveGraphFile(result.graph, path, registry);
}

Status WriteImport(const ImportResult& result, const std::string& path) {
  const std::filesystem::path dir = GraphDir(path);
  RETURN_IF_ERROR(CheckFilesInside(result, dir));
  for (const auto& [file, tensor] : result.const_files) {
    RETURN_IF_ERROR(WriteNpy((dir / file).string(), tensor));
  }
  return SaveGraphFile(result.graph, path);
}

}  // namespace blockflow::tfimport
