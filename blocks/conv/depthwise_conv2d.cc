#include "blocks/conv/depthwise_conv2d.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "blocks/conv/depthwise_planes.h"
#include "blocks/conv/optimized_util.h"
#include "blocks/conv/row_rings.h"
#include "blocks/conv/run_kernels.h"
#include "core/team.h"

namespace blockflow::conv::internal {
namespace {

// ---------------------------------------------------------------------------------------------
// Optimized kernels: NHWC compute buffers of C, one row per call, parallel over rows that do not
// overlap. They handle multiplier 1 with `ch` channels in input and output alike: a register
// tile of P pixels by NV 64-byte vectors of channels, plain loops for the channels left over.
// A multiplier M > 1 is reduced to that case: each input row is expanded to C*M channels
// (xe[c*M + m] = x[c]) when first read, into a small per-thread ring of rows (no copy of the
// whole input); the input gradient is computed per output channel and summed over m, one row at
// a time at stride 1. At stride 1 the input gradient is the forward kernel applied to dy with the
// flipped filter (DwBackpropInputStride1); other strides use the stride-phase kernel.
// ---------------------------------------------------------------------------------------------

// One filter row of FW taps at stride S and dilation 1 into the tile's sums (FW 3 or 5 at stride
// 1, FW 3 at stride 2: the common layers): each input pixel is loaded once for the taps that
// read it ((P - 1) * S + FW loads instead of FW * P), and columns outside the input (the
// padding, or past the row's end in a partial tile, whose extra sums are never stored) are
// skipped when kEdge is set (a tile that reaches past the input). col0 is the input column that
// the tile's first pixel reads through tap 0.
template <typename C, typename V, int P, int NV, int FW, int S, bool kEdge>
BF_CONV_INLINE void DwTapsInRow(const ConvGeometry& g, const C* __restrict xrow, const C* wrow,
                                int64_t col0, V (&acc)[P][NV]) {
  using Vec = V;
  constexpr int L = sizeof(Vec) / sizeof(C);
  const int64_t ch = g.out_depth, xs = g.in_depth;  // xs: the input's pixel stride
  Vec wv[FW][NV];
  for (int kw = 0; kw < FW; ++kw) {
    for (int k = 0; k < NV; ++k) wv[kw][k] = LoadVec<V>(wrow + kw * ch + k * L);
  }
  // Unrolled whole, so that acc[p] stays in registers (GCC's own limit stops short at FW 5).
#pragma GCC unroll 16
  for (int j = 0; j < (P - 1) * S + FW; ++j) {
    if (kEdge && (col0 + j < 0 || col0 + j >= g.in_w)) continue;
    Vec xv[NV];
    // At stride 1 a column feeds FW taps: loaded into a register once (LoadVecReg). At stride 2
    // it feeds one or two, and the register form measured 10-25% slower on 112-pixel layers.
    for (int k = 0; k < NV; ++k) xv[k] = LoadVecReg<V, S == 1>(xrow + (col0 + j) * xs + k * L);
#pragma GCC unroll 8
    for (int kw = 0; kw < FW; ++kw) {
      const int p = (j - kw) / S;  // input column j feeds pixel p through tap kw
      if (j < kw || (j - kw) % S != 0 || p >= P) continue;
      for (int k = 0; k < NV; ++k) acc[p][k] += xv[k] * wv[kw][k];
    }
  }
}

// Whether g's filter rows take DwTapsInRow's form of fw taps at stride s (dilation 1).
inline bool TapRowForm(const ConvGeometry& g, int64_t fw, int64_t s) {
  return g.filter_w == fw && g.stride_w == s && g.dilation_w == 1;
}

// DwTapsInRow for the tile at ow0: true when it was done. Edge tiles take the checked form on
// AVX-512 only (NV 2): with 16 vector registers (AVX2, the baseline) its branches spill the sums,
// and those tiles are left to the caller's general loop.
template <typename C, typename V, int P, int NV, int FW, int S>
BF_CONV_INLINE bool DwTaps(const ConvGeometry& g, const C* __restrict xrow, const C* wrow,
                           int64_t ow0, V (&acc)[P][NV]) {
  const int64_t col0 = g.input_col(ow0, 0);
  if (col0 >= 0 && g.input_col(ow0 + P - 1, FW - 1) < g.in_w) {
    DwTapsInRow<C, V, P, NV, FW, S, false>(g, xrow, wrow, col0, acc);
    return true;
  }
  if constexpr (NV >= 2) {
    DwTapsInRow<C, V, P, NV, FW, S, true>(g, xrow, wrow, col0, acc);
    return true;
  }
  return false;
}

// An output (forward, or input gradient) of more than kStreamBytes, five times a core's L2,
// is stored past the caches unless the shared L3 keeps it (StreamsOutput), so that a store does not
// first read its line: the depthwise kernels do about two FMAs per value they write, and a strided
// input gradient writes 2-4 times the bytes it reads. The op that reads the output next then finds
// it in memory, not in the shared L3. With StreamVec (isa.h): AVX-512 only, 64-byte aligned; the
// caller ends its row with a store fence. The bound was 8 MB; one pinned core against oneDNN
// blocked, three alternations: the 6.4 MB forward of mnv1_dw2_112x64 1.19-1.47 -> 1.01-1.15 and
// input gradient of mnv1_dw6_28x256 0.81-1.68 -> 0.72-0.77 when streamed, but 2.4-4.8 MB outputs
// (mnv2_dw_28x192, _14x384, _14x576, mnv1_dw8) 3-12% slower (a plain store's line then comes
// from L3, and the output stays there for the next call).
constexpr int64_t kStreamBytes = int64_t{5} << 20;

// Whether g's rows suit the forward row kernel's 3x3 sweeps (DwForwardRowImpl, which also
// needs a row's three input rows and three interior columns, and AVX-512's or AVX2's registers): a
// 3x3 filter at stride_w 1, not where input or output pixels are a multiple of 4 KiB apart (1024
// float channels, CrowdsL1Sets at 4 KiB): mnv1_dw13_7x1024 measured 1-3% slower in sweeps than in
// tiles. Strides of an odd multiple of 2 KiB (CrowdsL1Sets), where the sweeps had measured 1.2-1.4x
// slower than the tiles, sweep since the sweeps prefetch the next channel block
// (RowsAhead::next_block): one pinned core, paired call by call with the tiles,
// mnv1_dw8_14x512's forward 0.89 and input gradient 0.88 (two threads 0.92, 0.91), in double
// mnv1_dw6_28x256's 0.85 and 0.86. g as the row kernel sees it: in_depth is the input's pixel
// stride.
template <typename C>
bool SweepsFit(const ConvGeometry& g) {
  return g.filter_h == 3 && TapRowForm(g, 3, 1) && !CrowdsL1Sets<C>(g.in_depth, 4096) &&
         !CrowdsL1Sets<C>(g.out_depth, 4096);
}
// Whether the forward row kernel takes g's rows (their inner rows at least) in sweeps.
template <typename C>
bool ForwardSweeps(const ConvGeometry& g) {
  return SweepsFit<C>(g) && ActiveIsa() != Isa::kBase;
}

// What a forward row kernel prefetches while it works on a row. Where its operands outgrow the
// caches (DwForward), the next output row's: x, the input row that its last filter row reads (at
// stride 1 the one input row the current output row does not read as well), and y, its result
// row; nullptr where there is nothing worth prefetching (input rows copied into a ring, results
// in a per-thread row, no next row). Otherwise, with next_block, the 3x3 sweeps prefetch the
// next channel block's pieces of the current row's last input row and result row, one sweep
// ahead (where the result row is the result's own), and the last block's sweep the first
// block's pieces of the next row's (first_x, first_y; nullptr: none). Before, a row's first
// sweep waited on the L3 for them: one pinned core, each call paired with one without, the
// forward of mnv2_dw_28x192 and mnv1_dw6_28x256 4% faster, mnv2_dw_14x384 and _14x576 2-3%,
// their input gradients 2-8%, two threads 2-5% (medians of 100-2590 pairs); two blocks ahead
// instead cost mnv2_dw_28x192 12%. own_rows: the input rows are the input's own (not copied
// into a ring, where they would be in cache already).
template <typename C>
struct RowsAhead {
  const C* x = nullptr;
  const C* y = nullptr;
  const C* first_x = nullptr;
  const C* first_y = nullptr;
  bool next_block = false;
  bool own_rows = false;
};

// Prefetches the NV vectors at channel c0 of the pixels [ow0, ow1) of the result row y (if any).
template <typename C, int NV>
BF_CONV_INLINE void PrefetchPixels(const C* y, int64_t ch, int64_t ow0, int64_t ow1, int64_t c0) {
  constexpr int64_t L = 64 / sizeof(C);
  if (y == nullptr) return;
  for (int64_t ow = ow0; ow < ow1; ++ow)
    for (int k = 0; k < NV; ++k) __builtin_prefetch(y + ow * ch + c0 + k * L);
}

// Forward tile: y[ow0 + p, c0 + c] for p < P, c < NV*L, = sum over kh with xr[kh] != nullptr and
// valid kw of xr[kh][iw(ow, kw), c] * w[kh, kw, c]. xr[kh] is the input row that filter row kh
// reads (nullptr outside the input), so the caller decides where rows live (the input itself,
// or channel-expanded rows in a per-thread ring, or out_backprop rows for the input gradient).
template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void DwForwardTile(const ConvGeometry& g, const C* const* xr, const C* __restrict w,
                                  C* __restrict yrow, const C* zeros, int64_t ow0, int64_t c0,
                                  bool stream) {
  using Vec = V;
  constexpr int L = sizeof(Vec) / sizeof(C);
  const int64_t ch = g.out_depth, xs = g.in_depth;  // xs: the input's pixel stride
  Vec acc[P][NV];
  ZeroTile(acc);
  const bool full_row = ow0 + P <= g.out_w;
  // The 5-tap and stride-2 forms of DwTapsInRow need more vector registers than the 16 of AVX2
  // and the baseline (NV 1) hold.
  constexpr bool kWideTile = NV >= 2;
  for (int64_t kh = 0; kh < g.filter_h; ++kh) {
    if (xr[kh] == nullptr) continue;
    const C* __restrict xrow = xr[kh] + c0;
    const C* wrow = w + kh * g.filter_w * ch + c0;
    if (TapRowForm(g, 3, 1) && DwTaps<C, V, P, NV, 3, 1>(g, xrow, wrow, ow0, acc)) continue;
    if constexpr (kWideTile) {
      if (TapRowForm(g, 5, 1) && DwTaps<C, V, P, NV, 5, 1>(g, xrow, wrow, ow0, acc)) continue;
      if (TapRowForm(g, 3, 2) && DwTaps<C, V, P, NV, 3, 2>(g, xrow, wrow, ow0, acc)) continue;
    }
    for (int64_t kw = 0; kw < g.filter_w; ++kw) {
      const int64_t off = g.pad_left - kw * g.dilation_w;
      Vec wv[NV];
      for (int k = 0; k < NV; ++k) wv[k] = LoadVec<V>(wrow + kw * ch + k * L);
      const int64_t iw0 = ow0 * g.stride_w - off;
      if (full_row && iw0 >= 0 && iw0 + (P - 1) * g.stride_w < g.in_w) {
        // The whole tile reads inside the input (the common case): no per-pixel select.
        const C* xp = xrow + iw0 * xs;
        for (int p = 0; p < P; ++p)
          for (int k = 0; k < NV; ++k)
            acc[p][k] += LoadVec<V>(xp + p * g.stride_w * xs + k * L) * wv[k];
      } else {
        for (int p = 0; p < P; ++p) {
          const int64_t ow = ow0 + p, iw = ow * g.stride_w - off;
          const C* xp = (ow < g.out_w && iw >= 0 && iw < g.in_w) ? xrow + iw * xs : zeros;
          for (int k = 0; k < NV; ++k) acc[p][k] += LoadVec<V>(xp + k * L) * wv[k];
        }
      }
    }
  }
  for (int p = 0; p < P && ow0 + p < g.out_w; ++p)
    for (int k = 0; k < NV; ++k) PutVec(yrow + (ow0 + p) * ch + c0 + k * L, acc[p][k], stream);
}

// One output pixel ow of the 3x3 forward sweep below where some taps fall outside the input.
template <typename C, typename V, int NV>
BF_CONV_INLINE void DwForwardSweepEdge(const ConvGeometry& g, const C* const* xr,
                                       const V (&wv)[3][3][NV], C* __restrict yp, int64_t ow,
                                       bool stream) {
  constexpr int L = sizeof(V) / sizeof(C);
  V acc[NV];
  for (int k = 0; k < NV; ++k) acc[k] = V{};
  for (int kw = 0; kw < 3; ++kw) {
    const int64_t iw = ow - g.pad_left + kw;
    if (iw < 0 || iw >= g.in_w) continue;
    for (int r = 0; r < 3; ++r)
      for (int k = 0; k < NV; ++k)
        acc[k] += LoadVec<V>(xr[r] + iw * g.in_depth + k * L) * wv[r][kw][k];
  }
  for (int k = 0; k < NV; ++k) PutVec(yp + k * L, acc[k], stream);
}

// x[r] = the NV vectors at xr[r] + off, for the three rows r (not a lambda: a lambda is not
// compiled for its caller's ISA).
template <typename C, typename V, int NV>
BF_CONV_INLINE void DwColumn3(const C* const* xr, int64_t off, V (&x)[3][NV]) {
  constexpr int L = sizeof(V) / sizeof(C);
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < NV; ++k) x[r][k] = LoadVecReg<V>(xr[r] + off + k * L);
}

// One input column's three rows x times the weights of filter column kw (vector k): started
// (ColumnTaps) or added to a sum (AddColumnTaps), row 0 first.
template <typename V, int NV>
BF_CONV_INLINE V ColumnTaps(const V (&x)[3][NV], const V (&wv)[3][3][NV], int kw, int k) {
  return x[0][k] * wv[0][kw][k] + x[1][k] * wv[1][kw][k] + x[2][k] * wv[2][kw][k];
}
template <typename V, int NV>
BF_CONV_INLINE void AddColumnTaps(V& sum, const V (&x)[3][NV], const V (&wv)[3][3][NV], int kw,
                                  int k) {
  for (int r = 0; r < 3; ++r) sum += x[r][k] * wv[r][kw][k];
}

// The forward of a 3x3 filter (stride_w 1, dilation 1, all three input rows present) for one
// channel block [c0, c0 + NV*L) over a whole output row, weights in registers (9 NV). Input
// column iw is loaded once (3 NV loads) for the nine taps that read it: it starts the sum of
// output column iw + pl (tap kw 0), adds to iw + pl - 1 (kw 1) and completes iw + pl - 2 (kw 2),
// which is stored. Three sums move along the row (3 NV registers): 3 NV loads per 9 NV FMAs,
// against 9 (P + 2) NV / (9 P NV) per P-pixel tile. xr and w at the block's first channel. Each
// step of the interior also prefetches the block's share of the next row's (xa, ya) and the
// pieces of rows nx and ny (the next block's, where not null) at the column it reads and the
// pixel it stores.
template <typename C, typename V, int NV>
BF_CONV_INLINE void DwForwardSweep(const ConvGeometry& g, const C* const* xr, const C* __restrict w,
                                   C* __restrict yrow, int64_t olo, int64_t ohi, bool stream,
                                   LinesAhead xa, LinesAhead ya, const C* nx, const C* ny) {
  constexpr int L = sizeof(V) / sizeof(C);
  const int64_t ch = g.out_depth, xs = g.in_depth, pl = g.pad_left;
  V wv[3][3][NV];
  for (int r = 0; r < 3; ++r)
    for (int kw = 0; kw < 3; ++kw)
      for (int k = 0; k < NV; ++k) wv[r][kw][k] = LoadVec<V>(w + (r * 3 + kw) * ch + k * L);
  for (int64_t ow = 0; ow < olo; ++ow)
    DwForwardSweepEdge<C, V, NV>(g, xr, wv, yrow + ow * ch, ow, stream);
  // Input columns [olo - pl, ohi - pl + 2): the first two start sums, the last two complete them.
  V a[NV], b[NV], c[NV];  // the sums of output columns iw + pl, iw + pl - 1, iw + pl - 2
  V x[3][NV];
  int64_t iw = olo - pl;
  DwColumn3(xr, iw * xs, x);
  for (int k = 0; k < NV; ++k) b[k] = ColumnTaps(x, wv, 0, k);
  DwColumn3(xr, ++iw * xs, x);
  for (int k = 0; k < NV; ++k) {
    a[k] = ColumnTaps(x, wv, 0, k);
    AddColumnTaps(b[k], x, wv, 1, k);
  }
  // Now a: column iw + pl (= olo + 1), b: olo.
  for (++iw; iw + pl < ohi; ++iw) {
    xa.Next();
    ya.Next();
    for (int k = 0; k < NV; ++k) {
      if (nx != nullptr) __builtin_prefetch(nx + iw * xs + k * L);
      if (ny != nullptr) __builtin_prefetch(ny + (iw + pl - 2) * ch + k * L);
    }
    DwColumn3(xr, iw * xs, x);
    for (int k = 0; k < NV; ++k) {
      c[k] = b[k];
      b[k] = a[k];
      a[k] = ColumnTaps(x, wv, 0, k);
      AddColumnTaps(b[k], x, wv, 1, k);
      AddColumnTaps(c[k], x, wv, 2, k);
      PutVec(yrow + (iw + pl - 2) * ch + k * L, c[k], stream);
    }
  }
  // iw + pl == ohi: complete ohi - 2 (b), add to ohi - 1 (a); then complete ohi - 1.
  DwColumn3(xr, iw * xs, x);
  for (int k = 0; k < NV; ++k) {
    AddColumnTaps(b[k], x, wv, 2, k);
    AddColumnTaps(a[k], x, wv, 1, k);
    PutVec(yrow + (ohi - 2) * ch + k * L, b[k], stream);
  }
  DwColumn3(xr, ++iw * xs, x);
  for (int k = 0; k < NV; ++k) {
    AddColumnTaps(a[k], x, wv, 2, k);
    PutVec(yrow + (ohi - 1) * ch + k * L, a[k], stream);
  }
  for (int64_t ow = ohi; ow < g.out_w; ++ow)
    DwForwardSweepEdge<C, V, NV>(g, xr, wv, yrow + ow * ch, ow, stream);
}

// The 3x3 sweeps (DwForwardSweep) of one output row over its blocks of NV vectors V from the
// first channel up to channel `end` at most, where the row suits them (SweepsFit, all three
// input rows present, three interior columns); returns the channels they covered (0 where the
// row does not suit them).
template <typename C, typename V, int NV>
BF_CONV_INLINE int64_t DwForwardSweeps(const ConvGeometry& g, const C* const* xr,
                                       const C* __restrict w, C* __restrict yrow, int64_t end,
                                       bool stream, const RowsAhead<C>& ahead) {
  constexpr int64_t B = NV * static_cast<int64_t>(sizeof(V) / sizeof(C));  // a block's channels
  const int64_t ch = g.out_depth;
  const int64_t olo = std::max<int64_t>(0, g.pad_left);
  const int64_t ohi = std::min(g.out_w, g.in_w + g.pad_left - 2);
  if (!(SweepsFit<C>(g) && xr[0] && xr[1] && xr[2] && ohi - olo >= 3)) return 0;
  const C* xb[3];
  const int64_t blocks = end / B, steps = ohi - olo - 2;
  const int64_t x_bytes = g.in_w * g.in_depth * static_cast<int64_t>(sizeof(C));
  const int64_t y_bytes = g.out_w * ch * static_cast<int64_t>(sizeof(C));
  int64_t c_begin = 0;
  for (int64_t b = 0; c_begin + B <= end; c_begin += B, ++b) {
    for (int r = 0; r < 3; ++r) xb[r] = xr[r] + c_begin;
    const C* nx = nullptr;
    const C* ny = nullptr;
    if (ahead.next_block && b + 1 < blocks) {
      nx = xb[2] + B;
      ny = yrow + c_begin + B;
    } else if (ahead.next_block) {  // the next row's first block
      nx = ahead.first_x;
      ny = ahead.first_y;
    }
    DwForwardSweep<C, V, NV>(g, xb, w + c_begin, yrow + c_begin, olo, ohi, stream,
                             LinesAhead(ahead.x, x_bytes, blocks, b, steps),
                             LinesAhead(ahead.y, y_bytes, blocks, b, steps), nx, ny);
  }
  return c_begin;
}
// AVX2's sweeps, blocks of one ymm, out of line: inlined into the row kernel, they left its
// tiles for other filters 1-13% slower (dw_5x5_28x240, one pinned core, builds alternated).
template <typename C, typename V>
BF_TARGET_AVX2 __attribute__((noinline)) int64_t DwForwardSweepsAvx2(
    const ConvGeometry& g, const C* const* xr, const C* __restrict w, C* __restrict yrow,
    int64_t end, bool stream, const RowsAhead<C>& ahead) {
  return DwForwardSweeps<C, V, 1>(g, xr, w, yrow, end, stream, ahead);
}

// The forward of one output row for the channels [c_begin, ch), in plain loops: the channels
// after the last full vector.
template <typename C>
void DwForwardChannels(const ConvGeometry& g, const C* const* xr, const C* __restrict w,
                       C* __restrict yrow, int64_t c_begin) {
  const int64_t ch = g.out_depth;
  for (int64_t ow = 0; ow < g.out_w && c_begin < ch; ++ow) {
    C* __restrict yp = yrow + ow * ch;
    for (int64_t c = c_begin; c < ch; ++c) yp[c] = C{0};
    for (int64_t kh = 0; kh < g.filter_h; ++kh) {
      if (xr[kh] == nullptr) continue;
      for (int64_t kw = 0; kw < g.filter_w; ++kw) {
        const int64_t iw = g.input_col(ow, kw);
        if (iw < 0 || iw >= g.in_w) continue;
        const C* __restrict xp = xr[kh] + iw * g.in_depth;
        const C* __restrict wp = w + (kh * g.filter_w + kw) * ch;
        for (int64_t c = c_begin; c < ch; ++c) yp[c] += xp[c] * wp[c];
      }
    }
  }
}

// Whether the forward's tiles of `tile_w` pixels go along the whole row one channel block at a
// time, rather than through every channel block at one position of the row: where the input
// pixels of one position over every channel and the whole filter outgrow the L1 cache, so that
// at each position both come again from L2. A 5x5 filter on 240 channels (38 KB of inputs and
// 24 KB of filter per position) took 1.25 ms, 1.03 a block at a time, one pinned core, best of
// 8 alternated rounds; the other layers this picks (mnv2_dw_14x384, _14x576, _7x960) within 3%.
// Not where pixels crowd a few L1 sets (CrowdsL1Sets): along a row, one block's pixels then
// collide (mnv1_dw8_14x512 a block at a time: 0.33 -> 0.39 ms).
template <typename C>
bool DwBlocksAlongRow(const ConvGeometry& g, int64_t tile_w) {
  const int64_t cols = (tile_w - 1) * g.stride_w + (g.filter_w - 1) * g.dilation_w + 1;
  const int64_t values = g.filter_h * (cols * g.in_depth + g.filter_w * g.out_depth);
  return values * static_cast<int64_t>(sizeof(C)) > CacheBytes(1, int64_t{32} << 10) &&
         !CrowdsL1Sets<C>(g.in_depth) && !CrowdsL1Sets<C>(g.out_depth);
}

// Forward of one output row (yrow) from the input rows xr[kh]: pixel tiles outside and channel
// blocks inside (the tile's input pixels stay in L1 across blocks), each block along the whole
// row in turn where DwBlocksAlongRow says so, or 3x3 sweeps; channels after the last full
// vector in plain loops. kStream: the vector stores bypass the caches (StreamVec) where the row
// allows them. The sweeps prefetch the next row's input and result rows (ahead), the tiles its
// result row (the current row's input rows have prefetches of their own).
template <typename C, typename V, int P, int NV, bool kStream>
BF_CONV_INLINE void DwForwardRowImpl(const ConvGeometry& g, const C* const* xr,
                                     const C* __restrict w, C* __restrict yrow, const C* zeros,
                                     RowsAhead<C> ahead) {
  constexpr int64_t L = 64 / sizeof(C);
  const int64_t ch = g.out_depth, c_vec = ch - ch % L;
  const bool stream =
      kStream && !kIsSplitVec<V> && ch % L == 0 && reinterpret_cast<uintptr_t>(yrow) % 64 == 0;
  if (stream) {  // streamed stores do not read their lines
    ahead.y = nullptr;
    ahead.next_block = false;
  }
  // At stride 1 the last filter row reads the input row that the previous output row did not:
  // on layers larger than the caches it comes from memory, so it is prefetched kAhead tiles
  // ahead (10-20% on the 28- to 112-pixel layers of one pinned core). At stride 2 the last two
  // are new, prefetched likewise where they are the input's own rows: one pinned core, both
  // alternated call by call, mnv1_dw2_112x64_s2 3.29 -> 3.12 ms (2.88 -> 2.70 in
  // bf_conv_bench), mnv2_dw_112x96_s2 5.19 -> 4.70, two threads 7-11% faster, float64 0-4%. On
  // rows copied into a ring (float16, NCHW) they cost 3-10%, as on an earlier host everywhere.
  constexpr int64_t kAhead = 2;
  const int64_t px_bytes = g.in_depth * static_cast<int64_t>(sizeof(C));
  const int64_t kh_fresh = g.stride_h == 1  ? g.filter_h - 1
                           : ahead.own_rows ? std::max<int64_t>(0, g.filter_h - g.stride_h)
                                            : g.filter_h;
  // The pixel tiles: 7 wide with AVX-512 on rows that P-wide tiles leave columns of (7 and 14
  // pixels: 0.152 -> 0.137-0.145 ms on mnv1_dw13_7x1024, 0.21 -> 0.15-0.17 on mnv2_dw_14x384),
  // P otherwise (7-wide tiles measured 5-30% slower on the 28- to 112-pixel layers). In float,
  // a 5-tap filter row at stride 1 takes 7-wide tiles wherever they cost no more columns: 14
  // sums instead of 8 for its 25 taps, 11 columns loaded per 7 pixels. dw_5x5_28x240, one
  // pinned core, best of 6-8 alternated rounds: NCHW 2.64 -> 2.49 ms, float16 1.15 -> 1.09,
  // bfloat16 1.18 -> 1.12, their stride-1 input gradients 4-8% faster, float32 NHWC (its result
  // streamed to memory) 1.07 / 1.04; float64 NCHW was 26% slower (4.09 -> 5.17), so not there.
  const bool five_taps = std::is_same_v<C, float> && TapRowForm(g, 5, 1);
  const bool wide = (g.out_w % P != 0 || five_taps) && WideTiles<P, NV>(g.out_w);
  const int64_t pt = wide ? kWideP : P;
  // 3x3 at stride_w 1 with all three rows present: the blocks of NV vectors as sweeps (AVX-512:
  // 18 weights, 6 sums and 6 inputs in 32 registers; AVX2: blocks of one ymm, 9 weights, 3 sums
  // and 3 inputs in 16), the interior columns [olo, ohi).
  int64_t c_begin = 0;
  if constexpr (NV >= 2) {
    c_begin = DwForwardSweeps<C, V, NV>(g, xr, w, yrow, c_vec, stream, ahead);
  } else if constexpr (kIsSplitVec<V> && sizeof(typename V::Part) == 32) {
    c_begin = DwForwardSweepsAvx2<C, typename V::Part>(g, xr, w, yrow, c_vec, stream, ahead);
  }
  // The channels [c_begin, c_vec) in one range, or a block of NV vectors at a time.
  const int64_t span = DwBlocksAlongRow<C>(g, pt) ? NV * L : c_vec - c_begin;
  for (int64_t c_lo = c_begin; c_lo < c_vec; c_lo += span) {
    const int64_t c_hi = std::min(c_vec, c_lo + span);
    for (int64_t ow0 = 0; ow0 < g.out_w; ow0 += pt) {
      if (c_lo == c_begin) {
        const int64_t a = std::max<int64_t>(0, g.input_col(ow0 + kAhead * pt, 0)) * px_bytes;
        const int64_t b = std::min(g.in_w, g.input_col(ow0 + (kAhead + 1) * pt, 0)) * px_bytes;
        for (int64_t kh = kh_fresh; kh < g.filter_h; ++kh) {
          const char* row = reinterpret_cast<const char*>(xr[kh]);
          if (row == nullptr) continue;
          for (int64_t off = a; off < b; off += 64) __builtin_prefetch(row + off);
        }
      }
      int64_t c0 = c_lo;
      const int64_t ow1 = std::min(g.out_w, ow0 + pt);
      if constexpr (NV >= 2) {
        if (wide) {
          for (; c0 + NV * L <= c_hi; c0 += NV * L) {
            PrefetchPixels<C, NV>(ahead.y, ch, ow0, ow1, c0);
            DwForwardTile<C, V, kWideP, NV>(g, xr, w, yrow, zeros, ow0, c0, stream);
          }
          for (; c0 + L <= c_hi; c0 += L)
            DwForwardTile<C, V, kWideP, 1>(g, xr, w, yrow, zeros, ow0, c0, stream);
          continue;
        }
      }
      for (; c0 + NV * L <= c_hi; c0 += NV * L) {
        PrefetchPixels<C, NV>(ahead.y, ch, ow0, ow1, c0);
        DwForwardTile<C, V, P, NV>(g, xr, w, yrow, zeros, ow0, c0, stream);
      }
      for (; c0 + L <= c_hi; c0 += L)
        DwForwardTile<C, V, P, 1>(g, xr, w, yrow, zeros, ow0, c0, stream);
    }
  }
  if (stream) StreamFence();
  DwForwardChannels(g, xr, w, yrow, c_vec);
}

template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void DwForwardRowT(const ConvGeometry& g, const C* const* xr, const C* __restrict w,
                                  C* __restrict yrow, const C* zeros, RowsAhead<C> ahead) {
  DwForwardRowImpl<C, V, P, NV, false>(g, xr, w, yrow, zeros, ahead);
}
template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void DwForwardRowStreamT(const ConvGeometry& g, const C* const* xr,
                                        const C* __restrict w, C* __restrict yrow, const C* zeros,
                                        RowsAhead<C> ahead) {
  if constexpr (kIsSplitVec<V>) {
    // Streamed stores are AVX-512's (ForwardRowFor): the other ISAs' variants, never called,
    // are the plain loops, correct and quick to compile.
    DwForwardChannels(g, xr, w, yrow, 0);
  } else {
    DwForwardRowImpl<C, V, P, NV, true>(g, xr, w, yrow, zeros, ahead);
  }
}

// Row functions that take the input rows as pointers (filter gradient), one per ISA
// (BF_CONV_ISA_FNS), as BF_CONV_ROW_FNS defines them for the other signature.
template <typename C>
using DwRowsFn = void (*)(const ConvGeometry&, const C* const*, const C*, C*, const C*);
// NOLINTBEGIN(bugprone-macro-parentheses): C is spliced into parameter types.
#define BF_DW_ROWS_FNS(Name, Impl, C)                                                        \
  BF_CONV_ISA_FNS(Name, Impl, C, DwRowsFn<C>,                                                \
                  (const ConvGeometry& g, const C* const* xr, const C* b, C* y, const C* z), \
                  (g, xr, b, y, z))
// The forward's, which also take the next row's rows to prefetch.
template <typename C>
using DwForwardFn = void (*)(const ConvGeometry&, const C* const*, const C*, C*, const C*,
                             RowsAhead<C>);
#define BF_DW_FORWARD_FNS(Name, Impl, C)                                                         \
  BF_CONV_ISA_FNS(                                                                               \
      Name, Impl, C, DwForwardFn<C>,                                                             \
      (const ConvGeometry& g, const C* const* xr, const C* b, C* y, const C* z, RowsAhead<C> a), \
      (g, xr, b, y, z, a))
BF_DW_FORWARD_FNS(DwForwardRow, DwForwardRowT, float)
BF_DW_FORWARD_FNS(DwForwardRow, DwForwardRowT, double)
BF_DW_FORWARD_FNS(DwForwardRowStream, DwForwardRowStreamT, float)
BF_DW_FORWARD_FNS(DwForwardRowStream, DwForwardRowStreamT, double)
// NOLINTEND(bugprone-macro-parentheses)

// Input gradient tile: dx[iw = r + sw*(t0 + p), c0 + c] for p < P, c < NV*L, = sum over the
// reaching taps of dy[ow, c] * w[kh, kw, c], into the row dxrow; `stream`: stored with StreamVec.
template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void DwBackpropInputTile(const ConvGeometry& g, const C* __restrict w,
                                        const C* __restrict dy, C* __restrict dxrow, int64_t n,
                                        const C* zeros, const PairList& rows, const PairSpan& cols,
                                        int64_t r, int64_t count, int64_t t0, int64_t c0,
                                        bool stream) {
  using Vec = V;
  constexpr int L = sizeof(Vec) / sizeof(C);
  const int64_t ch = g.out_depth;
  Vec acc[P][NV];
  ZeroTile(acc);
  for (const auto& [kh, oh] : rows) {
    const C* dyrow = dy + (n * g.out_h + oh) * g.out_w * ch + c0;
    for (const auto& [kw, ow_t0] : cols) {
      const int64_t ow_base = ow_t0 + t0;
      Vec wv[NV];
      for (int k = 0; k < NV; ++k) wv[k] = LoadVec<V>(w + (kh * g.filter_w + kw) * ch + c0 + k * L);
      if (t0 + P <= count && ow_base >= 0 && ow_base + P <= g.out_w) {
        // The whole tile is reached (the common case): no per-pixel select.
        const C* dyp = dyrow + ow_base * ch;
        for (int p = 0; p < P; ++p)
          for (int k = 0; k < NV; ++k) acc[p][k] += LoadVec<V>(dyp + p * ch + k * L) * wv[k];
      } else {
        for (int p = 0; p < P; ++p) {
          const int64_t ow = ow_base + p;
          const C* dyp = (t0 + p < count && ow >= 0 && ow < g.out_w) ? dyrow + ow * ch : zeros;
          for (int k = 0; k < NV; ++k) acc[p][k] += LoadVec<V>(dyp + k * L) * wv[k];
        }
      }
    }
  }
  for (int p = 0; p < P && t0 + p < count; ++p)
    for (int k = 0; k < NV; ++k)
      PutVec(dxrow + (r + g.stride_w * (t0 + p)) * ch + c0 + k * L, acc[p][k], stream);
}

// The input gradient of one input row (dxrow; batch n, reached by `rows`) for the channels
// [c_begin, ch), in plain loops: the channels after the last full vector.
template <typename C>
void DwBackpropInputChannels(const ConvGeometry& g, const C* __restrict w, const C* __restrict dy,
                             C* __restrict dxrow, int64_t n, const PairList& rows,
                             int64_t c_begin) {
  const int64_t ch = g.out_depth;
  for (int64_t iw = 0; iw < g.in_w && c_begin < ch; ++iw) {
    C* __restrict dxp = dxrow + iw * ch;
    for (int64_t c = c_begin; c < ch; ++c) dxp[c] = C{0};
    for (const auto& [kh, oh] : rows) {
      for (int64_t kw = 0; kw < g.filter_w; ++kw) {
        const int64_t tw = iw + g.pad_left - kw * g.dilation_w;
        if (tw < 0 || tw % g.stride_w != 0 || tw / g.stride_w >= g.out_w) continue;
        const C* __restrict dyp = dy + ((n * g.out_h + oh) * g.out_w + tw / g.stride_w) * ch;
        const C* __restrict wp = w + (kh * g.filter_w + kw) * ch;
        for (int64_t c = c_begin; c < ch; ++c) dxp[c] += dyp[c] * wp[c];
      }
    }
  }
}

// Input gradient of input row ih of image n into the row dxrow, by stride phase (iw = r + sw*t)
// so that a tap reaches a whole tile or none of it; the reaching taps are resolved once per row
// and phase (integer division per tile would cost more than the tile's arithmetic). kStream:
// the vector stores bypass the caches (StreamVec) where the row allows them.
template <typename C, typename V, int P, int NV, bool kStream>
BF_CONV_INLINE void DwBackpropInputRowImpl(const ConvGeometry& g, const C* __restrict w,
                                           const C* __restrict dy, C* __restrict dxrow, int64_t n,
                                           int64_t ih, const C* zeros, IntPair* scratch) {
  constexpr int64_t L = 64 / sizeof(C);
  const int64_t ch = g.out_depth, c_vec = ch - ch % L;
  const bool stream =
      kStream && !kIsSplitVec<V> && ch % L == 0 && reinterpret_cast<uintptr_t>(dxrow) % 64 == 0;
  PairList rows(RowScratch(g, scratch));  // the columns: InputScratch's table
  ReachingRows(g, ih, &rows);
  for (int64_t r = 0; r < g.stride_w && r < g.in_w && c_vec > 0; ++r) {
    const int64_t count = PhaseColumnCount(g, scratch, r);
    const PairSpan cols = PhaseCols(g, scratch, r);
    for (int64_t t0 = 0; t0 < count; t0 += P) {
      int64_t c0 = 0;
      for (; c0 + NV * L <= ch; c0 += NV * L)
        DwBackpropInputTile<C, V, P, NV>(g, w, dy, dxrow, n, zeros, rows, cols, r, count, t0, c0,
                                         stream);
      for (; c0 + L <= ch; c0 += L)
        DwBackpropInputTile<C, V, P, 1>(g, w, dy, dxrow, n, zeros, rows, cols, r, count, t0, c0,
                                        stream);
    }
  }
  if (stream) StreamFence();
  DwBackpropInputChannels(g, w, dy, dxrow, n, rows, c_vec);
}

template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void DwBackpropInputRowT(const ConvGeometry& g, const C* __restrict w,
                                        const C* __restrict dy, C* __restrict dxrow, int64_t n,
                                        int64_t ih, const C* zeros, IntPair* scratch) {
  DwBackpropInputRowImpl<C, V, P, NV, false>(g, w, dy, dxrow, n, ih, zeros, scratch);
}
template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void DwBackpropInputRowStreamT(const ConvGeometry& g, const C* __restrict w,
                                              const C* __restrict dy, C* __restrict dxrow,
                                              int64_t n, int64_t ih, const C* zeros,
                                              IntPair* scratch) {
  if constexpr (kIsSplitVec<V>) {
    // Streamed stores are AVX-512's (StreamsOutput): the other ISAs' variants, never
    // called, are the plain loops, correct and quick to compile.
    PairList rows(RowScratch(g, scratch));
    ReachingRows(g, ih, &rows);
    DwBackpropInputChannels(g, w, dy, dxrow, n, rows, 0);
  } else {
    DwBackpropInputRowImpl<C, V, P, NV, true>(g, w, dy, dxrow, n, ih, zeros, scratch);
  }
}

// Filter gradient of one tap and channel block over the columns [ow0, ow1) of one output row:
// dwt[c0 + c] += sum over ow of x[iw(ow), c0 + c] * dy[ow, c0 + c]; P columns in flight.
template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void DwBackpropFilterTile(const ConvGeometry& g, const C* __restrict xrow,
                                         const C* __restrict dyrow, C* __restrict dwt, int64_t off,
                                         int64_t ow0, int64_t ow1, int64_t c0) {
  using Vec = V;
  constexpr int L = sizeof(Vec) / sizeof(C);
  const int64_t ch = g.out_depth, xs = g.in_depth;  // xs: the input's pixel stride
  Vec acc[P][NV];
  ZeroTile(acc);
  int64_t ow = ow0;
  for (; ow + P <= ow1; ow += P) {
    for (int p = 0; p < P; ++p) {
      const C* xp = xrow + ((ow + p) * g.stride_w - off) * xs + c0;
      const C* dyp = dyrow + (ow + p) * ch + c0;
      for (int k = 0; k < NV; ++k) acc[p][k] += LoadVec<V>(xp + k * L) * LoadVec<V>(dyp + k * L);
    }
  }
  for (; ow < ow1; ++ow) {
    const C* xp = xrow + (ow * g.stride_w - off) * xs + c0;
    const C* dyp = dyrow + ow * ch + c0;
    for (int k = 0; k < NV; ++k) acc[0][k] += LoadVec<V>(xp + k * L) * LoadVec<V>(dyp + k * L);
  }
  for (int k = 0; k < NV; ++k) {
    Vec s = acc[0][k];
    for (int p = 1; p < P; ++p) s += acc[p][k];
    StoreVec(dwt + c0 + k * L, LoadVec<V>(dwt + c0 + k * L) + s);
  }
}

// One output column ow of the 3x3 filter gradient tile below, where some taps read outside the
// input (the padding): those taps are skipped.
template <typename C, typename V, int R, int NV>
BF_CONV_INLINE void DwBackpropFilter3x3EdgeColumn(const ConvGeometry& g, const C* const* xc,
                                                  const C* __restrict dyp, V (&acc)[R][3][NV],
                                                  int64_t ow) {
  using Vec = V;
  constexpr int L = sizeof(Vec) / sizeof(C);
  const int64_t xs = g.in_depth, iw0 = ow * g.stride_w - g.pad_left;
  Vec dv[NV];
  for (int k = 0; k < NV; ++k) dv[k] = LoadVec<V>(dyp + k * L);
#pragma GCC unroll 3
  for (int kw = 0; kw < 3; ++kw) {
    if (iw0 + kw < 0 || iw0 + kw >= g.in_w) continue;
    for (int r = 0; r < R; ++r)
      for (int k = 0; k < NV; ++k)
        acc[r][kw][k] += LoadVec<V>(xc[r] + (iw0 + kw) * xs + k * L) * dv[k];
  }
}

// Filter gradient of a 3x3 filter (dilation 1) for the channels [c0, c0 + NV*L) over a whole
// output row: dw[kh, kw, c] += sum over ow of x[kh][ow*sw - pl + kw, c] * dy[ow, c], for the R
// filter rows from kh0 (all present). All their taps' sums stay in registers (3R x NV
// accumulators), so each dy vector is loaded once for 3R taps, not once per tap. The columns
// [lo, hi), where every tap reads inside the input, take the unchecked loop; the few edge
// columns check each tap's input column.
template <typename C, typename V, int R, int NV>
BF_CONV_INLINE void DwBackpropFilter3x3Tile(const ConvGeometry& g, const C* const* xr,
                                            const C* __restrict dyrow, C* __restrict dw,
                                            int64_t kh0, int64_t lo, int64_t hi, int64_t c0) {
  using Vec = V;
  constexpr int L = sizeof(Vec) / sizeof(C);
  const int64_t ch = g.out_depth, xs = g.in_depth, sw = g.stride_w;
  Vec acc[R][3][NV];
  for (int r = 0; r < R; ++r)
    for (int kw = 0; kw < 3; ++kw)
      for (int k = 0; k < NV; ++k) acc[r][kw][k] = Vec{};
  const C* xc[R];  // each row's channel block, at input column 0
  for (int r = 0; r < R; ++r) xc[r] = xr[kh0 + r] + c0;
  const C* dyc = dyrow + c0;
  for (int64_t ow = 0; ow < lo; ++ow)
    DwBackpropFilter3x3EdgeColumn<C, V, R, NV>(g, xc, dyc + ow * ch, acc, ow);
  if (lo < hi) {
    const C* xb[R];
    for (int r = 0; r < R; ++r) xb[r] = xc[r] + (lo * sw - g.pad_left) * xs;
    const C* dp = dyc + lo * ch;
    int64_t ow = lo;
    // At stride 1, two columns at a time: they read four input columns, not six, for their 6R
    // taps (the input column ow + kw serves tap kw of ow and tap kw - 1 of ow + 1). Each sum
    // still adds column ow before ow + 1: the same bits as one column at a time. Rows of 7
    // pixels (5 inner columns) measured 4% slower with pairs, and pixels 2 KiB apart (512
    // float channels) 10%: the four columns of three rows then crowd two L1 sets. Those keep
    // single columns.
    if (sw == 1 && hi - lo >= 8 && !CrowdsL1Sets<C>(xs)) {
      for (; ow + 2 <= hi; ow += 2) {
        Vec d0[NV], d1[NV];
        for (int k = 0; k < NV; ++k) {
          d0[k] = LoadVec<V>(dp + k * L);
          d1[k] = LoadVec<V>(dp + ch + k * L);
        }
        for (int r = 0; r < R; ++r)
          for (int k = 0; k < NV; ++k) {
            const Vec x0 = LoadVec<V>(xb[r] + k * L), x1 = LoadVecReg<V>(xb[r] + xs + k * L);
            const Vec x2 = LoadVecReg<V>(xb[r] + 2 * xs + k * L);
            const Vec x3 = LoadVec<V>(xb[r] + 3 * xs + k * L);
            acc[r][0][k] += x0 * d0[k];
            acc[r][0][k] += x1 * d1[k];
            acc[r][1][k] += x1 * d0[k];
            acc[r][1][k] += x2 * d1[k];
            acc[r][2][k] += x2 * d0[k];
            acc[r][2][k] += x3 * d1[k];
          }
        dp += 2 * ch;
        for (int r = 0; r < R; ++r) xb[r] += 2 * xs;
      }
    }
    for (; ow < hi; ++ow) {
      Vec dv[NV];
      for (int k = 0; k < NV; ++k) dv[k] = LoadVec<V>(dp + k * L);
      for (int r = 0; r < R; ++r)
        for (int kw = 0; kw < 3; ++kw)
          for (int k = 0; k < NV; ++k) acc[r][kw][k] += LoadVec<V>(xb[r] + kw * xs + k * L) * dv[k];
      dp += ch;
      for (int r = 0; r < R; ++r) xb[r] += sw * xs;
    }
  }
  for (int64_t ow = std::max(lo, hi); ow < g.out_w; ++ow)
    DwBackpropFilter3x3EdgeColumn<C, V, R, NV>(g, xc, dyc + ow * ch, acc, ow);
  for (int r = 0; r < R; ++r)
    for (int kw = 0; kw < 3; ++kw)
      for (int k = 0; k < NV; ++k) {
        C* d = dw + ((kh0 + r) * 3 + kw) * ch + c0 + k * L;
        StoreVec(d, LoadVec<V>(d) + acc[r][kw][k]);
      }
}

// The 3x3 filter gradient tiles of one output row for the channel blocks of NV vectors from
// *c0 on, advancing *c0: with all three input rows present and AVX-512's 32 registers (NV 2),
// the nine taps' sums at once (18 accumulators); otherwise each present filter row on its own.
template <typename C, typename V, int NV>
BF_CONV_INLINE void DwBackpropFilter3x3Blocks(const ConvGeometry& g, const C* const* xr,
                                              const C* __restrict dyrow, C* __restrict dw,
                                              int64_t lo, int64_t hi, int64_t* c0) {
  constexpr int64_t L = 64 / sizeof(C);
  const bool all_rows = xr[0] && xr[1] && xr[2];
  for (; *c0 + NV * L <= g.out_depth; *c0 += NV * L) {
    if (NV >= 2 && all_rows) {
      DwBackpropFilter3x3Tile<C, V, 3, NV>(g, xr, dyrow, dw, 0, lo, hi, *c0);
      continue;
    }
    for (int64_t kh = 0; kh < 3; ++kh)
      if (xr[kh]) DwBackpropFilter3x3Tile<C, V, 1, NV>(g, xr, dyrow, dw, kh, lo, hi, *c0);
  }
}

// The 3x3 filter gradient of one output row, for its vector channels: returns the channels done.
template <typename C, typename V, int NV>
BF_CONV_INLINE int64_t DwBackpropFilter3x3Row(const ConvGeometry& g, const C* const* xr,
                                              const C* __restrict dyrow, C* __restrict dw) {
  const int64_t sw = g.stride_w;
  // The columns where every tap reads inside the input: lo * sw >= pl, hi - 1 the last ow with
  // ow * sw - pl + 2 < in_w.
  const int64_t lo = std::min<int64_t>(g.out_w, (g.pad_left + sw - 1) / sw);
  const int64_t last = g.in_w - 3 + g.pad_left;  // the largest ow * sw
  const int64_t hi = last < 0 ? 0 : std::min<int64_t>(g.out_w, last / sw + 1);
  int64_t c0 = 0;
  DwBackpropFilter3x3Blocks<C, V, NV>(g, xr, dyrow, dw, lo, hi, &c0);
  if constexpr (NV > 1) DwBackpropFilter3x3Blocks<C, V, 1>(g, xr, dyrow, dw, lo, hi, &c0);
  return c0;
}

// The filter gradient of one output row (dyrow, xr as below) for the channels [c0, c1), in plain
// loops: the channels no vector covers.
template <typename C>
void DwBackpropFilterChannels(const ConvGeometry& g, const C* const* xr, const C* __restrict dyrow,
                              C* __restrict dw, int64_t c0, int64_t c1) {
  const int64_t ch = g.out_depth;
  for (int64_t kh = 0; kh < g.filter_h && c0 < c1; ++kh) {
    if (xr[kh] == nullptr) continue;
    for (int64_t kw = 0; kw < g.filter_w; ++kw) {
      const auto [off, ow0, ow1] = g.columns_inside(kw);
      C* dwt = dw + (kh * g.filter_w + kw) * ch;
      for (int64_t ow = ow0; ow < ow1; ++ow) {
        const C* __restrict xp = xr[kh] + (ow * g.stride_w - off) * g.in_depth;
        const C* __restrict dyp = dyrow + ow * ch;
        for (int64_t c = c0; c < c1; ++c) dwt[c] += xp[c] * dyp[c];
      }
    }
  }
}

// Filter gradient of one output row (dyrow) into the private partial sum dw [fh, fw, ch]; xr[kh]
// is the input row filter row kh reads (nullptr outside the input), as for the forward.
template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void DwBackpropFilterRowT(const ConvGeometry& g, const C* const* xr,
                                         const C* __restrict dyrow, C* __restrict dw,
                                         const C* /*zeros*/) {
  constexpr int64_t L = 64 / sizeof(C);
  const int64_t ch = g.out_depth;
  // A 3x3 filter (the common case): its vector channels in the register-blocked tiles, the
  // channels left over tap by tap below.
  int64_t c_done = 0;
  if (g.filter_h == 3 && g.filter_w == 3 && g.dilation_w == 1)
    c_done = DwBackpropFilter3x3Row<C, V, NV>(g, xr, dyrow, dw);
  if (c_done == ch) return;
  for (int64_t kh = 0; kh < g.filter_h; ++kh) {
    if (xr[kh] == nullptr) continue;
    const C* xrow = xr[kh];
    for (int64_t kw = 0; kw < g.filter_w; ++kw) {
      const auto [off, ow0, ow1] = g.columns_inside(kw);
      if (ow0 >= ow1) continue;
      C* dwt = dw + (kh * g.filter_w + kw) * ch;
      int64_t c0 = c_done;
      for (; c0 + NV * L <= ch; c0 += NV * L)
        DwBackpropFilterTile<C, V, P, NV>(g, xrow, dyrow, dwt, off, ow0, ow1, c0);
      for (; c0 + L <= ch; c0 += L)
        DwBackpropFilterTile<C, V, P, 1>(g, xrow, dyrow, dwt, off, ow0, ow1, c0);
    }
  }
  DwBackpropFilterChannels(g, xr, dyrow, dw, c_done + (ch - c_done) / L * L, ch);
}

// The strided input gradient's hot loop measured 15-20% slower (mnv2_dw_112x96_s2) when an
// unrelated edit moved it within a cache line; a 64-byte aligned start keeps its layout fixed
// (both variants).
BF_TARGET_AVX512 __attribute__((aligned(64))) void DwBackpropInputRowAvx512(
    const ConvGeometry& g, const float* a, const float* b, float* c, int64_t n, int64_t r,
    const float* z, IntPair* sc);
BF_TARGET_AVX512 __attribute__((aligned(64))) void DwBackpropInputRowStreamAvx512(
    const ConvGeometry& g, const float* a, const float* b, float* c, int64_t n, int64_t r,
    const float* z, IntPair* sc);
BF_CONV_ROW_FNS(DwBackpropInputRow, DwBackpropInputRowT, float)
BF_CONV_ROW_FNS(DwBackpropInputRow, DwBackpropInputRowT, double)
BF_CONV_ROW_FNS(DwBackpropInputRowStream, DwBackpropInputRowStreamT, float)
BF_CONV_ROW_FNS(DwBackpropInputRowStream, DwBackpropInputRowStreamT, double)
BF_DW_ROWS_FNS(DwBackpropFilterRow, DwBackpropFilterRowT, float)
BF_DW_ROWS_FNS(DwBackpropFilterRow, DwBackpropFilterRowT, double)
#undef BF_DW_ROWS_FNS

// ---------------------------------------------------------------------------------------------
// The 3x3 filter gradient at stride_w 1 (dilation 1) as a sweep: one channel block over a band
// of output rows of one image, its nine taps' sums in registers from the first row to the last
// (the row kernel above loads and stores them once per row), and each input pixel loaded once
// per output row for all three taps that read it. Input column iw meets the gradient columns
// ow = iw + pl - kw; the three last gradient columns stay in registers as a window that moves
// one column per step, so a step loads NV gradient vectors and 3 NV input vectors for 9 NV FMAs
// (the row kernel: 10 NV loads, or 14 NV per two columns in pairs).
// ---------------------------------------------------------------------------------------------

// The sums of one 3x3 sweep: acc[kh][kw][k].
template <typename V, int NV>
using SweepSums = V[3][3][NV];

// How far ahead, in elements, a sweep prefetches x and dy: SweepPrefetchPixels (below) pixels
// further along the same rows of the same channel block, into the next row past a row's end.
struct SweepPrefetch {
  int64_t x, dy;
};

// One interior input column iw (every tap's gradient column inside dy): loads dy[iw + pl] into
// d0 and adds x[kh0 + r][iw] times d0, d1, d2 (dy columns iw+pl, iw+pl-1, iw+pl-2) into the
// sums of taps (kh0 + r, 0..2).
template <typename C, typename V, int R, int KH0, int NV>
BF_CONV_INLINE void DwSweepStep(const C* const* xr, const C* __restrict dyp, int64_t xoff,
                                SweepPrefetch pf, V (&d0)[NV], const V (&d1)[NV], const V (&d2)[NV],
                                SweepSums<V, NV>& acc) {
  constexpr int L = sizeof(V) / sizeof(C);
  for (int k = 0; k < NV; ++k) {
    __builtin_prefetch(dyp + pf.dy + k * L);
    __builtin_prefetch(xr[R - 1] + xoff + pf.x + k * L);
  }
  for (int k = 0; k < NV; ++k) d0[k] = LoadVec<V>(dyp + k * L);
  for (int r = 0; r < R; ++r)
    for (int k = 0; k < NV; ++k) {
      // The column in a register once for its three taps: three folded loads measured 2-5%
      // slower on the layers that go to memory, and 10% faster before the prefetch went
      // along the rows (see SweepPrefetchPixels).
      const V x = LoadVecReg<V>(xr[r] + xoff + k * L);
      acc[KH0 + r][0][k] += x * d0[k];
      acc[KH0 + r][1][k] += x * d1[k];
      acc[KH0 + r][2][k] += x * d2[k];
    }
}

// An edge input column iw, where some taps' gradient columns fall outside dy: those taps skip it.
template <typename C, typename V, int R, int KH0, int NV>
BF_CONV_INLINE void DwSweepEdge(const ConvGeometry& g, const C* const* xr, const C* __restrict dyc,
                                int64_t iw, SweepPrefetch pf, SweepSums<V, NV>& acc) {
  constexpr int L = sizeof(V) / sizeof(C);
  const int64_t xs = g.in_depth, ch = g.out_depth;
  for (int k = 0; k < NV; ++k) __builtin_prefetch(xr[R - 1] + iw * xs + pf.x + k * L);
  V x[R][NV];
  for (int r = 0; r < R; ++r)
    for (int k = 0; k < NV; ++k) x[r][k] = LoadVecReg<V>(xr[r] + iw * xs + k * L);
#pragma GCC unroll 3
  for (int kw = 0; kw < 3; ++kw) {
    const int64_t ow = iw + g.pad_left - kw;
    if (ow < 0 || ow >= g.out_w) continue;
    for (int k = 0; k < NV; ++k) {
      __builtin_prefetch(dyc + ow * ch + pf.dy + k * L);
      const V d = LoadVecReg<V>(dyc + ow * ch + k * L);
      for (int r = 0; r < R; ++r) acc[KH0 + r][kw][k] += x[r][k] * d;
    }
  }
}

// One output row: the input rows xr[0..R) (at the block's first channel) of filter rows
// kh0..kh0+R-1, and the row's gradient dyc (at the block's first channel).
template <typename C, typename V, int R, int KH0, int NV>
BF_CONV_INLINE void DwSweepRow(const ConvGeometry& g, const C* const* xr, const C* __restrict dyc,
                               SweepPrefetch pf, SweepSums<V, NV>& acc) {
  const int64_t xs = g.in_depth, ch = g.out_depth, pl = g.pad_left;
  // Interior columns: iw + pl - 2 >= 0 and iw + pl < out_w.
  const int64_t lo = std::min(g.in_w, std::max<int64_t>(0, 2 - pl));
  const int64_t hi = std::min(g.in_w, g.out_w - pl);
  for (int64_t iw = 0; iw < lo; ++iw) DwSweepEdge<C, V, R, KH0, NV>(g, xr, dyc, iw, pf, acc);
  if (lo < hi) {
    constexpr int L = sizeof(V) / sizeof(C);
    V a[NV], b[NV], c[NV];  // the window: three dy columns, renamed step by step
    for (int k = 0; k < NV; ++k) {
      __builtin_prefetch(dyc + (lo + pl - 1) * ch + pf.dy + k * L);
      __builtin_prefetch(dyc + (lo + pl - 2) * ch + pf.dy + k * L);
      a[k] = LoadVec<V>(dyc + (lo + pl - 1) * ch + k * L);
      b[k] = LoadVec<V>(dyc + (lo + pl - 2) * ch + k * L);
    }
    const C* dyp = dyc + (lo + pl) * ch;
    int64_t iw = lo;
    for (; iw + 3 <= hi; iw += 3, dyp += 3 * ch) {
      DwSweepStep<C, V, R, KH0, NV>(xr, dyp, iw * xs, pf, c, a, b, acc);
      DwSweepStep<C, V, R, KH0, NV>(xr, dyp + ch, (iw + 1) * xs, pf, b, c, a, acc);
      DwSweepStep<C, V, R, KH0, NV>(xr, dyp + 2 * ch, (iw + 2) * xs, pf, a, b, c, acc);
    }
    if (iw < hi) DwSweepStep<C, V, R, KH0, NV>(xr, dyp, iw * xs, pf, c, a, b, acc);
    if (iw + 1 < hi) DwSweepStep<C, V, R, KH0, NV>(xr, dyp + ch, (iw + 1) * xs, pf, b, c, a, acc);
  }
  for (int64_t iw = std::max(lo, hi); iw < g.in_w; ++iw)
    DwSweepEdge<C, V, R, KH0, NV>(g, xr, dyc, iw, pf, acc);
}

// The pixels a sweep prefetches ahead along its block's rows: half a row, from 4 to 8. A channel
// block's piece of a pixel is two 64-byte lines of x and two of dy, a pixel stride apart, which
// the hardware prefetchers follow late (the layers with 512-byte strides gained as much as the
// others) or, past 2 KiB, not at all. The sweep once prefetched the next channel block's pieces one
// sweep ahead instead, only where a block fit a quarter of L2 and its image was not cut in bands,
// and L1 could not keep them for a whole sweep where a block outgrew it. Against that, one pinned
// core, paired call by call (medians of 70-590 pairs): mnv1_dw4_56x128 and mnv2_dw_56x144 36-39%
// faster, mnv1_dw6_28x256 32%, mnv2_dw_28x192 36%, mnv1_dw1_112x32 21%, dw_mult2 33%, the 14 x 14
// layers 12-18%, the 7 x 7 ones 8-9%; float16 and bfloat16 up to 8%, float64 25-35% (its banded
// layers had no prefetch). Of 2, 4, 6, 8 and 12 pixels ahead, 7 x 7 rows did best with 4, wider
// ones with 6-12. NCHW's blocks, contiguous per-thread copies, measured the same either way.
inline int64_t SweepPrefetchPixels(const ConvGeometry& g) {
  return std::clamp<int64_t>(g.in_w / 2, 4, 8);
}

// The sweep of one channel block [c0, c0 + NV*L) over the output rows [oh0, oh1) of one image
// (x: its input, rows in_w * in_depth apart, the block's channels from xc0; dy: its gradient),
// added into dw [3, 3, ch].
template <typename C, typename V, int NV>
BF_CONV_INLINE void DwSweepBlock(const ConvGeometry& g, const C* x, const C* dy, int64_t oh0,
                                 int64_t oh1, int64_t c0, int64_t xc0, C* __restrict dw) {
  constexpr int L = sizeof(V) / sizeof(C);
  const int64_t ch = g.out_depth, row = g.in_w * g.in_depth;
  const int64_t ahead = SweepPrefetchPixels(g);
  const SweepPrefetch pf = {ahead * g.in_depth, ahead * ch};
  SweepSums<V, NV> acc;
  for (int kh = 0; kh < 3; ++kh)
    for (int kw = 0; kw < 3; ++kw)
      for (int k = 0; k < NV; ++k) acc[kh][kw][k] = V{};
  for (int64_t oh = oh0; oh < oh1; ++oh) {
    const int64_t ih = g.input_row(oh, 0);
    const C* dyc = dy + oh * g.out_w * ch + c0;
    bool in[3];
    const C* xr[3] = {};
    for (int kh = 0; kh < 3; ++kh) {
      in[kh] = ih + kh >= 0 && ih + kh < g.in_h;
      if (in[kh]) xr[kh] = x + (ih + kh) * row + xc0;
    }
    if (in[0] && in[2]) {
      DwSweepRow<C, V, 3, 0, NV>(g, xr, dyc, pf, acc);
    } else {  // edge rows: each present filter row on its own (two at once measured the same)
      if (in[0]) DwSweepRow<C, V, 1, 0, NV>(g, xr, dyc, pf, acc);
      if (in[1]) DwSweepRow<C, V, 1, 1, NV>(g, xr + 1, dyc, pf, acc);
      if (in[2]) DwSweepRow<C, V, 1, 2, NV>(g, xr + 2, dyc, pf, acc);
    }
  }
  for (int kh = 0; kh < 3; ++kh)
    for (int kw = 0; kw < 3; ++kw)
      for (int k = 0; k < NV; ++k) {
        C* d = dw + (kh * 3 + kw) * ch + c0 + k * L;
        StoreVec(d, LoadVec<V>(d) + acc[kh][kw][k]);
      }
}

// The channels [c0, c0 + width) of the same sweep (x's from xc0), width < L (the channels no
// vector covers).
template <typename C>
void DwSweepTail(const ConvGeometry& g, const C* x, const C* dy, int64_t oh0, int64_t oh1,
                 int64_t c0, int64_t xc0, int64_t width, C* __restrict dw) {
  for (int64_t oh = oh0; oh < oh1; ++oh) {
    const C* xr[3];
    for (int64_t kh = 0; kh < 3; ++kh) {
      const int64_t ih = g.input_row(oh, kh);
      xr[kh] = ih >= 0 && ih < g.in_h ? x + ih * g.in_w * g.in_depth + xc0 : nullptr;
    }
    DwBackpropFilterChannels(g, xr, dy + oh * g.out_w * g.out_depth + c0, dw + c0, 0, width);
  }
}

// One sweep item: the channel block [c0, c0 + width) of dy and dw, whose x channels start at
// xc0 (x's pixels g.in_depth apart, dy's g.out_depth), width NV*L, L or less than L.
template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void DwSweepT(const ConvGeometry& g, const C* x, const C* dy, int64_t oh0,
                             int64_t oh1, int64_t c0, int64_t xc0, int64_t width, C* dw) {
  if constexpr (kIsSplitVec<V>) {
    // The sweep runs with AVX-512 only (UseSweep): the other ISAs' variants, never called, are
    // the scalar loop, correct and quick to compile (the sweep's unrolled rows, compiled for
    // every ISA, made this file's sanitizer build five times slower).
    DwSweepTail(g, x, dy, oh0, oh1, c0, xc0, width, dw);
    return;
  }
  constexpr int64_t L = sizeof(V) / sizeof(C);
  if (width == NV * L) return DwSweepBlock<C, V, NV>(g, x, dy, oh0, oh1, c0, xc0, dw);
  if constexpr (NV > 1) {
    if (width == L) return DwSweepBlock<C, V, 1>(g, x, dy, oh0, oh1, c0, xc0, dw);
  }
  DwSweepTail(g, x, dy, oh0, oh1, c0, xc0, width, dw);
}

template <typename C>
using DwSweepFn = void (*)(const ConvGeometry&, const C*, const C*, int64_t, int64_t, int64_t,
                           int64_t, int64_t, C*);
// NOLINTBEGIN(bugprone-macro-parentheses): C is spliced into parameter types.
#define BF_DW_SWEEP_FNS(C)                                                                   \
  BF_CONV_ISA_FNS(DwSweep, DwSweepT, C, DwSweepFn<C>,                                        \
                  (const ConvGeometry& g, const C* x, const C* dy, int64_t oh0, int64_t oh1, \
                   int64_t c0, int64_t xc0, int64_t width, C* dw),                           \
                  (g, x, dy, oh0, oh1, c0, xc0, width, dw))
BF_DW_SWEEP_FNS(float)
BF_DW_SWEEP_FNS(double)
#undef BF_DW_SWEEP_FNS
// NOLINTEND(bugprone-macro-parentheses)

// Whether an output of `elements` values is stored past the caches: more than kStreamBytes and
// more than FitsSharedCache keeps, with AVX-512. On a Cascade Lake host with a 35.8 MB L3, one
// pinned core, best of 15 runs alternated between two builds, plain stores took the forward of
// mnv1_dw6_28x256 (a 6.4 MB output) from 1.34 to 0.95 ms, mnv1_dw1_112x32 (12.8 MB) 2.89 ->
// 2.41, mnv2_dw_56x144 (14.4 MB) 4.17 -> 3.86, dw_5x5_28x240 2.44 -> 2.03, and the input
// gradients of mnv1_dw6 1.40 -> 0.93 and dw_5x5 2.32 -> 2.07: the output stays in L3 for the
// next call, which then stores into lines it holds. Not on AMD's cores, where such outputs are
// streamed too (SharedCacheKeepsResults).
template <typename C>
bool StreamsOutput(int64_t elements) {
  const int64_t bytes = elements * static_cast<int64_t>(sizeof(C));
  return ActiveIsa() == Isa::kAvx512 && bytes > kStreamBytes && !FitsSharedCache(bytes);
}

// The forward row function for an output of `elements` values: past kStreamBytes its stores
// bypass the caches. One pinned core, CPU time: mnv1_dw1_112x32 (12.8 MB) 1.71-1.82 ->
// 1.27-1.30 ms, mnv2_dw_56x144 3.19-3.25 -> 1.81-2.52, dw_mult2_56x64 2.15-2.18 -> 1.49-1.53.
template <typename C>
DwForwardFn<C> ForwardRowFor(int64_t elements) {
  return StreamsOutput<C>(elements) ? DwForwardRowStream(C{}) : DwForwardRow(C{});
}

// Whether the forward row kernel prefetches the next row's input and result rows (RowsAhead)
// for operands (input and result) of `elements` values: where they outgrow the L3 (and the
// result is not streamed past the caches: ForwardRowFor), which then does not keep them between
// calls; a quarter of it where the rows go in tiles, not sweeps (`sweeps`: ForwardSweeps). The
// sweeps' bound was half the L3 (see the last paragraph). The sweeps go along a row one block of
// channels at a time, reading and writing a 128-byte piece of every pixel, which the hardware
// prefetchers do not run ahead of. Cascade Lake (35.8 MB L3), bf_vs_onednn's cases with and
// without, alternated call by call, minimum of 15-40 calls, one pinned core: forward
// mnv1_dw1_112x32 (25.7 MB) 2.84 -> 2.21 ms, mnv1_dw4_56x128 3.25 -> 2.28, mnv2_dw_56x144 3.96
// -> 2.94, dw_mult2_56x64 (its result only: its input rows are copied) 3.80 -> 2.31; the input
// gradients of mnv1_dw4 3.34 -> 2.31, mnv2_dw_56x144 4.14 -> 2.95, mnv1_dw1 3.31 -> 2.57; two
// threads 1.17-1.45x as fast. With a quarter of the L3 as the bound, the 10-13 MB layers went both
// ways: mnv1_dw6_28x256 3-25% faster on one thread, 20% slower on two, mnv2_dw_28x192 8-16% slower
// on both (its operands stay in the L3). A stride-2 layer's tiles (result rows only) change by
// 1-2%. Smaller operands get the next channel block's pieces prefetched one sweep ahead instead
// (RowsAhead::next_block), which saves the sweeps' waits on the L3: forward and input gradient
// of mnv2_dw_14x384 and _14x576 8-9% faster, of mnv2_dw_28x192 and mnv1_dw6_28x256 11-16% (same
// comparison); two threads, forward, 2-10%; in double (bf_conv_bench) mnv2_dw_28x192 and
// mnv1_dw6 8-13% faster, mnv2_dw_14x384 3% slower.
// The tiles (5x5 filters, stride 2, 512 or 1024 channels) gain from a quarter of the L3 as the
// bound: dw_5x5_28x240 (12 MB) forward and input gradient 16-18% faster on one pinned core and
// 17-18% on two (the medians of 60-580 calls, each paired with the next call without,
// alternated in one process); the other layers, whose operands outgrow half the L3 or stay
// under a quarter, within 1%.
// Rows ahead were measured against no prefetch at all, before the sweeps had next_block; against
// next_block, the float layers between half the L3 and the whole of it measured faster with
// next_block, so the sweeps take rows ahead only past the whole L3 (paired medians, 100-950
// calls): two threads, forward mnv1_dw1_112x32 0.82, mnv1_dw4_56x128 0.91-0.97,
// mnv2_dw_56x144 0.94, their input gradients 0.70, 0.90-0.91 and 0.93; one pinned core, forward
// mnv1_dw1 0.91-0.92, input gradient 0.74, mnv2_dw_56x144 0.99, mnv1_dw4 1.02-1.03. In double
// the layers past the whole L3 (51-58 MB) measured 15-77% slower without rows ahead.
constexpr int64_t kSweepsAheadShare = 1, kTilesAheadShare = 4;
template <typename C>
bool PrefetchesRowsAhead(int64_t elements, bool sweeps) {
  return OutgrowsSharedCache(elements * static_cast<int64_t>(sizeof(C)),
                             sweeps ? kSweepsAheadShare : kTilesAheadShare);
}

// The kernel set: one function per op, rows in parallel, polling the cancel flag before each
// row.
BF_CONV_OPTIMIZED_KERNEL_SET(DepthwiseKernels);

// Whether op `op` in `format` runs in channel blocks (ForwardInChannelBlocks,
// DwBackpropInputStridedChannelBlocks, DwBackpropFilterChannelBlocks): multiplier 1 in NCHW on
// rows of at most kMaxBlockWidth columns, the filter gradient at stride 1 only, the strided
// input gradient on rows of any width. The rest keep the plane kernels and the row
// transposes. One pinned core, float32, best of 5-8 alternated rounds of one binary, the
// blocks against what ran before (planes at stride 1 on 14 columns and more, else transposes),
// in ms:
//   forward         mnv1_dw13_7x1024 0.71 -> 0.43, mnv2_dw_14x384 1.06 -> 0.58, mnv2_dw_28x192
//                   1.15 -> 0.91, dw_5x5_28x240 2.84 -> 1.87, mnv1_dw4_56x128 2.81 -> 2.19,
//                   mnv2_dw_112x96_s2 7.7 -> 4.0;
//   input gradient  mnv1_dw13 0.60 -> 0.40, mnv2_dw_14x576 1.66 -> 0.87, mnv1_dw6_28x256 1.74
//                   -> 1.22, dw_5x5 3.00 -> 1.66, mnv1_dw4 2.66 -> 2.22, mnv2_dw_56x144 3.02 ->
//                   2.47, strided mnv1_dw2_112x64_s2 4.51 -> 3.27, mnv2_dw_112x96_s2 7.01 ->
//                   5.15;
//   filter gradient mnv1_dw13 0.69 -> 0.27, mnv1_dw8_14x512 1.77 -> 0.61, mnv1_dw6 2.55 -> 1.10,
//                   dw_5x5 3.03 -> 2.42, mnv1_dw4 3.19 -> 2.15, mnv2_dw_56x144 3.81 -> 2.50.
// Slower, so not taken: 112-column rows at stride 1 (mnv1_dw1_112x32: forward 2.4 -> 2.5,
// input gradient 2.35 -> 2.60, filter gradient 2.51 -> 3.91, its 32 channels one block for one
// thread) and the strided filter gradients (mnv1_dw2_112x64_s2 2.65 -> 4.61: no sweep there).
constexpr int64_t kMaxBlockWidth = 56;
bool UsesChannelBlocks(const ConvGeometry& g, DataFormat format, ConvOp op) {
  if (format != DataFormat::kNCHW || g.multiplier != 1) return false;
  const bool stride1 = g.stride_h == 1 && g.stride_w == 1;
  switch (op) {
    case ConvOp::kForward:
      return g.out_w <= kMaxBlockWidth;
    case ConvOp::kBackpropInput:
      return !stride1 || g.in_w <= kMaxBlockWidth;
    case ConvOp::kBackpropFilter:
      return stride1 && g.out_w <= kMaxBlockWidth;
  }
  return false;
}

// Every operand a row at a time (the filter gradient's sweep and the strided input gradient's
// out_backprop, whose rows it reads across the input rows: an image at a time), where
// ConvertsInPieces says so, but an NCHW input with a multiplier above 1 (the rows are not
// spread over the multiplier).
template <typename T>
RowConverted DepthwiseKernels<T>::ConvertsRows(const ConvState& s) {
  const ConvGeometry& g = s.geometry;
  if (UsesChannelBlocks(g, s.attrs.format, s.op)) {
    return {.input = s.op != ConvOp::kBackpropInput,
            .out_backprop = s.op != ConvOp::kForward,
            .result = s.op != ConvOp::kBackpropFilter};
  }
  // The plane kernels (depthwise_planes.h) read and write the op's NCHW tensors.
  if (UsesPlanes(g, s.attrs.format, s.op, sizeof(ComputeT<T>))) {
    return {.input = s.op != ConvOp::kBackpropInput,
            .out_backprop = s.op != ConvOp::kForward,
            .result = s.op != ConvOp::kBackpropFilter};
  }
  if (!ConvertsInPieces(s)) return {};
  const bool input_rows = s.attrs.format == DataFormat::kNHWC || g.multiplier == 1;
  switch (s.op) {
    case ConvOp::kForward:
      return {.input = input_rows, .result = true};
    case ConvOp::kBackpropInput:
      return {.out_backprop = true, .result = true};
    case ConvOp::kBackpropFilter:
      if (!input_rows) return {};
      return {.input = true, .out_backprop = true};
  }
  return {};
}

// The forward from the input x in `format`, of type C or a 16-bit S, converted a row at a time
// unless it is NHWC of type C.
template <typename T, typename S>
void DwForward(const KernelArgs<T>& args, const S* x, DataFormat format, const KernelContext& ctx) {
  using C = ComputeT<T>;
  const ConvGeometry& g = args.g;
  const int64_t rows = g.batch * g.out_h, row_size = g.out_w * g.out_depth;
  const int64_t row_cost = g.out_w * g.filter_h * g.filter_w * g.out_depth;
  const int nt = ThreadsFor(ctx.num_threads, rows * row_cost, 1 << 15);
  ResultRows<T> out(args, g.out_h, g.out_w, g.out_depth, nt);
  // Rows computed into a per-thread row (read right back to be stored) are never streamed.
  const DwForwardFn<C> row = out.direct() ? ForwardRowFor<C>(rows * row_size) : DwForwardRow(C{});
  // The input's own rows whose pixels are a multiple of 2 KiB apart are read through a padded
  // copy (ExpandedRows::PadsOwnRows; see row_rings.h).
  ExpandedInputRows<S, C> xrows(g, x, format, nt, /*whole_images=*/false, /*pad=*/true);
  const ConvGeometry& e = xrows.geometry();
  const WorkBuffer<C> zeros(static_cast<size_t>(e.out_depth), C{0});
  const bool ahead = PrefetchesRowsAhead<C>(
      g.batch * g.in_h * g.in_w * g.in_depth + rows * row_size, ForwardSweeps<C>(e));
  const bool own_rows = !ExpandedRows<S, C>::Copies(g, format, /*pad=*/true);
  // The rows shared out as the threads go (TeamRows), not in static shares. The Zen 5 guest's
  // two vCPUs ran the same one-thread call 15-35% apart for minutes at a time, either one the
  // slower; two threads' mean time over thousands of calls, processes alternated: the 14 x 14
  // forwards and input gradients 0.90-0.94 of their time with static shares while a vCPU was
  // slower, 0.98-1.02 while they ran alike; mnv1_dw1_112x32's forward 0.84 (0.91 while they
  // ran alike), the 56-pixel layers 0.91-0.93 (0.92-0.97). The stride-1 input gradient
  // (DwBackpropInputStride1) shares its rows the same way.
  ParallelRowsBalanced(rows, nt, ctx, [&](int64_t r, int thread) {  // args.w read as [fh, fw, C*M]
    RowsAhead<C> next;
    next.own_rows = own_rows;
    if (out.direct() && !ahead) {
      next.next_block = true;
      if (r + 1 < rows) {
        next.first_x = xrows.OwnRow(r + 1, g.filter_h - 1);
        next.first_y = out.Row(r + 1, thread);
      }
    } else if (out.direct() && r + 1 < rows) {
      next.x = xrows.OwnRow(r + 1, g.filter_h - 1);
      next.y = out.Row(r + 1, thread);
    }
    row(e, xrows.FilterRows(thread, r), args.w, out.Row(r, thread), zeros.data(), next);
    out.Done(r, thread);
  });
}

// The channel blocks' width (two vectors of C), the multiplier-1 geometry of one image's block
// of gs channels of g (for the NHWC row kernels on a block's rows), the block's filter
// wb[k, c] = w[k, c0 + c] of a [taps, ch] filter, and the block's input rows that output row oh
// reads (xr[kh]; null outside the input), from its rows [lo, ...) at `rows`, row_size apart.
template <typename C>
inline constexpr int64_t kBlockChannels = int64_t{128} / static_cast<int64_t>(sizeof(C));
inline ConvGeometry BlockGeometry(const ConvGeometry& g, int64_t gs) {
  ConvGeometry e = g;
  e.batch = 1;
  e.in_depth = e.out_depth = e.filter_in_depth = e.groups = gs;
  return e;
}
template <typename C>
void BlockFilter(const C* w, int64_t taps, int64_t ch, int64_t c0, int64_t gs, C* wb) {
  for (int64_t k = 0; k < taps; ++k) std::copy_n(w + k * ch + c0, gs, wb + k * gs);
}
template <typename C>
void BlockFilterRows(const ConvGeometry& g, int64_t oh, const C* rows, int64_t lo, int64_t row_size,
                     const C** xr) {
  for (int64_t kh = 0; kh < g.filter_h; ++kh) {
    const int64_t ih = g.input_row(oh, kh);
    xr[kh] = ih >= 0 && ih < g.in_h ? rows + (ih - lo) * row_size : nullptr;
  }
}

// The forward of geometry f (multiplier 1) on NCHW operands, a block of G channels (two vectors)
// of one image at a time: the NHWC kernels' form without transposing whole rows of every
// channel. x: [batch, C, f.in_h, f.in_w] of T, w: [taps, C] of the compute type, y: [batch, C,
// f.out_h, f.out_w] of T. A work item (image, block) goes down its planes in bands of rows: it
// transposes the band's input rows of the G planes into NHWC rows of G channels (GatherRows),
// runs the NHWC row kernel over them into NHWC result rows, and transposes those back into the
// G result planes (ScatterRows). A band of input and result rows takes about kBandBytes: with
// bands of 32 or 64 KB the transposes of few rows cost more (mnv1_dw1_112x32 3.5-4.0 ms
// against 2.5), with 256 KB the layers of 56 and 112 columns slowed by 5-15% (out of L2 beside
// the other hyperthread's data). Each thread takes whole items; a block's filter is copied out
// once per item.
template <typename T>
void ForwardInChannelBlocks(const ConvGeometry& f, const T* x, const ComputeT<T>* w, T* y,
                            const KernelContext& ctx) {
  using C = ComputeT<T>;
  constexpr int64_t G = kBlockChannels<C>;
  const int64_t ch = f.in_depth, blocks = (ch + G - 1) / G, items = f.batch * blocks;
  const int64_t item_cost = G * f.out_h * f.out_w * f.filter_h * f.filter_w;
  const int nt = ItemThreads(ctx.num_threads, items, item_cost);
  constexpr int64_t kBandBytes = int64_t{128} << 10;
  const int64_t row_bytes = (f.in_w * f.stride_h + f.out_w) * G * static_cast<int64_t>(sizeof(C));
  const int64_t band = std::clamp<int64_t>(kBandBytes / row_bytes, 1, f.out_h);
  const int64_t band_in =
      std::min(f.in_h, (band - 1) * f.stride_h + (f.filter_h - 1) * f.dilation_h + 1);
  PerThread<C> xin(nt, band_in * f.in_w * G), yout(nt, band * f.out_w * G);
  PerThread<C> wb(nt, f.filter_h * f.filter_w * G);
  PerThread<const C*> rows(nt, f.filter_h);
  const WorkBuffer<C> zeros(static_cast<size_t>(G), C{0});
  const DwForwardFn<C> row = DwForwardRow(C{});
  const int64_t taps = f.filter_h * f.filter_w;
  ParallelRows(items, nt, ctx, [&](int64_t item, int t) {
    const int64_t b = item / blocks, c0 = item % blocks * G, gs = std::min(G, ch - c0);
    const ConvGeometry e = BlockGeometry(f, gs);
    BlockFilter(w, taps, ch, c0, gs, wb[t]);
    const T* xb = x + (b * ch + c0) * f.in_h * f.in_w;
    T* yb = y + (b * ch + c0) * f.out_h * f.out_w;
    const C** xr = rows[t];
    for (int64_t oh0 = 0; oh0 < f.out_h; oh0 += band) {
      const int64_t oh1 = std::min(f.out_h, oh0 + band);
      // The input rows the band reads, [lo, hi), inside the input.
      const int64_t lo = std::max<int64_t>(0, f.input_row(oh0, 0));
      const int64_t hi = std::min(f.in_h, f.input_row(oh1 - 1, f.filter_h - 1) + 1);
      if (hi > lo)
        GatherRows(xb, DataFormat::kNCHW, f.in_h, f.in_w, gs, 0, lo, hi - lo, xin[t], gs);
      for (int64_t oh = oh0; oh < oh1; ++oh) {
        BlockFilterRows(f, oh, xin[t], lo, f.in_w * gs, xr);
        row(e, xr, wb[t], yout[t] + (oh - oh0) * f.out_w * gs, zeros.data(), {});
      }
      ScatterRows(yout[t], yb, DataFormat::kNCHW, f.out_h, f.out_w, gs, 0, oh0, oh1 - oh0);
    }
  });
}

// The filter flipped in both spatial axes: wf[k, c] = w[taps - 1 - k, c] for the stride-1 input
// gradient, the forward of dy by it (TurnedForward).
template <typename C>
WorkBuffer<C> FlippedFilter(const C* w, int64_t taps, int64_t ch) {
  WorkBuffer<C> wf(static_cast<size_t>(taps * ch));
  for (int64_t k = 0; k < taps; ++k)
    std::copy(w + (taps - 1 - k) * ch, w + (taps - k) * ch, wf.begin() + k * ch);
  return wf;
}

template <typename T>
void DepthwiseKernels<T>::Forward(const KernelArgs<T>& args, const KernelContext& ctx) {
  if (UsesChannelBlocks(args.g, args.format, ConvOp::kForward))
    return ForwardInChannelBlocks(args.g, args.x_t, args.w, args.result_t, ctx);
  if (UsesPlanes(args.g, args.format, ConvOp::kForward, sizeof(ComputeT<T>)))
    return DwForwardPlanes(args, ctx);
  if (args.x_t != nullptr) return DwForward(args, args.x_t, args.format, ctx);
  DwForward(args, args.x, DataFormat::kNHWC, ctx);
}

// out[i] = the sum over m of in[i * mult + m], for i in [0, count): an input gradient of the
// expanded channels c*M + m summed into channel c.
template <typename C>
void SumOverMultiplier(const C* __restrict in, C* __restrict out, int64_t count, int64_t mult) {
  if (mult == 2) {  // the common case, as a loop the compiler vectorizes
    for (int64_t i = 0; i < count; ++i) out[i] = in[2 * i] + in[2 * i + 1];
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    C s = in[i * mult];
    for (int64_t m = 1; m < mult; ++m) s += in[i * mult + m];
    out[i] = s;
  }
}

// Input gradient at stride 1: the forward convolution of dy with the filter flipped in both
// spatial axes, dx[ih, iw, c*M + m] = sum_{kh, kw} dy[ih - pt' + kh*dh, iw - pl' + kw*dw, c*M + m]
// * w[fh-1-kh, fw-1-kw, c, m] with pt' = (fh-1)*dh - pt, pl' = (fw-1)*dw - pl, then the sum over
// m. A gather over out_backprop rows: each dx row is written once, from fh dy rows that stay in
// cache while neighbouring dy rows reuse them. dy in `format`, of type C or a 16-bit S: unless it
// is NHWC of type C, its rows are converted into a per-thread ring as they are first read.
template <typename T, typename S>
void DwBackpropInputStride1(const KernelArgs<T>& args, const S* dy, DataFormat format,
                            const KernelContext& ctx) {
  using C = ComputeT<T>;
  const ConvGeometry& g = args.g;
  const ConvGeometry e = Expanded(g);
  const ConvGeometry f = TurnedForward(e);
  const int64_t ch = e.out_depth, taps = g.filter_h * g.filter_w, mult = g.multiplier;
  const WorkBuffer<C> wf = FlippedFilter(args.w, taps, ch);
  const WorkBuffer<C> zeros(static_cast<size_t>(ch), C{0});
  const int64_t rows = g.batch * g.in_h, row_size = g.in_w * g.in_depth;
  const int64_t row_cost = g.in_w * taps * ch;
  const int nt = ThreadsFor(ctx.num_threads, rows * row_cost, 1 << 15);
  ResultRows<T> out(args, g.in_h, g.in_w, g.in_depth, nt);
  // With M > 1 the rows go to a per-thread row first (read right back): not streamed.
  const DwForwardFn<C> row =
      mult == 1 && out.direct() ? ForwardRowFor<C>(rows * row_size) : DwForwardRow(C{});
  // Per-thread buffers, allocated here, outside the region: dy row pointers, and with M > 1 one
  // row of per-channel gradients before the sum over m; dy's converted rows.
  const int64_t tmp_size = mult == 1 ? 0 : g.in_w * ch;
  PerThread<C> tmp(nt, tmp_size);
  PerThread<const C*> dr(nt, g.filter_h);
  std::optional<ExpandedInputRows<S, C>> converted;
  // dy's own rows whose pixels are a multiple of 2 KiB apart through a padded copy, as the
  // forward's input rows (ExpandedRows::PadsOwnRows). One pinned core of the AVX-512 EPYC,
  // paired call by call: mnv1_dw13_7x1024 0.154 -> 0.132 ms, mnv1_dw8_14x512 0.300 -> 0.233
  // (two threads 0.82 and 0.82); in double mnv1_dw13 0.81, mnv1_dw8 0.75, mnv1_dw6_28x256 1.00.
  if (ExpandedRows<S, C>::Copies(f, format, /*pad=*/true))
    converted.emplace(f, dy, format, nt, /*whole_images=*/false, /*pad=*/true);
  const ConvGeometry& fr = converted ? converted->geometry() : f;  // fr.in_depth: dy's stride
  const bool ahead = PrefetchesRowsAhead<C>(g.batch * g.out_h * g.out_w * ch + rows * row_size,
                                            ForwardSweeps<C>(fr));
  // dy's own row (NHWC of C) that filter row kh of dx row r reads, nullptr outside dy.
  const auto dy_row = [&](int64_t r, int64_t kh) -> const S* {
    const int64_t n = r / g.in_h, oh = r % g.in_h - f.pad_top + kh * g.dilation_h;
    return oh >= 0 && oh < g.out_h ? dy + (n * g.out_h + oh) * g.out_w * ch : nullptr;
  };
  // The rows shared out as the forward's (DwForward).
  ParallelRowsBalanced(rows, nt, ctx, [&](int64_t r, int t) {
    const C** drt = dr[t];
    const C* const* dyrows = drt;
    if (converted) {
      dyrows = converted->FilterRows(t, r);
    } else if constexpr (std::is_same_v<S, C>) {
      for (int64_t kh = 0; kh < g.filter_h; ++kh) drt[kh] = dy_row(r, kh);
    }
    // The next dx row's: its result row and the dy row its last filter row reads (dy's own).
    RowsAhead<C> next;
    next.next_block = mult == 1 && out.direct() && !ahead;
    if (next.next_block && r + 1 < rows) {
      next.first_y = out.Row(r + 1, t);
      if constexpr (std::is_same_v<S, C>) {
        if (!converted) next.first_x = dy_row(r + 1, g.filter_h - 1);
      }
    }
    if (ahead && mult == 1 && out.direct() && r + 1 < rows) {
      next.y = out.Row(r + 1, t);
      if constexpr (std::is_same_v<S, C>) {
        if (!converted) next.x = dy_row(r + 1, g.filter_h - 1);
      }
    }
    C* dxrow = out.Row(r, t);
    if (mult == 1) {
      row(fr, dyrows, wf.data(), dxrow, zeros.data(), next);
    } else {
      row(fr, dyrows, wf.data(), tmp[t], zeros.data(), next);
      SumOverMultiplier(tmp[t], dxrow, row_size, mult);
    }
    out.Done(r, t);
  });
}

// The input gradient at strides above 1: rows of the expanded channels c*M + m, with M > 1 into
// a per-thread row first and then summed over m. dy in `format`, of type C or a 16-bit S: unless
// NHWC of C, converted an image at a time as a thread's rows reach it (the row kernel reads dy
// rows across each input row's taps).
template <typename T, typename S>
void DwBackpropInputStrided(const KernelArgs<T>& args, const S* dy, DataFormat format,
                            const KernelContext& ctx) {
  using C = ComputeT<T>;
  const ConvGeometry& g = args.g;
  const ConvGeometry e = Expanded(g);
  const int64_t rows = g.batch * g.in_h, row_size = g.in_w * g.in_depth, mult = g.multiplier;
  const int64_t row_cost =
      g.in_w * g.filter_h * g.filter_w * g.out_depth / (g.stride_h * g.stride_w) + g.in_w;
  const int nt = ThreadsFor(ctx.num_threads, rows * row_cost, 1 << 15);
  ResultRows<T> out(args, g.in_h, g.in_w, g.in_depth, nt);
  const RowFn<C> row = mult == 1 && out.direct() && StreamsOutput<C>(rows * row_size)
                           ? DwBackpropInputRowStream(C{})
                           : DwBackpropInputRow(C{});
  const WorkBuffer<C> zeros(static_cast<size_t>(e.out_depth), C{0});
  ActivationChunks<S, C> dy_images(dy, format, g.batch, g.out_h, g.out_w, e.out_depth, g.out_h, nt,
                                   kSlotOutBackpropRows);
  // Per-thread buffers, allocated here, outside the region: the row kernel's tap lists (the
  // columns reaching each stride phase filled in), and with M > 1 a row of the expanded
  // channels.
  PerThread<IntPair> scratch = InputScratch(e, nt);
  PerThread<C> expanded(nt, mult == 1 ? 0 : row_size * mult);
  ParallelRows(rows, nt, ctx, [&](int64_t r, int thread) {
    C* dxrow = out.Row(r, thread);
    // Image r / in_h's dy, as image 0 of its chunk.
    const C* dyimage = dy_images.Get(thread, r / g.in_h);
    if (mult == 1) {
      row(e, args.w, dyimage, dxrow, 0, r % g.in_h, zeros.data(), scratch[thread]);
    } else {
      row(e, args.w, dyimage, expanded[thread], 0, r % g.in_h, zeros.data(), scratch[thread]);
      SumOverMultiplier(expanded[thread], dxrow, row_size, mult);
    }
    out.Done(r, thread);
  });
}

// The strided NCHW input gradient of multiplier 1, a block of G channels (two vectors) of one
// image at a time: the block's out_backprop planes transposed into an NHWC image of G channels
// (GatherRows), the NHWC row kernel's input-gradient rows computed from it in bands of about
// kBandBytes, each band transposed back into the block's G planes of dx (ScatterRows).
template <typename T>
void DwBackpropInputStridedChannelBlocks(const KernelArgs<T>& args, const KernelContext& ctx) {
  using C = ComputeT<T>;
  constexpr int64_t G = kBlockChannels<C>;
  const ConvGeometry& g = args.g;
  const int64_t ch = g.in_depth, blocks = (ch + G - 1) / G, items = g.batch * blocks;
  const int64_t taps = g.filter_h * g.filter_w;
  const int64_t item_cost = G * g.out_h * g.out_w * taps;
  const int nt = ItemThreads(ctx.num_threads, items, item_cost);
  constexpr int64_t kBandBytes = int64_t{128} << 10;
  const int64_t band =
      std::clamp<int64_t>(kBandBytes / (g.in_w * G * static_cast<int64_t>(sizeof(C))), 1, g.in_h);
  PerThread<C> dyin(nt, g.out_h * g.out_w * G), dxout(nt, band * g.in_w * G);
  PerThread<C> wb(nt, taps * G);
  // The row kernel's tap lists, the columns reaching each stride phase filled in (the same for
  // every block: BlockGeometry changes the channels alone).
  PerThread<IntPair> scratch = InputScratch(g, nt);
  const WorkBuffer<C> zeros(static_cast<size_t>(G), C{0});
  const RowFn<C> row = DwBackpropInputRow(C{});
  ParallelRows(items, nt, ctx, [&](int64_t item, int t) {
    const int64_t b = item / blocks, c0 = item % blocks * G, gs = std::min(G, ch - c0);
    const ConvGeometry e = BlockGeometry(g, gs);
    BlockFilter(args.w, taps, ch, c0, gs, wb[t]);
    GatherRows(args.dy_t + (b * ch + c0) * g.out_h * g.out_w, DataFormat::kNCHW, g.out_h, g.out_w,
               gs, 0, 0, g.out_h, dyin[t], gs);
    T* dxb = args.result_t + (b * ch + c0) * g.in_h * g.in_w;
    for (int64_t ih0 = 0; ih0 < g.in_h; ih0 += band) {
      const int64_t ih1 = std::min(g.in_h, ih0 + band);
      for (int64_t ih = ih0; ih < ih1; ++ih)
        row(e, wb[t], dyin[t], dxout[t] + (ih - ih0) * g.in_w * gs, 0, ih, zeros.data(),
            scratch[t]);
      ScatterRows(dxout[t], dxb, DataFormat::kNCHW, g.in_h, g.in_w, gs, 0, ih0, ih1 - ih0);
    }
  });
}

template <typename T>
void DepthwiseKernels<T>::BackpropInput(const KernelArgs<T>& args, const KernelContext& ctx) {
  const ConvGeometry& g = args.g;
  if (UsesChannelBlocks(g, args.format, ConvOp::kBackpropInput)) {
    if (g.stride_h != 1 || g.stride_w != 1) return DwBackpropInputStridedChannelBlocks(args, ctx);
    const int64_t taps = g.filter_h * g.filter_w;
    return ForwardInChannelBlocks(TurnedForward(g), args.dy_t,
                                  FlippedFilter(args.w, taps, g.out_depth).data(), args.result_t,
                                  ctx);
  }
  if (UsesPlanes(g, args.format, ConvOp::kBackpropInput, sizeof(ComputeT<T>)))
    return DwBackpropInputPlanes(args, ctx);
  const bool stride1 = g.stride_h == 1 && g.stride_w == 1;
  if (args.dy_t != nullptr) {
    if (stride1) return DwBackpropInputStride1(args, args.dy_t, args.format, ctx);
    return DwBackpropInputStrided(args, args.dy_t, args.format, ctx);
  }
  if (stride1) return DwBackpropInputStride1(args, args.dy, DataFormat::kNHWC, ctx);
  DwBackpropInputStrided(args, args.dy, DataFormat::kNHWC, ctx);
}

// The filter gradients the sweep computes: 3x3 filters at stride_w 1 and dilation 1, with
// AVX-512 (its 32 registers hold the 18 sums, the window and the input; with 16, the row
// kernel).
bool UseSweep(const ConvGeometry& g) {
  return g.filter_h == 3 && g.dilation_h == 1 && TapRowForm(g, 3, 1) && ActiveIsa() == Isa::kAvx512;
}

// The filter gradient sweep's L2 size (1 MiB when unknown), and the bytes of one output row's
// x and dy (in_w + out_w pixels of out_depth channels of elem_size bytes).
constexpr int64_t kSweepL2Fallback = int64_t{1} << 20;
inline int64_t SweepRowBytes(const ConvGeometry& g, size_t elem_size) {
  return (g.in_w + g.out_w) * g.out_depth * static_cast<int64_t>(elem_size);
}
// Whether an image's x and dy outgrow L2.
inline bool OutgrowsL2(const ConvGeometry& g, size_t elem_size) {
  return g.out_h * SweepRowBytes(g, elem_size) > CacheBytes(2, kSweepL2Fallback);
}

// The output rows of the filter gradient sweep's bands (DwBackpropFilterSweep), for `threads`
// threads sharing `blocks` channel blocks of each of g's images. A band's channel blocks run one
// after the other, each reading 2L channels (two 64-byte lines) of every pixel: where there are
// several and an image's x and dy outgrow L2, a band covers as many rows as take an eighth of it
// over all channels, so that the lines the first block brings with its own are still in L2 when
// the next blocks read them. Whole images measured 27-33% slower, one pinned core, best of 6
// alternated rounds (mnv1_dw4_56x128 2.02 -> 1.40 ms in bands of 4 rows, mnv1_dw6_28x256
// 0.95 -> 0.71, mnv2_dw_56x144 1.78 -> 1.36); bands of 2 to 8 rows measured within the noise of
// each other. Images between half of L2 and L2 were banded too, until whole images prefetching the
// next block (as the sweep then did) measured faster, one pinned core, paired call by call:
// mnv2_dw_14x576 (0.9 MB) 16-41%, 14x384 10-22%, mnv1_dw8_14x512 6-9% (its blocks then copied
// into a buffer), float16 and bfloat16 8-11%; two threads 10-15%. Banding from 1.5 L2
// instead cost mnv2_dw_28x192 (1.2 MB) 6%. Both still hold with the prefetch along the rows
// (SweepPrefetchPixels): whole images of mnv1_dw4, mnv2_dw_56x144 and mnv1_dw6 17-23% slower,
// bands of the 14 x 14 layers 15-31%. With fewer than 8 items a thread, bands are cut finer so
// that the threads share them evenly.
int64_t SweepBandRows(const ConvGeometry& g, int64_t blocks, int threads, size_t elem_size) {
  int64_t rows = g.out_h;
  if (blocks > 1 && OutgrowsL2(g, elem_size))
    rows = std::clamp<int64_t>(CacheBytes(2, kSweepL2Fallback) / 8 / SweepRowBytes(g, elem_size), 1,
                               g.out_h);
  const int64_t items = g.batch * blocks;
  if (threads > 1 && items < int64_t{8} * threads) {
    const int64_t bands = std::min((int64_t{8} * threads + items - 1) / items, g.out_h);
    rows = std::min(rows, (g.out_h + bands - 1) / bands);
  }
  return rows;
}

// Whether the filter gradient sweep reads each image through a copy in channel blocks
// (BlockImage): where x's pixels (in place: rows converted for 16-bit types or a multiplier have a
// padded stride) and dy's are a multiple of 2 KiB apart, a block's lines fall in one or two of
// the 64 sets of the 8-way L1, which then holds too few of the rows a sweep reads, and the sweep
// reads them from L2. The copy reads each pixel whole and in order, and the sweep then reads
// contiguous blocks. One pinned core of an AVX-512 EPYC, paired call by call: mnv1_dw13_7x1024
// (4 KiB apart) 0.29 -> 0.17 ms (float64 0.57), mnv1_dw8_14x512 (2 KiB) 0.88, float64
// mnv1_dw8 0.77 and mnv1_dw6_28x256 (2 KiB, 3.2 MB an image) 0.87; two threads mnv1_dw13 0.15
// -> 0.10 ms. Pixels 1 KiB apart measured slower copied (mnv1_dw6_28x256: 1.46), and the copy is
// of a whole image (x, and dy where its image outgrows L2: DwBackpropFilterSweep), x and dy
// together up to 4 times L2.
template <typename C>
bool SweepBlocksImages(const ConvGeometry& e) {
  const int64_t pixel = e.out_depth * static_cast<int64_t>(sizeof(C));
  return e.in_depth == e.out_depth && CrowdsL1Sets<C>(e.out_depth) &&
         (e.in_h * e.in_w + e.out_h * e.out_w) * pixel <= 4 * CacheBytes(2, kSweepL2Fallback);
}

// One NHWC image of `pixels` pixels of `ch` channels (a multiple of `block`), copied into blocks
// of `block` channels: block [c0, c0 + block) at dst + c0 * pixels, each pixel's channels
// `block` apart. (A copy of constant length: of length `block` as an argument, mnv1_dw13's
// filter gradient took 0.24 ms instead of 0.17.) On one thread each pixel is read whole, in
// order, its pieces written to ch / block places at once; with `by_blocks`, a block at a time,
// each block written in order. On the Zen 5 host, 300 calls paired: two threads copying by
// blocks took mnv1_dw8_14x512's filter gradient 0.67-0.69 of its time and mnv1_dw13_7x1024's
// 0.88-0.93 (by pixels, a thread's copy had taken 1.8x its one-thread time; builds alternated,
// 6 rounds: 0.68 and 0.96), one pinned thread 1.08-1.09, so one thread keeps the pixel order,
// and so does float64 (two threads, builds alternated 4 rounds: mnv1_dw8 0.96, mnv1_dw13 1.11,
// mnv1_dw6_28x256 1.04).
template <typename C, int64_t block>
void BlockImage(const C* __restrict src, int64_t pixels, int64_t ch, C* __restrict dst,
                bool by_blocks) {
  if (by_blocks) {
    for (int64_t c0 = 0; c0 < ch; c0 += block)
      for (int64_t p = 0; p < pixels; ++p)
        std::copy_n(src + p * ch + c0, block, dst + c0 * pixels + p * block);
    return;
  }
  for (int64_t p = 0; p < pixels; ++p)
    for (int64_t c0 = 0; c0 < ch; c0 += block)
      std::copy_n(src + p * ch + c0, block, dst + c0 * pixels + p * block);
}

// The filter gradient as sweeps (DwSweepBlock): work items of (image, band of output rows,
// channel block), image-major and then band-major, each thread adding into its own partial sum
// (bands: SweepBandRows). x and dy in `format`, of type C or 16-bit S, converted an image at a
// time as a thread's items reach it unless NHWC of C.
template <typename T, typename S>
void DwBackpropFilterSweep(const KernelArgs<T>& args, const S* x, const S* dy, DataFormat format,
                           const KernelContext& ctx, int nt) {
  using C = ComputeT<T>;
  const ConvGeometry& g = args.g;
  constexpr int64_t L = 64 / sizeof(C), kBlock = 2 * L;
  // Items read x where it is (NHWC of C, multiplier 1), whatever its pixel stride. Pixels an
  // odd multiple of 2 KiB apart, which fall in two sets of the 8-way L1, were copied a channel
  // block at a time into a per-thread buffer until the sweep prefetched along its rows
  // (SweepPrefetchPixels); since, reading them in place measured faster: one pinned core,
  // paired call by call, mnv1_dw8_14x512 0.92 (two threads 0.96), float64 mnv1_dw6_28x256 0.84.
  ExpandedInputRows<S, C> xrows(g, x, format, nt, /*whole_images=*/true);
  const ConvGeometry& e = xrows.geometry();
  const int64_t ch = e.out_depth;
  // Channel blocks: `full` of 2L channels, then at most one of L, then the rest (under L).
  const int64_t full = ch / kBlock, half = ch % kBlock >= L ? 1 : 0;
  const int64_t tail = ch - full * kBlock - half * L;
  const int64_t nb = full + half + (tail > 0 ? 1 : 0);
  const int64_t band_rows = SweepBandRows(g, nb, nt, sizeof(C));
  const int64_t bands = (g.out_h + band_rows - 1) / band_rows;
  const DwSweepFn<C> sweep = DwSweep(C{});
  ActivationChunks<S, C> dy_images(dy, format, g.batch, g.out_h, g.out_w, ch, g.out_h, nt,
                                   kSlotOutBackpropRows);
  T* dw = args.filter_grad->template data<T>();
  // Each thread's copy of its current image in channel blocks (SweepBlocksImages), x and, where
  // dy's image outgrows L2, dy, the copies ThreadStride apart (two threads, mnv1_dw13_7x1024
  // 0.119 -> 0.109 ms, mnv1_dw8_14x512 0.190 -> 0.162, separate processes alternated). A dy
  // image that fits L2 is read where it is (each block's piece of a pixel once per sweep, its
  // lines crowding a few L1 sets evicting only each other) and the sums go straight into the
  // thread's partial sums, instead of into a block-sized buffer then added. Against copying dy
  // too, one pinned core, separate processes alternated: mnv1_dw8_14x512 0.292 -> 0.228 ms,
  // mnv1_dw13_7x1024 0.167 -> 0.152, in float64 0.77 and 0.91 of their time; float64
  // mnv1_dw6_28x256 (a 1.6 MB dy image) 1.11, so that is copied. A dy converted into a thread's
  // buffer (float16, bfloat16) is copied as before: float16 mnv1_dw8 measured 0.87 read in
  // place, but mnv1_dw13 1.04.
  const bool blocked = SweepBlocksImages<C>(e);
  const bool by_blocks = nt > 1 && sizeof(C) == 4;  // BlockImage's order
  const int64_t xhw = e.in_h * e.in_w, dhw = e.out_h * e.out_w;
  const bool dy_in_place =
      std::is_same_v<S, C> && format == DataFormat::kNHWC &&
      dhw * ch * static_cast<int64_t>(sizeof(C)) <= CacheBytes(2, kSweepL2Fallback);
  const int64_t copy = ThreadStride<C>(dy_in_place ? xhw * ch : (xhw + dhw) * ch + 9 * kBlock, nt);
  Reused<C> copies(kSlotBlockedImages);
  PerThread<int64_t> copied(nt, 1, -1);  // the image in each thread's copy
  if (blocked) copies->resize(static_cast<size_t>(nt * copy));
  ConvGeometry eb = e;  // x's pixels kBlock apart in the copy, dy's where they are
  eb.in_depth = kBlock;
  SumRowsPerThread<T, C>(g.batch * bands * nb, 9 * ch, nt, ctx, dw, [&](int64_t item, C* mine) {
    const int64_t n = item / (bands * nb), band = item / nb % bands;
    const int64_t b = item % nb,
                  b0 = std::min(b, full) * kBlock + std::max<int64_t>(b - full, 0) * L;
    const int64_t width = b < full ? kBlock : (b == full && half ? L : tail);
    const int64_t oh0 = band * band_rows, oh1 = std::min(g.out_h, oh0 + band_rows);
    const int thread = TeamThread();
    if (!blocked) {
      sweep(e, xrows.Image(thread, n), dy_images.Get(thread, n), oh0, oh1, b0, b0, width, mine);
      return;
    }
    // Every block is whole (kBlock channels of 128 bytes; the pixels a multiple of 2 KiB).
    C* xb = copies.data() + thread * copy;
    const bool fresh = *copied[thread] != n;
    *copied[thread] = n;
    if (fresh) BlockImage<C, kBlock>(xrows.Image(thread, n), xhw, ch, xb, by_blocks);
    if (dy_in_place) {
      sweep(eb, xb + b0 * xhw, dy_images.Get(thread, n), oh0, oh1, b0, 0, kBlock, mine);
      return;
    }
    C* dyb = xb + xhw * ch;  // after x's copy: dy's, then one block's sums
    C* sums = dyb + dhw * ch;
    if (fresh) BlockImage<C, kBlock>(dy_images.Get(thread, n), dhw, ch, dyb, by_blocks);
    std::fill_n(sums, 9 * kBlock, C{0});
    sweep(BlockGeometry(e, kBlock), xb + b0 * xhw, dyb + b0 * dhw, oh0, oh1, 0, 0, kBlock, sums);
    for (int64_t k = 0; k < 9; ++k)
      for (int64_t c = 0; c < kBlock; ++c) mine[k * ch + b0 + c] += sums[k * kBlock + c];
  });
}

// The filter gradient from x and dy in `format`, of type C or 16-bit S, converted a row at a
// time (the sweep: an image at a time) unless NHWC of C.
template <typename T, typename S>
void DwBackpropFilter(const KernelArgs<T>& args, const S* x, const S* dy, DataFormat format,
                      const KernelContext& ctx) {
  using C = ComputeT<T>;
  const ConvGeometry& g = args.g;
  const int64_t fsize = g.filter_elements();
  const int64_t rows = g.batch * g.out_h;
  const int nt = ThreadsFor(ctx.num_threads, rows * g.out_w * fsize, 1 << 15);
  if (UseSweep(g)) return DwBackpropFilterSweep(args, x, dy, format, ctx, nt);
  T* dw = args.filter_grad->template data<T>();
  const DwRowsFn<C> row = DwBackpropFilterRow(C{});
  ExpandedInputRows<S, C> xrows(g, x, format, nt);
  const ConvGeometry& e = xrows.geometry();
  ActivationChunks<S, C> dy_rows(dy, format, g.batch, g.out_h, g.out_w, e.out_depth, 1, nt,
                                 kSlotOutBackpropRows);
  SumRowsPerThread<T, C>(rows, fsize, nt, ctx, dw, [&](int64_t r, C* mine) {
    const int thread = TeamThread();
    row(e, xrows.FilterRows(thread, r), dy_rows.Get(thread, r), mine, nullptr);
  });
}

// The NCHW filter gradient of multiplier 1, a block of G channels (two vectors) at a time. A
// work item is a block and a chunk of the batch (kImageChunks chunks, fewer for a smaller batch):
// image by image, its thread transposes the block's input and out_backprop planes into NHWC
// images of G channels (GatherRows) and adds their filter gradient into the item's sums (the 3x3
// sweep where UseSweep says so, else the row kernel). The items' sums are then added a block at
// a time, chunk after chunk, into dw. Items and orders are fixed by the geometry: the bits do not
// depend on the thread count, and two threads share an odd number of blocks evenly (with whole
// blocks per thread, the 5 blocks of 144 channels went 3 to one thread and 2 to the other).
constexpr int64_t kImageChunks = 4;
template <typename T>
void DwBackpropFilterChannelBlocks(const KernelArgs<T>& args, const KernelContext& ctx) {
  using C = ComputeT<T>;
  constexpr int64_t G = kBlockChannels<C>, L = G / 2;
  const ConvGeometry& g = args.g;
  const int64_t ch = g.in_depth, blocks = (ch + G - 1) / G, taps = g.filter_h * g.filter_w;
  const int64_t chunks = std::min(g.batch, kImageChunks), items = blocks * chunks;
  const int64_t item_cost = G * (g.batch / chunks) * g.out_h * g.out_w * taps;
  const int nt = ItemThreads(ctx.num_threads, items, item_cost);
  PerThread<C> xin(nt, g.in_h * g.in_w * G), dyin(nt, g.out_h * g.out_w * G);
  PerThread<const C*> rows(nt, g.filter_h);
  // Each item's sums on cache lines of their own.
  const int64_t stride = WholeLines<C>(taps * G);
  Reused<C> partial(kSlotPartialSums);
  partial->resize(static_cast<size_t>(items * stride));
  const bool use_sweep = UseSweep(g);
  // The sweep sums in registers over the rows it is given: 4 rows at a time into `sums` keep
  // its chains short. An imported 2 x 128 x 56 x 56 layer (values to 304): max error against
  // float64 3.1e-4 over whole images, 1.1e-4 in 8 rows, 6.7e-5 in 4 (NHWC: 7.1e-5); the time
  // the same within noise (mnv1_dw4_56x128 2.13 / 2.19 ms, mnv2_dw_28x192 0.88 / 0.83).
  constexpr int64_t kSumRows = 4;
  const DwSweepFn<C> sweep = DwSweep(C{});
  const DwRowsFn<C> row = DwBackpropFilterRow(C{});
  ParallelRows(items, nt, ctx, [&](int64_t item, int t) {
    const int64_t blk = item / chunks, chunk = item % chunks;
    const int64_t c0 = blk * G, gs = std::min(G, ch - c0);
    const ConvGeometry e = BlockGeometry(g, gs);
    C* sums = partial.data() + item * stride;
    std::fill_n(sums, taps * gs, C{0});
    const int64_t n1 = (chunk + 1) * g.batch / chunks;
    for (int64_t n = chunk * g.batch / chunks; n < n1; ++n) {
      GatherRows(args.x_t + (n * ch + c0) * g.in_h * g.in_w, DataFormat::kNCHW, g.in_h, g.in_w, gs,
                 0, 0, g.in_h, xin[t], gs);
      GatherRows(args.dy_t + (n * ch + c0) * g.out_h * g.out_w, DataFormat::kNCHW, g.out_h, g.out_w,
                 gs, 0, 0, g.out_h, dyin[t], gs);
      if (use_sweep) {
        // The sweep's channel blocks: 2L, L, then the rest (under L).
        for (int64_t s0 = 0; s0 < gs;) {
          const int64_t width = gs - s0 >= G ? G : gs - s0 >= L ? L : gs - s0;
          for (int64_t oh0 = 0; oh0 < g.out_h; oh0 += kSumRows)
            sweep(e, xin[t], dyin[t], oh0, std::min(g.out_h, oh0 + kSumRows), s0, s0, width, sums);
          s0 += width;
        }
        continue;
      }
      const C** xr = rows[t];
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        BlockFilterRows(g, oh, xin[t], 0, g.in_w * gs, xr);
        row(e, xr, dyin[t] + oh * g.out_w * gs, sums, nullptr);
      }
    }
  });
  if (ctx.cancelled()) return;
  T* dw = args.filter_grad->template data<T>();
  const int adders = ItemThreads(ctx.num_threads, blocks, taps * G * chunks);
  ParallelFor(adders, blocks, [&](int64_t blk) {
    const int64_t c0 = blk * G, gs = std::min(G, ch - c0), size = taps * gs;
    C* __restrict sums = partial.data() + blk * chunks * stride;
    for (int64_t chunk = 1; chunk < chunks; ++chunk) {
      const C* __restrict theirs = sums + chunk * stride;
      for (int64_t i = 0; i < size; ++i) sums[i] += theirs[i];
    }
    for (int64_t k = 0; k < taps; ++k) ConvertRun(sums + k * gs, dw + k * ch + c0, gs);
  });
}

template <typename T>
void DepthwiseKernels<T>::BackpropFilter(const KernelArgs<T>& args, const KernelContext& ctx) {
  if (UsesChannelBlocks(args.g, args.format, ConvOp::kBackpropFilter))
    return DwBackpropFilterChannelBlocks(args, ctx);
  if (UsesPlanes(args.g, args.format, ConvOp::kBackpropFilter, sizeof(ComputeT<T>)))
    return DwBackpropFilterPlanes(args, ctx);
  if (args.x_t != nullptr) return DwBackpropFilter(args, args.x_t, args.dy_t, args.format, ctx);
  DwBackpropFilter(args, args.x, args.dy, DataFormat::kNHWC, ctx);
}

}  // namespace

Status RunDepthwiseKernels(const ConvState& state, const Tensor& a, const Tensor& b, Tensor* out,
                           const KernelContext& ctx) {
  return RunOptimizedKernels<DepthwiseKernels>(state, a, b, out, ctx);
}

}  // namespace blockflow::conv::internal
