#include "blocks/conv/conv2d.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "blocks/conv/asm_tiles.h"
#include "blocks/conv/optimized_util.h"
#include "blocks/conv/packed_gemm.h"
#include "blocks/conv/row_rings.h"
#include "blocks/conv/run_kernels.h"
#include "blocks/conv/winograd.h"
#include "core/team.h"

namespace blockflow::conv::internal {
namespace {

// ---------------------------------------------------------------------------------------------
// Optimized kernels: NHWC compute buffers of C (float or double), one row per call, parallel
// over rows that do not overlap. Each op is a small GEMM per filter tap; a register tile of
// P pixels (or P input channels for the filter gradient) by NV 64-byte vectors of channels
// accumulates in registers, and channels left over after the last full vector take a plain
// loop. Taps outside the input read `zeros` instead of branching per element.
// ---------------------------------------------------------------------------------------------

// The filter packed for the vector tiles: for each group, its lanes that fill whole vectors
// (j < vec_width: the forward's output channels, the input gradient's input channels) in pairs
// of L-lane blocks, each pair a contiguous panel [tap][reduce][2L], so the tile streams it
// instead of striding by the lanes of the filter (which also maps every row of a wide filter to
// the same L1 set). A tile's two vectors per step are then one pointer apart by 64 bytes, not
// two pointers: on AVX-512 the 7 x 2 forward tile's loop ran short of general registers and
// reloaded one from the stack every step. An odd last block is a panel [tap][reduce][L] of its
// own. The lanes [j, j + L) start at PanelOffset, the next step PanelStep lanes further.
inline int64_t PanelOffset(const ConvGeometry& g, int64_t vec_width, int64_t grp, int64_t j,
                           int64_t reduce, int64_t L) {
  const int64_t pair = j - j % (2 * L);
  return (grp * vec_width + pair) * g.filter_h * g.filter_w * reduce + j % (2 * L);
}
inline int64_t PanelStep(int64_t vec_width, int64_t j, int64_t L) {
  return j - j % (2 * L) + 2 * L <= vec_width ? 2 * L : L;
}

// A filter as PackPanels reads it: element (grp, tap, r, lane) at
// base[grp * group + tap * tap_step + r * reduce + lane * lane_step], r the reduced channel
// (the forward's input channel, the input gradient's output channel) and lane the channel the
// tiles' vectors hold. tap_step may be negative (the filter turned half a turn). Either the
// lanes are adjacent (lane_step 1: the forward) or the reduced channels are (reduce 1: the input
// gradients, which read the HWIO filter's input channels as lanes).
template <typename C>
struct PanelSource {
  const C* base;
  int64_t group, tap_step, reduce, lane_step;
  C operator()(int64_t grp, int64_t tap, int64_t r, int64_t lane) const {
    return base[grp * group + tap * tap_step + r * reduce + lane * lane_step];
  }
};

// Panels of a filter for the vector tiles, as PanelOffset lays them out: lane l of block j's
// (tap, r) holding src(grp, tap, r, j + l). Per tap, a block is a copy of `reduce` runs of L
// lanes where the lanes are adjacent in src (the forward), else a transposition, in 8 x 8
// register transposes (element by element before: the stride-2 28x128 input gradient 1.1%
// faster, the median of 50 calls paired with the old way's). The panels are shared
// among up to `num_threads` threads: packed on one, a 3x3 filter of 128 to 128 channels took 1.5%
// of a stride-2 forward's time on one thread and 3.4% on two.
template <typename C>
void PackPanels(const ConvGeometry& g, int64_t lanes_vec, int64_t reduce, const PanelSource<C>& src,
                C* o, int num_threads) {
  constexpr int64_t L = 64 / sizeof(C);
  const int64_t taps = g.filter_h * g.filter_w, blocks = lanes_vec / L;
  const int nt = ThreadsFor(num_threads, g.groups * lanes_vec * taps * reduce, 1 << 15);
  if (src.lane_step == 1) {
    // The forward: src's rows (grp, tap, r) read in order, each copied a block at a time into
    // the blocks' panels (read panel by panel, the pieces lie a row apart, and the filter comes
    // from memory: 1.7% of the stride-2 28x128 forward's time saved), with no per-lane
    // indexing.
    const int64_t rows = g.groups * taps * reduce;
    ParallelFor(nt, rows, [&](int64_t i) {
      const int64_t grp = i / (taps * reduce), tr = i % (taps * reduce);
      const C* __restrict s =
          src.base + grp * src.group + tr / reduce * src.tap_step + tr % reduce * src.reduce;
      for (int64_t j = 0; j < lanes_vec; j += L) {
        C* __restrict d =
            o + PanelOffset(g, lanes_vec, grp, j, reduce, L) + tr * PanelStep(lanes_vec, j, L);
        __builtin_memcpy(d, s + j, L * sizeof(C));  // 64 bytes: four or two vector moves
      }
    });
    return;
  }
  BF_CHECK(src.reduce == 1, "a filter's lanes or its reduced channels must be adjacent");
  const bool fast = ActiveIsa() != Isa::kBase;
  ParallelFor(nt, g.groups * blocks, [&](int64_t p) {
    const int64_t grp = p / blocks, j = p % blocks * L;
    const int64_t step = PanelStep(lanes_vec, j, L);
    C* panel = o + PanelOffset(g, lanes_vec, grp, j, reduce, L);
    for (int64_t t = 0; t < taps; ++t) {
      const C* s = src.base + grp * src.group + t * src.tap_step + j * src.lane_step;
      TransposeBlock(s, src.lane_step, panel + t * reduce * step, step, L, reduce, fast);
    }
  });
}

// The forward's panels (PackPanels) and after them, if some output channels are left after
// the last whole vector, the HWIO filter; the filter given as src(grp, tap, ci, co), group grp's
// output channel co (src(0, tap, ci, co): the HWIO filter's w[tap, ci, co]).
template <typename C>
void PackForwardFilterFrom(const ConvGeometry& g, const PanelSource<C>& src, WorkBuffer<C>* out,
                           int num_threads) {
  constexpr int64_t L = 64 / sizeof(C);
  const int64_t taps = g.filter_h * g.filter_w, cig = g.filter_in_depth, co_all = g.out_depth;
  const int64_t cog = co_all / g.groups, cog_vec = cog - cog % L;
  const int64_t packed = g.groups * cog_vec * taps * cig;
  out->resize(static_cast<size_t>(packed + taps * cig * co_all));
  C* o = out->data();
  PackPanels(g, cog_vec, cig, src, o, num_threads);
  // The HWIO filter, for the output channels after the last whole vector (ForwardRest) only.
  if (cog_vec < cog) {
    C* hwio = o + packed;
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t ci = 0; ci < cig; ++ci)
        for (int64_t co = 0; co < co_all; ++co)
          hwio[(t * cig + ci) * co_all + co] = src(0, t, ci, co);
  }
}

#if defined(BF_CONV_ASM_TILES)
// clang-format off
// Pixel p's products for one step: its input at displacement bf_d from `addr`, broadcast into
// zmm31, times the step's four filter vectors: three in zmm28-30, the fourth read from the
// panel (L1) by its multiply-add.
#define BF_QUAD_PIXEL(addr, a0, a1, a2, a3)                                                        \
  "vbroadcastss bf_d" addr ", %%zmm31\n\t"                                                         \
  "vfmadd231ps %%zmm31, %%zmm28, %%zmm" #a0 "\n\t"                                                \
  "vfmadd231ps %%zmm31, %%zmm29, %%zmm" #a1 "\n\t"                                                \
  "vfmadd231ps %%zmm31, %%zmm30, %%zmm" #a2 "\n\t"                                                \
  "vfmadd231ps bf_w + 64(%[w], %[pb]), %%zmm31, %%zmm" #a3 "\n\t"
// One step: the two pairs' vectors (bf_w bytes into the first pair's panel, and `pb` bytes
// further, into the second's; the last one read by each multiply-add), then the 7 pixels at
// x + p * ps, as base plus scaled index with i1 = ps, i3 = 3 * ps, i5 = 5 * ps.
#define BF_QUAD_STEP                                                                               \
  "vmovups bf_w(%[w]), %%zmm28\n\t"                                                                \
  "vmovups bf_w + 64(%[w]), %%zmm29\n\t"                                                           \
  "vmovups bf_w(%[w], %[pb]), %%zmm30\n\t"                                                         \
  BF_QUAD_PIXEL("(%[x])", 0, 1, 2, 3)                                                              \
  BF_QUAD_PIXEL("(%[x], %[i1])", 4, 5, 6, 7)                                                       \
  BF_QUAD_PIXEL("(%[x], %[i1], 2)", 8, 9, 10, 11)                                                  \
  BF_QUAD_PIXEL("(%[x], %[i3])", 12, 13, 14, 15)                                                   \
  BF_QUAD_PIXEL("(%[x], %[i1], 4)", 16, 17, 18, 19)                                                \
  BF_QUAD_PIXEL("(%[x], %[i5])", 20, 21, 22, 23)                                                   \
  BF_QUAD_PIXEL("(%[x], %[i3], 2)", 24, 25, 26, 27)
#define BF_QUAD_STORES(op)                                                                         \
  BF_ASM_STORE4(op, 0, 1, 2, 3) BF_ASM_STORE4(op, 4, 5, 6, 7) BF_ASM_STORE4(op, 8, 9, 10, 11)      \
  BF_ASM_STORE4(op, 12, 13, 14, 15) BF_ASM_STORE4(op, 16, 17, 18, 19)                              \
  BF_ASM_STORE4(op, 20, 21, 22, 23) BF_ASM_STORE4(op, 24, 25, 26, 27)
// The forward's tile of 7 pixels by 4 vectors of output channels (two pairs of vectors, their
// panels `pb` bytes apart) on AVX-512 in float, for the tiles whose pixels read only inside
// their rows (ForwardTiles' `inside`): over the filter rows kh whose xk[kh] (pixel 0's first
// input in that row) is not null, pixel p's sums take the row's `run` steps q, input
// xk[kh][p * ps bytes + q] times the panels' vectors at w + (kh * run + q) * 128 bytes, fused
// multiply-adds in the order of AddTapPixels (the bits of the compiled 7 x 2 tiles, a pair at a
// time, and of AVX2's). Pixel p's four vectors are stored at y + p * ys bytes, past the caches
// when `nt`.
//
// 28 sums, 3 filter vectors and the broadcast input take all 32 registers: a step makes 3 + 7
// + 7 loads for its 28 multiply-adds. With all 4 filter vectors in registers and each input
// broadcast inside the multiply-adds ({1to16}: 4 + 28 loads), a Zen 5 core (two 512-bit
// multiply-adds a cycle) ran slower, one pinned core, builds alternated 8 rounds, minima: the
// stride-2 28x128 forward 2.04 -> 1.92 ms, and with Winograd off resnet_56x64's forward and
// input gradient 8.54 -> 7.80 and 8.77 -> 7.67. On the earlier Zen 4 host the {1to16} form had
// beaten the compiled 7 x 2 tiles, which read each input once per pair and broadcast it into a
// register of its own, by 0.65-1.6%. A 14 x 2 tile in asm (one pair, 14 pixels) measured
// 0.5-1.5% slower than the compiled 7 x 2 there.
inline void QuadTileAvx512(const float* const* xk, int64_t rows, const float* w, int64_t pb,
                           int64_t run, int64_t ps, float* y, int64_t ys, bool nt) {
  const int64_t i1 = ps, i3 = 3 * ps, i5 = 5 * ps, row_bytes = run * 128, nt64 = nt ? 1 : 0;
  const float* x = nullptr;
  int64_t kh = 0, q = 0;
  asm volatile(
      BF_ASM_ZERO("0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, "
                  "22, 23, 24, 25, 26, 27")
      "xor %k[kh], %k[kh]\n\t"
      "1:\n\t"
      "mov (%[xk], %[kh], 8), %[x]\n\t"
      "test %[x], %[x]\n\t"
      "jz 5f\n\t"
      // Four steps a pass while four are left, then one at a time.
      "mov %[run], %[q]\n\t"
      "sub $4, %[q]\n\t"
      "jl 7f\n\t"
      "6:\n\t"
      ".set bf_d, 0\n\t"
      ".set bf_w, 0\n\t"
      ".rept 4\n\t"
      BF_QUAD_STEP
      ".set bf_d, bf_d + 4\n\t"
      ".set bf_w, bf_w + 128\n\t"
      ".endr\n\t"
      "add $16, %[x]\n\t"
      "add $512, %[w]\n\t"
      "sub $4, %[q]\n\t"
      "jge 6b\n\t"
      "7:\n\t"
      "add $4, %[q]\n\t"
      "jz 2f\n\t"
      "8:\n\t"
      ".set bf_d, 0\n\t"
      ".set bf_w, 0\n\t"
      BF_QUAD_STEP
      "add $4, %[x]\n\t"
      "add $128, %[w]\n\t"
      "dec %[q]\n\t"
      "jnz 8b\n\t"
      "jmp 2f\n\t"
      // A filter row outside the input: its panel rows skipped.
      "5:\n\t"
      "add %[row_bytes], %[w]\n\t"
      "2:\n\t"
      "inc %[kh]\n\t"
      "cmp %[rows], %[kh]\n\t"
      "jne 1b\n\t"
      "cmpq $0, %[nt]\n\t"
      "jz 3f\n\t"
      BF_QUAD_STORES("vmovntps")
      "jmp 4f\n\t"
      "3:\n\t"
      BF_QUAD_STORES("vmovups")
      "4:\n\t"
      : [w] "+r"(w), [x] "=&r"(x), [kh] "+&r"(kh), [q] "=&r"(q), [y] "+r"(y)
      : [xk] "r"(xk), [pb] "r"(pb), [i1] "r"(i1), [i3] "r"(i3), [i5] "r"(i5), [ys] "r"(ys),
        [rows] "m"(rows), [run] "m"(run), [row_bytes] "m"(row_bytes), [nt] "m"(nt64)
      : "zmm0", "zmm1", "zmm2", "zmm3", "zmm4", "zmm5", "zmm6", "zmm7", "zmm8", "zmm9", "zmm10",
        "zmm11", "zmm12", "zmm13", "zmm14", "zmm15", "zmm16", "zmm17", "zmm18", "zmm19", "zmm20",
        "zmm21", "zmm22", "zmm23", "zmm24", "zmm25", "zmm26", "zmm27", "zmm28", "zmm29", "zmm30",
        "zmm31", "cc", "memory");
}
#undef BF_QUAD_STORES
#undef BF_QUAD_STEP
#undef BF_QUAD_PIXEL
// clang-format on
#endif

// The filter rows a QuadTileAvx512 takes at most (the pointers its caller gathers).
constexpr int64_t kMaxQuadRows = 16;

// Forward, output channels [grp*cog + j0, + blocks*NV*L) of one output row yrow:
// y[ow, co] = sum over valid (kh, kw) and ci of x[iw(ow, kw), grp*cig + ci] * w[kh, kw, ci, co],
// the input row of filter row kh at xrows[kh] (nullptr outside the input), the filter read from
// its packed panels `wp`; `stream`: stored with StreamVec. `blocks` (1 or 2) blocks of NV
// vectors: with 2, the 7 x 2 tiles whose pixels read inside their rows take both blocks at once
// in QuadTileAvx512, and the others one block after the other.
//
// With their operands in L1 the tiles' loops run at the FMA peak: giving every run twice its
// steps took resnet_56x64 from 11.4 to 21.7 ms (10.3 ms for the loops' 1.85 GFLOP), so about a
// tenth of that layer's time lies outside them (28x128: 0.7 of 10.9 ms). As timing
// experiments (wrong results), storing every tile to one spot in L1 instead of streaming y took
// 2-3% off either layer, and reading one tile's inputs and one filter row's panel for every
// tile (both then in L1) 3% off resnet_56x64, nothing off 28x128. Four steps per index update
// (AddTapPixels, and then in asm) gained 1% on the host of earlier measurements and 5-10% on
// Cascade Lake, whose cores rename 4 instructions a cycle. What did not help, one pinned core, best
// of 6-10 alternated rounds: tiles of 4 x 4 vectors (the same at stride 1, 16% slower at stride 2)
// and of 6 x 4 (4-26% slower), and prefetching the fresh input row 2 or 4 tiles ahead.
template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void ForwardTiles(const ConvGeometry& g, const C* const* xrows,
                                 const C* __restrict wp, C* __restrict yrow, const C* zeros,
                                 int64_t grp, int64_t j0, bool stream, int64_t blocks) {
  using Vec = V;
  constexpr int L = sizeof(Vec) / sizeof(C);
  const int64_t ci_all = g.in_depth, co_all = g.out_depth, cig = g.filter_in_depth;
  const int64_t cog = co_all / g.groups, cog_vec = cog - cog % L, co0 = grp * cog + j0;
  // A tile of NV >= 2 vectors starts at an even block (the row's tiles go 4, 2, then 1 vector
  // at a time from lane 0), so its vectors lie in whole pairs.
  const int64_t S = PanelStep(cog_vec, j0, L);
  const C* panel[NV];
  for (int k = 0; k < NV; ++k)
    panel[k] = wp + PanelOffset(g, cog_vec, grp, j0 + int64_t{k} * L, cig, L);
  // Without groups and dilation, the inputs of one filter row (kw, ci) for one pixel are
  // fw * cig contiguous values, and so are the filter panel's: tiles whose pixels read only
  // inside the row take them as one run, with no per-tap pointer setup (the stem's 7 x 7 taps
  // of 3 channels are 49 runs of 3 otherwise). The sums' order is the same.
  const bool runs = cig == ci_all && g.dilation_w == 1;
  const int64_t run = g.filter_w * cig;
  // A block's panels lie a whole panel of pairs after the previous block's.
  const int64_t block_step = g.filter_h * run * 2 * L;
  for (int64_t ow0 = 0; ow0 < g.out_w; ow0 += P) {
    const bool inside = runs && ow0 + P <= g.out_w && g.input_col(ow0, 0) >= 0 &&
                        g.input_col(ow0 + P - 1, g.filter_w - 1) < g.in_w;
    if constexpr (kAsmTiles<C, V> && P == kWideP && NV == 2) {
      if (blocks == 2 && inside && g.filter_h <= kMaxQuadRows) {
        const C* xk[kMaxQuadRows];
        const int64_t col = g.input_col(ow0, 0) * ci_all + grp * cig;
        for (int64_t kh = 0; kh < g.filter_h; ++kh)
          xk[kh] = xrows[kh] == nullptr ? nullptr : xrows[kh] + col;
        constexpr auto kBytes = static_cast<int64_t>(sizeof(C));
        QuadTileAvx512(xk, g.filter_h, panel[0], block_step * kBytes, run,
                       g.stride_w * ci_all * kBytes, yrow + ow0 * co_all + co0, co_all * kBytes,
                       stream);
        continue;
      }
    }
    for (int64_t b = 0; b < blocks; ++b) {
      Vec acc[P][NV];
      ZeroTile(acc);
      for (int64_t kh = 0; kh < g.filter_h; ++kh) {
        if (xrows[kh] == nullptr) continue;
        const C* xrow = xrows[kh] + grp * cig;
        if (inside) {
          const C* xp[P];
          for (int p = 0; p < P; ++p) xp[p] = xrow + g.input_col(ow0 + p, 0) * ci_all;
          const C* wk[NV];
          for (int k = 0; k < NV; ++k) wk[k] = panel[k] + b * block_step + kh * run * S;
          AddTapPixels<0, 0>(xp, wk, run, acc, S);
          continue;
        }
        for (int64_t kw = 0; kw < g.filter_w; ++kw) {
          const int64_t off = g.pad_left - kw * g.dilation_w;
          const C* xp[P];
          for (int p = 0; p < P; ++p) {
            const int64_t ow = ow0 + p, iw = ow * g.stride_w - off;
            xp[p] = (ow < g.out_w && iw >= 0 && iw < g.in_w) ? xrow + iw * ci_all : zeros;
          }
          const int64_t tap = kh * g.filter_w + kw;
          const C* wk[NV];
          for (int k = 0; k < NV; ++k) wk[k] = panel[k] + b * block_step + tap * cig * S;
          AddTap<C, V, P, NV>(xp, wk, cig, zeros, acc, S);
        }
      }
      for (int p = 0; p < P && ow0 + p < g.out_w; ++p)
        for (int k = 0; k < NV; ++k)
          PutVec(yrow + (ow0 + p) * co_all + co0 + (b * NV + k) * L, acc[p][k], stream);
    }
  }
}

#if defined(BF_CONV_ASM_TILES)
// The ResNet stem's forward (7 x 7 filter, 3 input channels, stride 2) on AVX-512 in float: a
// tile of NP pixels (12 or 4) by 2 vectors of output channels, summed over the filter rows kh
// whose xk[kh] is not null (the input of the tile's first pixel in that row; each next pixel's
// 6 floats further) and each row's 21 steps (kw, ci), the filter pair's panel at w; pixel p's
// two vectors stored at y + p * ys bytes, past the caches when `nt`. The steps of one kw (its 3
// channels) are written out and the 7 kw are a loop (0.7 KB of code): all 21 written out, a
// filter row was 5 KB, and on Cascade Lake the loop is 4% faster (the two alternated call by
// call). Likely the decoded-instruction cache: a step is 242 bytes, which the decoders deliver
// at 16 a cycle, slower than the step's 24 multiply-adds.
//
// The compiled tiles stream too much filter or spill: 6 x 4 reads a 37.6 KB panel per tile,
// which with the 7 input rows outgrows the 48 KB L1 (91% of the FMA peak); 12 x 2 reads 18.8 KB
// but spills (24 sums and 12 pixel pointers). Written out, every address is a register and a
// constant, each filter row's steps are unrolled, and the sums go from the registers to y
// (through a buffer they lost 10%). The order of the sums is the compiled tiles'. Tiles of 14
// pixels (28 sums; 112-pixel rows then need no 4-pixel tile) and broadcasts folded into the
// multiply-adds ({1to16}) measured the same: 2.86 / 2.86 and 2.89 / 2.85 ms (one pinned core,
// best of 8 alternated rounds).
// clang-format off
#define BF_STEM_PIXEL(off, a, b)                                                                   \
  "vbroadcastss (bf_q + " #off ") * 4(%[x]), %%zmm28\n\t"                                          \
  "vfmadd231ps %%zmm24, %%zmm28, %%zmm" #a "\n\t"                                                  \
  "vfmadd231ps %%zmm25, %%zmm28, %%zmm" #b "\n\t"
#define BF_STEM_STORE(op, a, b)                                                                    \
  op " %%zmm" #a ", (%[y])\n\t"                                                                    \
  op " %%zmm" #b ", 64(%[y])\n\t"                                                                  \
  "add %[ys], %[y]\n\t"
#define BF_STEM_PIXELS_12                                                                          \
  BF_STEM_PIXEL(0, 0, 1) BF_STEM_PIXEL(6, 2, 3) BF_STEM_PIXEL(12, 4, 5)                            \
  BF_STEM_PIXEL(18, 6, 7) BF_STEM_PIXEL(24, 8, 9) BF_STEM_PIXEL(30, 10, 11)                        \
  BF_STEM_PIXEL(36, 12, 13) BF_STEM_PIXEL(42, 14, 15) BF_STEM_PIXEL(48, 16, 17)                    \
  BF_STEM_PIXEL(54, 18, 19) BF_STEM_PIXEL(60, 20, 21) BF_STEM_PIXEL(66, 22, 23)
#define BF_STEM_PIXELS_4                                                                           \
  BF_STEM_PIXEL(0, 0, 1) BF_STEM_PIXEL(6, 2, 3) BF_STEM_PIXEL(12, 4, 5)                            \
  BF_STEM_PIXEL(18, 6, 7)
#define BF_STEM_STORES_12(op)                                                                      \
  BF_STEM_STORE(op, 0, 1) BF_STEM_STORE(op, 2, 3) BF_STEM_STORE(op, 4, 5)                          \
  BF_STEM_STORE(op, 6, 7) BF_STEM_STORE(op, 8, 9) BF_STEM_STORE(op, 10, 11)                        \
  BF_STEM_STORE(op, 12, 13) BF_STEM_STORE(op, 14, 15) BF_STEM_STORE(op, 16, 17)                    \
  BF_STEM_STORE(op, 18, 19) BF_STEM_STORE(op, 20, 21) BF_STEM_STORE(op, 22, 23)
#define BF_STEM_STORES_4(op)                                                                       \
  BF_STEM_STORE(op, 0, 1) BF_STEM_STORE(op, 2, 3) BF_STEM_STORE(op, 4, 5)                          \
  BF_STEM_STORE(op, 6, 7)
#define BF_STEM_TILE_ASM(regs, pixels, nt_stores, stores)                                          \
  asm volatile(                                                                                    \
      BF_ASM_ZERO(regs)                                                                            \
      "xor %k[kh], %k[kh]\n\t"                                                                     \
      "1:\n\t"                                                                                     \
      "mov (%[xk], %[kh], 8), %[x]\n\t"                                                            \
      "test %[x], %[x]\n\t"                                                                        \
      "jz 5f\n\t"                                                                                  \
      "mov $7, %k[kw]\n\t"                                                                         \
      "6:\n\t"                                                                                     \
      ".set bf_q, 0\n\t"                                                                           \
      ".rept 3\n\t"                                                                                \
      "vmovups bf_q * 128(%[w]), %%zmm24\n\t"                                                      \
      "vmovups bf_q * 128 + 64(%[w]), %%zmm25\n\t"                                                 \
      pixels                                                                                       \
      ".set bf_q, bf_q + 1\n\t"                                                                    \
      ".endr\n\t"                                                                                  \
      "add $3 * 128, %[w]\n\t"                                                                     \
      "add $3 * 4, %[x]\n\t"                                                                       \
      "dec %k[kw]\n\t"                                                                             \
      "jnz 6b\n\t"                                                                                 \
      "jmp 2f\n\t"                                                                                 \
      "5:\n\t"                                                                                     \
      "add $21 * 128, %[w]\n\t"                                                                    \
      "2:\n\t"                                                                                     \
      "inc %[kh]\n\t"                                                                              \
      "cmp $7, %[kh]\n\t"                                                                          \
      "jne 1b\n\t"                                                                                 \
      "test %[nt], %[nt]\n\t"                                                                      \
      "jz 3f\n\t"                                                                                  \
      nt_stores                                                                                    \
      "jmp 4f\n\t"                                                                                 \
      "3:\n\t"                                                                                     \
      stores                                                                                       \
      "4:\n\t"                                                                                     \
      : [w] "+r"(w), [x] "+&r"(x), [kh] "+&r"(kh), [kw] "=&r"(kw), [y] "+r"(y)                     \
      : [xk] "r"(xk), [ys] "r"(ys), [nt] "r"(nt64)                                                 \
      : "zmm0", "zmm1", "zmm2", "zmm3", "zmm4", "zmm5", "zmm6", "zmm7", "zmm8", "zmm9",            \
        "zmm10", "zmm11", "zmm12", "zmm13", "zmm14", "zmm15", "zmm16", "zmm17", "zmm18",           \
        "zmm19", "zmm20", "zmm21", "zmm22", "zmm23", "zmm24", "zmm25", "zmm28", "cc", "memory")
template <int NP>
inline void StemTileAvx512(const float* const (&xk)[7], const float* w, float* y, int64_t ys,
                           bool nt) {
  static_assert(NP == 12 || NP == 4, "tiles of 12 or 4 pixels");
  const float* x = nullptr;
  int64_t kh = 0, kw = 0;
  const int64_t nt64 = nt ? 1 : 0;
  if constexpr (NP == 12) {
    BF_STEM_TILE_ASM("0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, "
                     "21, 22, 23",
                     BF_STEM_PIXELS_12, BF_STEM_STORES_12("vmovntps"),
                     BF_STEM_STORES_12("vmovups"));
  } else {
    BF_STEM_TILE_ASM("0, 1, 2, 3, 4, 5, 6, 7", BF_STEM_PIXELS_4, BF_STEM_STORES_4("vmovntps"),
                     BF_STEM_STORES_4("vmovups"));
  }
}
// clang-format on
// stage[i] = src[i0 + i] where i0 + i lies in [0, n), else 0, for i < count (at most 96): the
// inputs of a stem tile reaching into the padding, in masked loads (copies through the C
// library took 2% of the stem's time).
BF_TARGET_AVX512 inline void StageStemRow(const float* src, int64_t i0, int64_t n, int64_t count,
                                          float* stage) {
  // The lanes [lo, hi) of the vector at i0 + v lie inside the row.
  const int64_t end = std::min(count, n - i0);
  for (int64_t v = 0; v < count; v += 16) {
    const int64_t lo = std::clamp<int64_t>(-i0 - v, 0, 16),
                  hi = std::clamp<int64_t>(end - v, 0, 16);
    const uint32_t mask = lo < hi ? ((1u << hi) - 1) & ~((1u << lo) - 1) : 0;
    _mm512_storeu_ps(stage + v, _mm512_maskz_loadu_ps(static_cast<__mmask16>(mask), src + i0 + v));
  }
}
#undef BF_STEM_TILE_ASM
#undef BF_STEM_STORES_4
#undef BF_STEM_STORES_12
#undef BF_STEM_PIXELS_4
#undef BF_STEM_PIXELS_12
#undef BF_STEM_STORE
#undef BF_STEM_PIXEL
#endif

// The stem StemTileAvx512 is written for: its filter size, input channels and column stride.
constexpr int64_t kStemFilter = 7, kStemChannels = 3, kStemStride = 2;
inline bool IsStem(const ConvGeometry& g) {
  return g.groups == 1 && g.filter_h == kStemFilter && g.filter_w == kStemFilter &&
         g.filter_in_depth == kStemChannels && g.stride_w == kStemStride && g.dilation_h == 1 &&
         g.dilation_w == 1;
}
// The input values a stem tile of np pixels reads from one row.
constexpr int64_t StemTileSpan(int64_t np) {
  return ((np - 1) * kStemStride + kStemFilter) * kStemChannels;
}

// The stem's forward for the output channels [0, pairs * 2L) of one output row, in
// StemTileAvx512's tiles of 12 pixels and then of 4 (the last one partial), the pairs of vectors
// outside and the tiles inside, so that a pair's 18.8 KB panel stays in L1 across the row. A
// tile whose inputs reach into the padding reads them from a staged copy, zeros there, made once
// for every pair. Returns false, having done nothing, for a row with more such tiles than fit
// the staging buffer (paddings wider than the stem's).
template <typename C, typename V>
BF_CONV_INLINE bool ForwardStemTiles(const ConvGeometry& g, const C* const* xrows,
                                     const C* __restrict wp, int64_t pairs, C* __restrict yrow,
                                     bool stream) {
  constexpr int L = sizeof(V) / sizeof(C);
  constexpr int kMaxTiles = 32, kMaxStaged = 4;
  constexpr int64_t kSpan = StemTileSpan(12);
  struct Tile {
    int64_t ow0;
    int np;
    const C* xk[kStemFilter];
  };
  Tile tiles[kMaxTiles];
  alignas(64) C stage[kMaxStaged][kStemFilter][(kSpan + 15) / 16 * 16];
  int n = 0, staged = 0;
  const int64_t in_row = g.in_w * kStemChannels;
  for (int64_t ow0 = 0; ow0 < g.out_w; ow0 += tiles[n++].np) {
    if (n == kMaxTiles) return false;
    Tile& t = tiles[n];
    t.ow0 = ow0;
    t.np = ow0 + 12 <= g.out_w ? 12 : 4;
    const int64_t i0 = g.input_col(ow0, 0) * kStemChannels, span = StemTileSpan(t.np);
    const bool inside = i0 >= 0 && i0 + span <= in_row;
    if (!inside && staged == kMaxStaged) return false;
    for (int64_t kh = 0; kh < kStemFilter; ++kh) {
      t.xk[kh] = nullptr;
      if (xrows[kh] == nullptr) continue;
      if (inside) {
        t.xk[kh] = xrows[kh] + i0;
        continue;
      }
      StageStemRow(xrows[kh], i0, in_row, span, stage[staged][kh]);
      t.xk[kh] = stage[staged][kh];
    }
    if (!inside) ++staged;
  }
  const int64_t ys = g.out_depth * static_cast<int64_t>(sizeof(C));
  for (int64_t pair = 0; pair < pairs; ++pair) {
    const int64_t j0 = pair * 2 * L;
    const C* panel = wp + PanelOffset(g, g.out_depth - g.out_depth % L, 0, j0, kStemChannels, L);
    for (int i = 0; i < n; ++i) {
      const Tile& t = tiles[i];
      C* y = yrow + t.ow0 * g.out_depth + j0;
      if (t.np == 12) {
        StemTileAvx512<12>(t.xk, panel, y, ys, stream);
        continue;
      }
      const int64_t cols = std::min<int64_t>(t.np, g.out_w - t.ow0);
      if (cols == t.np) {
        StemTileAvx512<4>(t.xk, panel, y, ys, stream);
        continue;
      }
      // A partial tile: its sums through a buffer, the columns inside the row stored.
      alignas(64) C sums[4 * 2 * L];
      StemTileAvx512<4>(t.xk, panel, sums, int64_t{2} * L * static_cast<int64_t>(sizeof(C)), false);
      for (int64_t p = 0; p < cols; ++p)
        for (int k = 0; k < 2; ++k)
          PutVec(y + p * g.out_depth + k * L, LoadVec<V>(sums + (p * 2 + k) * L), stream);
    }
  }
  return true;
}

// Forward for the output channels [grp*cog + j0, grp*cog + cog) the vector tiles leave over, of
// output row oh (its input rows at xrows, as for ForwardTiles).
template <typename C>
BF_CONV_INLINE void ForwardRest(const ConvGeometry& g, const C* const* xrows, const C* __restrict w,
                                C* __restrict yrow, int64_t oh, int64_t grp, int64_t j0) {
  const int64_t ci_all = g.in_depth, co_all = g.out_depth, cig = g.filter_in_depth;
  const int64_t cog = co_all / g.groups, co0 = grp * cog;
  for (int64_t ow = 0; ow < g.out_w; ++ow) {
    C* __restrict yp = yrow + ow * co_all + co0;
    for (int64_t j = j0; j < cog; ++j) yp[j] = C{0};
    g.ForTapsInside(oh, ow, [&](int64_t kh, int64_t kw, int64_t /*ih*/, int64_t iw) {
      const C* __restrict xp = xrows[kh] + iw * ci_all + grp * cig;
      const C* wp = w + (kh * g.filter_w + kw) * cig * co_all + co0;
      for (int64_t ci = 0; ci < cig; ++ci) {
        const C s = xp[ci];
        const C* __restrict wr = wp + ci * co_all;
        for (int64_t j = j0; j < cog; ++j) yp[j] += s * wr[j];
      }
    });
  }
}

// Forward of output row oh into yrow ([out_w, out_depth]), the input row of each filter row kh
// at xrows[kh] (nullptr outside the input), the filter as PackForwardFilterFrom packs it;
// `stream`: the vector tiles' outputs stored with StreamVec (whole 64-byte aligned vectors).
template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void ForwardRowT(const ConvGeometry& g, const C* const* xrows, const C* w, C* yrow,
                                int64_t oh, const C* zeros, bool stream) {
  constexpr int64_t L = 64 / sizeof(C);
  const int64_t cog = g.out_depth / g.groups, cog_vec = cog - cog % L;
  // `w` is PackForwardFilter's buffer: the panels, then the HWIO filter.
  const C* hwio = w + g.groups * cog_vec * g.filter_h * g.filter_w * g.filter_in_depth;
  const bool wide = WideTiles<P, NV>(g.out_w);
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    int64_t j = 0;
    // Few input channels (the stem's 3): a filter row's run is only fw * cig steps (21), and
    // each row of taps costs the tile its pointer setup and loop entry. On AVX-512, tiles of 6
    // pixels by 4 vectors (24 sums) do 24 fused multiply-adds per step instead of 7 x 2's 14,
    // and read each input once per 64 output channels instead of 32. (Rows of 28 or 56 pixels
    // would leave 7% of a 6-wide tile's columns empty; 112 leaves 2%.) The stem itself, in
    // float, takes the written-out tiles of 12 x 2 (ForwardStemTiles).
    if constexpr (NV == 2 && !kIsSplitVec<V>) {
      if constexpr (kAsmTiles<C, V>) {
        // The pairs' panels lie at PanelOffset of the vector width; an odd last vector (a
        // panel of its own) and the channels after it take the tiles below.
        if (IsStem(g) && cog >= 2 * L &&
            ForwardStemTiles<C, V>(g, xrows, w, cog_vec / (2 * L), yrow, stream))
          j = cog_vec / (2 * L) * 2 * L;
      }
      if (g.filter_in_depth < 8 && g.groups == 1)
        for (; j + 4 * L <= cog; j += 4 * L)
          ForwardTiles<C, V, 6, 4>(g, xrows, w, yrow, zeros, grp, j, stream, 1);
    }
    for (; j + NV * L <= cog; j += NV * L) {
      if constexpr (NV >= 2) {
        if (wide) {
          // Two pairs at a time where QuadTileAvx512 takes the tiles inside the rows.
          const int64_t blocks =
              kAsmTiles<C, V> && NV == 2 && j + int64_t{2} * NV * L <= cog ? 2 : 1;
          ForwardTiles<C, V, kWideP, NV>(g, xrows, w, yrow, zeros, grp, j, stream, blocks);
          j += (blocks - 1) * NV * L;
          continue;
        }
      }
      ForwardTiles<C, V, P, NV>(g, xrows, w, yrow, zeros, grp, j, stream, 1);
    }
    for (; j + L <= cog; j += L)
      ForwardTiles<C, V, P, 1>(g, xrows, w, yrow, zeros, grp, j, stream, 1);
    if (j < cog) ForwardRest<C>(g, xrows, hwio, yrow, oh, grp, j);
  }
  if (stream) StreamFence();
}

