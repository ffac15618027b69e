// Helpers shared by the convolution kernels (not part of the public API): conversion of
// tensors to NHWC compute buffers and back, and the run-time ISA dispatch attribute.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <new>
#include <string>
#include <vector>

#include "blocks/conv/conv_geometry.h"
#include "core/tensor.h"

// Hot loops are compiled three times (baseline x86-64, AVX2+FMA, AVX-512) and picked at run time
// by ActiveIsa(), so one binary runs on any x86-64 and uses the widest vectors it has.
#if defined(__x86_64__) && defined(__GNUC__)
#define BF_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define BF_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")))
#else
#define BF_TARGET_AVX2
#define BF_TARGET_AVX512
#endif
#define BF_CONV_INLINE inline __attribute__((always_inline))

namespace blockflow::conv::internal {

/// The instruction sets the optimized kernels are compiled for.
enum class Isa { kBase = 0, kAvx2 = 1, kAvx512 = 2 };
/// The widest ISA this CPU supports, lowered by the environment variable BLOCKFLOW_CONV_ISA
/// (base, avx2, avx512) or SetIsaForTesting.
Isa ActiveIsa();
/// Forces a narrower ISA (clamped to what the CPU supports), so tests cover every variant.
void SetIsaForTesting(Isa isa);
/// "base", "avx2", "avx512".
const char* IsaName(Isa isa);

/// 64-byte generic vectors: one zmm with AVX-512, two ymm with AVX2, four xmm otherwise.
typedef float VecF __attribute__((vector_size(64)));
typedef double VecD __attribute__((vector_size(64)));
template <typename C>
struct VecOf;
template <>
struct VecOf<float> {
  using type = VecF;
};
template <>
struct VecOf<double> {
  using type = VecD;
};

// The helpers below pass 64-byte vectors by value; they are always inlined, so the ABI note
// GCC gives for that (-Wpsabi) does not apply.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
/// Unaligned load and store of one 64-byte vector.
template <typename C>
BF_CONV_INLINE typename VecOf<C>::type LoadVec(const C* p) {
  typename VecOf<C>::type v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
template <typename C>
BF_CONV_INLINE void StoreVec(C* p, const typename VecOf<C>::type& v) {
  __builtin_memcpy(p, &v, sizeof v);
}
#pragma GCC diagnostic pop

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

/// Pairs of scratch a row kernel may use: reaching rows, reaching columns, reaching taps.
inline int64_t ScratchPairs(const ConvGeometry& g) {
  return g.filter_h * g.filter_w + g.filter_h + g.filter_w;
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

/// Runs a kernel body, turning a failed allocation of its buffers into an error Status, so
/// that nothing throws out of a block.
template <typename Fn>
Status Guarded(const char* op, Fn&& fn) {
  try {
    fn();
  } catch (const std::bad_alloc&) {
    return Internal(std::string(op) + ": out of memory for the kernel's work buffers");
  }
  return Status::OK();
}

/// Checks that the two operands `a`, `b` and `out` have one floating dtype; the message names `op`.
Status CheckDTypes(const char* op, const Tensor& a, const Tensor& b, const Tensor& out);

/// What every Run* entry point does around its kernels: checks the dtypes, returns at once for
/// an empty output, else calls `body(T{})` with T the element type of `a` (Guarded).
template <typename Body>
Status RunFloatKernel(const char* op, const Tensor& a, const Tensor& b, Tensor* out, Body&& body) {
  RETURN_IF_ERROR(CheckDTypes(op, a, b, *out));
  if (out->num_elements() == 0) return Status::OK();
  return Guarded(op, [&] { DispatchFloat(a.dtype(), body); });
}

/// The type a kernel computes in: float for float16, bfloat16 and float32; double for float64.
template <typename T>
using ComputeT = typename AccumulatorOf<T>::type;

/// Widens one stored element to the compute type (exact).
template <typename C, typename T>
inline C Widen(T v) {
  return static_cast<C>(static_cast<ComputeT<T>>(v));
}

/// Number of rows of work each thread gets at least, so tiny problems stay on one thread.
inline int ThreadsFor(int num_threads, int64_t work_items, int64_t min_items_per_thread = 1) {
  int64_t t = std::max<int64_t>(1, work_items / std::max<int64_t>(1, min_items_per_thread));
  return static_cast<int>(std::clamp<int64_t>(t, 1, std::max(1, num_threads)));
}

/// The elements of `t` (shape n,h,w,c in `format` order) as NHWC values of type C. Returns the
/// tensor's own memory when no conversion is needed, else fills `buf`.
template <typename T, typename C>
const C* ToNHWC(const Tensor& t, DataFormat format, int64_t n, int64_t h, int64_t w, int64_t c,
                std::vector<C>* buf, int num_threads) {
  const T* src = t.data<T>();
  if constexpr (std::is_same_v<T, C>) {
    if (format == DataFormat::kNHWC) return src;
  }
  buf->resize(static_cast<size_t>(n * h * w * c));
  C* dst = buf->data();
  if (format == DataFormat::kNHWC) {
    const int64_t total = n * h * w * c;
#pragma omp parallel for num_threads(ThreadsFor(num_threads, total, 1 << 16)) schedule(static)
    for (int64_t i = 0; i < total; ++i) dst[i] = Widen<C>(src[i]);
    return dst;
  }
  // NCHW -> NHWC: one (n, y) row of the output per iteration.
#pragma omp parallel for num_threads(ThreadsFor(num_threads, n* h, 16)) schedule(static)
  for (int64_t r = 0; r < n * h; ++r) {
    const int64_t b = r / h, y = r % h;
    for (int64_t x = 0; x < w; ++x) {
      C* d = dst + ((b * h + y) * w + x) * c;
      for (int64_t ch = 0; ch < c; ++ch) d[ch] = Widen<C>(src[((b * c + ch) * h + y) * w + x]);
    }
  }
  return dst;
}

/// The elements of a filter (no transposition) as type C.
template <typename T, typename C>
const C* ToCompute(const Tensor& t, std::vector<C>* buf) {
  const T* src = t.data<T>();
  if constexpr (std::is_same_v<T, C>) return src;
  buf->resize(static_cast<size_t>(t.num_elements()));
  for (int64_t i = 0; i < t.num_elements(); ++i) (*buf)[static_cast<size_t>(i)] = Widen<C>(src[i]);
  return buf->data();
}

/// Where an NHWC result of type C should be computed: straight into `out` when it is already
/// NHWC of type C, else into `buf`, to be stored by StoreNHWC.
template <typename T, typename C>
C* OutputBuffer(Tensor* out, DataFormat format, std::vector<C>* buf) {
  if constexpr (std::is_same_v<T, C>) {
    if (format == DataFormat::kNHWC) return out->data<T>();
  }
  buf->assign(static_cast<size_t>(out->num_elements()), C(0));
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
    const int64_t total = n * h * w * c;
#pragma omp parallel for num_threads(ThreadsFor(num_threads, total, 1 << 16)) schedule(static)
    for (int64_t i = 0; i < total; ++i) dst[i] = static_cast<T>(src[i]);
    return;
  }
#pragma omp parallel for num_threads(ThreadsFor(num_threads, n* h, 16)) schedule(static)
  for (int64_t r = 0; r < n * h; ++r) {
    const int64_t b = r / h, y = r % h;
    for (int64_t x = 0; x < w; ++x) {
      const C* s = src + ((b * h + y) * w + x) * c;
      for (int64_t ch = 0; ch < c; ++ch)
        dst[((b * c + ch) * h + y) * w + x] = static_cast<T>(s[ch]);
    }
  }
}

/// Rounds (once) a filter-shaped buffer into `out`, unless the kernel wrote into it directly.
template <typename T, typename C>
void StoreFlat(const C* src, Tensor* out) {
  T* dst = out->data<T>();
  if (static_cast<const void*>(src) == static_cast<const void*>(dst)) return;
  for (int64_t i = 0; i < out->num_elements(); ++i) dst[i] = static_cast<T>(src[i]);
}

/// Runs `row(r, partial)` for every r in [0, rows) on `nt` threads, each adding into its own
/// zeroed partial sum of `size` elements, then adds the partial sums in thread order and rounds
/// them into `out`: deterministic for a given thread count, and no atomics.
template <typename T, typename C, typename Row>
void SumRowsPerThread(int64_t rows, int64_t size, int nt, int num_threads, T* out, const Row& row) {
  std::vector<C> partial(static_cast<size_t>(nt * size), C(0));
#pragma omp parallel num_threads(nt)
  {
    C* mine = partial.data() + static_cast<int64_t>(omp_get_thread_num()) * size;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) row(r, mine);
  }
#pragma omp parallel for num_threads(ThreadsFor(num_threads, size* nt, 1 << 16)) schedule(static)
  for (int64_t i = 0; i < size; ++i) {
    C s = partial[static_cast<size_t>(i)];
    for (int t = 1; t < nt; ++t) s += partial[static_cast<size_t>(t * size + i)];
    out[i] = static_cast<T>(s);
  }
}

/// The signature of every optimized row kernel: geometry, two operands, the result, the batch
/// index and row, a zero vector for taps outside the input, and per-thread pair scratch.
template <typename C>
using RowFn = void (*)(const ConvGeometry&, const C*, const C*, C*, int64_t, int64_t, const C*,
                       IntPair*);

/// Defines the row functions of one (op, compute type): `Name##Avx512`, `Name##Avx2` and
/// `Name##Base` instantiate `Impl<C, P, NV>`, and `RowFn<C> Name(C)` picks one by ActiveIsa().
/// AVX-512 keeps 4 x 2 zmm accumulators; AVX2 and the baseline 4 x 1 64-byte vectors (8 ymm /
/// 16 xmm). Use it inside the kernel file's anonymous namespace.
#define BF_CONV_ROW_FNS(Name, Impl, C)                                                           \
  BF_TARGET_AVX512 void Name##Avx512(const ConvGeometry& g, const C* a, const C* b, C* c,        \
                                     int64_t n, int64_t r, const C* z, IntPair* sc) {            \
    Impl<C, 4, 2>(g, a, b, c, n, r, z, sc);                                                      \
  }                                                                                              \
  BF_TARGET_AVX2 void Name##Avx2(const ConvGeometry& g, const C* a, const C* b, C* c, int64_t n, \
                                 int64_t r, const C* z, IntPair* sc) {                           \
    Impl<C, 4, 1>(g, a, b, c, n, r, z, sc);                                                      \
  }                                                                                              \
  void Name##Base(const ConvGeometry& g, const C* a, const C* b, C* c, int64_t n, int64_t r,     \
                  const C* z, IntPair* sc) {                                                     \
    Impl<C, 4, 1>(g, a, b, c, n, r, z, sc);                                                      \
  }                                                                                              \
  internal::RowFn<C> Name(C) {                                                                   \
    switch (internal::ActiveIsa()) {                                                             \
      case internal::Isa::kAvx512:                                                               \
        return Name##Avx512;                                                                     \
      case internal::Isa::kAvx2:                                                                 \
        return Name##Avx2;                                                                       \
      default:                                                                                   \
        return Name##Base;                                                                       \
    }                                                                                            \
  }

