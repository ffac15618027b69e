// Data layouts of the convolution kernels (not part of the public API): the compute type of
// each dtype, and conversion of tensors in either data_format to NHWC compute buffers and back.
//
//   WorkBuffer<float> buf;
//   const float* x = ToNHWC<Half, float>(input, DataFormat::kNCHW, n, h, w, c, &buf, threads);
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "blocks/conv/conv_geometry.h"
#include "blocks/conv/convert.h"
#include "blocks/conv/isa.h"
#include "core/allocator.h"
#include "core/team.h"
#include "core/tensor.h"

namespace blockflow::conv::internal {

/// The type a kernel computes in: float for float16, bfloat16 and float32; double for float64.
template <typename T>
using ComputeT = typename AccumulatorOf<T>::type;

/// The most a thread keeps of one work buffer between its kernel calls (Reused).
inline constexpr size_t kReusedKeepBytes = size_t{16} << 20;

/// Allocates on 64-byte boundaries, the width of the kernels' vectors and of a cache line. Blocks
/// larger than kReusedKeepBytes come from BufferPool::Scratch(), so that one freed by a call is
/// mapped and paged in already for the next (fresh, it costs a page fault every 4 KB); smaller
/// ones from the heap, which recycles them itself, and Reused keeps them. (All from the pool,
/// the float16 NCHW depthwise filter gradients measured 20-50% slower.)
template <typename C>
struct AlignedAllocator {
  using value_type = C;
  static constexpr std::align_val_t kAlignment{64};
  AlignedAllocator() = default;
  // Implicit, as the allocator requirements ask (rebinding converts allocators).
  template <typename U>
  AlignedAllocator(const AlignedAllocator<U>&) {}  // NOLINT(google-explicit-constructor)
  C* allocate(size_t n) {
    const size_t bytes = n * sizeof(C);
    if (bytes <= kReusedKeepBytes) {
      return static_cast<C*>(::operator new(bytes, kAlignment));
    }
    std::byte* p = BufferPool::Scratch().AllocateBlock(bytes);
    if (p == nullptr) throw std::bad_alloc();
    return reinterpret_cast<C*>(p);
  }
  void deallocate(C* p, size_t n) {
    const size_t bytes = n * sizeof(C);
    if (bytes <= kReusedKeepBytes) {
      // Unsized: the sized aligned form needs -fsized-deallocation under clang (and clang-tidy).
      ::operator delete(p, kAlignment);
    } else {
      BufferPool::Scratch().FreeBlock(reinterpret_cast<std::byte*>(p), bytes);
    }
  }
  template <typename U>
  bool operator==(const AlignedAllocator<U>&) const {
    return true;
  }
};

/// A kernel's work buffer. 64-byte aligned, so that the 64-byte vector loads and stores of the
/// row kernels never straddle two cache lines; with malloc's 16-byte alignment where a buffer
/// lands (and so the speed of a kernel) would depend on the heap's state.
template <typename C>
using WorkBuffer = std::vector<C, AlignedAllocator<C>>;

/// A work buffer kept between a thread's kernel calls, so that repeated calls reuse memory
/// already paged in instead of faulting in (and zeroing) fresh pages every time; the TF-layout
/// transpositions and the filter-gradient partial sums are as large as the activations. Each
/// calling thread has kReusedSlots buffers per compute type: a Reused<C> takes `slot`'s buffer
/// on construction and gives it back on destruction, freeing it instead when it holds more than
/// kReusedKeepBytes (the bound on what one thread keeps to itself between calls). A freed buffer
/// goes back to BufferPool::Scratch() (AlignedAllocator), whose cache the next call of any
/// thread draws on. A nested use of a slot simply finds it empty.
inline constexpr int kReusedSlots = 12;
template <typename C>
class Reused {
 public:
  explicit Reused(int slot) : slot_(slot), buf_(std::move(Pool()[slot])) { Pool()[slot].clear(); }
  ~Reused() {
    if (buf_.capacity() * sizeof(C) <= kReusedKeepBytes) Pool()[slot_] = std::move(buf_);
  }
  Reused(const Reused&) = delete;
  Reused& operator=(const Reused&) = delete;