// Input gradient, input channels [grp*cig + j0, + NV*L) of one input row. Input columns are
// visited by stride phase r (iw = r + sw*t) so that a tap kw reaches either every column of
// a tile or none: dx[iw, ci] = sum over reaching (kh, kw) and co in grp of
// dy[ow, co] * w[kh, kw, ci, co], the filter read from its packed panels `wp`.
// The output channels summed are those of the chunk [co_range[0], co_range[1]) of the group: a
// chunk after the first adds to what dx holds. The chunks keep the filter panel a tile streams
// small enough to stay in L2 for the next tiles (a 3x3 filter to 1024 channels is 1.2 MB per
// block of 32 input channels).
template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void BackpropInputTiles(const ConvGeometry& g, const C* __restrict wp,
                                       const C* __restrict dy, C* __restrict dx, int64_t n,
                                       int64_t ih, const C* zeros, const IntPair* scratch,
                                       const PairList& rows_kh, int64_t grp, int64_t j0,
                                       const int64_t* co_range, bool stream) {
  using Vec = V;
  constexpr int L = sizeof(Vec) / sizeof(C);
  const int64_t ci_all = g.in_depth, co_all = g.out_depth, cig = g.filter_in_depth;
  const int64_t cog = co_all / g.groups, cig_vec = cig - cig % L;
  const int64_t S = PanelStep(cig_vec, j0, L);  // as for ForwardTiles
  const C* panel[NV];
  for (int k = 0; k < NV; ++k)
    panel[k] = wp + PanelOffset(g, cig_vec, grp, j0 + int64_t{k} * L, cog, L);
  C* dxrow = dx + (n * g.in_h + ih) * g.in_w * ci_all + grp * cig + j0;
  // The taps that reach this row (rows_kh), and per column phase the taps that reach it (the
  // table in `scratch`), resolved ahead: integer division per tile would cost more than the
  // tile's arithmetic.
  for (int64_t r = 0; r < g.stride_w && r < g.in_w; ++r) {
    const int64_t count = PhaseColumnCount(g, scratch, r);
    const PairSpan cols_kw = PhaseCols(g, scratch, r);
    for (int64_t t0 = 0; t0 < count; t0 += P) {
      Vec acc[P][NV];
      for (int p = 0; p < P; ++p)
        for (int k = 0; k < NV; ++k)
          acc[p][k] = (co_range[0] > 0 && t0 + p < count)
                          ? LoadVec<V>(dxrow + (r + g.stride_w * (t0 + p)) * ci_all + k * L)
                          : Vec{};
      for (const auto& [kh, oh] : rows_kh) {
        const C* dyrow = dy + (n * g.out_h + oh) * g.out_w * co_all + grp * cog;
        for (const auto& [kw, ow_t0] : cols_kw) {
          const int64_t ow_base = ow_t0 + t0;
          // From the chunk's first output channel c0 (zeros + c0 stands for the padding).
          const int64_t c0 = co_range[0];
          const C* dyp[P];
          for (int p = 0; p < P; ++p) {
            const int64_t ow = ow_base + p;
            dyp[p] =
                (t0 + p < count && ow >= 0 && ow < g.out_w) ? dyrow + ow * co_all + c0 : zeros + c0;
          }
          const int64_t tap = kh * g.filter_w + kw;
          const C* wk[NV];
          for (int k = 0; k < NV; ++k) wk[k] = panel[k] + (tap * cog + c0) * S;
          AddTap<C, V, P, NV>(dyp, wk, co_range[1] - c0, zeros + c0, acc, S);
        }
      }
      for (int p = 0; p < P && t0 + p < count; ++p)
        for (int k = 0; k < NV; ++k)
          PutVec(dxrow + (r + g.stride_w * (t0 + p)) * ci_all + k * L, acc[p][k], stream);
    }
  }
}

