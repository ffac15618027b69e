// Helpers of the optimized convolution row kernels (not part of the public API): operands as
// NHWC compute buffers, rows in parallel, tap lists in caller-provided scratch, per-thread
// partial sums, and the row-function signature. Included only by the kernels' .cc files.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "blocks/conv/conv_geometry.h"
#include "blocks/conv/conv_kernels.h"
#include "blocks/conv/isa.h"
#include "blocks/conv/layout.h"
#include "blocks/conv/run_kernels.h"
#include "core/schema.h"

// The kernels pass 64-byte vectors between always-inlined helpers; GCC's note that this
// changes the ABI on targets without AVX-512 (-Wpsabi) does not apply to inlined code.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace blockflow::conv::internal {

/// One kernel call's operands as NHWC buffers of the compute type C, converted from the op's
/// tensors (NHWC or NCHW, any dtype) only when they differ, and its result stored back. The
/// kernel names each operand by its role; the shapes come from the prepared geometry.
template <typename T, typename C>
class Operands {
 public:
  Operands(const ConvState& state, const KernelContext& ctx)
      : format_(state.attrs.format), g_(state.geometry), num_threads_(ctx.num_threads) {}

  /// The input x, [batch, in_h, in_w, in_depth].
  const C* Input(const Tensor& x) {
    return ToNHWC<T, C>(x, format_, g_.batch, g_.in_h, g_.in_w, g_.in_depth, x_.get(),
                        num_threads_);
  }
  /// The output gradient dy, [batch, out_h, out_w, out_depth].
  const C* OutBackprop(const Tensor& dy) {
    return ToNHWC<T, C>(dy, format_, g_.batch, g_.out_h, g_.out_w, g_.out_depth, dy_.get(),
                        num_threads_);
  }
  /// The filter, HWIO as given.
  const C* Filter(const Tensor& w) { return ToCompute<T, C>(w, w_.get()); }
  /// Where to compute the NHWC result (output or input gradient): `out` itself when it can be.
  C* Result(Tensor* out) { return OutputBuffer<T, C>(out, format_, result_.get()); }
  /// Stores a forward output computed at `y`, [batch, out_h, out_w, out_depth].
  void StoreOutput(const C* y, Tensor* out) const {
    StoreNHWC<T, C>(y, out, format_, g_.batch, g_.out_h, g_.out_w, g_.out_depth, num_threads_);
  }
  /// Stores an input gradient computed at `dx`, [batch, in_h, in_w, in_depth].
  void StoreInputGrad(const C* dx, Tensor* out) const {
    StoreNHWC<T, C>(dx, out, format_, g_.batch, g_.in_h, g_.in_w, g_.in_depth, num_threads_);
  }

 private:
  DataFormat format_;
  const ConvGeometry& g_;
  int num_threads_;
  Reused<C> x_{kSlotInput}, dy_{kSlotOutBackprop}, w_{kSlotFilter}, result_{kSlotResult};
};

/// The operands a kernel set converts itself, a row at a time as it reads or writes them, when
/// the op's tensors are not NHWC buffers of the compute type (a 16-bit float, or NCHW): they
/// reach it as they are (KernelArgs::x_t, dy_t, result_t), not as whole NHWC float buffers
/// converted before the kernel and after it (passes over memory that take longer than a
/// memory-bound depthwise layer itself).
struct RowConverted {
  bool input = false, out_backprop = false, result = false;
  /// The filter reaches the kernel as the op's tensor (KernelArgs::w_t), 16-bit.
  bool filter = false;
};

