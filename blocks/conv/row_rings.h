// The rows of activations that the optimized row kernels read and write (not part of the public
// API): per-thread rings of input rows converted as they are first read (widened from 16 bits,
// transposed from NCHW, spread over a depthwise multiplier), and per-thread result rows
// converted into the op's tensor right after they are computed.
//
//   ExpandedInputRows<Half, float> xrows(g, x, DataFormat::kNCHW, nt);
//   ResultRows<Half> out(args, g.out_h, g.out_w, g.out_depth, nt);
//   ParallelRows(rows, nt, ctx, [&](int64_t r, int thread) {
//     row(xrows.FilterRows(thread, r), out.Row(r, thread));
//     out.Done(r, thread);
//   });
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "blocks/conv/conv_geometry.h"
#include "blocks/conv/layout.h"
#include "blocks/conv/optimized_util.h"

namespace blockflow::conv::internal {

/// Whether a kernel set converts an op's activations in pieces (a row, or a work item's few
/// images, at a time) rather than as whole tensors before and after the kernel: always in NHWC;
/// in NCHW only when rows hold at least 16 pixels. A row of 14 pixels transposes mostly element
/// by element (the register transposes take 8 x 8 blocks), and the 14- and 7-pixel depthwise
/// layers took 1.2-2x longer that way than with whole tensors (in cache at that size); 28 pixels
/// and more, 1.5-4.5x shorter (mnv2_dw_112x96_s2's forward 33 -> 7 ms).
inline bool ConvertsInPieces(const ConvState& s) {
  constexpr int64_t kMinNchwRow = 16;
  const ConvGeometry& g = s.geometry;
  return s.attrs.format == DataFormat::kNHWC || std::min(g.in_w, g.out_w) >= kMinNchwRow;
}

/// The geometry of the multiplier-1 problem with C*M channels that a depthwise multiplier M
/// reduces to.
inline ConvGeometry Expanded(const ConvGeometry& g) {
  ConvGeometry e = g;
  e.in_depth = g.out_depth;
  e.filter_in_depth = g.out_depth;
  e.groups = g.out_depth;
  e.multiplier = 1;
  return e;
}

/// xe[c*M + m] = x[c] for c < n, m < M: one pixel's channels spread over the multiplier.
template <typename C>
void SpreadChannels(const C* __restrict x, C* __restrict xe, int64_t n, int64_t mult) {
  if (mult == 1) {
    std::copy_n(x, n, xe);
  } else if (mult == 2) {
    for (int64_t c = 0; c < n; ++c) xe[2 * c] = xe[2 * c + 1] = x[c];
  } else {
    for (int64_t c = 0; c < n; ++c)
      for (int64_t m = 0; m < mult; ++m) xe[c * mult + m] = x[c];
  }
}

// Whether pixels `stride` elements of C apart are a multiple of `bytes` apart, 2 KiB unless
// said (512 or 1024 float channels): the same channels of every pixel along a row then map to
// at most two of the L1's 64 sets (the set index repeats every 4 KiB; at a multiple of 4 KiB,
// 1024 float channels or 512 double, to one), so a kernel walking one channel block along a row
// crowds a few sets.
template <typename C>
constexpr bool CrowdsL1Sets(int64_t stride, int64_t bytes = 2048) {
  return stride * static_cast<int64_t>(sizeof(C)) % bytes == 0;
}

// The input rows that the row kernels read, in a per-thread ring of rows of C when they are not
// the input's own rows: channel-expanded for a depthwise multiplier M > 1 (xe[c*M + m] = x[c]),
// widened from a 16-bit input S or transposed from NCHW (a row at a time, while it is in cache,
// instead of the whole input before the kernel; NCHW with M = 1 only), and, for a depthwise
// layer whose rows are copied anyway, with a padded pixel stride when C*M channels are a
// multiple of 4 KiB. Pixels 4 KiB apart all fall in one set of the L1 cache, and a 3x3 tile
// reads ten of them at once (nine taps and the gradient): one more cache line per pixel spreads
// them over ten sets (mnv1_dw13, 1024 channels, in float16: the filter gradient 0.208 -> 0.186
// ms, one pinned core). On Cascade Lake, rows that are the input's own cost more to copy than
// the conflicts (mnv1_dw13 in float, one pinned core: the forward 0.182 -> 0.150 ms unpadded,
// the filter gradient 0.184 -> 0.170; in double, mnv1_dw8_14x512's forward 0.861 -> 0.666), and
// padding pixels 2 KiB apart made the filter gradient of mnv1_dw8_14x512 7% faster on one
// thread but 20-40% slower on two, and the forward 10% slower (the copy). On an AVX-512 EPYC
// the forward gains from copying its own rows padded wherever pixels are a multiple of 2 KiB
// apart (PadsOwnRows, which the forward and the stride-1 input gradient ask for, the latter for
// dy's rows): one pinned core, paired call by call, the forward of mnv1_dw13 0.151 -> 0.125 ms
// (two threads 0.86), of mnv1_dw8_14x512 0.297 -> 0.232 (two threads 0.85); in double mnv1_dw13
// 0.61, mnv1_dw8 0.88, mnv1_dw6_28x256 1.00. The filter gradient there copies whole images into
// channel blocks instead (SweepBlocksImages): padded rows measured 0.83-0.91 of that in float on
// one thread but 1.09-1.34 in double and up to 1.30 on two threads.
template <typename S, typename C>
class ExpandedRows {
 public:
  /// Whether rows of x in `format` are copied: unless NHWC of C without a multiplier, and then
  /// too for `pad` (PadsOwnRows).
  static bool Copies(const ConvGeometry& g, DataFormat format, bool pad = false) {
    return !std::is_same_v<S, C> || format != DataFormat::kNHWC || g.multiplier != 1 ||
           PadsOwnRows(g, format, pad);
  }
  /// Whether, for a kernel that asks (`pad`), a depthwise input's own rows (NHWC of C without a
  /// multiplier) are copied with a padded pixel stride: where their pixels are a multiple of
  /// 2 KiB apart.
  static bool PadsOwnRows(const ConvGeometry& g, DataFormat format, bool pad) {
    return pad && g.depthwise && std::is_same_v<S, C> && format == DataFormat::kNHWC &&
           g.multiplier == 1 && CrowdsL1Sets<C>(g.in_depth);
  }
  /// The pixel stride of the rows Row returns.
  static int64_t Stride(const ConvGeometry& g, DataFormat format, bool pad = false) {
    if (!g.depthwise || !Copies(g, format, pad)) return g.in_depth;
    const int64_t s = g.in_depth * g.multiplier;
    constexpr int64_t kLine = 64 / sizeof(C);
    return CrowdsL1Sets<C>(s, 4096) || PadsOwnRows(g, format, pad) ? s + kLine : s;
  }
  static int64_t Slots(const ConvGeometry& g, DataFormat format, bool pad = false) {
    return Copies(g, format, pad) ? std::min(g.in_h, (g.filter_h - 1) * g.dilation_h + 1) : 0;
  }
  static int64_t RowSize(const ConvGeometry& g, DataFormat format, bool pad = false) {
    return g.in_w * Stride(g, format, pad);
  }
  // x: the input, in `format`; stride: the rows' pixel stride (Stride); ring: `slots` rows of
  // in_w * stride elements (Slots, or in_h to hold whole images); keys: `slots` entries set to
  // -1.
  ExpandedRows(const ConvGeometry& g, const S* x, DataFormat format, int64_t stride, C* ring,
               int64_t* keys, int64_t slots)
      : g_(g), x_(x), format_(format), stride_(stride), ring_(ring), keys_(keys), slots_(slots) {}