/// Element offset in a rank-4 activation tensor of `format` (reference kernels).
inline int64_t ActIndex(DataFormat format, int64_t h_size, int64_t w_size, int64_t c_size,
                        int64_t n, int64_t y, int64_t x, int64_t c) {
  return format == DataFormat::kNHWC ? ((n * h_size + y) * w_size + x) * c_size + c
                                     : ((n * c_size + c) * h_size + y) * w_size + x;
}

/// The taps of a grouped convolution, in the order the reference kernels sum them: for each
/// output element (n, oh, ow, co), every filter tap (kh, kw, ci) that reads inside the input,
///   ih = oh*sh - pt + kh*dh,  iw = ow*sw - pl + kw*dw,  input channel grp*in_per_group + ci,
///   grp = co / out_per_group.
/// `fn(x_index, w_index, y_index)` gets flat offsets into x and y (in `format`) and into the
/// filter [fh, fw, in_per_group, out_depth]. Depthwise convolution is the case
/// in_per_group = 1, out_per_group = M: output channel c*M + m reads input channel c, and the
/// filter [fh, fw, C, M] has the same offsets.
template <typename Fn>
void ForEachTap(DataFormat format, const ConvGeometry& g, int64_t in_per_group,
                int64_t out_per_group, Fn&& fn) {
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow)
        for (int64_t co = 0; co < g.out_depth; ++co) {
          const int64_t y_index = ActIndex(format, g.out_h, g.out_w, g.out_depth, n, oh, ow, co);
          const int64_t first_in = co / out_per_group * in_per_group;
          for (int64_t kh = 0; kh < g.filter_h; ++kh) {
            const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
            if (ih < 0 || ih >= g.in_h) continue;
            for (int64_t kw = 0; kw < g.filter_w; ++kw) {
              const int64_t iw = ow * g.stride_w - g.pad_left + kw * g.dilation_w;
              if (iw < 0 || iw >= g.in_w) continue;
              for (int64_t ci = 0; ci < in_per_group; ++ci) {
                fn(ActIndex(format, g.in_h, g.in_w, g.in_depth, n, ih, iw, first_in + ci),
                   ((kh * g.filter_w + kw) * in_per_group + ci) * g.out_depth + co, y_index);
              }
            }
          }
        }
}