/// What an optimized kernel set's functions get (BF_CONV_OPTIMIZED_KERNEL_SET): the operands the
/// op reads as NHWC buffers of the compute type, null for the others, and where its result goes.
template <typename T>
struct KernelArgs {
  using C = ComputeT<T>;
  const ConvGeometry& g;
  const C* x = nullptr;   // the input: forward, BackpropFilter
  const C* w = nullptr;   // the HWIO filter: forward, BackpropInput
  const C* dy = nullptr;  // out_backprop: both gradients
  /// Forward and BackpropInput: the NHWC output or input gradient to write whole, stored back
  /// into the op's tensor after the kernel, unless the run was cancelled.
  C* result = nullptr;
  /// `result` is the op's output tensor itself, 64-byte aligned: nothing reads it back within
  /// the call, so the kernel may store it past the caches (StreamVec).
  bool result_streamable = false;
  /// BackpropFilter: the zeroed filter gradient, written in T by the kernel.
  Tensor* filter_grad = nullptr;
  /// The operands the kernel set converts itself (RowConverted), the op's tensors in `format`;
  /// x, dy or result is then null. The kernel writes result_t whole (unless cancelled).
  const T* x_t = nullptr;
  const T* dy_t = nullptr;
  const T* w_t = nullptr;  // w is then null
  T* result_t = nullptr;
  DataFormat format = DataFormat::kNHWC;
};

/// Runs the function of `s.op` in an optimized kernel set `K<T>`: converts the operands it
/// reads (ConvOp orders a and b), runs it, and stores its result back unless the run was
/// cancelled, so that no kernel repeats that protocol. Static, as RunKernels.
template <template <typename> class K>
static Status RunOptimizedKernels(const ConvState& s, const Tensor& a, const Tensor& b, Tensor* out,
                                  const KernelContext& ctx) {
  return RunGuarded(s, a, [&](auto tag) {
    using T = decltype(tag);
    Operands<T, ComputeT<T>> ops(s, ctx);
    KernelArgs<T> args{s.geometry};
    args.format = s.attrs.format;
    const RowConverted rows = std::is_same_v<T, ComputeT<T>> && args.format == DataFormat::kNHWC
                                  ? RowConverted{}
                                  : K<T>::ConvertsRows(s);
    const bool forward = s.op == ConvOp::kForward;
    if (s.op != ConvOp::kBackpropInput) {
      if (rows.input) {
        args.x_t = a.data<T>();
      } else {
        args.x = ops.Input(a);
      }
    }
    if (s.op != ConvOp::kBackpropFilter) {
      const Tensor& w = forward ? b : a;
      if (rows.filter) {
        args.w_t = w.data<T>();
      } else {
        args.w = ops.Filter(w);
      }
    }
    if (!forward) {
      if (rows.out_backprop) {
        args.dy_t = b.data<T>();
      } else {
        args.dy = ops.OutBackprop(b);
      }
    }
    if (s.op == ConvOp::kBackpropFilter) {
      args.filter_grad = out;
      return K<T>::BackpropFilter(args, ctx);
    }
    if (rows.result) {
      args.result_t = out->data<T>();
    } else {
      args.result = ops.Result(out);
      args.result_streamable =
          static_cast<const void*>(args.result) == static_cast<const void*>(out->data<T>()) &&
          reinterpret_cast<uintptr_t>(args.result) % 64 == 0;
    }
    forward ? K<T>::Forward(args, ctx) : K<T>::BackpropInput(args, ctx);
    if (rows.result || ctx.cancelled()) return;
    forward ? ops.StoreOutput(args.result, out) : ops.StoreInputGrad(args.result, out);
  });
}

/// Declares an optimized kernel set `Name<T>` for RunOptimizedKernels: one function per op, each
/// taking (args, ctx), and which operands it converts a row at a time (ConvertsRows), defined in
/// the family's file.
#define BF_CONV_OPTIMIZED_KERNEL_SET(Name)                                           \
  template <typename T>                                                              \
  struct Name {                                                                      \
    static RowConverted ConvertsRows(const ConvState& s);                            \
    static void Forward(const KernelArgs<T>& args, const KernelContext& ctx);        \
    static void BackpropInput(const KernelArgs<T>& args, const KernelContext& ctx);  \
    static void BackpropFilter(const KernelArgs<T>& args, const KernelContext& ctx); \
  }

