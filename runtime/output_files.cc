#include "runtime/output_files.h"

#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>

#include "core/npy.h"
#include "core/text.h"
#include "runtime/table.h"

namespace blockflow::cli {
namespace {

namespace fs = std::filesystem;

// "dir/ID.npy" for output 0, "dir/ID.K.npy" for output K; '/' in an id makes folders.
std::string OutputFile(const std::string& dir, const Endpoint& ep) {
  std::string name = ep.node + (ep.index == 0 ? "" : "." + std::to_string(ep.index)) + ".npy";
  return (fs::path(dir) / name).string();
}

// The first of `path` and its ancestors that exists and is not a folder, or "".
std::string NonFolderOnPath(const fs::path& path) {
  for (fs::path p = path; !p.empty(); p = p.parent_path()) {
    std::error_code ec;
    const fs::file_status st = fs::status(p, ec);
    if (fs::exists(st) && !fs::is_directory(st)) return p.string();
    if (p == p.parent_path()) break;
  }
  return "";
}

// "node 'ID' (Op): output K", the way output errors name a tensor.
std::string OutputName(const Graph& graph, const Endpoint& ep) {
  return NodeName(graph, ep.node) + ": output " + std::to_string(ep.index);
}

}  // namespace

std::string NodeName(const Graph& graph, const std::string& id) {
  const Node* node = graph.FindNode(id);
  return "node '" + id + "' (" + (node ? node->op : std::string("?")) + ")";
}

Expected<std::vector<PlannedFile>> PlanOutputs(const Graph& graph,
                                               const std::vector<std::string>& fetches,
                                               const std::string& dir) {
  if (std::string blocker = NonFolderOnPath(dir); !blocker.empty()) {
    return InvalidArgument("--out " + dir + ": '" + blocker + "' exists and is not a folder");
  }
  std::vector<std::string> errors;
  std::vector<PlannedFile> files;
  std::map<std::string, Endpoint> by_file;
  for (size_t i = 0; i < fetches.size(); ++i) {
    const Endpoint ep = *Endpoint::Parse(fetches[i]);
    const std::string file = OutputFile(dir, ep);
    auto [it, fresh] = by_file.emplace(file, ep);
    if (!fresh) {
      // Output 1 of "a" and output 0 of "a.1" are both a.1.npy.
      if (!(it->second == ep)) {
        errors.push_back(OutputName(graph, ep) + " and " + NodeName(graph, it->second.node) +
                         " output " + std::to_string(it->second.index) +
                         " would both be written to '" + file + "'; fetch one of them at a time");
      }
      continue;
    }
    std::error_code ec;
    const std::string blocker = NonFolderOnPath(fs::path(file).parent_path());
    if (!blocker.empty() || fs::is_directory(file, ec)) {
      errors.push_back(OutputName(graph, ep) + " cannot be written to '" + file + "': '" +
                       (blocker.empty() ? file : blocker) +
                       (blocker.empty() ? "' is a folder" : "' exists and is not a folder"));
      continue;
    }
    files.push_back({file, i});
  }
  if (errors.empty()) return files;
  return InvalidArgument(JoinLines(errors));
}

Status WriteOutputs(const Graph& graph, const std::vector<std::string>& fetches,
                    const std::vector<PlannedFile>& files, const std::vector<Tensor>& outputs,
                    const std::atomic<bool>& cancel) {
  std::set<fs::path> made;  // folders that do not exist yet
  for (const PlannedFile& f : files) {
    std::error_code ec;
    for (fs::path d = fs::path(f.path).parent_path(); !d.empty() && !fs::exists(d, ec);
         d = d.parent_path()) {
      made.insert(d);
    }
  }
  const std::string suffix = ".partial." + std::to_string(::getpid());
  std::vector<std::string> staged;
  // On failure the temporary files and the folders made for them go.
  auto discard = [&] {
    std::error_code ec;
    for (const std::string& s : staged) fs::remove(s, ec);
    // Deepest first; remove() leaves a folder that is not empty.
    for (auto it = made.rbegin(); it != made.rend(); ++it) fs::remove(*it, ec);
  };
  for (const PlannedFile& f : files) {
    const Endpoint ep = *Endpoint::Parse(fetches[f.fetch]);
    Status w = WriteNpy(f.path + suffix, outputs[f.fetch]);
    if (!w.ok()) {
      discard();
      return w.WithPrefix(OutputName(graph, ep) + ": ");
    }
    staged.push_back(f.path + suffix);
  }
  if (cancel.load()) {
    discard();
    return Cancelled("cancelled; no outputs were written");
  }
  for (size_t i = 0; i < files.size(); ++i) {
    std::error_code ec;
    fs::rename(staged[i], files[i].path, ec);
    if (ec) {
      staged.erase(staged.begin(), staged.begin() + static_cast<long>(i));
      discard();
      return Internal("cannot rename '" + staged[0] + "' to '" + files[i].path +
                      "': " + ec.message());
    }
  }
  return Status::OK();
}

Status CheckOutputFile(const std::string& flag, const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    return InvalidArgument(flag + " " + path + ": '" + path + "' is a folder");
  }
  if (std::string blocker = NonFolderOnPath(fs::path(path).parent_path()); !blocker.empty()) {
    return InvalidArgument(flag + " " + path + ": '" + blocker + "' exists and is not a folder");
  }
  return Status::OK();
}

// The table of fetched tensors: node, port, dtype, shape, min, max, mean.
void PrintFetchedOutputs(const std::vector<std::string>& fetches,
                         const std::vector<Tensor>& outputs, std::ostream& out) {
  Table table({"node", "port", "dtype", "shape", "min", "max", "mean"},
              {false, true, false, false, true, true, true});
  for (size_t i = 0; i < fetches.size(); ++i) {
    const Endpoint ep = *Endpoint::Parse(fetches[i]);
    const Tensor& t = outputs[i];
    const TensorStats st = t.Stats();
    std::vector<std::string> row = {ep.node, std::to_string(ep.index),
                                    std::string(DTypeName(t.dtype())), t.shape().ToString()};
    if (st.count == st.nan_count + st.inf_count) {
      row.insert(row.end(), {"-", "-", "-"});
    } else {
      row.insert(row.end(), {FormatNumber(st.min), FormatNumber(st.max), FormatNumber(st.mean)});
    }
    if (st.nan_count || st.inf_count) {
      row.back() +=
          "  (" + std::to_string(st.nan_count) + " NaN, " + std::to_string(st.inf_count) + " Inf)";
    }
    table.Add(std::move(row));
  }
  table.Print(out);
}

}  // namespace blockflow::cli