  WorkBuffer<C>* get() { return &buf_; }
  WorkBuffer<C>& operator*() { return buf_; }
  WorkBuffer<C>* operator->() { return &buf_; }
  C* data() { return buf_.data(); }
  const C* data() const { return buf_.data(); }
  C& operator[](size_t i) { return buf_[i]; }
  const C& operator[](size_t i) const { return buf_[i]; }

 private:
  static WorkBuffer<C>* Pool() {
    thread_local WorkBuffer<C> pool[kReusedSlots];
    return pool;
  }
  int slot_;
  WorkBuffer<C> buf_;
};
/// The slots of Reused buffers, one per role in a kernel call.
enum ReusedSlot : int {
  kSlotInput = 0,
  kSlotOutBackprop,
  kSlotFilter,
  kSlotResult,
  kSlotPartialSums,
  kSlotPackedFilter,
  kSlotGemmWork,
  kSlotInputRows,
  kSlotOutBackpropRows,
  kSlotPackedInput,
  kSlotFilterCopy,
  kSlotBlockedImages
};

/// Whether TeamBound bounds the threads (on, except in tests of the smaller-team paths).
inline std::atomic<bool>& TeamBoundOn() {
  static std::atomic<bool> on{true};
  return on;
}
inline void SetTeamBoundForTesting(bool on) { TeamBoundOn().store(on); }

/// The threads a team asking for `nt` gets, where that is known in advance (TeamLimit,
/// core/team.h: one inside a caller's team, at most OMP_THREAD_LIMIT). Kernels plan for it, so
/// that their buffers and splits fit the team. Under OMP_DYNAMIC an OpenMP region can still get
/// fewer: the teams split their work over the threads they got (TeamSize).
inline int TeamBound(int nt) {
  if (!TeamBoundOn().load(std::memory_order_relaxed)) return std::max(1, nt);
  return TeamLimit(nt);
}

/// Number of rows of work each thread gets at least, so tiny problems stay on one thread; at
/// most TeamBound(num_threads).
inline int ThreadsFor(int num_threads, int64_t work_items, int64_t min_items_per_thread = 1) {
  int64_t t = std::max<int64_t>(1, work_items / std::max<int64_t>(1, min_items_per_thread));
  return static_cast<int>(std::clamp<int64_t>(t, 1, TeamBound(num_threads)));
}

/// body() on each thread of a team of `nt` (RunTeam, core/team.h: an OpenMP region, or the
/// process's pool of threads where the pool is chosen), or once on the calling thread for one. The
/// body finds its place with TeamThread(), TeamSize() and TeamShare(), and meets the others at
/// TeamBarrier().
template <typename Body>
void InTeam(int nt, const Body& body) {
  RunTeam(nt, body);
}

/// body(i) for every i in [0, n), split over `nt` threads as OpenMP's static schedule splits
/// (TeamShare): at most one thread an item.
template <typename Body>
void ParallelFor(int nt, int64_t n, const Body& body) {
  RunTeam(static_cast<int>(std::clamp<int64_t>(n, 1, std::max(nt, 1))), [&] {
    const auto [begin, end] = TeamShare(n);
    for (int64_t i = begin; i < end; ++i) body(i);
  });
}

/// Threads for `items` whole work items of `per_item` multiply-adds each: ThreadsFor's rule, and
/// at most one thread an item.
inline int ItemThreads(int num_threads, int64_t items, int64_t per_item) {
  const int nt = ThreadsFor(num_threads, items * per_item, 1 << 15);
  return static_cast<int>(std::clamp<int64_t>(items, 1, nt));
}

/// Element offset in a rank-4 activation tensor of `format` (reference kernels).
inline int64_t ActIndex(DataFormat format, int64_t h_size, int64_t w_size, int64_t c_size,
                        int64_t n, int64_t y, int64_t x, int64_t c) {
  return format == DataFormat::kNHWC ? ((n * h_size + y) * w_size + x) * c_size + c
                                     : ((n * c_size + c) * h_size + y) * w_size + x;
}

/// dst[i] = src[i] for i < n, converted between the types the kernels convert between: the
/// same type (a copy), or a 16-bit float and float (widened exactly, rounded to nearest even;
/// a vector at a time, convert.h).
template <typename S, typename D>
void ConvertRun(const S* src, D* dst, int64_t n) {
  if constexpr (std::is_same_v<S, D>) {
    std::copy_n(src, n, dst);
  } else if constexpr (std::is_same_v<D, float>) {
    WidenRun(src, dst, n);
  } else {
    NarrowRun(src, dst, n);
  }
}

/// ConvertRun over `total` elements, in chunks shared among threads.
template <typename S, typename D>
void ConvertParallel(const S* src, D* dst, int64_t total, int num_threads) {
  constexpr int64_t kChunk = int64_t{1} << 14;
  const int64_t chunks = (total + kChunk - 1) / kChunk;
  ParallelFor(ThreadsFor(num_threads, total, 1 << 16), chunks, [&](int64_t c) {
    ConvertRun(src + c * kChunk, dst + c * kChunk, std::min(kChunk, total - c * kChunk));
  });
}

/// d[j * ds + i] = s[i * ss + j] for i < ni, j < nj; floats in 8 x 8 register transposes where
/// `fast` (AVX2 or wider), the rest element by element.
template <typename C>
void TransposeBlock(const C* s, int64_t ss, C* d, int64_t ds, int64_t ni, int64_t nj, bool fast) {
  int64_t i8 = 0, j8 = 0;  // [0, i8) x [0, j8) in 8 x 8 register transposes
  if constexpr (std::is_same_v<C, float>) {
    if (fast) {
      i8 = ni / 8 * 8;
      j8 = nj / 8 * 8;
      for (int64_t i = 0; i < i8; i += 8)
        for (int64_t j = 0; j < j8; j += 8)
          Transpose8x8Avx2(s + i * ss + j, ss, d + j * ds + i, ds);
    }
  }
  // The rest: columns [j8, nj) of every row, rows [i8, ni) of the others.
  for (int64_t j = 0; j < nj; ++j)
    for (int64_t i = j < j8 ? i8 : 0; i < ni; ++i) d[j * ds + i] = s[i * ss + j];
}

/// The blocks of TransposeConvert: 16 rows of 64 columns, so that both sides are read and
/// written a cache line at a time.
inline constexpr int64_t kTransposeRows = 16, kTransposeCols = 64;

/// d[j * ds + i] = s[i * ss + j] converted (ConvertRun) for i < ni <= kTransposeRows,
/// j < nj <= kTransposeCols. A conversion goes through floats on the stack, the rows widened
/// before the transpose or the transposed rows rounded after it.
template <typename S, typename D>
void TransposeConvertBlock(const S* s, int64_t ss, D* d, int64_t ds, int64_t ni, int64_t nj,
                           bool fast) {
  if constexpr (std::is_same_v<S, D>) {
    TransposeBlock(s, ss, d, ds, ni, nj, fast);
  } else if constexpr (std::is_same_v<D, float>) {
    alignas(64) float tmp[kTransposeRows * kTransposeCols];
    for (int64_t i = 0; i < ni; ++i) WidenRun(s + i * ss, tmp + i * kTransposeCols, nj);
    TransposeBlock<float>(tmp, kTransposeCols, d, ds, ni, nj, fast);
  } else {
    alignas(64) float tmp[kTransposeCols * kTransposeRows];
    TransposeBlock<float>(s, ss, tmp, kTransposeRows, ni, nj, fast);
    for (int64_t j = 0; j < nj; ++j) NarrowRun(tmp + j * kTransposeRows, d + j * ds, ni);
  }
}

/// d[j * ds + i] = s[i * ss + j] converted (ConvertRun) for i < ni, j < nj, on the calling
/// thread, in TransposeConvertBlock's blocks.
///
/// A column block at a time over all the rows: d's lines for the block's columns are then
/// written whole while they are in L1. Row blocks outermost, every pass over the columns wrote
/// another 64 bytes of each of d's pixels, and an image's d larger than L2 came back from L3 for
/// each pass. One pinned core, NCHW depthwise, best of 6 alternated rounds: mnv2_dw_112x96's
/// strided input gradient 17.0 -> 7.9 ms, its filter gradient 5.7 -> 4.4, mnv2_dw_56x144's
/// and mnv1_dw4_56x128's three ops 7-26% faster; dense layers, a few rows at a time, the same.
template <typename S, typename D>
void TransposeConvert(const S* s, int64_t ss, D* d, int64_t ds, int64_t ni, int64_t nj) {
  const bool fast = ActiveIsa() != Isa::kBase;
  for (int64_t j0 = 0; j0 < nj; j0 += kTransposeCols)
    for (int64_t i0 = 0; i0 < ni; i0 += kTransposeRows) {
      const int64_t rows = std::min(kTransposeRows, ni - i0);
      // The next block's source rows, prefetched: they are kTransposeRows runs of rows ss
      // apart (an NCHW image's channel planes), more streams than the hardware prefetcher
      // follows. A float16 NCHW filter gradient of resnet_56x64 spent 8-11% of its samples
      // waiting for them in the widening, 3% after (one pinned core, 20.0-20.4 -> 18.8-19.1 ms).
      const bool last_rows = i0 + kTransposeRows >= ni;
      const int64_t ni0 = last_rows ? 0 : i0 + kTransposeRows;
      const int64_t nj0 = last_rows ? j0 + kTransposeCols : j0;
      if (nj0 < nj) {
        const int64_t next_rows = std::min(kTransposeRows, ni - ni0);
        const int64_t next_bytes = std::min(kTransposeCols, nj - nj0) * int64_t{sizeof(S)};
        for (int64_t i = 0; i < next_rows; ++i) {
          const char* run = reinterpret_cast<const char*>(s + (ni0 + i) * ss + nj0);
          for (int64_t o = 0; o < next_bytes; o += 64) __builtin_prefetch(run + o);
        }
      }
      TransposeConvertBlock(s + i0 * ss + j0, ss, d + j0 * ds + i0, ds, rows,
                            std::min(kTransposeCols, nj - j0), fast);
    }
}

/// dst[b, j, i] = src[b, i, j] converted (ConvertRun) for b < n, i < rows, j < cols: n matrices
/// transposed in TransposeConvertBlock's blocks (NCHW to NHWC is rows = C, cols = H*W; back is
/// the other way round), the blocks in parallel.
template <typename S, typename D>
void TransposeBlocks(const S* src, D* dst, int64_t n, int64_t rows, int64_t cols, int num_threads) {
  constexpr int64_t kRows = kTransposeRows, kCols = kTransposeCols;
  const int64_t row_blocks = (rows + kRows - 1) / kRows, col_blocks = (cols + kCols - 1) / kCols;
  const int64_t blocks = n * row_blocks * col_blocks;
  const bool fast = ActiveIsa() != Isa::kBase;
  ParallelFor(ThreadsFor(num_threads, n * rows * cols, 1 << 16), blocks, [&](int64_t blk) {
    const int64_t b = blk / (row_blocks * col_blocks), rem = blk % (row_blocks * col_blocks);
    const int64_t i0 = rem / col_blocks * kRows, j0 = rem % col_blocks * kCols;
    const int64_t ni = std::min(rows, i0 + kRows) - i0, nj = std::min(cols, j0 + kCols) - j0;
    TransposeConvertBlock(src + b * rows * cols + i0 * cols + j0, cols,
                          dst + b * rows * cols + j0 * rows + i0, rows, ni, nj, fast);
  });
}

/// Rows [row0, row0 + count) of image n of the activation t (n, h, w, c in `format` order) as
/// NHWC values of type C at dst, pixels `stride` >= c apart: what a row kernel reads, converted
/// and transposed a few rows at a time (while they are in cache) instead of the whole tensor.
template <typename S, typename C>
void GatherRows(const S* t, DataFormat format, int64_t h, int64_t w, int64_t c, int64_t n,
                int64_t row0, int64_t count, C* dst, int64_t stride) {
  if (format == DataFormat::kNCHW) {
    TransposeConvert(t + (n * c * h + row0) * w, h * w, dst, stride, c, count * w);
    return;
  }
  const S* src = t + (n * h + row0) * w * c;
  if (stride == c) {
    ConvertRun(src, dst, count * w * c);
    return;
  }
  for (int64_t p = 0; p < count * w; ++p) ConvertRun(src + p * c, dst + p * stride, c);
}

/// The NHWC rows src (count * w pixels of c values) stored as rows [row0, row0 + count) of image
/// n of the activation t (n, h, w, c in `format` order): GatherRows' inverse.
template <typename C, typename T>
void ScatterRows(const C* src, T* t, DataFormat format, int64_t h, int64_t w, int64_t c, int64_t n,
                 int64_t row0, int64_t count) {
  if (format == DataFormat::kNCHW) {
    TransposeConvert(src, c, t + (n * c * h + row0) * w, h * w, count * w, c);
    return;
  }
  ConvertRun(src, t + (n * h + row0) * w * c, count * w * c);
}

/// The elements of `t` (shape n,h,w,c in `format` order) as NHWC values of type C. Returns the
/// tensor's own memory when no conversion is needed, else fills `buf`.
template <typename T, typename C>
const C* ToNHWC(const Tensor& t, DataFormat format, int64_t n, int64_t h, int64_t w, int64_t c,
                WorkBuffer<C>* buf, int num_threads) {
  const T* src = t.data<T>();
  if constexpr (std::is_same_v<T, C>) {
    if (format == DataFormat::kNHWC) return src;
  }
  buf->resize(static_cast<size_t>(n * h * w * c));
  C* dst = buf->data();
  if (format == DataFormat::kNHWC) {
    ConvertParallel(src, dst, n * h * w * c, num_threads);
  } else {
    TransposeBlocks(src, dst, n, c, h * w, num_threads);
  }
  return dst;
}

/// The elements of a filter (no transposition) as type C.
template <typename T, typename C>
const C* ToCompute(const Tensor& t, WorkBuffer<C>* buf) {
  const T* src = t.data<T>();
  if constexpr (std::is_same_v<T, C>) return src;
  buf->resize(static_cast<size_t>(t.num_elements()));
  ConvertRun(src, buf->data(), t.num_elements());
  return buf->data();
}

/// Where an NHWC result of type C should be computed: straight into `out` when it is already
/// NHWC of type C, else into `buf`, to be stored by StoreNHWC. Not zeroed: the kernels write
/// every element of a result, as they must where it is `out` itself.
template <typename T, typename C>
C* OutputBuffer(Tensor* out, DataFormat format, WorkBuffer<C>* buf) {
  if constexpr (std::is_same_v<T, C>) {
    if (format == DataFormat::kNHWC) return out->data<T>();
  }
  buf->resize(static_cast<size_t>(out->num_elements()));
  return buf->data();
}

/// Rounds (once) and transposes an NHWC buffer into `out` (n,h,w,c in `format` order), unless
/// the kernel wrote into `out` directly.
template <typename T, typename C>
void StoreNHWC(const C* src, Tensor* out, DataFormat format, int64_t n, int64_t h, int64_t w,
               int64_t c, int num_threads) {
  T* dst = out->data<T>();
  if (static_cast<const void*>(src) == static_cast<const void*>(dst)) return;
  if (format == DataFormat::kNHWC) {
    ConvertParallel(src, dst, n * h * w * c, num_threads);
  } else {
    TransposeBlocks(src, dst, n, h * w, c, num_threads);
  }
}

}  // namespace blockflow::conv::internal