/// Part `part` of `parts` of the cache lines of a row of `bytes` at `row` (none if row is
/// nullptr), prefetched a few lines at a time by `steps` calls of Next, one per step of a loop
/// along another row: the parts together take every line of the row once.
class LinesAhead {
 public:
  LinesAhead(const void* row, int64_t bytes, int64_t parts, int64_t part, int64_t steps) {
    if (row == nullptr) return;
    const int64_t lines = (bytes + 63) / 64, per_part = (lines + parts - 1) / parts;
    const int64_t first = std::min(lines, part * per_part);
    next_ = static_cast<const char*>(row) + first * 64;
    left_ = std::min(per_part, lines - first);
    step_ = (per_part + steps - 1) / steps;
  }
  BF_CONV_INLINE void Next() {
    for (int64_t i = 0; i < step_ && left_ > 0; ++i, --left_, next_ += 64)
      __builtin_prefetch(next_);
  }
  /// The next line to prefetch and how many are left.
  const char* next() const { return next_; }
  int64_t left() const { return left_; }

 private:
  const char* next_ = nullptr;
  int64_t left_ = 0, step_ = 0;
};

/// Runs `row(r, thread)` for every r in [0, rows) (rows, or any work items) on `nt` threads,
/// statically scheduled (ParallelFor), and skips those left once `ctx` is cancelled.
template <typename Row>
void ParallelRows(int64_t rows, int nt, const KernelContext& ctx, const Row& row) {
  ParallelFor(nt, rows, [&](int64_t r) {
    if (!ctx.cancelled()) row(r, TeamThread());
  });
}

/// ParallelRows for rows whose results depend neither on the thread that computes them nor on
/// the order a thread takes them in (no per-thread sums): the threads share the rows out as they
/// go (TeamRows, core/team.h), so that a thread that finishes early takes the last rows of one
/// that runs slower. One thread takes them in order, with nothing to share.
template <typename Row>
void ParallelRowsBalanced(int64_t rows, int nt, const KernelContext& ctx, const Row& row) {
  nt = static_cast<int>(std::clamp<int64_t>(rows, 1, std::max(nt, 1)));
  if (nt == 1) return ParallelRows(rows, 1, ctx, row);
  TeamRows shares(rows, nt);
  InTeam(nt, [&] {
    const int thread = TeamThread();
    for (int64_t begin, end; shares.Next(&begin, &end);) {
      for (int64_t r = begin; r < end; ++r) {
        if (!ctx.cancelled()) row(r, thread);
      }
    }
  });
}

/// `count` elements of E rounded up to whole 64-byte cache lines: the stride of per-thread
/// slices that share no line.
template <typename E>
constexpr int64_t WholeLines(int64_t count) {
  static_assert(64 % sizeof(E) == 0, "an element must divide a cache line");
  constexpr int64_t kLine = 64 / sizeof(E);
  return (count + kLine - 1) / kLine * kLine;
}

/// The address space left after each thread's slice of a shared buffer (ThreadStride).
inline constexpr int64_t kThreadGapBytes = int64_t{128} << 10;

/// The stride of `nt` threads' slices of `count` elements of E in one buffer that the threads
/// keep writing into (partial sums, rings of rows): whole cache lines, and with more than one
/// thread kThreadGapBytes after each slice. Packed back to back, the thread writing into the
/// higher of two neighbouring slices ran 8-35% slower than the other on the AVX-512 EPYC,
/// whichever thread or data it was (the stem's filter gradient, 37 KB of partial sums per thread:
/// 2.2 and 2.4-3.1 ms of each call's loop). Two static buffers 40 or 48 KB apart did the same,
/// 64 KB apart half as much, 128 KB and more apart nothing: the cause lies with the neighbouring
/// core (its hardware prefetcher, likely), not with this thread's data. The gaps are zeroed once,
/// when a kept (Reused) buffer grows, and never touched again. (Per-call buffers do without: a
/// gap would be paged in on every call.)
template <typename E>
constexpr int64_t ThreadStride(int64_t count, int nt) {
  return WholeLines<E>(count) + (nt > 1 ? kThreadGapBytes / int64_t{sizeof(E)} : 0);
}

/// One buffer of `nt` per-thread slices of `count` elements each, every slice on cache lines of
/// its own: a row kernel's per-thread pointers and tap lists, rewritten every row, would
/// otherwise share a line with the next thread's, which would then move between the cores row
/// by row. Allocated outside the parallel regions, as kernels allocate nothing inside them.
template <typename E>
class PerThread {
 public:
  PerThread(int nt, int64_t count, E init = E{})
      : stride_(WholeLines<E>(count)), data_(static_cast<size_t>(nt * stride_), init) {}
  E* operator[](int thread) { return data_.data() + thread * stride_; }