  const C* Row(int64_t n, int64_t ih) {
    const int64_t key = n * g_.in_h + ih, ch = g_.in_depth, mult = g_.multiplier;
    const S* src = x_ + key * g_.in_w * ch;  // NHWC
    if constexpr (std::is_same_v<S, C>) {
      if (slots_ == 0) return src;
    }
    const int64_t slot = key % slots_;
    C* const row = ring_ + slot * g_.in_w * stride_;
    if (keys_[slot] == key) return row;
    keys_[slot] = key;
    if (format_ == DataFormat::kNCHW || mult == 1) {
      GatherRows(x_, format_, g_.in_h, g_.in_w, ch, n, ih, 1, row, stride_);
      return row;
    }
    // Spread over the multiplier (NHWC only: ConvertsRows leaves NCHW with M > 1 whole).
    C* dst = row;
    for (int64_t iw = 0; iw < g_.in_w; ++iw, src += ch, dst += stride_) {
      if constexpr (std::is_same_v<S, C>) {
        SpreadChannels(src, dst, ch, mult);
      } else {  // widened a chunk at a time on the stack, then spread
        constexpr int64_t kChunk = 256;
        alignas(64) C wide[kChunk];
        for (int64_t c0 = 0; c0 < ch; c0 += kChunk) {
          const int64_t n_c = std::min(kChunk, ch - c0);
          WidenRun(src + c0, wide, n_c);
          SpreadChannels(wide, dst + c0 * mult, n_c, mult);
        }
      }
    }
    return row;
  }