// Input gradient for the input channels [grp*cig + j0, grp*cig + cig) the tiles leave over.
template <typename C>
BF_CONV_INLINE void BackpropInputRest(const ConvGeometry& g, const C* __restrict wt,
                                      const C* __restrict dy, C* __restrict dx, int64_t n,
                                      int64_t ih, int64_t grp, int64_t j0) {
  const int64_t ci_all = g.in_depth, co_all = g.out_depth, cig = g.filter_in_depth;
  const int64_t cog = co_all / g.groups;
  for (int64_t iw = 0; iw < g.in_w; ++iw) {
    C* __restrict dxp = dx + ((n * g.in_h + ih) * g.in_w + iw) * ci_all + grp * cig;
    for (int64_t ci = j0; ci < cig; ++ci) dxp[ci] = C{0};
    for (int64_t kh = 0; kh < g.filter_h; ++kh) {
      const int64_t th = ih + g.pad_top - kh * g.dilation_h;
      if (th < 0 || th % g.stride_h != 0 || th / g.stride_h >= g.out_h) continue;
      for (int64_t kw = 0; kw < g.filter_w; ++kw) {
        const int64_t tw = iw + g.pad_left - kw * g.dilation_w;
        if (tw < 0 || tw % g.stride_w != 0 || tw / g.stride_w >= g.out_w) continue;
        const C* __restrict dyp =
            dy + ((n * g.out_h + th / g.stride_h) * g.out_w + tw / g.stride_w) * co_all + grp * cog;
        const C* wp = wt + ((kh * g.filter_w + kw) * co_all + grp * cog) * cig;
        for (int64_t j = 0; j < cog; ++j) {
          const C s = dyp[j];
          const C* __restrict wr = wp + j * cig;
          for (int64_t ci = j0; ci < cig; ++ci) dxp[ci] += s * wr[ci];
        }
      }
    }
  }
}

// Input gradient for few input channels per group (fewer than a vector) and many output
// channels: dot products over contiguous co of dy and the filter in its HWIO layout `w`.
// dx[iw, grp*cig + ci] = sum over reaching (kh, kw) of sum_co dy[ow, co] * w[kh, kw, ci, co].
template <typename C, typename V>
BF_CONV_INLINE void BackpropInputDot(const ConvGeometry& g, const C* __restrict w,
                                     const C* __restrict dy, C* __restrict dx, int64_t n,
                                     int64_t ih, IntPair* scratch, const PairList& rows,
                                     int64_t grp, int64_t j0) {
  using Vec = V;
  constexpr int L = sizeof(Vec) / sizeof(C);
  const int64_t ci_all = g.in_depth, co_all = g.out_depth, cig = g.filter_in_depth;
  const int64_t cog = co_all / g.groups, co0 = grp * cog, nvec = cog / L;
  // The reaching taps, resolved without division per pixel: rows and columns per stride phase
  // ahead (the table in `scratch`), and per column the (dy pixel offset, filter tap) pairs.
  PairList taps(RowScratch(g, scratch) + g.filter_h);
  for (int64_t r = 0; r < g.stride_w && r < g.in_w; ++r) {
    const PairSpan cols = PhaseCols(g, scratch, r);
    for (int64_t iw = r, t = 0; iw < g.in_w; iw += g.stride_w, ++t) {
      C* __restrict dxp = dx + ((n * g.in_h + ih) * g.in_w + iw) * ci_all + grp * cig;
      taps.clear();
      for (const auto& [kh, oh] : rows) {
        for (const auto& [kw, ow_t0] : cols) {
          const int64_t ow = ow_t0 + t;
          if (ow < 0 || ow >= g.out_w) continue;
          taps.add(((n * g.out_h + oh) * g.out_w + ow) * co_all + co0, kh * g.filter_w + kw);
        }
      }
      for (int64_t ci = j0; ci < cig; ++ci) {
        // Four independent accumulators, so the fused multiply-adds do not wait on each other.
        Vec a0 = Vec{}, a1 = Vec{}, a2 = Vec{}, a3 = Vec{};
        C rest = 0;
        for (const auto& [dy_offset, tap] : taps) {
          const C* dyp = dy + dy_offset;
          const C* wr = w + (tap * cig + ci) * co_all + co0;
          int64_t v = 0;
          for (; v + 4 <= nvec; v += 4) {
            a0 += LoadVec<V>(dyp + v * L) * LoadVec<V>(wr + v * L);
            a1 += LoadVec<V>(dyp + (v + 1) * L) * LoadVec<V>(wr + (v + 1) * L);
            a2 += LoadVec<V>(dyp + (v + 2) * L) * LoadVec<V>(wr + (v + 2) * L);
            a3 += LoadVec<V>(dyp + (v + 3) * L) * LoadVec<V>(wr + (v + 3) * L);
          }
          for (; v < nvec; ++v) a0 += LoadVec<V>(dyp + v * L) * LoadVec<V>(wr + v * L);
          for (int64_t j = nvec * L; j < cog; ++j) rest += dyp[j] * wr[j];
        }
        const Vec sum = (a0 + a1) + (a2 + a3);
        C lanes[L];
        __builtin_memcpy(lanes, &sum, sizeof sum);
        for (int width = L / 2; width >= 1; width /= 2)  // a tree: log2(L) dependent adds
          for (int l = 0; l < width; ++l) lanes[l] += lanes[l + width];
        dxp[ci] = rest + lanes[0];
      }
    }
  }
}

