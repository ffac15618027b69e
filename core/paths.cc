#include "core/paths.h"

#include <filesystem>

namespace blockflow {

std::string ResolveGraphPath(const std::string& base_dir, const std::string& file) {
  const std::filesystem::path p(file);
  if (p.is_absolute() || base_dir.empty()) return file;
  return (std::filesystem::path(base_dir) / p).lexically_normal().string();
}

std::string ResolveGraphPath(const Graph& graph, const std::string& file) {
  return ResolveGraphPath(graph.base_dir, file);
}

Status CheckInsideGraphFolder(const std::string& base_dir, const std::string& file) {
  namespace fs = std::filesystem;
  if (base_dir.empty()) return Status();
  // Every client that reads graph files offers the way out, so the rule names all of them.
  const std::string rule =
      "a graph may name only files inside its own folder; allow it with --allow-outside-files "
      "(in the editor: Run > Allow Files Outside the Graph's Folder; in Python: "
      "Graph.load(path, allow_outside_files=True))";
  if (fs::path(file).is_absolute()) {
    return InvalidArgument("file '" + file + "' is an absolute path: " + rule);
  }
  // Real paths: links are followed as far as the files exist.
  std::error_code ec;
  fs::path folder = fs::absolute(base_dir, ec), target;
  if (!ec) folder = fs::weakly_canonical(folder, ec);
  if (!ec) target = fs::absolute(fs::path(base_dir) / file, ec);
  if (!ec) target = fs::weakly_canonical(target, ec);
  if (ec) return InvalidArgument("file '" + file + "': cannot resolve it (" + ec.message() + ")");
  const fs::path relative = target.lexically_relative(folder);
  if (relative.empty() || *relative.begin() == "..") {
    return InvalidArgument("file '" + file + "' resolves to '" + target.string() +
                           "', outside the graph's folder '" + folder.string() + "': " + rule);
  }
  return Status();
}

std::optional<std::string> UiFeedFile(const Node& node) {
  if (!node.ui.is_object()) return std::nullopt;
  auto it = node.ui.find("feed");
  if (it == node.ui.end() || !it->is_string() || it->get<std::string>().empty()) {
    return std::nullopt;
  }
  return it->get<std::string>();
}

}  // namespace blockflow