 private:
  const ConvGeometry& g_;
  const S* x_;
  DataFormat format_;
  int64_t stride_;
  C* ring_;
  int64_t* keys_;
  int64_t slots_;
};

// Per-thread ExpandedRows over the input, and the input rows that the filter rows of one output
// row read: every buffer is allocated here, outside the parallel regions. A dense geometry's
// rows are its input's, converted (no expansion, no padding).
template <typename S, typename C>
class ExpandedInputRows {
 public:
  /// x: the input in `format` (NHWC unless the multiplier is 1). `whole_images`: the ring holds
  /// every row of an image (Image), not just the rows one output row reads (FilterRows). `pad`:
  /// a depthwise input's own rows whose pixels are a multiple of 2 KiB apart are copied with a
  /// padded stride too (ExpandedRows::PadsOwnRows).
  ExpandedInputRows(const ConvGeometry& g, const S* x, DataFormat format, int nt,
                    bool whole_images = false, bool pad = false)
      : g_(g),
        e_(g.depthwise ? Expanded(g) : g),
        x_(x),
        format_(format),
        copies_(ExpandedRows<S, C>::Copies(g, format, pad)),
        slots_(whole_images && copies_ ? g.in_h : ExpandedRows<S, C>::Slots(g, format, pad)),
        ring_stride_(ThreadStride<C>(slots_ * ExpandedRows<S, C>::RowSize(g, format, pad), nt)),
        ring_(kSlotInputRows),
        keys_(nt, slots_, -1),
        rows_(nt, g.filter_h) {
    e_.in_depth = ExpandedRows<S, C>::Stride(g, format, pad);
    // Kept between calls and not cleared (the keys say which rows a slot holds), instead of
    // a fresh ring faulted in and zeroed by the calling thread alone on every call.
    ring_->resize(static_cast<size_t>(nt * ring_stride_));
  }

  /// The multiplier-1 problem that the rows belong to (Expanded; a dense geometry itself), with
  /// their pixel stride as in_depth.
  const ConvGeometry& geometry() const { return e_; }

  /// For output row r (batch n, row oh), on thread `thread`: the input row each filter row kh
  /// reads, expanded to C*M channels, or nullptr where it falls outside the input.
  const C* const* FilterRows(int thread, int64_t r) {
    ExpandedRows<S, C> source = Source(thread);
    const C** xr = rows_[thread];
    const int64_t n = r / g_.out_h, oh = r % g_.out_h;
    for (int64_t kh = 0; kh < g_.filter_h; ++kh) {
      const int64_t ih = g_.input_row(oh, kh);
      xr[kh] = (ih >= 0 && ih < g_.in_h) ? source.Row(n, ih) : nullptr;
    }
    return xr;
  }

  /// The input's own row that filter row kh of output row r reads, where the rows are not
  /// copied (NHWC of C without a multiplier) and it lies inside the input; nullptr otherwise.
  /// For a kernel to prefetch (FilterRows returns it when the kernel gets to row r).
  const C* OwnRow(int64_t r, int64_t kh) const {
    if constexpr (std::is_same_v<S, C>) {
      const int64_t n = r / g_.out_h, ih = g_.input_row(r % g_.out_h, kh);
      if (!copies_ && ih >= 0 && ih < g_.in_h)
        return x_ + (n * g_.in_h + ih) * g_.in_w * g_.in_depth;
    }
    return nullptr;
  }

  /// Image n's input rows, expanded, on thread `thread` (whole_images only): row ih starts at
  /// ih * in_w * geometry().in_depth.
  const C* Image(int thread, int64_t n) {
    if constexpr (std::is_same_v<S, C>) {
      if (!copies_) return x_ + n * g_.in_h * g_.in_w * g_.in_depth;
    }
    // A thread's items take an image's channel blocks one after another, and the ring holds
    // row ih in slot ih: the keys say whether the image is there without Row's division per
    // row (which, with its key check, took 3% of mnv1_dw13's filter gradient).
    const int64_t* keys = keys_[thread];
    bool held = true;
    for (int64_t ih = 0; ih < g_.in_h && held; ++ih) held = keys[ih] == n * g_.in_h + ih;
    if (!held) {
      ExpandedRows<S, C> source = Source(thread);
      for (int64_t ih = 0; ih < g_.in_h; ++ih) source.Row(n, ih);
    }
    return Ring(thread);
  }

