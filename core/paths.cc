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

std::optional<std::string> UiFeedFile(const Node& node) {
  if (!node.ui.is_object()) return std::nullopt;
  auto it = node.ui.find("feed");
  if (it == node.ui.end() || !it->is_string() || it->get<std::string>().empty()) {
    return std::nullopt;
  }
  return it->get<std::string>();
}

}  // namespace blockflow