 private:
  int64_t stride_;
  std::vector<E, AlignedAllocator<E>> data_;
};

/// A pair of ints (a filter tap and the output row or column it reads, for example).
struct IntPair {
  int64_t first, second;
};

/// A list of int pairs in memory the caller provides, so that kernels allocate nothing (which
/// could throw) inside parallel regions.
class PairList {
 public:
  explicit PairList(IntPair* data) : data_(data) {}
  void clear() { size_ = 0; }
  void add(int64_t a, int64_t b) { data_[size_++] = IntPair{a, b}; }
  const IntPair* begin() const { return data_; }
  const IntPair* end() const { return data_ + size_; }

 private:
  IntPair* data_;
  int64_t size_ = 0;
};

/// The forward whose output is the stride-1 input gradient of g, read from out_backprop by the
/// filter turned half a turn: input and output sizes swapped, and each side's padding
/// (f - 1) * d - pad. The channels are g's; the caller swaps them where they differ.
inline ConvGeometry TurnedForward(const ConvGeometry& g) {
  const int64_t eh = (g.filter_h - 1) * g.dilation_h, ew = (g.filter_w - 1) * g.dilation_w;
  ConvGeometry f = g;
  f.in_h = g.out_h;
  f.in_w = g.out_w;
  f.out_h = g.in_h;
  f.out_w = g.in_w;
  f.pad_top = eh - g.pad_top;
  f.pad_bottom = eh - g.pad_bottom;
  f.pad_left = ew - g.pad_left;
  f.pad_right = ew - g.pad_right;
  return f;
}

/// The forward whose output is the stride-1 input gradient of the dense layer g: TurnedForward
/// with the channels swapped (out_backprop's in, g's input channels out), read by the filter
/// turned half a turn, w'[kh', kw', co, ci] = w[fh-1-kh', fw-1-kw', ci, co]. nullopt for a
/// stride above 1, groups, or a side padded past the filter's reach (the turned forward's
/// padding would be negative).
inline std::optional<ConvGeometry> DenseInputGradientForward(const ConvGeometry& g) {
  const int64_t eh = (g.filter_h - 1) * g.dilation_h, ew = (g.filter_w - 1) * g.dilation_w;
  if (g.stride_h != 1 || g.stride_w != 1 || g.groups != 1 || g.pad_top > eh || g.pad_bottom > eh ||
      g.pad_left > ew || g.pad_right > ew) {
    return std::nullopt;
  }
  ConvGeometry f = TurnedForward(g);
  f.in_depth = g.out_depth;
  f.filter_in_depth = g.out_depth;
  f.out_depth = g.in_depth;
  return f;
}

/// The filter rows that reach input row ih (for the input gradient): (kh, oh) pairs.
inline void ReachingRows(const ConvGeometry& g, int64_t ih, PairList* out) {
  out->clear();
  for (int64_t kh = 0; kh < g.filter_h; ++kh) {
    const int64_t th = ih + g.pad_top - kh * g.dilation_h;
    if (th >= 0 && th % g.stride_h == 0 && th / g.stride_h < g.out_h) out->add(kh, th / g.stride_h);
  }
}

/// The filter columns that reach the input columns iw = r + sw*t (one stride phase r):
/// (kw, ow for t = 0) pairs; column t then reads ow + t, when inside [0, out_w).
inline void ReachingCols(const ConvGeometry& g, int64_t r, PairList* out) {
  out->clear();
  for (int64_t kw = 0; kw < g.filter_w; ++kw) {
    const int64_t u = r + g.pad_left - kw * g.dilation_w;
    const int64_t rem = ((u % g.stride_w) + g.stride_w) % g.stride_w;
    if (rem == 0) out->add(kw, (u - rem) / g.stride_w);
  }
}

