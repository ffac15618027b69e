#include "core/file_cache.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "core/npy.h"

namespace blockflow {

Expected<FileStamp> StampFile(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return IoError("cannot read '" + path + "': " + std::strerror(errno));
  FileStamp s;
  s.size = static_cast<uintmax_t>(st.st_size);
  s.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  s.inode = static_cast<uint64_t>(st.st_ino);
  s.device = static_cast<uint64_t>(st.st_dev);
  return s;
}

Expected<Tensor> TensorFileCache::Load(const std::string& path, DType expected_dtype) {
  ASSIGN_OR_RETURN(FileStamp stamp, StampFile(path));
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(path);
    if (it != entries_.end() && it->second.stamp == stamp &&
        it->second.expected_dtype == expected_dtype) {
      ++stats_.hits;
      return it->second.tensor;
    }
  }
  // Read outside the lock: other files load meanwhile. Two threads that miss the same file
  // both read it; the later one's entry stays, and both results are equal.
  ASSIGN_OR_RETURN(Tensor t, ReadNpy(path, expected_dtype));
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.loads;
  entries_[path] = Entry{stamp, expected_dtype, t};
  stats_.entries = entries_.size();
  return t;
}

TensorFileCache::Stats TensorFileCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void TensorFileCache::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.clear();
  stats_.entries = 0;
}

}  // namespace blockflow