 private:
  // Thread `thread`'s ring of slots_ rows.
  C* Ring(int thread) { return ring_.data() + thread * ring_stride_; }
  ExpandedRows<S, C> Source(int thread) {
    return ExpandedRows<S, C>(g_, x_, format_, e_.in_depth, Ring(thread), keys_[thread], slots_);
  }

  const ConvGeometry& g_;
  ConvGeometry e_;
  const S* x_;
  DataFormat format_;
  bool copies_;                  // whether rows are copied into the ring (ExpandedRows::Copies)
  int64_t slots_, ring_stride_;  // a thread's ring: slots_ rows, then ThreadStride's gap
  Reused<C> ring_;
  PerThread<int64_t> keys_;
  PerThread<const C*> rows_;
};

// Where the row kernels write the rows of the result, [batch, h, w, c] (the output or the input
// gradient): straight into the NHWC result of the compute type (args.result), or, for a result
// the kernel converts a row at a time (args.result_t: 16-bit, or NCHW), into a per-thread row
// of C stored into it by Done while in cache.
template <typename T>
class ResultRows {
 public:
  using C = ComputeT<T>;
  ResultRows(const KernelArgs<T>& args, int64_t h, int64_t w, int64_t c, int nt)
      : args_(args), h_(h), w_(w), c_(c), rows_(args.result_t ? nt : 0, w * c) {}

  /// Whether rows go to the result itself: only then may their stores bypass the caches.
  bool direct() const { return args_.result != nullptr; }
  /// Where thread `thread` computes row r (image r / h, row r % h).
  C* Row(int64_t r, int thread) { return direct() ? args_.result + r * w_ * c_ : rows_[thread]; }
  /// Stores row r, computed at Row(r, thread).
  void Done(int64_t r, int thread) {
    if (!direct())
      ScatterRows(rows_[thread], args_.result_t, args_.format, h_, w_, c_, r / h_, r % h_, 1);
  }

 private:
  const KernelArgs<T>& args_;
  int64_t h_, w_, c_;
  PerThread<C> rows_;
};

// Chunk i of an activation t ([batch, h, w, c] in `format`, type S): its rows [i * k, (i + 1) *
// k) counted over the batch (k divides h, or is a multiple of it: whole images; the last chunk
// may be short), as NHWC values of type C on thread `thread`. The tensor's own memory when it is
// NHWC of type C, else converted into the thread's buffer (the Reused `slot`, kept while the
// thread asks for that chunk again): the filter gradients' operands, a row, an image or a few
// images at a time.
template <typename S, typename C>
class ActivationChunks {
 public:
  ActivationChunks(const S* t, DataFormat format, int64_t batch, int64_t h, int64_t w, int64_t c,
                   int64_t k, int nt, int slot)
      : t_(t),
        format_(format),
        batch_(batch),
        h_(h),
        w_(w),
        c_(c),
        k_(k),
        stride_(WholeLines<C>(k * w * c)),
        buf_(slot),
        keys_(nt, 1, -1) {
    if (!direct()) buf_->resize(static_cast<size_t>(nt * stride_));
  }

  const C* Get(int thread, int64_t i) {
    if constexpr (std::is_same_v<S, C>) {
      if (direct()) return t_ + i * k_ * w_ * c_;
    }
    C* mine = buf_.data() + thread * stride_;
    if (*keys_[thread] != i) {
      // Image by image: GatherRows takes the rows of one image.
      const int64_t end = std::min((i + 1) * k_, batch_ * h_);
      for (int64_t r = i * k_; r < end;) {
        const int64_t count = std::min(end - r, h_ - r % h_);
        GatherRows(t_, format_, h_, w_, c_, r / h_, r % h_, count, mine + (r - i * k_) * w_ * c_,
                   c_);
        r += count;
      }
      *keys_[thread] = i;
    }
    return mine;
  }

 private:
  bool direct() const { return std::is_same_v<S, C> && format_ == DataFormat::kNHWC; }

  const S* t_;
  DataFormat format_;
  int64_t batch_, h_, w_, c_, k_, stride_;
  Reused<C> buf_;
  PerThread<int64_t> keys_;
};

}  // namespace blockflow::conv::internal