/// An input gradient row kernel's per-thread pair scratch (InputScratch): first the filter
/// columns that reach each stride phase r of the input columns (ReachingCols), worked out once
/// per call: at [r * (fw + 1)] their count and the phase's
/// count of input columns, then the pairs; then room for the filter rows reaching the input row
/// at hand (RowScratch: ReachingRows, once per row) and for fh * fw more pairs (the dense
/// kernel's dot-product taps). Worked out again for every row (depthwise) or every block of
/// channels and image of a row (dense), the reaching lists' 64-bit divisions by the strides took
/// 3-4% of the dense stride-2 28x128 input gradient's samples and 4-5% of the depthwise
/// mnv1_dw2_112x64_s2's: without them, one pinned core, the medians of 60-100 calls each paired
/// with one that still divided, the dense layer 2% faster, mnv1_dw2_112x64_s2 and mnv2_dw_112x96_s2
/// 2-3%.
inline int64_t PhaseTablePairs(const ConvGeometry& g) {
  return std::min(g.stride_w, g.in_w) * (g.filter_w + 1);
}
/// `nt` threads' scratch, the table filled in each (allocated outside the parallel region).
inline PerThread<IntPair> InputScratch(const ConvGeometry& g, int nt) {
  PerThread<IntPair> scratch(nt, PhaseTablePairs(g) + g.filter_h + g.filter_h * g.filter_w);
  for (int t = 0; t < nt; ++t) {
    for (int64_t r = 0; r < std::min(g.stride_w, g.in_w); ++r) {
      IntPair* phase = scratch[t] + r * (g.filter_w + 1);
      PairList cols(phase + 1);
      ReachingCols(g, r, &cols);
      phase[0] = {cols.end() - cols.begin(), (g.in_w - r + g.stride_w - 1) / g.stride_w};
    }
  }
  return scratch;
}
/// A run of pairs, iterable as a PairList is.
struct PairSpan {
  const IntPair* first;
  const IntPair* last;
  const IntPair* begin() const { return first; }
  const IntPair* end() const { return last; }
};
/// Phase r's reaching columns in the table, and its count of input columns.
inline PairSpan PhaseCols(const ConvGeometry& g, const IntPair* scratch, int64_t r) {
  const IntPair* phase = scratch + r * (g.filter_w + 1);
  return {phase + 1, phase + 1 + phase[0].first};
}
inline int64_t PhaseColumnCount(const ConvGeometry& g, const IntPair* scratch, int64_t r) {
  return scratch[r * (g.filter_w + 1)].second;
}
/// The room for the reaching rows, after the table.
inline IntPair* RowScratch(const ConvGeometry& g, IntPair* scratch) {
  return scratch + PhaseTablePairs(g);
}