// The tiles of input channels [j, j + NV*L) of group grp, input row ih, batch elements
// [n0, n1): the output-channel chunks of `chunk` channels outside and the batch elements
// inside, so that each chunk's filter panel is read from L2 by every tile of the rows. (A
// function, not a lambda: a lambda does not take its caller's target ISA, and one left out of
// line runs the baseline instructions.)
template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void BackpropInputChunks(const ConvGeometry& g, const C* w, const C* dy, C* dx,
                                        int64_t n0, int64_t n1, int64_t ih, const C* zeros,
                                        const IntPair* scratch, const PairList& rows, int64_t chunk,
                                        int64_t grp, int64_t j, bool stream) {
  const int64_t cog = g.out_depth / g.groups;
  for (int64_t c0 = 0; c0 < cog; c0 += chunk) {
    const int64_t co_range[2] = {c0, std::min(cog, c0 + chunk)};
    for (int64_t n = n0; n < n1; ++n)
      BackpropInputTiles<C, V, P, NV>(g, w, dy, dx, n, ih, zeros, scratch, rows, grp, j, co_range,
                                      stream);
  }
}

// Input gradient of input row ih of the batch elements [n0, n1): per group, the blocks of NV
// and then one vector of input channels (BackpropInputChunks), and the channels left over;
// `stream` (one chunk only): the vector tiles' dx stored with StreamVec.
template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void BackpropInputBlockT(const ConvGeometry& g, const C* w, const C* dy, C* dx,
                                        int64_t n0, int64_t n1, int64_t ih, const C* zeros,
                                        IntPair* scratch, int64_t chunk, bool stream) {
  constexpr int64_t L = 64 / sizeof(C);
  const int64_t cig = g.filter_in_depth, cog = g.out_depth / g.groups, cig_vec = cig - cig % L;
  // `w` is the buffer Conv2DBackpropInputOptimized builds: panels, transposed filter, HWIO.
  const int64_t fsize = g.filter_h * g.filter_w * cig * g.out_depth;
  const C* wt = w + g.groups * cig_vec * g.filter_h * g.filter_w * cog;
  const C* hwio = wt + fsize;
  // The tiles run along the columns of one stride phase, ceil(in_w / sw) of them at most.
  const bool wide = WideTiles<P, NV>((g.in_w + g.stride_w - 1) / g.stride_w);
  PairList rows(RowScratch(g, scratch));
  ReachingRows(g, ih, &rows);
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    int64_t j = 0;
    for (; j + NV * L <= cig; j += NV * L) {
      if constexpr (NV >= 2) {
        if (wide) {
          BackpropInputChunks<C, V, kWideP, NV>(g, w, dy, dx, n0, n1, ih, zeros, scratch, rows,
                                                chunk, grp, j, stream);
          continue;
        }
      }
      BackpropInputChunks<C, V, P, NV>(g, w, dy, dx, n0, n1, ih, zeros, scratch, rows, chunk, grp,
                                       j, stream);
    }
    for (; j + L <= cig; j += L)
      BackpropInputChunks<C, V, P, 1>(g, w, dy, dx, n0, n1, ih, zeros, scratch, rows, chunk, grp, j,
                                      stream);
    for (int64_t n = n0; n < n1 && j < cig; ++n) {
      if (cog >= L) {
        BackpropInputDot<C, V>(g, hwio, dy, dx, n, ih, scratch, rows, grp, j);
      } else {
        BackpropInputRest<C>(g, wt, dy, dx, n, ih, grp, j);
      }
    }
  }
  if (stream) StreamFence();
}

// One column of a few-channel filter-gradient tile: acc[r][k] += xp[r] * dy[ow, k-th vector],
// R input values (channels, or taps of a run) against the column's NV dy vectors, loaded once.
template <typename C, typename V, int R, int NV>
BF_CONV_INLINE void AddRunColumn(const C* __restrict xp, const C* __restrict dyp, V (&acc)[R][NV]) {
  constexpr int L = sizeof(V) / sizeof(C);
  V dv[NV];
  for (int k = 0; k < NV; ++k) dv[k] = LoadVecReg<V>(dyp + k * L);
  for (int r = 0; r < R; ++r) {
    const C s = xp[r];
    for (int k = 0; k < NV; ++k) acc[r][k] += dv[k] * s;
  }
}

// The filter gradient of R input channels (fewer than a tile's P) of one tap: dwt[ci, co] +=
// sum over the batch elements and columns of x[.., ci] * dy[.., co]. Two columns at a time
// into separate sums, so that 2R x NV independent chains of fused multiply-adds hide their
// latency (one channel alone would leave NV chains waiting on each other). `range` holds the
// number of batch elements, the columns [ow0, ow1) and the tap's column offset.
template <typename C, typename V, int R, int NV>
BF_CONV_INLINE void BackpropFilterFewChannels(const ConvGeometry& g, const C* __restrict xrow0,
                                              const C* __restrict dyrow0, C* __restrict dwt,
                                              const int64_t* range) {
  using Vec = V;
  constexpr int L = sizeof(Vec) / sizeof(C);
  const int64_t ci_all = g.in_depth, co_all = g.out_depth;
  const int64_t nb = range[0], ow0 = range[1], ow1 = range[2], off = range[3];
  const int64_t x_image = g.in_h * g.in_w * ci_all, dy_image = g.out_h * g.out_w * co_all;
  Vec acc[2][R][NV];
  for (int u = 0; u < 2; ++u)
    for (int r = 0; r < R; ++r)
      for (int k = 0; k < NV; ++k) acc[u][r][k] = Vec{};
  for (int64_t n = 0; n < nb; ++n) {
    const C* xrow = xrow0 + n * x_image;
    const C* dyrow = dyrow0 + n * dy_image;
    int64_t ow = ow0;
    for (; ow + 2 <= ow1; ow += 2)
      for (int u = 0; u < 2; ++u)
        AddRunColumn<C, V, R, NV>(xrow + ((ow + u) * g.stride_w - off) * ci_all,
                                  dyrow + (ow + u) * co_all, acc[u]);
    if (ow < ow1)
      AddRunColumn<C, V, R, NV>(xrow + (ow * g.stride_w - off) * ci_all, dyrow + ow * co_all,
                                acc[0]);
  }
  for (int r = 0; r < R; ++r)
    for (int k = 0; k < NV; ++k) {
      C* d = dwt + r * co_all + k * L;
      StoreVec(d, LoadVec<V>(d) + (acc[0][r][k] + acc[1][r][k]));
    }
}

// One tile of the few-channel filter gradient's runs (BackpropFilterRuns): the R values
// [qs, qs + R) of a run of fw * in_depth, the first of them it stores (the last tile of a run
// overlaps the one before), the columns [lo, hi) whose R inputs all lie inside the row, and
// for every column ow where its value r lies: input column ow * stride_w + col[r], channel
// at[r]. Worked out once for all the filter rows: made for every row, its 12 64-bit divisions
// took a fifth of the stem's filter gradient.
template <int R>
struct RunTile {
  int64_t qs, first, lo, hi, col[R], at[R];
  RunTile(const ConvGeometry& g, int64_t q0) {
    const int64_t ci_all = g.in_depth;
    qs = std::min<int64_t>(q0, g.filter_w * ci_all - R);
    first = q0 - qs;
    // Those of the tile's first tap for the left edge, of its last for the right.
    lo = std::min(g.out_w, g.columns_inside(qs / ci_all).begin);
    hi = std::max(lo, g.columns_inside((qs + R - 1) / ci_all).end);
    int64_t kw = qs / ci_all, c = qs - kw * ci_all;
    for (int r = 0; r < R; ++r) {
      col[r] = kw * g.dilation_w - g.pad_left;
      at[r] = c;
      if (++c == ci_all) c = 0, ++kw;
    }
  }
};

// AddRunColumn for a column whose run reaches into the padding: the inputs copied out first,
// zeros in the padding.
template <typename C, typename V, int R, int NV>
BF_CONV_INLINE void AddStagedColumn(const ConvGeometry& g, const C* xrow, const C* dyrow,
                                    int64_t ow, const RunTile<R>& t, V (&acc)[R][NV]) {
  C stage[R];
  for (int r = 0; r < R; ++r) {
    const int64_t iw = ow * g.stride_w + t.col[r];
    stage[r] = iw >= 0 && iw < g.in_w ? xrow[iw * g.in_depth + t.at[r]] : C{0};
  }
  AddRunColumn<C, V, R, NV>(stage, dyrow + ow * g.out_depth, acc);
}

// The filter gradient of one filter row for few input channels, without groups or dilation
// (the stem's 3): for output column ow the inputs of the taps (kw, ci) are one run of
// fw * cig values of x from input column iw(ow, 0), and their sums dw[kh, kw, ci, :] follow
// each other too. The run goes R values at a time through a register tile of R x NV sums over
// every column of the nb images' rows, dy loaded once per column for R taps (a tap at a time,
// it served 3, and the loads outnumbered the fused multiply-adds); this is one such tile, t.
// Columns whose R inputs reach into the padding read them staged (AddStagedColumn). xrow0,
// dyrow0 and dwk point at the first image's input row, its dy row and dw[kh, 0, 0, co0].
template <typename C, typename V, int NV>
BF_CONV_INLINE void BackpropFilterRuns(const ConvGeometry& g, const RunTile<kWideP>& t,
                                       const C* __restrict xrow0, const C* __restrict dyrow0,
                                       C* __restrict dwk, int64_t nb) {
  constexpr int R = kWideP, L = sizeof(V) / sizeof(C);
  const int64_t ci_all = g.in_depth, co_all = g.out_depth, xs = g.stride_w * ci_all;
  const int64_t x_image = g.in_h * g.in_w * ci_all, dy_image = g.out_h * g.out_w * co_all;
  V acc[R][NV];
  ZeroTile(acc);
  for (int64_t n = 0; n < nb; ++n) {
    const C* xrow = xrow0 + n * x_image;
    const C* dyrow = dyrow0 + n * dy_image;
    for (int64_t ow = 0; ow < t.lo; ++ow) AddStagedColumn<C, V, R, NV>(g, xrow, dyrow, ow, t, acc);
    // Four columns per loop pass (the stem 8% faster; see AddTapPixels).
    const C* xb = xrow + g.input_col(t.lo, 0) * ci_all + t.qs;
    const C* db = dyrow + t.lo * co_all;
#pragma GCC unroll 4
    for (int64_t q = 0; q < t.hi - t.lo; ++q)
      AddRunColumn<C, V, R, NV>(xb + q * xs, db + q * co_all, acc);
    for (int64_t ow = t.hi; ow < g.out_w; ++ow)
      AddStagedColumn<C, V, R, NV>(g, xrow, dyrow, ow, t, acc);
  }
  for (int64_t r = t.first; r < R; ++r)
    for (int k = 0; k < NV; ++k) {
      C* d = dwk + (t.qs + r) * co_all + k * L;
      StoreVec(d, LoadVec<V>(d) + acc[r][k]);
    }
}

// BackpropFilterRuns over the filter rows that output row oh reads inside the input, for the
// output channels [j0, j0 + NV*L): each tile of the runs for every filter row.
template <typename C, typename V, int NV>
BF_CONV_INLINE void BackpropFilterRunRows(const ConvGeometry& g, const C* x, const C* dy, C* dw,
                                          int64_t n0, int64_t n1, int64_t oh, int64_t j0) {
  const int64_t ci_all = g.in_depth, co_all = g.out_depth, run = g.filter_w * ci_all;
  const C* dyrow0 = dy + (n0 * g.out_h + oh) * g.out_w * co_all + j0;
  for (int64_t q0 = 0; q0 < run; q0 += kWideP) {
    const RunTile<kWideP> tile(g, q0);
    for (int64_t kh = 0; kh < g.filter_h; ++kh) {
      const int64_t ih = g.input_row(oh, kh);
      if (ih < 0 || ih >= g.in_h) continue;
      BackpropFilterRuns<C, V, NV>(g, tile, x + (n0 * g.in_h + ih) * g.in_w * ci_all, dyrow0,
                                   dw + kh * g.filter_w * ci_all * co_all + j0, n1 - n0);
    }
  }
}

// The columns of one stride phase of an input row: iw = r + t * stride_w for t < PhaseColumns.
inline int64_t PhaseColumns(const ConvGeometry& g) {
  return (g.in_w + g.stride_w - 1) / g.stride_w;
}
// The distance between two columns of a packed input row (PackInputRow): the input's channels
// on whole 64-byte lines, an odd number of them, so that the columns a tile reads one after the
// other spread over every set of the L1. 128 float channels take 9 lines, not 8 (8 lines apart,
// a tile's 56 columns would fall in 8 of the 64 sets).
template <typename C>
int64_t PackedColumnStride(const ConvGeometry& g) {
  const int64_t lines = (g.in_depth * static_cast<int64_t>(sizeof(C)) + 63) / 64;
  return (lines | 1) * 64 / static_cast<int64_t>(sizeof(C));
}
// The room of one packed input row of `images` images (PackInputRow's layout, with the lanes past
// in_depth and the places past a short phase's run, which it does not write).
template <typename C>
int64_t PackedRowValues(const ConvGeometry& g, int64_t images) {
  return PackedColumnStride<C>(g) * g.stride_w * images * PhaseColumns(g);
}

// A thread's input rows packed for the filter gradient's tiles (PackTileInputs), kept from one
// output row to the next within a call: a 3x3 filter's next output row reads two of the three
// rows again at stride 1, one at stride 2, so each row is packed once per work item, not once
// per output row reading it. Slot s holds, at values + s * slot_values, the input row
// held[s].ih of work item held[s].item (none: item -1); `item` is the work item whose rows are
// asked for next. Filters of up to kMaxPackedRows rows.
constexpr int kMaxPackedRows = 8;
template <typename C>
struct alignas(64) PackedRows {  // a thread's own cache lines
  struct Held {
    int64_t item, ih;
  };
  C* values;
  int64_t slot_values, item;
  Held held[kMaxPackedRows];
};
// Whether the filter gradient's tiles of P input channels read x packed (PackTileInputs): with
// a slot for every filter row. Packed at stride 2, the 28x128 layer's tiles had run 12% faster;
// packed at stride 1 only once each row was packed once (PackedRows), not three times: the
// 56x64 layer 7% faster and 28x128 3% (one pinned core, the two alternated call by call, the
// median of 60-70 paired calls; 28x128 in float64 4%), where packing a row for every output
// row reading it had cost as much as it saved. Keeping the rows took the stride-2 layer's
// packing from 9% of its time to 7%, 3% faster overall.
inline bool PacksTileInputs(const ConvGeometry& g, int64_t P) {
  return g.filter_in_depth >= P && g.filter_h <= kMaxPackedRows;
}
// The room of one PackedRows slot, and that of all of them (none where it never packs), for
// work items of `images` images.
template <typename C>
int64_t PackedSlotValues(const ConvGeometry& g, int64_t images) {
  return WholeLines<C>(PackedRowValues<C>(g, images));
}
template <typename C>
int64_t PackedInputValues(const ConvGeometry& g, int64_t images) {
  return PacksTileInputs(g, 1) ? g.filter_h * PackedSlotValues<C>(g, images) : 0;
}

