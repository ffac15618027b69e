// BufferPool: the caching allocator behind every Tensor buffer, the job TensorFlow's BFC
// allocator and PyTorch's caching allocator do. A freed large buffer goes back to a free list
// and the next request of about its size takes it again, pages already mapped and touched, so a
// run that repeats does not page-fault its outputs in again (on a virtual machine a first-touch
// fault costs about 8 us per 4 KB page).
//
//   std::shared_ptr<std::byte> b = BufferPool::Global().Allocate(12 << 20, /*zeroed=*/false);
//   b.reset();                                     // back to the pool, not to the OS
//   PoolStats s = BufferPool::Global().stats();    // s.bytes_cached == 12 MB (page-rounded)
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace blockflow {

/// What a BufferPool holds and has done. Byte counts are of blocks as handed out
/// (small requests rounded to 64 bytes, pooled ones to whole pages).
struct PoolStats {
  size_t bytes_in_use = 0;       // handed out and not yet returned
  size_t peak_bytes_in_use = 0;  // highest bytes_in_use since creation or ResetPeak()
  size_t bytes_cached = 0;       // returned and kept for reuse
  size_t cache_limit = 0;        // bytes_cached never exceeds this
  uint64_t hits = 0;             // pooled requests served from the free lists
  uint64_t misses = 0;           // pooled requests that mapped fresh memory
};

/// A thread-safe caching allocator of 64-byte-aligned buffers.
///
/// Requests below kMinPooledBytes go to the C heap (which caches small blocks itself). Larger
/// ones are page-rounded anonymous mappings kept on a free list keyed by size when freed, and
/// reused by a later request that needs at least 3/4 of the block (best fit). Blocks of 2 MB
/// and more are aligned and (unless the pool is made without) advised for transparent huge
/// pages. Cached bytes never exceed the cache limit: a block that would pass it goes back to
/// the operating system.
class BufferPool {
 public:
  /// Requests of this size and more are pooled.
  static constexpr size_t kMinPooledBytes = size_t{64} << 10;

  /// A pool that caches at most `cache_limit` free bytes; `huge_pages`: blocks of 2 MB and more
  /// advised for transparent huge pages.
  explicit BufferPool(size_t cache_limit, bool huge_pages = true);
  /// Unmaps the cached blocks. Buffers still handed out must be freed first (CHECKed).
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  /// The process-wide pool behind Tensor; never destroyed, so tensors in static storage are
  /// safe. Its cache limit is DefaultCacheLimit().
  static BufferPool& Global();
  /// The process-wide pool behind the kernels' large work buffers (their layout conversions and
  /// partial sums, through AllocateBlock), apart from Global() so that its counters stay those
  /// of tensors; the same cache limit, never destroyed. Without huge pages: a work buffer is
  /// written right after it is taken, and on a virtual machine a fresh huge page cost more
  /// than the 4 KB faults it saves (a float32 NCHW filter gradient of the stem at batch 32:
  /// 370-430 ms on its first calls with huge pages, 107-114 without; 100-105 ms either way
  /// once the pool holds its buffers).
  static BufferPool& Scratch();
  /// A quarter of physical memory, or the environment variable BLOCKFLOW_POOL_LIMIT (bytes,
  /// with an optional K, M or G suffix) when set.
  static size_t DefaultCacheLimit();

  /// A buffer of at least `bytes` bytes (64-byte aligned), zero-filled when `zeroed`; its
  /// deleter returns it to this pool. Null when memory is exhausted.
  std::shared_ptr<std::byte> Allocate(size_t bytes, bool zeroed);

  /// A raw block of at least `bytes` bytes (64-byte aligned, not zeroed) for a container's
  /// allocator, pooled from kMinPooledBytes on as Allocate's buffers are; FreeBlock gives it
  /// back. Null when memory is exhausted.
  std::byte* AllocateBlock(size_t bytes);
  /// Returns a block from AllocateBlock, of the same `bytes`.
  void FreeBlock(std::byte* p, size_t bytes);

  /// A snapshot of the counters.
  PoolStats stats() const;
  /// Restarts peak_bytes_in_use from the current bytes_in_use.
  void ResetPeak();
  /// Sets the cache limit, returning cached blocks beyond it to the OS.
  void SetCacheLimit(size_t bytes);
  /// Returns every cached block to the OS.
  void ReleaseCached();

 private:
  // A buffer of at least `bytes`, its block size in *size; whether pooled follows from `bytes`.
  std::byte* Take(size_t bytes, bool zeroed, size_t* size);
  void Free(std::byte* p, size_t block_bytes, bool pooled);
  // A cached block for a request of `need` (page-rounded) bytes, or null (a miss). `size`
  // receives the block's size, or `need` on a miss.
  std::byte* TakeCached(size_t need, size_t* size);
  // Unmaps cached blocks, largest first, until bytes_cached_ <= target. Caller holds mu_.
  void TrimLocked(size_t target);

  mutable std::mutex mu_;
  std::multimap<size_t, std::byte*> free_;  // block size → block
  std::map<std::byte*, size_t> blocks_;     // AllocateBlock's blocks out → their sizes
  PoolStats stats_;
  bool huge_pages_ = true;
};

/// Parses a byte count such as "512", "64K", "1.5G" (K, M, G are powers of 1024); nullopt
/// when malformed.
std::optional<size_t> ParseByteCount(const std::string& text);

}  // namespace blockflow
