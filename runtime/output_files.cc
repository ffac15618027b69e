#include "runtime/output_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
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

namespace {

// One output file being written. It has no name while it is written (O_TMPFILE), so a process
// killed meanwhile leaves nothing behind; Commit gives it a temporary name beside the target,
// then renames it over the target. Where the file system has no O_TMPFILE, it is a named
// temporary beside the target from the start (removed on failure; a kill can leave that one,
// never a partial target).
class StagedFile {
 public:
  StagedFile() = default;
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;
  ~StagedFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!temp_.empty()) ::unlink(temp_.c_str());
  }

  // Writes `tensor` as .npy and flushes it to disk; `target` is where Commit puts it.
  Status Write(const std::string& target, const Tensor& tensor) {
    target_ = target;
    const std::string folder = fs::path(target).has_parent_path()
                                   ? fs::path(target).parent_path().string()
                                   : std::string(".");
    fd_ = ::open(folder.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      temp_ = TempName();
      fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd_ < 0) {
        const std::string reason = std::strerror(errno);
        temp_.clear();
        return IoError("cannot write '" + target + "': " + reason);
      }
    }
    const std::string header = NpyHeaderBytes(tensor);
    RETURN_IF_ERROR(WriteAll(header.data(), header.size()));
    RETURN_IF_ERROR(WriteAll(static_cast<const char*>(tensor.raw()), tensor.num_bytes()));
    if (::fsync(fd_) != 0) return Failed("fsync failed");
    return Status::OK();
  }

  // Puts the complete file at its target (replacing what was there).
  Status Commit() {
    if (temp_.empty()) {
      // Named only now, and complete: a kill from here on leaves a whole file at most.
      const std::string name = TempName();
      const std::string proc = "/proc/self/fd/" + std::to_string(fd_);
      if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW) != 0 &&
          ::linkat(fd_, "", AT_FDCWD, name.c_str(), AT_EMPTY_PATH) != 0) {
        return Failed("cannot give the written file a name");
      }
      temp_ = name;
    }
    if (::rename(temp_.c_str(), target_.c_str()) != 0)
      return Failed("cannot rename '" + temp_ + "' to it");
    temp_.clear();
    ::close(fd_);
    fd_ = -1;
    return Status::OK();
  }

 private:
  std::string TempName() const {
    static std::atomic<int> counter{0};
    return target_ + ".partial." + std::to_string(::getpid()) + "." +
           std::to_string(counter.fetch_add(1));
  }
  Status Failed(const std::string& what) const {
    return IoError("cannot write '" + target_ + "': " + what + ": " + std::strerror(errno));
  }
  Status WriteAll(const char* data, size_t bytes) {
    while (bytes > 0) {
      const ssize_t n = ::write(fd_, data, std::min(bytes, size_t{1} << 30));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Failed("write failed");
      data += n;
      bytes -= static_cast<size_t>(n);
    }
    return Status::OK();
  }

  std::string target_, temp_;
  int fd_ = -1;
};

}  // namespace

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
  // On failure the staged files (closed and unlinked with them) and the folders made for them
  // go.
  std::vector<std::unique_ptr<StagedFile>> staged;
  auto discard = [&] {
    staged.clear();
    std::error_code ec;
    // Deepest first; remove() leaves a folder that is not empty.
    for (auto it = made.rbegin(); it != made.rend(); ++it) fs::remove(*it, ec);
  };
  for (const PlannedFile& f : files) {
    const Endpoint ep = *Endpoint::Parse(fetches[f.fetch]);
    std::error_code ec;
    fs::create_directories(fs::path(f.path).parent_path(), ec);
    if (ec) {
      discard();
      return IoError(OutputName(graph, ep) + ": cannot create folder '" +
                     fs::path(f.path).parent_path().string() + "': " + ec.message());
    }
    staged.push_back(std::make_unique<StagedFile>());
    Status w = staged.back()->Write(f.path, outputs[f.fetch]);
    if (!w.ok()) {
      discard();
      return w.WithPrefix(OutputName(graph, ep) + ": ");
    }
  }
  if (cancel.load()) {
    discard();
    return Cancelled("cancelled; no outputs were written");
  }
  for (size_t i = 0; i < staged.size(); ++i) {
    if (Status c = staged[i]->Commit(); !c.ok()) {
      discard();
      return c;
    }
  }
  // Make the new names durable.
  std::set<std::string> folders;
  for (const PlannedFile& f : files) {
    folders.insert(fs::path(f.path).has_parent_path() ? fs::path(f.path).parent_path().string()
                                                      : std::string("."));
  }
  for (const std::string& folder : folders) {
    const int dir_fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd >= 0) {
      ::fsync(dir_fd);
      ::close(dir_fd);
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