// Input row ih of the images [n0, n1) packed for the filter gradient's tiles, into xk: per
// stride phase r and image n, the columns iw = r + t * stride_w one after the other, each with
// all its channels, PackedColumnStride apart, column t at xk + ((r * images + n) *
// PhaseColumns(g) + t) * PackedColumnStride(g). A tile of P input channels then reads its
// columns one PackedColumnStride apart. Read where they lie, the 28x128 stride-2 layer's columns
// 1 KB apart, a tile's 56 columns of 8 channels touched 56 lines for 32 bytes of each, and the
// lines of the 4 images' rows it reduces over did not stay in L1 from one tile to the next: its
// filter gradient ran at 82% of the FMA peak (95% when, as a timing experiment, every image read
// the first one's row). The columns are read in the row's order, each to its phase's run (read
// phase by phase, every other 512-byte column at stride 2, the rows' first reads waited on the
// L3: 2.4% slower). A column of 256 bytes or more is one call to memcpy; a narrower one is copied
// 16 bytes a step in line (a call per column took the stride-2 layer of 8 to 16 channels 1.15x
// its time; 16-byte steps for every column, 64 and 128 channels 1.00-1.03). The rows were packed in
// blocks of P channels before (the P values of a block's column one after the other, a tile's run
// contiguous), 4 to 8 values a copy; against that, on the Zen 5 EPYC, the stride-2 28x128 filter
// gradient took 0.966-0.974 of its time on one pinned core (each call paired with one packing
// blocks, medians of 100-150 pairs, 4 runs) and 0.984-0.987 on two threads; builds alternated
// process by process, 0.94-0.98 and 0.95-0.99, in float64 0.98-1.00; the final build against the
// block copies, alternated (best of 20-40 calls, two runs of 4 and 5 rounds), 28x128 0.95-0.97 and
// 0.97-1.01, a stride-2 layer of 64 channels 0.96, and narrower ones slower: 8 to 16, 12 to 32, 24
// to 48 and 32 to 64 channels 1.01-1.05 (8 and 12 channels up to 1.10-1.14 in the noisier run). The
// layers that do not pack (the stride-1 ones run Winograd, the stem the few-channel runs) gave the
// same bits in the same time (within 0.5%). Skipping the packing altogether (a timing experiment)
// saves 9-10% with either layout; a copy of as many bytes from x into a scratch buffer cost 3%, and
// 2% when spread over the tiles. Out of line, as the block copies were (inlined, the kernel's loop
// had kept its counters and strides on the stack: 1-2% slower).
template <typename C>
__attribute__((noinline)) void PackInputRow(const ConvGeometry& g, const C* __restrict x,
                                            int64_t n0, int64_t n1, int64_t ih, C* __restrict xk) {
  const int64_t ci_all = g.in_depth, sw = g.stride_w, tw = PhaseColumns(g), images = n1 - n0;
  const int64_t cs = PackedColumnStride<C>(g);
  const size_t bytes = static_cast<size_t>(ci_all) * sizeof(C);
  constexpr int64_t K = 16 / sizeof(C);
  for (int64_t n = 0; n < images; ++n) {
    const C* xrow = x + ((n0 + n) * g.in_h + ih) * g.in_w * ci_all;
    // Column iw = r + t * sw: phase r, place t of its run.
    for (int64_t iw = 0, r = 0, t = 0; iw < g.in_w; ++iw) {
      const C* __restrict src = xrow + iw * ci_all;
      C* __restrict dst = xk + ((r * images + n) * tw + t) * cs;
      if (bytes >= 256) {
        std::memcpy(dst, src, bytes);
      } else {  // 16 bytes a step (GCC makes a loop of single values a call to memcpy)
        int64_t c = 0;
        for (; c + K <= ci_all; c += K)
          for (int64_t k = 0; k < K; ++k) dst[c + k] = src[c + k];
        for (; c < ci_all; ++c) dst[c] = src[c];
      }
      if (++r == sw) r = 0, ++t;
    }
  }
}

// The input rows that output row oh of the images [n0, n1) reads, packed (PackInputRow) where
// `packed` does not hold them already: rows[kh] is filter row kh's packed input row, or null
// outside the input.
template <typename C>
BF_CONV_INLINE void PackTileInputs(const ConvGeometry& g, const C* __restrict x, int64_t n0,
                                   int64_t n1, int64_t oh, PackedRows<C>* packed, const C** rows) {
  const int64_t fh = g.filter_h;
  bool needed[kMaxPackedRows] = {};
  int64_t ih[kMaxPackedRows];
  for (int64_t kh = 0; kh < fh; ++kh) {
    ih[kh] = g.input_row(oh, kh);
    rows[kh] = nullptr;
    if (ih[kh] < 0 || ih[kh] >= g.in_h) ih[kh] = -1;  // outside the input
    for (int64_t s = 0; s < fh && ih[kh] >= 0; ++s) {
      const auto& held = packed->held[s];
      if (held.item == packed->item && held.ih == ih[kh]) {
        rows[kh] = packed->values + s * packed->slot_values;
        needed[s] = true;
      }
    }
  }
  for (int64_t kh = 0, s = 0; kh < fh; ++kh) {
    if (ih[kh] < 0 || rows[kh] != nullptr) continue;
    while (needed[s]) ++s;  // as many slots as filter rows: a free one is left
    C* xk = packed->values + s * packed->slot_values;
    PackInputRow<C>(g, x, n0, n1, ih[kh], xk);
    packed->held[s] = {packed->item, ih[kh]};
    needed[s] = true;
    rows[kh] = xk;
  }
}

// One filter-gradient tile: dwt[p, k-th vector] (rows co_all apart) += the sum over `images`
// images and `cols` columns of x[p] * dy[k-th vector], P input channels by NV vectors of output
// channels. A column's P inputs are at xcol + n * image_step + q * column_step, its gradient
// at dyq0 + n * dy_image + q * co_all.
template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void BackpropFilterTile(const C* __restrict xcol, int64_t column_step,
                                       int64_t image_step, const C* __restrict dyq0,
                                       int64_t dy_image, int64_t images, int64_t cols,
                                       int64_t co_all, C* __restrict dwt) {
  constexpr int L = sizeof(V) / sizeof(C);
  V acc[P][NV];
  ZeroTile(acc);
  // The tile's piece of dw, fetched while the columns run: the partial sum of a 3x3 layer of
  // 128 to 128 channels (590 KB) shares L2 with the packed rows, and adding the tile to it
  // waited on L3 (about a tenth of the stride-2 layer's samples). One pinned core, each call
  // paired with one without: resnet_28x128 stride 2 3.1% faster (median of 93 pairs; 2.2% on
  // two threads), stride 1 1.6% (75); resnet_56x64, the stem and fc6 within 1%. Fetching the
  // next tile's piece instead gained 1.7% at stride 2.
  for (int p = 0; p < P; ++p)
    for (int k = 0; k < NV; ++k) __builtin_prefetch(dwt + p * co_all + k * L);
  for (int64_t n = 0; n < images; ++n) {
    const C* xq = xcol + n * image_step;
    const C* dyq = dyq0 + n * dy_image;
    // Four columns per loop pass, as AddTapPixels does for the forward's steps: the 8 x 2
    // tile's 10 loads and 16 multiply-adds a step had 4 index instructions beside them
    // (resnet_56x64 5-8% faster on Cascade Lake, 28x128 1-4%).
#pragma GCC unroll 4
    for (int64_t q = 0; q < cols; ++q) {
      V dv[NV];
      for (int k = 0; k < NV; ++k) dv[k] = LoadVec<V>(dyq + q * co_all + k * L);
      for (int p = 0; p < P; ++p) {
        const C s = xq[q * column_step + p];
        for (int k = 0; k < NV; ++k) acc[p][k] += dv[k] * s;
      }
    }
  }
  for (int p = 0; p < P; ++p)
    for (int k = 0; k < NV; ++k) {
      C* d = dwt + p * co_all + k * L;
      StoreVec(d, LoadVec<V>(d) + acc[p][k]);
    }
}

// Filter gradient of output row oh of the batch elements [n0, n1), output channels
// [grp*cog + j0, + NV*L), into the private partial sum dw [fh, fw, cig, co]:
// dw[kh, kw, ci, co] += sum over n in [n0, n1) and ow of x[n, ih, iw(ow, kw), grp*cig + ci] *
// dy[n, oh, ow, co], P input channels at a time, read from x or, when `xp` is not null, from
// filter row kh's input row packed at xp[kh] (PackTileInputs; the channels after the last whole
// tile of P always from x).
// The rows of several batch elements share one register tile, so that a narrow layer (a 1x1 or
// a 6x6 one) still reduces over enough pixels per read-modify-write of dw.
template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void BackpropFilterTiles(const ConvGeometry& g, const C* __restrict x,
                                        const C* const* xp, const C* __restrict dy,
                                        C* __restrict dw, int64_t n0, int64_t n1, int64_t oh,
                                        int64_t grp, int64_t j0) {
  const int64_t ci_all = g.in_depth, co_all = g.out_depth, cig = g.filter_in_depth;
  const int64_t co0 = grp * (co_all / g.groups) + j0;
  const int64_t dy_image = g.out_h * g.out_w * co_all, images = n1 - n0;
  const int64_t sw = g.stride_w, tw = PhaseColumns(g), cs = PackedColumnStride<C>(g);
  const C* dyrow0 = dy + (n0 * g.out_h + oh) * g.out_w * co_all + co0;
  for (int64_t kh = 0; kh < g.filter_h; ++kh) {
    const int64_t ih = g.input_row(oh, kh);
    if (ih < 0 || ih >= g.in_h) continue;
    const C* xrow0 = x + (n0 * g.in_h + ih) * g.in_w * ci_all + grp * cig;
    for (int64_t kw = 0; kw < g.filter_w; ++kw) {
      const auto [off, ow0, ow1] = g.columns_inside(kw);
      if (ow0 >= ow1) continue;
      C* dwt = dw + (kh * g.filter_w + kw) * cig * co_all + co0;
      // Where the tile's first column (ow0, image n0) is, and how far the next column and the
      // next image are: in x, or in the packed rows (its phase r and place t0 there).
      const int64_t iw0 = ow0 * sw - off, r = iw0 % sw, t0 = iw0 / sw;
      const C* const xfirst = xrow0 + iw0 * ci_all;  // in x itself, and its steps
      const int64_t x_column = sw * ci_all, x_image = g.in_h * g.in_w * ci_all;
      const C* xcol = xfirst;
      int64_t column_step = x_column, image_step = x_image;
      if (xp != nullptr) {
        xcol = xp[kh] + (r * images * tw + t0) * cs + grp * cig;
        column_step = cs;
        image_step = tw * cs;
      }
      const C* dyq0 = dyrow0 + ow0 * co_all;
      const int64_t cols = ow1 - ow0;
      int64_t ci0 = 0;
      for (; ci0 + P <= cig; ci0 += P)
        BackpropFilterTile<C, V, P, NV>(xcol + ci0, column_step, image_step, dyq0, dy_image, images,
                                        cols, co_all, dwt + ci0 * co_all);
      // Four input channels and more after the last block of P (4 of 64 after blocks of 6): a
      // tile of 4 from x, one pass over the columns (16 sums with 4 vectors), not the
      // few-channel passes of 3 and 1 channels. (Read from the packed rows, a stride-2 layer of
      // 12 input to 24 output channels took 1.2x its time; builds alternated, one pinned core.)
      if constexpr (P > 4 && NV >= 2) {
        if (cig - ci0 >= 4) {
          BackpropFilterTile<C, V, 4, NV>(xfirst + ci0, x_column, x_image, dyq0, dy_image, images,
                                          cols, co_all, dwt + ci0 * co_all);
          ci0 += 4;
        }
      }
      // The input channels after the last full group of P (all of them for a 3-channel stem).
      const C* xrow_rest = xrow0 + ci0;
      C* dwt_rest = dwt + ci0 * co_all;
      const int64_t range[4] = {n1 - n0, ow0, ow1, off};
      switch (cig - ci0) {
        case 0:
          break;
        case 1:
          BackpropFilterFewChannels<C, V, 1, NV>(g, xrow_rest, dyrow0, dwt_rest, range);
          break;
        case 2:
          BackpropFilterFewChannels<C, V, 2, NV>(g, xrow_rest, dyrow0, dwt_rest, range);
          break;
        default:
          for (int64_t c = 0; c < cig - ci0; c += 3) {
            if (cig - ci0 - c >= 3) {
              BackpropFilterFewChannels<C, V, 3, NV>(g, xrow_rest + c, dyrow0,
                                                     dwt_rest + c * co_all, range);
            } else if (cig - ci0 - c == 2) {
              BackpropFilterFewChannels<C, V, 2, NV>(g, xrow_rest + c, dyrow0,
                                                     dwt_rest + c * co_all, range);
            } else {
              BackpropFilterFewChannels<C, V, 1, NV>(g, xrow_rest + c, dyrow0,
                                                     dwt_rest + c * co_all, range);
            }
          }
      }
    }
  }
}

// Filter gradient for the output channels [grp*cog + j0, grp*cog + cog) the tiles leave over.
template <typename C>
BF_CONV_INLINE void BackpropFilterRest(const ConvGeometry& g, const C* __restrict x,
                                       const C* __restrict dy, C* __restrict dw, int64_t n,
                                       int64_t oh, int64_t grp, int64_t j0) {
  const int64_t ci_all = g.in_depth, co_all = g.out_depth, cig = g.filter_in_depth;
  const int64_t cog = co_all / g.groups, co0 = grp * cog;
  const C* dyrow = dy + (n * g.out_h + oh) * g.out_w * co_all + co0;
  g.ForRowsInside(oh, [&](int64_t kh, int64_t ih) {
    const C* xrow = x + (n * g.in_h + ih) * g.in_w * ci_all + grp * cig;
    for (int64_t kw = 0; kw < g.filter_w; ++kw) {
      C* dwt = dw + (kh * g.filter_w + kw) * cig * co_all + co0;
      const auto [off, ow0, ow1] = g.columns_inside(kw);
      for (int64_t ow = ow0; ow < ow1; ++ow) {
        const C* __restrict xp = xrow + (ow * g.stride_w - off) * ci_all;
        const C* __restrict dyp = dyrow + ow * co_all;
        for (int64_t ci = 0; ci < cig; ++ci) {
          const C s = xp[ci];
          C* __restrict dr = dwt + ci * co_all;
          for (int64_t j = j0; j < cog; ++j) dr[j] += s * dyp[j];
        }
      }
    }
  });
}

// The filter gradient's tiles of output row oh of the batch elements [n0, n1): input channels
// PT at a time (packed where PacksTileInputs says so), output channels NVW vectors at a time,
// then NV, then one.
template <typename C, typename V, int PT, int NVW, int NV>
BF_CONV_INLINE void BackpropFilterTileRow(const ConvGeometry& g, const C* x, const C* dy, C* dw,
                                          int64_t n0, int64_t n1, int64_t oh, PackedRows<C>* xp) {
  constexpr int64_t L = 64 / sizeof(C);
  const int64_t cog = g.out_depth / g.groups;
  const C* rows[kMaxPackedRows];
  const C* const* packed = nullptr;
  if (PacksTileInputs(g, PT)) {
    PackTileInputs<C>(g, x, n0, n1, oh, xp, rows);
    packed = rows;
  }
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    int64_t j = 0;
    for (; j + NVW * L <= cog; j += NVW * L)
      BackpropFilterTiles<C, V, PT, NVW>(g, x, packed, dy, dw, n0, n1, oh, grp, j);
    if constexpr (NV < NVW) {
      for (; j + NV * L <= cog; j += NV * L)
        BackpropFilterTiles<C, V, PT, NV>(g, x, packed, dy, dw, n0, n1, oh, grp, j);
    }
    for (; j + L <= cog; j += L)
      BackpropFilterTiles<C, V, PT, 1>(g, x, packed, dy, dw, n0, n1, oh, grp, j);
    if (j < cog)
      for (int64_t n = n0; n < n1; ++n) BackpropFilterRest<C>(g, x, dy, dw, n, oh, grp, j);
  }
}

// The input channels of the filter gradient's wide tiles (AVX-512, BackpropFilterBlockT) and
// the fewest a group takes them with.
constexpr int kWideFilterChannels = 6;
constexpr int64_t kMinWideFilterChannels = int64_t{4} * kWideFilterChannels;

