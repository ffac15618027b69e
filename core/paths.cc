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
  std::error_code ec;
  const fs::path folder = fs::weakly_canonical(fs::absolute(base_dir, ec), ec);
  const fs::path target = fs::weakly_canonical(fs::absolute(fs::path(base_dir) / file, ec), ec);
  const std::string rule =
      "a graph may name only files inside its own folder; pass --allow-outside-files to allow "
      "it";
  if (ec) return InvalidArgument("file '" + file + "': cannot resolve it (" + ec.message() + ")");
  if (fs::path(file).is_absolute()) {
    return InvalidArgument("file '" + file + "' is an absolute path: " + rule);
  }
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
