#include "core/allocator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/status.h"

namespace blockflow {
namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kPage = 4096;
constexpr size_t kHugePage = size_t{2} << 20;

size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

// The size of the C heap block that serves a request below kMinPooledBytes.
size_t HeapBlockSize(size_t bytes) { return std::max(kAlignment, RoundUp(bytes, kAlignment)); }

// The block size a pooled request maps: whole pages, or whole huge pages from 2 MB on.
size_t PooledBlockSize(size_t bytes) {
  return bytes >= kHugePage ? RoundUp(bytes, kHugePage) : RoundUp(bytes, kPage);
}

// Maps `size` bytes (a multiple of the page size). With `huge`, huge-page-sized blocks are
// aligned to 2 MB and advised for transparent huge pages: one fault then maps 2 MB instead of
// 4 KB.
std::byte* MapBlock(size_t size, bool huge) {
  if (size < kHugePage || !huge) {
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : static_cast<std::byte*>(p);
  }
  void* raw =
      ::mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  // The first 2 MB boundary in the mapping, reached by pointer arithmetic (not a cast back
  // from an integer); the slack on either side is unmapped.
  auto* const begin = static_cast<std::byte*>(raw);
  const auto address = reinterpret_cast<uintptr_t>(raw);
  std::byte* const aligned = begin + (RoundUp(address, kHugePage) - address);
  std::byte* const end = begin + size + kHugePage;
  if (aligned > begin) ::munmap(begin, static_cast<size_t>(aligned - begin));
  if (end > aligned + size) ::munmap(aligned + size, static_cast<size_t>(end - aligned - size));
#ifdef MADV_HUGEPAGE
  ::madvise(aligned, size, MADV_HUGEPAGE);
#endif
  return aligned;
}

}  // namespace

std::optional<size_t> ParseByteCount(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(value) || value < 0) return std::nullopt;
  double scale = 1;
  const std::string suffix(end);
  if (suffix == "K" || suffix == "k") {
    scale = 1024.0;
  } else if (suffix == "M" || suffix == "m") {
    scale = 1024.0 * 1024;
  } else if (suffix == "G" || suffix == "g") {
    scale = 1024.0 * 1024 * 1024;
  } else if (!suffix.empty()) {
    return std::nullopt;
  }
  const double bytes = value * scale;
  if (bytes >= 18e18) return std::nullopt;
  return static_cast<size_t>(bytes);
}

BufferPool::BufferPool(size_t cache_limit, bool huge_pages) : huge_pages_(huge_pages) {
  stats_.cache_limit = cache_limit;
}

BufferPool::~BufferPool() {
  std::lock_guard<std::mutex> lock(mu_);
  BF_CHECK(stats_.bytes_in_use == 0, "BufferPool destroyed while buffers are still in use");
  TrimLocked(0);
}

BufferPool& BufferPool::Global() {
  static BufferPool* pool = new BufferPool(DefaultCacheLimit());  // never destroyed
  return *pool;
}

BufferPool& BufferPool::Scratch() {
  // Never destroyed, as Global().
  static BufferPool* pool = new BufferPool(DefaultCacheLimit(), /*huge_pages=*/false);
  return *pool;
}

size_t BufferPool::DefaultCacheLimit() {
  if (const char* env = std::getenv("BLOCKFLOW_POOL_LIMIT")) {
    if (auto bytes = ParseByteCount(env)) return *bytes;
  }
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return size_t{1} << 30;
  return static_cast<size_t>(pages) * static_cast<size_t>(page) / 4;
}

std::byte* BufferPool::Take(size_t bytes, bool zeroed, size_t* size) {
  std::byte* p = nullptr;
  if (bytes < kMinPooledBytes) {
    *size = HeapBlockSize(bytes);
    p = static_cast<std::byte*>(std::aligned_alloc(kAlignment, *size));
    if (!p) return nullptr;
    if (zeroed) std::memset(p, 0, *size);
  } else {
    p = TakeCached(PooledBlockSize(bytes), size);
    if (p) {
      if (zeroed) std::memset(p, 0, bytes);  // fresh mappings are zero already
    } else {
      p = MapBlock(*size, huge_pages_);
      if (!p) {
        // Cached memory is the first thing to give up when the system has no more.
        ReleaseCached();
        p = MapBlock(*size, huge_pages_);
        if (!p) return nullptr;
      }
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  stats_.bytes_in_use += *size;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  return p;
}

std::shared_ptr<std::byte> BufferPool::Allocate(size_t bytes, bool zeroed) {
  size_t size = 0;
  std::byte* p = Take(bytes, zeroed, &size);
  if (!p) return nullptr;
  const bool pooled = bytes >= kMinPooledBytes;
  return std::shared_ptr<std::byte>(p,
                                    [this, size, pooled](std::byte* q) { Free(q, size, pooled); });
}

std::byte* BufferPool::AllocateBlock(size_t bytes) {
  size_t size = 0;
  std::byte* p = Take(bytes, /*zeroed=*/false, &size);
  if (p && bytes >= kMinPooledBytes) {
    // A cached block may be larger than the request: its size is what Free needs.
    std::lock_guard<std::mutex> lock(mu_);
    blocks_.emplace(p, size);
  }
  return p;
}

void BufferPool::FreeBlock(std::byte* p, size_t bytes) {
  if (p == nullptr) return;
  if (bytes < kMinPooledBytes) return Free(p, HeapBlockSize(bytes), false);
  size_t size = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = blocks_.find(p);
    BF_CHECK(it != blocks_.end(), "BufferPool::FreeBlock of a block it did not hand out");
    size = it->second;
    blocks_.erase(it);
  }
  Free(p, size, true);
}

std::byte* BufferPool::TakeCached(size_t need, size_t* size) {
  std::lock_guard<std::mutex> lock(mu_);
  *size = need;
  // Best fit, but never a block so large that a quarter of it or more would go unused.
  auto it = free_.lower_bound(need);
  if (it == free_.end() || it->first - need > it->first / 4) {
    ++stats_.misses;
    return nullptr;
  }
  *size = it->first;
  std::byte* p = it->second;
  free_.erase(it);
  stats_.bytes_cached -= *size;
  ++stats_.hits;
  return p;
}

void BufferPool::Free(std::byte* p, size_t block_bytes, bool pooled) {
  if (!pooled) {
    std::free(p);
    std::lock_guard<std::mutex> lock(mu_);
    stats_.bytes_in_use -= block_bytes;
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.bytes_in_use -= block_bytes;
    if (stats_.bytes_cached + block_bytes <= stats_.cache_limit) {
      // First among blocks of its size: the next request takes the block freed last, whose
      // lines are the likeliest to be in cache.
      free_.emplace_hint(free_.lower_bound(block_bytes), block_bytes, p);
      stats_.bytes_cached += block_bytes;
      return;
    }
  }
  ::munmap(p, block_bytes);
}

void BufferPool::TrimLocked(size_t target) {
  while (stats_.bytes_cached > target && !free_.empty()) {
    auto largest = std::prev(free_.end());
    ::munmap(largest->second, largest->first);
    stats_.bytes_cached -= largest->first;
    free_.erase(largest);
  }
}

PoolStats BufferPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void BufferPool::ResetPeak() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.peak_bytes_in_use = stats_.bytes_in_use;
}

void BufferPool::SetCacheLimit(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.cache_limit = bytes;
  TrimLocked(bytes);
}

void BufferPool::ReleaseCached() {
  std::lock_guard<std::mutex> lock(mu_);
  TrimLocked(0);
}

}  // namespace blockflow