// Filter gradient of output row oh of the batch elements [n0, n1).
template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void BackpropFilterBlockT(const ConvGeometry& g, const C* x, const C* dy, C* dw,
                                         int64_t n0, int64_t n1, int64_t oh, PackedRows<C>* xp) {
  constexpr int64_t L = 64 / sizeof(C);
  // With AVX-512's 32 registers, 8 input channels by NV vectors: 16 sums for 2 dy loads and 8
  // broadcasts per column (1x1 to 1024 channels: 0.64x the time of 4 channels; the forward and
  // input-gradient tiles measured no better or worse with 8 pixels, so they keep P).
  constexpr int PF = NV >= 2 ? 8 : P;
  const int64_t cog = g.out_depth / g.groups;
  // Few input channels (fewer than PF), no groups or dilation: whole filter rows as runs, with
  // AVX-512's registers 7 taps by NV vectors of output channels at a time (the stem: 2 dy
  // loads and 7 broadcasts per 14 fused multiply-adds; 7 x 4 needs 33 registers, and 6 x 4
  // wastes a quarter of a 21-value run: both measured slower).
  if constexpr (!kIsSplitVec<V>) {
    if (g.groups == 1 && g.in_depth < PF && g.dilation_w == 1 &&
        g.filter_w * g.in_depth >= kWideP) {
      int64_t j = 0;
      for (; j + NV * L <= cog; j += NV * L)
        BackpropFilterRunRows<C, V, NV>(g, x, dy, dw, n0, n1, oh, j);
      for (; j + L <= cog; j += L) BackpropFilterRunRows<C, V, 1>(g, x, dy, dw, n0, n1, oh, j);
      if (j < cog)
        for (int64_t n = n0; n < n1; ++n) BackpropFilterRest<C>(g, x, dy, dw, n, oh, 0, j);
      return;
    }
    // 6 input channels by 2 NV vectors (24 sums, 4 dy loads and 6 broadcasts per column, 29
    // registers) where a group has 4 blocks of 6 input channels and 2 NV vectors of output
    // channels: 8 x NV issues 26 instructions per column for its 16 multiply-adds, which the
    // core renames 4 a cycle, as many cycles as the multiply-adds take on its two FMA ports;
    // 6 x 2 NV issues 34 for 24. The channels after the last block of 6 go as those after the
    // last block of 8 do (BackpropFilterTiles: 4 of 64 in a tile of 4, 2 of 128 through
    // BackpropFilterFewChannels). One pinned core, paired call by call with 8 x NV (medians of
    // 190-1150 pairs): resnet_28x128 stride 1 0.91, stride 2 0.95-0.97, resnet_56x64 0.91-0.93, in
    // double 0.91, 0.94-0.95 and 0.96-0.98; fc6 (512 to 1024 channels), the stem and the 1x1
    // layer within 1%. Built with the branch padding of blocks/CMakeLists.txt, which 8 x NV's
    // loop had needed more: resnet_28x128 0.92-0.94 and 0.97, resnet_56x64 0.98, fc6 0.99-1.0.
    if constexpr (NV >= 2) {
      if (g.filter_in_depth >= kMinWideFilterChannels && cog >= int64_t{2} * NV * L)
        return BackpropFilterTileRow<C, V, kWideFilterChannels, 2 * NV, NV>(g, x, dy, dw, n0, n1,
                                                                            oh, xp);
    }
  }
  BackpropFilterTileRow<C, V, PF, NV, NV>(g, x, dy, dw, n0, n1, oh, xp);
}

/// The filter gradient's kernel signature: geometry, x, dy, the partial sum dw, the batch
/// elements [n0, n1), the output row and the thread's packed rows (PackTileInputs).
template <typename C>
using FilterBlockFn = void (*)(const ConvGeometry&, const C*, const C*, C*, int64_t, int64_t,
                               int64_t, PackedRows<C>*);
// NOLINTBEGIN(bugprone-macro-parentheses): C is spliced into parameter types.
#define BF_CONV_FILTER_BLOCK_FNS(C)                                                               \
  BF_CONV_ISA_FNS(BackpropFilterBlock, BackpropFilterBlockT, C, FilterBlockFn<C>,                 \
                  (const ConvGeometry& g, const C* x, const C* dy, C* dw, int64_t n0, int64_t n1, \
                   int64_t oh, PackedRows<C>* xp),                                                \
                  (g, x, dy, dw, n0, n1, oh, xp))
// NOLINTEND(bugprone-macro-parentheses)
BF_CONV_FILTER_BLOCK_FNS(float)
BF_CONV_FILTER_BLOCK_FNS(double)

/// The forward's row signature: geometry, the input rows of the filter rows, the packed filter,
/// the output row, its index oh, zeros and whether to stream the stores.
template <typename C>
using ForwardRowFn = void (*)(const ConvGeometry&, const C* const*, const C*, C*, int64_t, const C*,
                              bool);
// NOLINTBEGIN(bugprone-macro-parentheses): C is spliced into parameter types.
#define BF_CONV_FORWARD_ROW_FNS(C)                                                                \
  BF_CONV_ISA_FNS(ForwardRow, ForwardRowT, C, ForwardRowFn<C>,                                    \
                  (const ConvGeometry& g, const C* const* xrows, const C* w, C* yrow, int64_t oh, \
                   const C* z, bool stream),                                                      \
                  (g, xrows, w, yrow, oh, z, stream))
// NOLINTEND(bugprone-macro-parentheses)
BF_CONV_FORWARD_ROW_FNS(float)
BF_CONV_FORWARD_ROW_FNS(double)
/// The input gradient's kernel signature: geometry, the filter buffer, dy, dx, the batch
/// elements [n0, n1), the input row, zeros, the thread's pair scratch (InputScratch), the
/// output-channel chunk and whether to stream the stores.
template <typename C>
using InputBlockFn = void (*)(const ConvGeometry&, const C*, const C*, C*, int64_t, int64_t,
                              int64_t, const C*, IntPair*, int64_t, bool);
// NOLINTBEGIN(bugprone-macro-parentheses): C is spliced into parameter types.
#define BF_CONV_INPUT_BLOCK_FNS(C)                                                                \
  BF_CONV_ISA_FNS(BackpropInputBlock, BackpropInputBlockT, C, InputBlockFn<C>,                    \
                  (const ConvGeometry& g, const C* w, const C* dy, C* dx, int64_t n0, int64_t n1, \
                   int64_t ih, const C* z, IntPair* sc, int64_t chunk, bool stream),              \
                  (g, w, dy, dx, n0, n1, ih, z, sc, chunk, stream))
// NOLINTEND(bugprone-macro-parentheses)
BF_CONV_INPUT_BLOCK_FNS(float)
BF_CONV_INPUT_BLOCK_FNS(double)

// ---------------------------------------------------------------------------------------------
// Dense convolutions as one packed GEMM (packed_gemm.h), rows M, columns N, depth K:
//   forward:         y[pixels, co]        = im2col(x)[pixels, taps*ci]   * w[taps*ci, co]
//   input gradient:  col[pixels, taps*ci] = dy[pixels, co] * w^T[co, taps*ci], then col2im
//                    adds each column row into the input pixels its taps read (1x1: col is dx)
//   filter gradient: dw[taps*ci, co]      = im2col(x)^T[taps*ci, pixels] * dy[pixels, co]
// Each thread computes whole rows of the result (whole columns for a filter gradient with more
// columns than rows), packing its own blocks of A and B into a bounded workspace, so no partial
// sums are added across threads and the bits do not depend on the thread count.
// ---------------------------------------------------------------------------------------------

// Whether a kernel whose `threads` threads share its result, `pixels` NHWC pixels of
// `channels` channels in `groups` groups (y, or dx), stores it past the caches: a result the op
// may stream (`streamable`) whose vectors of channels are whole and 64-byte aligned, and of
// which each thread writes more than kStreamShareBytes, half a core's L2 (the other half holds
// the input and filter panels the tiles reuse). A plain store first reads its line, and the
// lines written push what the next tiles read out of L2; the op that reads the result next finds
// it in memory instead of L3. One pinned core, CPU time, against oneDNN blocked (the same binary,
// three or four alternations): Conv2D resnet_56x64 (6.4 MB) 1.03-1.04 -> 1.01-1.03,
// resnet_28x128 (3.2 MB) 1.01-1.02 -> 0.99-1.00, its stride 2 (0.8 MB) 1.04-1.12 -> 1.04-1.06,
// the stem (6.4 MB) 1.06-1.07 -> 1.01-1.03, the 1x1 to 1024 channels (6.4 MB, the GEMM)
// 1.04-1.09 -> 1.01-1.02; the input gradients of resnet_56x64 and resnet_28x128 about 0.02
// lower. On two threads resnet_28x128 gained as much (Conv2D 1.02-1.06 -> 1.01-1.03, its input
// gradient 1.05-1.07 -> 1.00-1.04) but the stride-2 layer's 0.4 MB shares measured no gain.
// Those were measured on an earlier host. Where the shared L3 keeps the result
// (FitsSharedCache), it is not streamed: on Cascade Lake with a 35.8 MB L3, one pinned core,
// best of 15 runs alternated between two builds, plain stores took Conv2D on the stem from 4.00
// to 3.60 ms and resnet_56x64 and 28x128 2% off, the input gradients 1-5%; the 1x1 to 1024
// channels measured 0.89, 1.00 and 1.08 of its streamed time in three such runs. Not on AMD's
// cores, where such results are streamed too (SharedCacheKeepsResults).
template <typename C>
bool StreamsResult(bool streamable, int64_t pixels, int64_t channels, int64_t groups, int threads) {
  constexpr int64_t L = 64 / sizeof(C);
  const int64_t bytes = pixels * channels * static_cast<int64_t>(sizeof(C));
  return streamable && StreamsShare(bytes, threads) && channels % L == 0 &&
         (channels / groups) % L == 0;
}

// A 1x1 convolution of stride 1 without padding: im2col(x) is x itself.
bool IsPointwise(const ConvGeometry& g) {
  return g.filter_h == 1 && g.filter_w == 1 && g.stride_h == 1 && g.stride_w == 1 &&
         g.pad_top == 0 && g.pad_bottom == 0 && g.pad_left == 0 && g.pad_right == 0;
}

// The cost rule, the one place that picks the path. The direct kernels above stream the filter
// once per output row and tap; that is cheap while a row has many pixels, and dominant when it
// has few: a 1x1 layer (one tap, whose per-row work is a thin matrix product) and a layer of few
// output pixels with many channels per tap (a fc6 3x3 VALID on 6x6: 4 pixels per row, 4.7 MB
// of filter), where the direct input gradient reached only 6% of the FMA peak. Those go through
// the GEMM, whose packed tiles reuse each filter block from L2 for kMcPanels * MR pixels. Both
// need enough channels on each side to fill the register tile's vectors. Wide layers stay on the
// direct kernels: on the ResNet 3x3 layers (56x56x64, 28x28x128) the GEMM measured 1.1-2x
// their time, its im2col packing costing as much as a 64- or 128-column product per element.
// The input gradient of a layer of few input channels (an image's 3) goes through the GEMM
// too, dy[pixels, co] * w^T[co, taps * ci] and col2im: the direct kernel sums each input
// value's products as dot products over the output channels (BackpropInputDot), and reached
// 28% of the FMA peak on the stem, where the GEMM's tiles waste the quarter of their columns
// past the 147 taps and col2im adds each pixel's filter rows as runs. In every dtype and
// layout: a 16-bit or NCHW out_backprop and input gradient are converted a group of images at
// a time (GemmKernels::ConvertsRows). Converted whole, a float16 stem input gradient at batch
// 32 had peaked at 323 MB resident against the direct kernel's 202, so NHWC float32 and
// float64 alone took the GEMM; in groups, `blockflow run` on two threads peaks at 88 MB against
// the direct kernel's 77 (float16, batch 32; NCHW float32 148 against 138), and the stem's
// input gradient takes 7.7 ms instead of 20.8 in float16, 7.8 instead of 18.1 in NCHW float32
// (one pinned core, best of 3-4 alternated rounds).
bool UseGemm(const ConvGeometry& g, ConvOp op) {
  if (g.depthwise || g.groups != 1) return false;
  if (op == ConvOp::kBackpropInput && g.in_depth < 8 && g.out_depth >= 32) return true;
  if (g.in_depth < 32 || g.out_depth < 32) return false;
  if (IsPointwise(g)) return true;
  return g.out_h * g.out_w <= 64 && g.in_depth >= 64 && g.out_depth >= 64;
}

// The GEMM path's kernel set, for the geometries and ops UseGemm picks.
BF_CONV_OPTIMIZED_KERNEL_SET(GemmKernels);

// Rows [begin, end) of `rows` split among `nt` threads in multiples of `align`: thread t's.
std::pair<int64_t, int64_t> RowsOf(int64_t rows, int nt, int t, int64_t align) {
  const int64_t per = ((rows + nt - 1) / nt + align - 1) / align * align;
  return {std::min(rows, t * per), std::min(rows, (t + 1) * per)};
}

// Copies the finished columns [j0, j1) of a thread's own block of C (rows `ld` apart) into C
// (rows `ldc` apart, from the thread's first column): SplitGemm's ColumnSink.
template <typename C>
struct ColumnsOut {
  const C* block;
  C* c;
  int64_t ld, ldc, rows;
  static void Put(void* state, int64_t j0, int64_t j1) {
    const auto* out = static_cast<const ColumnsOut*>(state);
    for (int64_t i = 0; i < out->rows; ++i)
      std::copy_n(out->block + i * out->ld, j1 - j0, out->c + i * out->ldc + j0);
  }
};

// C[m, n] = A * B, with B the dense row-major k x n matrix at b, on nt threads: each computes
// whole rows of C, or whole columns when C has more columns than rows (fc6's forward, 512 x
// 1024; a 1x1 filter gradient, 256 x 1024), so that each thread packs only its own columns of
// B, where split by rows every thread packed all of B (fc6's 18.9 MB filter, read from memory
// by both). Split by columns, each thread sums its columns in a block of C of its own, rows a
// line longer than GemmColumnBlock, and copies each finished block into C once: summed in place
// over k's blocks, the threads' halves of every row of C shared pages, and on the AVX-512 EPYC
// 5 processes of 12 ran two threads of fc6's forward in 27.1-27.6 ms instead of 22.6-22.7 (with
// the blocks: 22.5-23.6 ms in all 12), and 5 of 12 the 1x1 filter gradient in 4.8-5.0 ms
// instead of 4.0-4.2 (with the blocks, 6 of 12 in 4.3-4.4). Either way every element is summed
// over k in the same order: the bits do not depend on the split. `stream` as for GemmRows
// (split by rows only).
template <typename C>
void SplitGemm(const MatrixView<C>& a, const MatrixView<C>& b, int64_t m, int64_t n, int64_t k,
               C* c, const GemmTile& tile, int nt, const KernelContext& ctx, bool stream) {
  const bool by_columns = n > m, own_blocks = by_columns && nt > 1;
  const int64_t gemm_work = WholeLines<C>(GemmWorkspaceElements(tile, sizeof(C)));
  const int64_t ld = GemmColumnBlock(tile, sizeof(C), a.transposed) + 64 / int64_t{sizeof(C)};
  const int64_t per_thread = ThreadStride<C>(gemm_work + (own_blocks ? m * ld : 0), nt);
  Reused<C> work(kSlotGemmWork);
  work->resize(static_cast<size_t>(nt * per_thread));
  InTeam(nt, [&] {
    // Split over the threads the region got (OpenMP may give fewer than asked).
    const int t = TeamThread(), team = TeamSize();
    C* mine = work.data() + t * per_thread;
    if (by_columns) {
      const auto [n0, n1] = RowsOf(n, team, t, tile.nr);
      if (n0 < n1) {
        MatrixView<C> bt = b.Shifted(n0);
        bt.extent = n1 - n0;
        if (own_blocks) {
          C* block = mine + gemm_work;
          ColumnsOut<C> out{block, c + n0, ld, n, m};
          const ColumnSink sink{&ColumnsOut<C>::Put, &out};
          GemmRows(a, bt, 0, m, n1 - n0, k, block, ld, mine, tile, ctx, &sink);
        } else {
          GemmRows(a, bt, 0, m, n1 - n0, k, c + n0, n, mine, tile, ctx, nullptr, stream);
        }
      }
    } else {
      const auto [m0, m1] = RowsOf(m, team, t, tile.mr);
      GemmRows(a, b, m0, m1, n, k, c + m0 * n, n, mine, tile, ctx, nullptr, stream);
    }
  });
}