/// One tap of a register tile over the pixels [Lo, P - Hi) (the others read the padding):
/// acc[p][k] += src[p][q] * wk[k][q * S] for q in [0, n), the pixels' inputs contiguous along q
/// and the NV filter vectors S values per step: with NV >= 2 in pairs of vectors side by side
/// (S = 2L, wk[2i + 1] = wk[2i] + L, read through wk[2i] alone); one vector `step` (2L inside a
/// pair, L alone).
///
/// Four steps per loop pass, each reading at constant offsets from one index: a step of the
/// 7 x 2 tile is 23 instructions (2 loads, 7 broadcasts, 14 fused multiply-adds), and the rolled
/// loop spent 5 more on its indices and exit test, 28 in all, which on a core that renames 4 a
/// cycle took exactly the 7 cycles its multiply-adds need, with no slack for anything else
/// (Cascade Lake: resnet_56x64's forward and input gradient 5-10% faster unrolled, 28x128's
/// 5-9%, measured with AVX-512 and with AVX2; fc6 the same).
template <int Lo, int Hi, typename C, typename V, int P, int NV>
BF_CONV_INLINE void AddTapPixels(const C* const (&src)[P], const C* const (&wk)[NV], int64_t n,
                                 V (&acc)[P][NV], int64_t step) {
  constexpr int L = sizeof(V) / sizeof(C);
  static_assert(NV == 1 || NV % 2 == 0, "vectors come in pairs");
  const int64_t S = NV == 1 ? step : int64_t{2} * L;
#pragma GCC unroll 4
  for (int64_t q = 0; q < n; ++q) {
    V wv[NV];
    for (int k = 0; k < NV; ++k) wv[k] = LoadVec<V>(wk[k - k % 2] + k % 2 * L + q * S);
    for (int p = Lo; p < P - Hi; ++p) {
      const C x = src[p][q];
      for (int k = 0; k < NV; ++k) acc[p][k] += wv[k] * x;
    }
  }
}
/// AddTapPixels over the tile's pixels whose inputs are not `zeros`: on AVX-512, one or two
/// padded pixels at either end (the edge tiles of a padded layer) are left out instead of
/// multiplied by zeros (2.4% of the fused multiply-adds of a 28-pixel row under a 3-wide filter);
/// other patterns, and the narrower ISAs, take every pixel.
template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void AddTap(const C* const (&src)[P], const C* const (&wk)[NV], int64_t n,
                           const C* zeros, V (&acc)[P][NV], int64_t step) {
  if constexpr (!kIsSplitVec<V> && P > 4) {
    int lo = 0, hi = 0;
    while (lo < P && src[lo] == zeros) ++lo;
    while (hi < P - lo && src[P - 1 - hi] == zeros) ++hi;
    if (lo == 1 && hi == 0) return AddTapPixels<1, 0>(src, wk, n, acc, step);
    if (lo == 0 && hi == 1) return AddTapPixels<0, 1>(src, wk, n, acc, step);
    if (lo == 2 && hi == 0) return AddTapPixels<2, 0>(src, wk, n, acc, step);
    if (lo == 0 && hi == 2) return AddTapPixels<0, 2>(src, wk, n, acc, step);
  }
  AddTapPixels<0, 0>(src, wk, n, acc, step);
}

/// With AVX-512's 32 registers (NV 2) a register tile can be 7 pixels wide (7 x 2 sums): fewer
/// loads per FMA than P = 4, and no empty columns in the rows of 7, 14, 28, 56 and 112 pixels of
/// the common networks (a 14-pixel row in tiles of 4 computes 16). WideTiles is true when
/// 7-wide tiles cost no more columns than P-wide ones over a row of `width` pixels.
constexpr int kWideP = 7;
template <int P, int NV>
constexpr bool WideTiles(int64_t width) {
  if constexpr (NV < 2) return false;
  return (width + kWideP - 1) / kWideP * kWideP <= (width + P - 1) / P * P;
}

/// Whether a result of `bytes` that `threads` threads write goes past the caches (StreamVec):
/// each thread writes more than kStreamShareBytes, half a core's L2 (the other half holds what
/// its tiles reuse), and the shared L3 would not keep it (FitsSharedCache). The direct kernels'
/// results (StreamsResult in blocks/conv/conv2d.cc, with the measurements) and the Winograd
/// filter gradient's dw follow it.
inline constexpr int64_t kStreamShareBytes = int64_t{512} << 10;
inline bool StreamsShare(int64_t bytes, int threads) {
  return bytes > kStreamShareBytes * threads && !FitsSharedCache(bytes);
}

/// Copies the n values at src to dst: past the caches a vector at a time where `stream`, n is a
/// whole number of 64-byte vectors and dst is 64-byte aligned (AVX-512's V only: StreamVec),
/// else plainly.
template <typename V, typename C>
BF_CONV_INLINE void PutRun(const C* __restrict src, int64_t n, C* __restrict dst, bool stream) {
  if constexpr (!kIsSplitVec<V>) {
    constexpr int64_t L = sizeof(V) / sizeof(C);
    if (stream && n % L == 0 && reinterpret_cast<uintptr_t>(dst) % 64 == 0) {
      for (int64_t q = 0; q < n; q += L) StreamVec(dst + q, LoadVec<V>(src + q));
      return;
    }
  }
  std::copy_n(src, n, dst);
}

