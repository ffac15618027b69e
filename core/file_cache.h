// TensorFileCache: .npy tensors read once and reused while their file stays the same.
// A Session keeps one, so a Const with a `file` is read (or mapped) on its first run only; the
// editor's document keeps one across its sessions. An entry is read again when the file's
// size, modification time or inode changes (an edited or replaced file).
//
//   TensorFileCache cache;
//   ASSIGN_OR_RETURN(Tensor w, cache.Load("model/w.npy", DType::kFloat32));  // reads
//   ASSIGN_OR_RETURN(Tensor v, cache.Load("model/w.npy", DType::kFloat32));  // shares w's buffer
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "core/tensor.h"

namespace blockflow {

/// The identity of a file's contents as the file system tells it, without reading it.
struct FileStamp {
  uintmax_t size = 0;
  int64_t mtime_ns = 0;
  uint64_t inode = 0;
  uint64_t device = 0;
  bool operator==(const FileStamp& o) const {
    return size == o.size && mtime_ns == o.mtime_ns && inode == o.inode && device == o.device;
  }
  bool operator!=(const FileStamp& o) const { return !(*this == o); }
};

/// The stamp of `path`, or an error naming it.
Expected<FileStamp> StampFile(const std::string& path);

/// A thread-safe cache of tensors read from .npy files (ReadNpy), keyed by path.
class TensorFileCache {
 public:
  /// What the cache has done.
  struct Stats {
    uint64_t hits = 0;   // served from the cache
    uint64_t loads = 0;  // read from disk (first time, or the file changed)
    size_t entries = 0;
  };

  /// The tensor in `path` (see ReadNpy for `expected_dtype`), shared with the cache. Callers
  /// must not write to it.
  Expected<Tensor> Load(const std::string& path, DType expected_dtype = DType::kInvalid);
  Stats stats() const;
  /// Forgets every entry.
  void Clear();

 private:
  struct Entry {
    FileStamp stamp;
    DType expected_dtype;
    Tensor tensor;
  };
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;
  Stats stats_;
};

}  // namespace blockflow