// The GEMM's B, widened as PackB reads it when 16-bit, not into a whole float copy first: the
// filter (the forward's and the input gradient's B) and an NHWC out_backprop (the filter
// gradient's). The A operands and NCHW activations are whole buffers converted once: a dense
// layer reads them many times over, and their conversion costs little beside its arithmetic.
// Widened by the packers instead, a float16 fc6's forward took 4% longer and a 1x1 layer's
// forward and input gradient 3-8%: the packers read A once per block of B's columns, and an
// im2col A holds each input up to fh * fw times, where the whole copy widens each value once.
// The input gradient's col2im path (not 1x1) converts out_backprop and the input gradient a
// group of images at a time (BackpropInput), not as whole tensors.
template <typename T>
RowConverted GemmKernels<T>::ConvertsRows(const ConvState& s) {
  const bool narrow = !std::is_same_v<T, ComputeT<T>>;
  const bool col2im = s.op == ConvOp::kBackpropInput && !IsPointwise(s.geometry);
  return {.out_backprop = col2im || (narrow && s.op == ConvOp::kBackpropFilter &&
                                     s.attrs.format == DataFormat::kNHWC),
          .result = col2im,
          .filter = narrow};
}

// An operand as the GEMM's dense B, ld elements a stored row, `transposed` as for MatrixView:
// the op's 16-bit tensor (`narrow`, when the kernel set was given it) or the compute buffer.
template <typename T>
MatrixView<ComputeT<T>> DenseB(const T* narrow, const ComputeT<T>* wide, int64_t ld,
                               bool transposed) {
  using C = ComputeT<T>;
  if constexpr (!std::is_same_v<T, C>) {
    if (narrow != nullptr) return MatrixView<C>::Dense(narrow, ld, ld, transposed);
  }
  return MatrixView<C>::Dense(wide, ld, ld, transposed);
}

template <typename T>
void GemmKernels<T>::Forward(const KernelArgs<T>& args, const KernelContext& ctx) {
  using C = ComputeT<T>;
  const ConvGeometry& g = args.g;
  const C* x = args.x;
  const int64_t m = g.batch * g.out_h * g.out_w, n = g.out_depth;
  const int64_t k = g.filter_h * g.filter_w * g.in_depth;
  const MatrixView<C> a =
      IsPointwise(g) ? MatrixView<C>::Dense(x, k, k, false) : MatrixView<C>::Im2col(x, g, false);
  const GemmTile tile = ActiveGemmTile(sizeof(C));
  const int nt = ThreadsFor(ctx.num_threads, m * n * k, 1 << 18);
  const bool stream = StreamsResult<C>(args.result_streamable, m, n, 1, nt);
  SplitGemm(a, DenseB(args.w_t, args.w, n, false), m, n, k, args.result, tile, nt, ctx, stream);
}

// The input gradient's col2im: adds the column block [j0, j1) of the column rows [r0, r1),
// held at `col` (`slab` elements per row), into the input pixels their taps read, in dx: the
// input gradient of the images from img0 on. The GEMM's column j is column q0 + j of the
// column matrix (q0 > 0 where the GEMM runs one tap's channels at a time: ByTaps).
template <typename C>
struct Col2im {
  const ConvGeometry* g;
  C* dx;
  const C* col;
  int64_t slab, r0, r1, img0, q0 = 0;

  // The taps of one filter row read the input row ih; without dilation they read adjacent
  // pixels, and the values of those inside the input go into dx as one run (the stem's 7 taps
  // of 3 channels, 21 values), where a tap at a time added 3.
  static void Add(void* self, int64_t j0, int64_t j1) {
    const Col2im& s = *static_cast<const Col2im*>(self);
    j0 += s.q0;
    j1 += s.q0;
    const ConvGeometry& g = *s.g;
    const int64_t ci = g.in_depth, pixels = g.out_h * g.out_w, fw = g.filter_w;
    const int64_t dil = g.dilation_w, per_row = fw * ci;  // q = (kh * fw + kw) * ci + c
    for (int64_t r = s.r0; r < s.r1; ++r) {
      const int64_t img = r / pixels, oh = r % pixels / g.out_w, ow = r % g.out_w;
      const C* row = s.col + (r - s.r0) * s.slab - j0;
      // The taps kw in [lo, hi) read inside the input row: iw = base + kw * dil.
      const int64_t base = g.input_col(ow, 0);
      const int64_t lo = base >= 0 ? 0 : (dil - 1 - base) / dil;
      const int64_t hi = std::min(fw, std::max<int64_t>(0, (g.in_w - base + dil - 1) / dil));
      for (int64_t kh = j0 / per_row; kh * per_row < j1; ++kh) {
        const int64_t ih = g.input_row(oh, kh);
        if (ih < 0 || ih >= g.in_h) continue;
        // Tap 0's pixel (its offset may be below 0).
        const int64_t pixel0 = (((img - s.img0) * g.in_h + ih) * g.in_w + base) * ci;
        const int64_t qa = std::max(j0, kh * per_row + lo * ci);
        const int64_t qb = std::min(j1, kh * per_row + hi * ci);
        for (int64_t q = qa; q < qb;) {
          // A run: the rest of the row's taps without dilation, else the rest of one tap.
          const int64_t in_row = q - kh * per_row, kw = in_row / ci;
          const int64_t count = dil == 1 ? qb - q : std::min(qb - q, (kw + 1) * ci - in_row);
          C* __restrict d = s.dx + (pixel0 + kw * (dil - 1) * ci + in_row);
          const C* __restrict v = row + q;
          for (int64_t u = 0; u < count; ++u) d[u] += v[u];
          q += count;
        }
      }
    }
  }
};

// Whether the GEMM input gradient of g runs its filter a tap at a time, its threads splitting
// the input channels: where the filter passes kTapFilterBytes, dy and dx are NHWC buffers of the
// compute type (`direct`: no thread converts what another converts too), and the input
// channels come in whole GEMM panels, at least a GEMM column block of them. Taken by images,
// every thread packed the whole filter as B: two threads of fc6 read its 18.9 MB from memory
// each. fc6, calls paired: two threads 0.92 of their time, one pinned core 0.996. With a column
// block's worth of input channels, no block of the by-images path holds two taps of one
// channel, so both paths add each dx element's sums in the order of its row runs and then of
// the taps: the same bits in every layout and dtype that takes either.
constexpr int64_t kTapFilterBytes = int64_t{8} << 20;
template <typename C>
bool ByTaps(const ConvGeometry& g, bool direct, const GemmTile& tile) {
  const int64_t bytes = g.filter_h * g.filter_w * g.in_depth * g.out_depth * int64_t{sizeof(C)};
  return direct && !IsPointwise(g) && bytes > kTapFilterBytes && g.in_depth % tile.nr == 0 &&
         g.in_depth >= GemmColumnBlock(tile, sizeof(C), false);
}

template <typename T>
void GemmKernels<T>::BackpropInput(const KernelArgs<T>& args, const KernelContext& ctx) {
  using C = ComputeT<T>;
  const ConvGeometry& g = args.g;
  C* dx = args.result;
  const int64_t ci = g.in_depth, co = g.out_depth, taps = g.filter_h * g.filter_w;
  const int64_t pixels = g.out_h * g.out_w, n = taps * ci;
  const bool pointwise = IsPointwise(g);
  const GemmTile tile = ActiveGemmTile(sizeof(C));
  // Threads take whole images (col2im adds into the pixels of its own images only), or with a
  // large filter (ByTaps) input channels of every image (col2im adds into those only). The column
  // matrix goes a GEMM column block (`slab` columns, or all n when fewer) at a time through a
  // buffer of `span` rows, about kColumnBytes: as many whole images as fit, or an image of more
  // rows (the stem's 12544) in runs of `span` rows from its first. Either way the sums into an
  // image come in an order, and so with bits, that depend on the geometry alone.
  constexpr int64_t kColumnBytes = 4 << 20;
  const int64_t slab =
      std::min(GemmColumnBlock(tile, sizeof(C), false), (n + tile.nr - 1) / tile.nr * tile.nr);
  const int64_t span = pointwise ? 0
                                 : std::max<int64_t>(tile.mr, kColumnBytes / int64_t{sizeof(C)} /
                                                                  slab / tile.mr * tile.mr);
  // A filter past kTapFilterBytes (fc6's 18.9 MB) goes a tap at a time, and the threads split
  // its input channels, whole panels each, over every image (ByTaps); otherwise a 1x1 layer's
  // rows are independent (any split), and other layers' threads take whole images.
  const bool by_taps = ByTaps<C>(g, args.dy != nullptr && dx != nullptr, tile);
  const int wanted = ThreadsFor(ctx.num_threads, g.batch * pixels * n * co, 1 << 18);
  const int nt = pointwise ? wanted
                 : by_taps ? static_cast<int>(std::min<int64_t>(ci / tile.nr, wanted))
                           : static_cast<int>(std::min<int64_t>(g.batch, wanted));
  const int64_t images = std::min(std::max<int64_t>(1, span / std::max<int64_t>(1, pixels)),
                                  by_taps ? g.batch : (g.batch + nt - 1) / nt);
  // A 16-bit or NCHW out_backprop and input gradient (ConvertsRows, not 1x1) go through the
  // thread's buffers a group of images at a time (UseGemm says why): dy converted before the
  // group's rows, dx converted after them. (Not through ActivationChunks: its chunks lie on a
  // fixed grid of images, where a thread's groups start at its share of the batch.)
  const int64_t image = g.in_h * g.in_w * ci, out_image = pixels * co;
  const int64_t dy_room = args.dy_t != nullptr ? WholeLines<C>(images * out_image) : 0;
  const int64_t dx_room = args.result_t != nullptr ? WholeLines<C>(images * image) : 0;
  Reused<C> work(kSlotGemmWork);
  const int64_t gemm_work = GemmWorkspaceElements(tile, sizeof(C));
  const int64_t per_thread = gemm_work + WholeLines<C>(span * slab) + dy_room + dx_room;
  work->resize(static_cast<size_t>(nt * per_thread));
  // B[co, (tap, ci)] = w[tap, ci, co]: the HWIO filter read along co.
  const MatrixView<C> b = DenseB(args.w_t, args.w, co, true);
  InTeam(nt, [&] {
    // Split over the threads the region got (OpenMP may give fewer than asked).
    const int t = TeamThread(), team = TeamSize();
    C* ap = work.data() + t * per_thread;
    if (pointwise) {
      const MatrixView<C> a = MatrixView<C>::Dense(args.dy, co, co, false);
      const auto [m0, m1] = RowsOf(g.batch * pixels, team, t, tile.mr);
      GemmRows(a, b, m0, m1, n, co, dx + m0 * ci, ci, ap, tile, ctx);
    } else {
      // This thread's images [b0, b1) and input channels [c0, c1): whole images, every channel;
      // or (by_taps) every image, whole panels of channels as evenly as they go, a GEMM per tap.
      // Either way each element of dx gets its sums in the order of its row runs and then of the
      // taps (see ByTaps), whatever the split.
      int64_t b0 = g.batch * t / team, b1 = g.batch * (t + 1) / team, c0 = 0, c1 = ci;
      if (by_taps) {
        const int64_t panels = ci / tile.nr;
        b0 = 0;
        b1 = g.batch;
        c0 = panels * t / team * tile.nr;
        c1 = panels * (t + 1) / team * tile.nr;
      }
      const int64_t pieces = by_taps ? taps : 1, width = by_taps ? c1 - c0 : n;
      C* const col = ap + gemm_work;
      C* const dy_group = col + WholeLines<C>(span * slab);
      C* const dx_group = dy_group + dy_room;
      Col2im<C> sc{&g, nullptr, col, slab, 0, 0, 0};
      const ColumnSink sink{&Col2im<C>::Add, &sc};
      for (int64_t img = b0; img < b1 && c0 < c1 && !ctx.cancelled();) {
        // Images [img, img + count): out_backprop's rows from [img * pixels, ...) at A's row 0,
        // and their dx, zeroed group by group (a run cancelled before it starts writes nothing).
        const int64_t count = std::min(b1 - img, images);
        const C* dy = args.dy != nullptr ? args.dy + img * out_image : dy_group;
        if (args.dy == nullptr) {
          for (int64_t j = 0; j < count; ++j)
            GatherRows(args.dy_t, args.format, g.out_h, g.out_w, co, img + j, 0, g.out_h,
                       dy_group + j * out_image, co);
        }
        sc.dx = dx != nullptr ? dx + img * image : dx_group;
        sc.img0 = img;
        if (c1 - c0 == ci) {
          std::fill(sc.dx, sc.dx + count * image, C{0});
        } else {
          for (int64_t p = 0; p < count * g.in_h * g.in_w; ++p)
            std::fill(sc.dx + p * ci + c0, sc.dx + p * ci + c1, C{0});
        }
        const MatrixView<C> a = MatrixView<C>::Dense(dy, co, co, false);
        const int64_t first = img * pixels, end = (img + count) * pixels;
        for (int64_t r = first; r < end; r += span) {  // GemmRows polls the flag
          sc.r0 = r;
          sc.r1 = std::min(end, r + span);
          for (int64_t piece = 0; piece < pieces; ++piece) {
            sc.q0 = by_taps ? piece * ci + c0 : 0;
            GemmRows(a, b.Shifted(sc.q0 * co), sc.r0 - first, sc.r1 - first, width, co, col, slab,
                     ap, tile, ctx, &sink);
          }
        }
        if (dx == nullptr && !ctx.cancelled()) {
          for (int64_t j = 0; j < count; ++j)
            ScatterRows(dx_group + j * image, args.result_t, args.format, g.in_h, g.in_w, ci,
                        img + j, 0, g.in_h);
        }
        img += count;
      }
    }
  });
}

template <typename T>
void GemmKernels<T>::BackpropFilter(const KernelArgs<T>& args, const KernelContext& ctx) {
  using C = ComputeT<T>;
  const ConvGeometry& g = args.g;
  const int64_t m = g.filter_h * g.filter_w * g.in_depth, n = g.out_depth;
  const int64_t k = g.batch * g.out_h * g.out_w;
  const MatrixView<C> a = IsPointwise(g) ? MatrixView<C>::Dense(args.x, m, m, true)
                                         : MatrixView<C>::Im2col(args.x, g, true);
  const GemmTile tile = ActiveGemmTile(sizeof(C));
  const int nt = ThreadsFor(ctx.num_threads, m * n * k, 1 << 18);
  Reused<C> sums(kSlotPartialSums);
  // The sums in the compute type: straight into the output when that is its type.
  C* dw = nullptr;
  if constexpr (std::is_same_v<T, C>) {
    dw = args.filter_grad->template data<T>();
  } else {
    sums->resize(static_cast<size_t>(m * n));
    dw = sums.data();
  }
  SplitGemm(a, DenseB(args.dy_t, args.dy, n, false), m, n, k, dw, tile, nt, ctx,
            /*stream=*/false);
  if constexpr (!std::is_same_v<T, C>) {
    if (!ctx.cancelled()) {
      T* out = args.filter_grad->template data<T>();
      ConvertParallel(dw, out, m * n, ctx.num_threads);
    }
  }
}

// How many batch elements a work item of the direct gradients takes (the same row of each, in
// images of `height` x `width` pixels): enough pixels (kPixels) for a register tile to amortise
// its loads and stores, yet at least kItems items to share among threads. The items are of
// equal size where a divisor of the batch allows (at least half the size aimed at), else of
// sizes that differ by one: threads take equal runs of items, and 8 images in items of 5 and 3
// gave one of two threads 25% more work.
int64_t ImagesPerItem(int64_t batch, int64_t height, int64_t width) {
  constexpr int64_t kPixels = 64, kItems = 8;
  int64_t nb = std::clamp<int64_t>((kPixels + width - 1) / std::max<int64_t>(1, width), 1,
                                   std::max<int64_t>(1, batch));
  while (nb > 1 && (batch + nb - 1) / nb * height < kItems) nb = (nb + 1) / 2;
  if (nb == 1) return 1;  // also an empty batch
  for (int64_t d = nb; d > 1 && 2 * d >= nb; --d)
    if (batch % d == 0) return d;
  const int64_t items = (batch + nb - 1) / nb;
  return (batch + items - 1) / items;
}