/// Runs `row(r, partial)` for every r in [0, rows) on `nt` threads, each adding into its own
/// zeroed partial sum of `size` elements, then adds the partial sums in thread order and rounds
/// them into `out`: deterministic for a given thread count, and no atomics. Rows left once `k`
/// is cancelled are skipped, and `out` is then left as it is. Where OpenMP gives the region
/// fewer threads than asked (OMP_THREAD_LIMIT, OMP_DYNAMIC, a region nested in another), the
/// sums are those of the threads it gave.
template <typename T, typename C, typename Row>
void SumRowsPerThread(int64_t rows, int64_t size, int nt, const KernelContext& k, T* out,
                      const Row& row) {
  // Each partial sum on cache lines of its own (ThreadStride), so that the row kernels' vector
  // read-modify-writes of it never straddle two lines, and 128 KB from the next thread's.
  const int64_t stride = ThreadStride<C>(size, nt);
  Reused<C> partial(kSlotPartialSums);
  // Each thread zeroes its own partial sum, in parallel (a 3x3 layer of 128 to 128 channels
  // has 590 KB per thread).
  partial->resize(static_cast<size_t>(nt * stride));
  int team = nt;  // the threads the region got: the partial sums written
  InTeam(nt, [&] {
    C* mine = partial.data() + static_cast<int64_t>(TeamThread()) * stride;
    std::fill(mine, mine + size, C{0});
    if (TeamThread() == 0) team = TeamSize();
    const auto [r0, r1] = TeamShare(rows);
    for (int64_t r = r0; r < r1; ++r) {
      if (!k.cancelled()) row(r, mine);
    }
  });
  if (k.cancelled()) return;
  nt = team;
  // The sums a chunk at a time, each thread's added in turn (loops the compiler vectorises: one
  // over the threads per element was scalar, 3% of mnv1_dw13's filter gradient on one thread):
  // straight into `out` when it is of the compute type (the first two partial sums' total
  // written there, not back into the first and copied), else into the first partial sum and
  // then rounded into `out` a vector at a time (ConvertParallel). The same additions in the
  // same order either way.
  constexpr int64_t kChunk = 4096;
  C* sums = partial.data();
  const int64_t chunks = (size + kChunk - 1) / kChunk;
  ParallelFor(ThreadsFor(k.num_threads, size * nt, 1 << 16), chunks, [&](int64_t chunk) {
    const int64_t i0 = chunk * kChunk, i1 = std::min(size, i0 + kChunk);
    int t = 1;
    C* __restrict total = sums;
    if constexpr (std::is_same_v<T, C>) {
      total = out;
      if (nt == 1) {
        std::copy(sums + i0, sums + i1, out + i0);
      } else {
        const C* __restrict second = sums + stride;
        for (int64_t i = i0; i < i1; ++i) out[i] = sums[i] + second[i];
        t = 2;
      }
    }
    for (; t < nt; ++t) {
      const C* __restrict theirs = sums + t * stride;
      for (int64_t i = i0; i < i1; ++i) total[i] += theirs[i];
    }
  });
  if constexpr (!std::is_same_v<T, C>) ConvertParallel(sums, out, size, k.num_threads);
}

/// The signature of every optimized row kernel: geometry, two operands, the result, the batch
/// index and row, a zero vector for taps outside the input, and per-thread pair scratch.
template <typename C>
using RowFn = void (*)(const ConvGeometry&, const C*, const C*, C*, int64_t, int64_t, const C*,
                       IntPair*);

/// Defines the row functions of one (op, compute type) with that signature, one per ISA
/// (BF_CONV_ISA_FNS): `Name##Avx512`, `Name##Avx2`, `Name##Base` and `RowFn<C> Name(C)`.
// NOLINTBEGIN(bugprone-macro-parentheses): C is spliced into parameter types.
#define BF_CONV_ROW_FNS(Name, Impl, C)                                                        \
  BF_CONV_ISA_FNS(Name, Impl, C, ::blockflow::conv::internal::RowFn<C>,                       \
                  (const ConvGeometry& g, const C* a, const C* b, C* c, int64_t n, int64_t r, \
                   const C* z, ::blockflow::conv::internal::IntPair* sc),                     \
                  (g, a, b, c, n, r, z, sc))
// NOLINTEND(bugprone-macro-parentheses)

}  // namespace blockflow::conv::internal