/// The three reference kernels of a convolution family, on ForEachTap: sums in ComputeT<T>
/// per output element, in tap order, rounded once to T.
template <typename T>
struct ReferenceConv {
  using Acc = ComputeT<T>;
  DataFormat format;
  const ConvGeometry& g;
  int64_t in_per_group, out_per_group;

  // y = sum over taps of x * w.
  void Forward(const T* x, const T* w, T* y) const {
    std::vector<Acc> acc(static_cast<size_t>(g.output_elements()), Acc(0));
    ForEachTap(format, g, in_per_group, out_per_group, [&](int64_t xi, int64_t wi, int64_t yi) {
      acc[static_cast<size_t>(yi)] += static_cast<Acc>(x[xi]) * static_cast<Acc>(w[wi]);
    });
    Round(acc, y);
  }
  // dx = the forward sum scattered back: every tap adds dy * w to the input it read.
  void BackpropInput(const T* w, const T* dy, T* dx) const {
    std::vector<Acc> acc(static_cast<size_t>(g.input_elements()), Acc(0));
    ForEachTap(format, g, in_per_group, out_per_group, [&](int64_t xi, int64_t wi, int64_t yi) {
      acc[static_cast<size_t>(xi)] += static_cast<Acc>(dy[yi]) * static_cast<Acc>(w[wi]);
    });
    Round(acc, dx);
  }
  // dw = every tap adds x * dy to the filter element it used.
  void BackpropFilter(const T* x, const T* dy, T* dw) const {
    std::vector<Acc> acc(static_cast<size_t>(g.filter_elements()), Acc(0));
    ForEachTap(format, g, in_per_group, out_per_group, [&](int64_t xi, int64_t wi, int64_t yi) {
      acc[static_cast<size_t>(wi)] += static_cast<Acc>(x[xi]) * static_cast<Acc>(dy[yi]);
    });
    Round(acc, dw);
  }

 private:
  static void Round(const std::vector<Acc>& acc, T* out) {
    for (size_t i = 0; i < acc.size(); ++i) out[i] = static_cast<T>(acc[i]);
  }
};

}  // namespace blockflow::conv::internal