// The direct kernel set: one function per op, rows in parallel, polling the cancel flag before
// each row.
BF_CONV_OPTIMIZED_KERNEL_SET(Conv2DKernels);

// The direct forward of geometry g: y = conv(x, w), the filter as src(0, tap, ci, co) for
// PackForwardFilterFrom, x in `format`, of type C or a 16-bit S, and y where `args` says
// (ResultRows: the NHWC result, or rows converted into the op's tensor). x's rows are converted
// a row at a time (ExpandedInputRows) unless x is NHWC of type C. y may be stored past the
// caches (KernelArgs::result_streamable) when it is written directly and StreamsResult says so.
template <typename T, typename S>
void DirectForward(const KernelArgs<T>& args, const ConvGeometry& g, const S* x, DataFormat format,
                   const PanelSource<ComputeT<T>>& src, const KernelContext& ctx) {
  using C = ComputeT<T>;
  Reused<C> packed(kSlotPackedFilter);
  PackForwardFilterFrom(g, src, packed.get(), ctx.num_threads);
  const WorkBuffer<C> zeros(static_cast<size_t>(g.in_depth), C{0});
  const ForwardRowFn<C> row = ForwardRow(C{});
  const int64_t rows = g.batch * g.out_h;
  const int64_t row_cost = g.out_w * g.filter_h * g.filter_w * g.filter_in_depth * g.out_depth;
  const int nt = ThreadsFor(ctx.num_threads, rows * row_cost, 1 << 15);
  ExpandedInputRows<S, C> xrows(g, x, format, nt);
  ResultRows<T> out(args, g.out_h, g.out_w, g.out_depth, nt);
  const bool stream = out.direct() && StreamsResult<C>(args.result_streamable, rows * g.out_w,
                                                       g.out_depth, g.groups, nt);
  // Where the packed filter fits in L2, each thread but the first reads it from a copy of its
  // own (made once per call, into a buffer the thread keeps) rather than both cores reading the
  // lines that the parallel packing left in the other's L2. Two threads, best of 4 runs of two
  // builds alternated: resnet_56x64's forward 8.18 -> 7.74 ms, its input gradient 8.20 -> 7.88,
  // the stride-2 28x128 forward 2.11 -> 2.04; resnet_28x128 (a 590 KB filter) and the stem
  // within 1-4% either way.
  const bool copies =
      nt > 1 && static_cast<int64_t>(packed->size() * sizeof(C)) <= CacheBytes(2, int64_t{1} << 20);
  InTeam(nt, [&] {
    const int t = TeamThread();
    Reused<C> copy(kSlotFilterCopy);
    const C* wp = packed.data();
    if (copies && t > 0) {
      copy->assign(packed->begin(), packed->end());
      wp = copy.data();
    }
    const auto [r0, r1] = TeamShare(rows);
    for (int64_t r = r0; r < r1; ++r) {
      if (ctx.cancelled()) continue;
      row(g, xrows.FilterRows(t, r), wp, out.Row(r, t), r % g.out_h, zeros.data(), stream);
      out.Done(r, t);
    }
  });
}

// At stride 1 the input gradient is a forward convolution: dx[ih, iw, ci] = sum over (kh, kw)
// and co of dy[ih + pad_top - kh*dh, iw + pad_left - kw*dw, co] * w[kh, kw, ci, co], which is
// the forward of dy by the filter turned half a turn with its channels swapped,
// w'[kh', kw', co, ci] = w[fh-1-kh', fw-1-kw', ci, co], under the padding
// (fh-1)*dh - pad_top (and likewise on every side). The forward's tiles take a filter row's
// taps as one run of fw * co inputs, where the input gradient's take a tap at a time (64 steps
// a tap on resnet_56x64, whose input gradient ran at 93% of the peak against the forward's 97%).
// For a layer without groups whose padding is inside the filter's extent
// (DenseInputGradientForward) and whose input channels fill the forward's wide tiles; returns
// the forward's geometry, or nullopt.
std::optional<ConvGeometry> InputGradientAsForward(const ConvGeometry& g, int64_t vec_width) {
  if (g.in_depth < 2 * vec_width) return std::nullopt;
  return DenseInputGradientForward(g);
}

// Every op converts its operands in pieces: the forward (and the stride-1 input gradient, a
// forward of out_backprop) its input and result a row at a time, the filter gradient and the
// strided input gradient their out_backprop (and input) a work item's images at a time and
// their result a row at a time. An NCHW or 16-bit layer then makes no whole float32 NHWC copy of
// its activations, unless ConvertsInPieces says whole tensors are cheaper.
template <typename T>
RowConverted Conv2DKernels<T>::ConvertsRows(const ConvState& s) {
  if (!ConvertsInPieces(s)) return {};
  switch (s.op) {
    case ConvOp::kForward:
      return {.input = true, .result = true};
    case ConvOp::kBackpropInput:
      return {.out_backprop = true, .result = true};
    case ConvOp::kBackpropFilter:
      return {.input = true, .out_backprop = true};
  }
  return {};
}

template <typename T>
void Conv2DKernels<T>::Forward(const KernelArgs<T>& args, const KernelContext& ctx) {
  const int64_t cig = args.g.filter_in_depth, co_all = args.g.out_depth;
  const PanelSource<ComputeT<T>> src{.base = args.w,
                                     .group = co_all / args.g.groups,
                                     .tap_step = cig * co_all,
                                     .reduce = co_all,
                                     .lane_step = 1};
  if (args.x_t != nullptr) return DirectForward(args, args.g, args.x_t, args.format, src, ctx);
  DirectForward(args, args.g, args.x, DataFormat::kNHWC, src, ctx);
}

// The input gradient's row kernels (the strided ones: stride 1 goes through DirectForward), dy
// in `format`, of type C or a 16-bit S. Unless dy is NHWC of type C, it is converted a block of
// a work item's images at a time (ActivationChunks); unless dx is written straight into the
// result (args.result), each item's dx rows go to a per-thread buffer of the item's images and
// are stored into the op's tensor (args.result_t) right after.
template <typename T, typename S>
void DirectBackpropInput(const KernelArgs<T>& args, const S* dy, DataFormat format,
                         const KernelContext& ctx) {
  using C = ComputeT<T>;
  const ConvGeometry& g = args.g;
  // Up to three copies of the filter in one buffer: panels [grp][ci block of L][kh, kw, co, L]
  // for the vector tiles (the inner loops then stream them), and for the input channels after
  // the last whole vector wt[kh, kw, co, ci] = w[kh, kw, ci, co] for the plain loops (few output
  // channels) or the HWIO filter for the dot-product path. Only the copies the kernel reads are
  // written: for a 3x3 layer of 128 to 128 channels at stride 2, three copies, element by
  // element on one thread, took about a tenth of the one-thread time.
  const C* w = args.w;
  constexpr int64_t L = 64 / sizeof(C);
  const int64_t taps = g.filter_h * g.filter_w, cig = g.filter_in_depth, co_all = g.out_depth;
  const int64_t cog = co_all / g.groups, cig_vec = cig - cig % L;
  const int64_t fsize = taps * cig * co_all, packed = g.groups * cig_vec * taps * cog;
  Reused<C> wt(kSlotPackedFilter);
  wt->resize(static_cast<size_t>(packed + 2 * fsize));
  PackPanels(
      g, cig_vec, cog,
      PanelSource<C>{
          .base = w, .group = cog, .tap_step = cig * co_all, .reduce = 1, .lane_step = co_all},
      wt.data(), ctx.num_threads);
  if (cig_vec < cig && cog < L) {
    for (int64_t tap = 0; tap < taps; ++tap)
      for (int64_t ci = 0; ci < cig; ++ci)
        for (int64_t co = 0; co < co_all; ++co)
          wt[static_cast<size_t>(packed + (tap * co_all + co) * cig + ci)] =
              w[(tap * cig + ci) * co_all + co];
  } else if (cig_vec < cig) {
    std::copy(w, w + fsize, wt.data() + packed + fsize);
  }
  const WorkBuffer<C> zeros(static_cast<size_t>(co_all), C{0});
  const InputBlockFn<C> block = BackpropInputBlock(C{});
  // When one block of input channels' filter panel (taps x cog vectors) outgrows L2 (kPanel),
  // the output channels go in chunks whose panels fit, and each work item takes the rows of
  // several batch elements (>= kPixels pixels), so a chunk is read from L2 by all their tiles.
  // Otherwise one row per item, one chunk. Chunks only spill the tiles' sums to dx between
  // them: the result is the same, bit for bit, as without.
  constexpr int64_t kPanel = 256 << 10;
  const int64_t panel_row = g.filter_h * g.filter_w * 128;  // bytes per output channel, 2 vectors
  int64_t chunk = cog, nb = 1;
  if (cog * panel_row > kPanel) {
    chunk = std::max<int64_t>(1, kPanel / panel_row);
    nb = ImagesPerItem(g.batch, g.in_h, g.in_w);
  }
  const int64_t rows = (g.batch + nb - 1) / nb * g.in_h;
  const int64_t row_cost =
      nb * (g.in_w * g.filter_h * g.filter_w * cig * co_all / (g.stride_h * g.stride_w) + g.in_w);
  const int nt = ThreadsFor(ctx.num_threads, rows * row_cost, 1 << 15);
  const bool direct = args.result != nullptr;
  // dx written once (one chunk) into the op's tensor may go past the caches.
  const bool stream =
      direct && chunk == cog &&
      StreamsResult<C>(args.result_streamable, g.batch * g.in_h * g.in_w, g.in_depth, g.groups, nt);
  // Per-thread scratch for the row kernel's tap lists, allocated here, outside the region, each
  // starting with the table of the columns reaching each stride phase.
  PerThread<IntPair> scratch = InputScratch(g, nt);
  ActivationChunks<S, C> dys(dy, format, g.batch, g.out_h, g.out_w, g.out_depth, nb * g.out_h, nt,
                             kSlotOutBackpropRows);
  const int64_t image = g.in_h * g.in_w * g.in_depth, row = g.in_w * g.in_depth;
  PerThread<C> dx_images(direct ? 0 : nt, nb * image);
  ParallelRows(rows, nt, ctx, [&](int64_t r, int thread) {
    const int64_t b = r / g.in_h, ih = r % g.in_h, n0 = b * nb;
    const int64_t count = std::min(g.batch, n0 + nb) - n0;
    // The kernel's dx for images [n0, n0 + count): the result's, or the thread's buffer.
    C* dx = direct ? args.result + n0 * image : dx_images[thread];
    block(g, wt.data(), dys.Get(thread, b), dx, 0, count, ih, zeros.data(), scratch[thread], chunk,
          stream);
    if (!direct) {
      for (int64_t j = 0; j < count; ++j)
        ScatterRows(dx + j * image + ih * row, args.result_t, args.format, g.in_h, g.in_w,
                    g.in_depth, n0 + j, ih, 1);
    }
  });
}

template <typename T>
void Conv2DKernels<T>::BackpropInput(const KernelArgs<T>& args, const KernelContext& ctx) {
  using C = ComputeT<T>;
  const ConvGeometry& g = args.g;
  if (const std::optional<ConvGeometry> f = InputGradientAsForward(g, 64 / sizeof(C))) {
    // The turned filter w'[tap', c, o] = w[taps - 1 - tap', o, c] (the taps in reverse order
    // are the half turn), packed straight from w.
    const int64_t last = g.filter_h * g.filter_w - 1, ci = g.in_depth, co = g.out_depth;
    const PanelSource<C> src{.base = args.w + last * ci * co,
                             .group = 0,  // no groups (InputGradientAsForward)
                             .tap_step = -ci * co,
                             .reduce = 1,
                             .lane_step = co};
    if (args.dy_t != nullptr) return DirectForward(args, *f, args.dy_t, args.format, src, ctx);
    DirectForward(args, *f, args.dy, DataFormat::kNHWC, src, ctx);
    return;
  }
  if (args.dy_t != nullptr) return DirectBackpropInput(args, args.dy_t, args.format, ctx);
  DirectBackpropInput(args, args.dy, DataFormat::kNHWC, ctx);
}

// The filter gradient from x and dy in `format`, of type C or a 16-bit S: work items of `nb`
// batch elements' row oh, so that the read-modify-write of dw stays small next to a register
// tile's arithmetic (nb depends on the geometry alone, so the sums, and their bits, depend on
// the thread count only). Unless NHWC of type C, x and dy are converted a block of nb images at
// a time into the thread's buffers as its items reach the block (ActivationChunks), not whole.
template <typename T, typename S>
void DirectBackpropFilter(const KernelArgs<T>& args, const S* x, const S* dy, DataFormat format,
                          const KernelContext& ctx) {
  using C = ComputeT<T>;
  const ConvGeometry& g = args.g;
  const int64_t fsize = g.filter_elements();
  const int64_t nb = ImagesPerItem(g.batch, g.out_h, g.out_w);
  const int64_t blocks = (g.batch + nb - 1) / nb, rows = blocks * g.out_h;
  const int64_t row_cost = nb * g.out_w * fsize;
  const int nt = ThreadsFor(ctx.num_threads, rows * row_cost, 1 << 15);
  const FilterBlockFn<C> block = BackpropFilterBlock(C{});
  ActivationChunks<S, C> xs(x, format, g.batch, g.in_h, g.in_w, g.in_depth, nb * g.in_h, nt,
                            kSlotInputRows);
  ActivationChunks<S, C> dys(dy, format, g.batch, g.out_h, g.out_w, g.out_depth, nb * g.out_h, nt,
                             kSlotOutBackpropRows);
  // Each thread's room for the packed input rows of its work items (PackTileInputs), empty,
  // ThreadStride apart.
  const int64_t packed = ThreadStride<C>(PackedInputValues<C>(g, nb), nt);
  const int64_t slot = PackedSlotValues<C>(g, nb);
  Reused<C> xpack(kSlotPackedInput);
  xpack->resize(static_cast<size_t>(nt * packed));
  std::vector<PackedRows<C>> packs(static_cast<size_t>(nt));
  for (int t = 0; t < nt; ++t) {
    PackedRows<C>& mine = packs[t];
    mine.values = xpack.data() + t * packed;
    mine.slot_values = slot;
    for (auto& held : mine.held) held = {-1, -1};
  }
  T* dw = args.filter_grad->template data<T>();
  SumRowsPerThread<T, C>(rows, fsize, nt, ctx, dw, [&](int64_t r, C* mine) {
    const int thread = TeamThread();
    const int64_t b = r / g.out_h, count = std::min(g.batch, (b + 1) * nb) - b * nb;
    PackedRows<C>* xp = &packs[thread];
    xp->item = b;
    block(g, xs.Get(thread, b), dys.Get(thread, b), mine, 0, count, r % g.out_h, xp);
  });
}

template <typename T>
void Conv2DKernels<T>::BackpropFilter(const KernelArgs<T>& args, const KernelContext& ctx) {
  if (args.x_t != nullptr) return DirectBackpropFilter(args, args.x_t, args.dy_t, args.format, ctx);
  DirectBackpropFilter(args, args.x, args.dy, DataFormat::kNHWC, ctx);
}

}  // namespace

Status RunConv2DKernels(const ConvState& state, const Tensor& a, const Tensor& b, Tensor* out,
                        const KernelContext& ctx) {
  if (UseWinograd(state.geometry, state.op, a.dtype()))
    return RunWinogradKernels(state, a, b, out, ctx);
  if (UseGemm(state.geometry, state.op))
    return RunOptimizedKernels<GemmKernels>(state, a, b, out, ctx);
  return RunOptimizedKernels<Conv2DKernels>(state, a, b, out, ctx);
}

}  // namespace blockflow::conv::internal
