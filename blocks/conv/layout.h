// Data layouts of the convolution kernels (not part of the public API): the compute type of
// each dtype, and conversion of tensors in either data_format to NHWC compute buffers and back.
//
//   WorkBuffer<float> buf;
//   const float* x = ToNHWC<Half, float>(input, DataFormat::kNCHW, n, h, w, c, &buf, threads);
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <vector>

#include "blocks/conv/conv_geometry.h"
#include "core/tensor.h"

namespace blockflow::conv::internal {

/// The type a kernel computes in: float for float16, bfloat16 and float32; double for float64.
template <typename T>
using ComputeT = typename AccumulatorOf<T>::type;

/// Allocates on 64-byte boundaries, the width of the kernels' vectors and of a cache line.
template <typename C>
struct AlignedAllocator {
  using value_type = C;
  static constexpr std::align_val_t kAlignment{64};
  AlignedAllocator() = default;
  // Implicit, as the allocator requirements ask (rebinding converts allocators).
  template <typename U>
  AlignedAllocator(const AlignedAllocator<U>&) {}  // NOLINT(google-explicit-constructor)
  C* allocate(size_t n) { return static_cast<C*>(::operator new(n * sizeof(C), kAlignment)); }
  // The unsized form: clang 14 does not declare sized deallocation by default.
  void deallocate(C* p, size_t) { ::operator delete(p, kAlignment); }
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

/// Element offset in a rank-4 activation tensor of `format` (reference kernels).
inline int64_t ActIndex(DataFormat format, int64_t h_size, int64_t w_size, int64_t c_size,
                        int64_t n, int64_t y, int64_t x, int64_t c) {
  return format == DataFormat::kNHWC ? ((n * h_size + y) * w_size + x) * c_size + c
                                     : ((n * c_size + c) * h_size + y) * w_size + x;
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
const C* ToCompute(const Tensor& t, WorkBuffer<C>* buf) {
  const T* src = t.data<T>();
  if constexpr (std::is_same_v<T, C>) return src;
  buf->resize(static_cast<size_t>(t.num_elements()));
  for (int64_t i = 0; i < t.num_elements(); ++i) (*buf)[static_cast<size_t>(i)] = Widen<C>(src[i]);
  return buf->data();
}

/// Where an NHWC result of type C should be computed: straight into `out` when it is already
/// NHWC of type C, else into `buf`, to be stored by StoreNHWC.
template <typename T, typename C>
C* OutputBuffer(Tensor* out, DataFormat format, WorkBuffer<C>* buf) {
  if constexpr (std::is_same_v<T, C>) {
    if (format == DataFormat::kNHWC) return out->data<T>();
  }
  buf->assign(static_cast<size_t>(out->num_elements()), C{0});
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

}  // namespace blockflow::conv::internal
