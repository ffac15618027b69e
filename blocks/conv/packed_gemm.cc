#include "blocks/conv/packed_gemm.h"

#include <algorithm>

#include "blocks/conv/asm_tiles.h"
#include "blocks/conv/convert.h"
#include "blocks/conv/isa.h"
#include "blocks/conv/layout.h"

// The micro-kernel passes 64-byte vectors between always-inlined helpers; GCC's note that this
// changes the ABI on targets without AVX-512 (-Wpsabi) does not apply to inlined code.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace blockflow::conv::internal {
namespace {

// Cache blocking, the same for every ISA: Kc values of k per block (KcFor), kMcPanels
// micro-panels of A per packed block, and B blocks of Kc x Nc elements of about BBlockBytes(),
// packed once per (Nc, Kc) block and kept in L2 while every A block passes over them.
constexpr int64_t kKc = 256, kKcInPlace = 512;
// The values of k per block: kKc (an AVX-512 A micro-panel, 6 x 256 values, is 6 KB of L1 in
// float), or kKcInPlace floats where A is not transposed (read in place, or packed a micro-panel
// at a time just before its tiles). Over twice as many k a block, a forward or input gradient
// reads and writes back its block of C half as many times, and each tile starts half as often:
// one pinned core, 3 processes of each alternated, fc6's forward 44.7 -> 43.6 ms (both with the
// first micro-panel packing B, below); with that packing too, against neither, the 1x1 layer's
// input gradient 8.07 -> 7.63 and forward 7.46 -> 7.35. The filter gradient (A transposed,
// packed a block at a time) took 5% longer with 512.
int64_t KcFor(bool a_transposed, size_t elem_size) {
  return !a_transposed && elem_size == sizeof(float) ? kKcInPlace : kKc;
}
// The most values of k a block takes for elements of elem_size bytes.
int64_t MostKc(size_t elem_size) {
  return std::max(KcFor(false, elem_size), KcFor(true, elem_size));
}
// The columns of a transposed B that PackB interleaves at a time.
constexpr int64_t kPackColumns = 8;
constexpr int64_t kMcPanels = 20;
// A B block takes half a core's L2 cache (as the C library reads it from the CPU; 512 KB when
// it cannot), from 256 KB to 1 MB. With 1 MB of L2, 512 KB measured best (256 KB: fc6's filter
// gradient 6% slower). With 2 MB, 1 MB blocks against 512 KB, best of 20 runs on one pinned
// core: fc6's filter gradient 34.1 -> 31.4 ms (its transposed A packed once, not once per half
// of the columns), its forward 31.8 -> 31.2, the 1x1 filter gradient 5.78 -> 5.60, the 1x1
// forward and input gradients unchanged.
int64_t BBlockBytes() {
  return std::clamp<int64_t>(CacheBytes(2, int64_t{1} << 20) / 2, int64_t{256} << 10,
                             int64_t{1} << 20);
}
// The columns of a B block: BBlockBytes() of kc rows, in whole panels of nr.
int64_t NcFor(int64_t nr, size_t elem_size, int64_t kc) {
  const int64_t nc = BBlockBytes() / (kc * static_cast<int64_t>(elem_size)) / nr * nr;
  return nc > nr ? nc : nr;
}
// The elements of the largest B block, whichever KcFor.
int64_t BBlockElements(int64_t nr, size_t elem_size) {
  int64_t most = 0;
  for (const bool transposed : {false, true}) {
    const int64_t kc = KcFor(transposed, elem_size);
    most = std::max(most, NcFor(nr, elem_size, kc) * kc);
  }
  return most;
}

// The register tiles: (MR rows, NV 64-byte vectors of columns). AVX-512: 6 x 4 zmm = 24 of the
// 32 registers accumulate; AVX2: 6 x 2 ymm = 12 of 16; the baseline: 2 x 4 xmm = 8 of 16.
// The 6 x 4 tile streams its 64 KB B panel from L2 for every 6 rows of A, and that is not its
// limit: a 12 x 2 tile whose 32 KB B panel stays in L1 while the rows of an A block pass under
// it (A packed) measured slower on the 1x1 layer to 1024 channels (one pinned core, best of 10
// alternated rounds: forward 8.84 -> 9.49 ms, input gradient 8.12 -> 8.64, filter gradient
// 8.99 -> 13.7 on a busy host); reading its 12 rows of A in place did no better (spills).
constexpr GemmTile kTileAvx512{6, 4, 0};
constexpr GemmTile kTileAvx2{6, 1, 0};
constexpr GemmTile kTileBase{2, 1, 0};

// A run of elements of `v` from (i, j) along its contiguous axis: *len elements (at least 1) at
// the returned pointer, or nullptr when they are all zeros (im2col padding).
template <typename C>
BF_CONV_INLINE const C* Run(const MatrixView<C>& v, int64_t i, int64_t j, int64_t* len) {
  if (v.kind == MatrixView<C>::Kind::kDense) {
    if (v.transposed) {
      *len = v.extent - i;
      return v.data + j * v.ld + i;
    }
    *len = v.extent - j;
    return v.data + i * v.ld + j;
  }
  const ConvGeometry& g = *v.g;
  const int64_t p = v.transposed ? j : i, q = v.transposed ? i : j;
  const int64_t tap = q / g.in_depth, ci = q - tap * g.in_depth;
  const int64_t kh = tap / g.filter_w, kw = tap - kh * g.filter_w;
  const int64_t t = p / g.out_w, ow = p - t * g.out_w;
  const int64_t n = t / g.out_h, oh = t - n * g.out_h;
  *len = g.in_depth - ci;
  const int64_t ih = g.input_row(oh, kh), iw = g.input_col(ow, kw);
  if (ih < 0 || ih >= g.in_h || iw < 0 || iw >= g.in_w) return nullptr;
  // Without dilation the next taps of the filter row read the next input columns: the run
  // goes on while they are inside the row.
  if (g.dilation_w == 1) *len = std::min(g.filter_w - kw, g.in_w - iw) * g.in_depth - ci;
  return v.data + ((n * g.in_h + ih) * g.in_w + iw) * g.in_depth + ci;
}

// Packs rows [i, i + count) (count <= MR) and columns [k0, k0 + kc) of a row-major A (rows
// contiguous along k) into one micro-panel [kc][MR], the rows past `count` as zeros. The MR rows
// have runs of the same length at the same k (the im2col tap boundaries are common to all
// rows): they are interleaved kChunk values at a time, so that the panel is written
// contiguously. Runs in the padding read zeros.
template <typename C, int MR>
BF_CONV_INLINE void PackRowPanel(const MatrixView<C>& a, int64_t i, int64_t count, int64_t k0,
                                 int64_t kc, C* __restrict panel) {
  constexpr int64_t kChunk = 64;
  static constexpr C kZeros[kChunk] = {};
  for (int64_t k = 0; k < kc;) {
    const C* src[MR];
    int64_t len = std::min(kChunk, kc - k);
    for (int r = 0; r < MR; ++r) {
      src[r] = nullptr;
      if (r < count) {
        int64_t run = 0;
        src[r] = Run(a, i + r, k0 + k, &run);
        len = std::min(len, run);
      }
      if (src[r] == nullptr) src[r] = kZeros;
    }
    for (int64_t u = 0; u < len; ++u)
      for (int r = 0; r < MR; ++r) panel[(k + u) * MR + r] = src[r][u];
    k += len;
  }
}

// Packs rows [i0, i0 + mc) and columns [k0, k0 + kc) of a transposed A into micro-panels of MR
// rows, each [kc][MR]; rows past `rows` (the end of A) are zeros.
template <typename C, int MR>
BF_CONV_INLINE void PackTransposedA(const MatrixView<C>& a, int64_t i0, int64_t mc, int64_t rows,
                                    int64_t k0, int64_t kc, C* __restrict ap) {
  const int64_t mc_pad = (mc + MR - 1) / MR * MR;
  const int64_t valid = std::min(mc, rows - i0);
  if (a.kind == MatrixView<C>::Kind::kDense) {
    // Stored row k holds A[:, k]: per k, MR contiguous values into each micro-panel (a 1x1
    // filter gradient's x, pixel by pixel).
    for (int64_t k = 0; k < kc; ++k) {
      const C* __restrict src = a.data + (k0 + k) * a.ld + i0;
      int64_t p = 0;
      for (; p + MR <= valid; p += MR) {
        C* __restrict dst = ap + p / MR * kc * MR + k * MR;
        for (int r = 0; r < MR; ++r) dst[r] = src[p + r];
      }
      for (; p < mc_pad; p += MR) {
        C* __restrict dst = ap + p / MR * kc * MR + k * MR;
        for (int r = 0; r < MR; ++r) dst[r] = p + r < valid ? src[p + r] : C{0};
      }
    }
    return;
  }
  // Im2col columns are contiguous along i within a pixel: per k, runs over the block's rows,
  // copied a micro-panel lane range at a time (whole panels of MR when the run allows).
  for (int64_t k = 0; k < kc; ++k) {
    for (int64_t r = 0; r < valid;) {
      int64_t len = 0;
      const C* src = Run(a, i0 + r, k0 + k, &len);
      len = std::min(len, valid - r);
      for (int64_t u = 0; u < len;) {
        const int64_t rr = r + u, lane = rr % MR, count = std::min<int64_t>(MR - lane, len - u);
        C* dst = ap + rr / MR * kc * MR + k * MR + lane;
        if (count == MR) {
          for (int l = 0; l < MR; ++l) dst[l] = src == nullptr ? C{0} : src[u + l];
        } else {
          for (int64_t l = 0; l < count; ++l) dst[l] = src == nullptr ? C{0} : src[u + l];
        }
        u += count;
      }
      r += len;
    }
    for (int64_t rr = valid; rr < mc_pad; ++rr) ap[rr / MR * kc * MR + k * MR + rr % MR] = C{0};
  }
}

// n elements of a dense B from element offset `at` of its storage, widened into `wide` when it
// is stored as 16-bit floats (returning `wide`), else read where they are.
template <typename C>
BF_CONV_INLINE const C* DenseRun(const MatrixView<C>& b, int64_t at, int64_t n, C* wide) {
  if constexpr (std::is_same_v<C, float>) {
    if (b.half != nullptr) return WidenRun(b.half + at, wide, n), wide;
    if (b.bfloat16 != nullptr) return WidenRun(b.bfloat16 + at, wide, n), wide;
  }
  return b.data + at;
}

// The stored bytes of one element of a dense B, and where element offset `at` is stored.
template <typename C>
BF_CONV_INLINE int64_t StoredBytes(const MatrixView<C>& b) {
  return b.data != nullptr ? int64_t{sizeof(C)} : 2;
}
template <typename C>
BF_CONV_INLINE const char* StoredAt(const MatrixView<C>& b, int64_t at) {
  if (b.half != nullptr) return reinterpret_cast<const char*>(b.half + at);
  if (b.bfloat16 != nullptr) return reinterpret_cast<const char*>(b.bfloat16 + at);
  return reinterpret_cast<const char*>(b.data + at);
}

// Packs rows [k0, k0 + kc) and columns [j0, j0 + nc) of B (columns past `cols`, the end of B,
// as zeros) into panels of NR columns, each [kc][NR]. A B of 16-bit floats is widened a run at
// a time into `wide` on its way to the panels: a row of the block, or the runs of kPackColumns
// columns (16 KB of floats at most, in L1).
template <typename C, typename V, int NR>
BF_CONV_INLINE void PackB(const MatrixView<C>& b, int64_t k0, int64_t kc, int64_t j0, int64_t nc,
                          int64_t cols, C* __restrict bp, C* __restrict wide) {
  if (!b.transposed) {
    // Rows of B are contiguous along its columns: row by row, each one read as one contiguous
    // stream and written into row k of every panel. (Panel by panel, the block's kc rows, 4 KiB
    // apart for 1024 float columns, were read 256 bytes at a time, each from another page.)
    // Whole panel rows are copied a vector at a time (GCC called memcpy for each 256 bytes),
    // with the row kAhead rows on prefetched: fc6's 18.9 MB filter comes from memory, and its
    // packing took 4.7% of the forward's samples, 3.5% after.
    constexpr int64_t L = sizeof(V) / sizeof(C), kAhead = 8;
    const int64_t row_bytes = nc * StoredBytes(b);
    const int64_t stored = std::clamp<int64_t>(cols - j0, 0, nc);
    for (int64_t k = 0; k < kc; ++k) {
      const int64_t at = (k0 + k) * b.ld + j0;
      if (k + kAhead < kc) {
        const char* ahead = StoredAt(b, at + kAhead * b.ld);
        for (int64_t off = 0; off < row_bytes; off += 64) __builtin_prefetch(ahead + off);
      }
      const C* __restrict src = DenseRun(b, at, stored, wide);
      for (int64_t q = 0; q < nc; q += NR) {
        C* __restrict dst = bp + q * kc + k * NR;
        const int64_t valid = std::clamp<int64_t>(cols - (j0 + q), 0, NR);
        if (valid == NR) {
          for (int64_t j = 0; j < NR; j += L) StoreVec(dst + j, LoadVec<V>(src + q + j));
        } else {
          for (int64_t j = 0; j < valid; ++j) dst[j] = src[q + j];
          for (int64_t j = valid; j < NR; ++j) dst[j] = C{0};
        }
      }
    }
    return;
  }
  for (int64_t q = 0; q < nc; q += NR) {
    C* panel = bp + q * kc;
    const int64_t valid = std::clamp<int64_t>(cols - (j0 + q), 0, NR);
    // Columns of B are contiguous along k (the input gradient's filter, read along co; B is
    // always a dense matrix, only A is ever an im2col view): kPackColumns columns side by side,
    // so that each k writes that many adjacent values of the panel, and a line of it is complete
    // within two passes over the same kc lines (one column at a time, each of its kc stores
    // touched another line of a panel larger than L1). 16 columns at once read more streams
    // than L1 has ways when the filter's rows are 4 KiB apart (1024 float channels), and
    // measured slower on fc6; 2 and 4 gained less.
    constexpr int64_t kJ = kPackColumns;
    for (int64_t j0c = 0; j0c < NR; j0c += kJ) {
      const C* src[kJ];
      for (int64_t u = 0; u < kJ; ++u) {
        src[u] = j0c + u < valid ? DenseRun(b, (j0 + q + j0c + u) * b.ld + k0, kc, wide + u * kc)
                                 : nullptr;
      }
      for (int64_t k = 0; k < kc; ++k) {
        C* __restrict dst = panel + k * NR + j0c;
        for (int64_t u = 0; u < kJ; ++u) dst[u] = src[u] == nullptr ? C{0} : src[u][k];
      }
    }
  }
}

// Where a tile's B panel comes from: packed at bp ([kc][NR]), or (`src` not null) rows of B
// `ld` elements apart from src, each read into the registers and stored into the panel at bp
// for the tiles after (the first micro-panel's tiles pack the block).
template <typename C>
struct PanelB {
  C* bp;
  const C* src = nullptr;
  int64_t ld = 0;
};

#if defined(BF_CONV_ASM_TILES)
// clang-format off
// Row r's products for one step: its value of A (at displacement bf_d from its row pointer,
// indexed by k) broadcast into zmm28, times the step's four vectors of B.
#define BF_GT_ROW(a, r0, r1, r2, r3)                                                               \
  "vbroadcastss bf_d(%[" a "], %[k], 4), %%zmm28\n\t"                                              \
  "vfmadd231ps %%zmm28, %%zmm24, %%zmm" #r0 "\n\t"                                                 \
  "vfmadd231ps %%zmm28, %%zmm25, %%zmm" #r1 "\n\t"                                                 \
  "vfmadd231ps %%zmm28, %%zmm26, %%zmm" #r2 "\n\t"                                                 \
  "vfmadd231ps %%zmm28, %%zmm27, %%zmm" #r3 "\n\t"
// The step's four vectors of B (bf_w bytes into the panel at b) into zmm24-27.
#define BF_GT_LOAD_B                                                                               \
  "vmovups bf_w(%[b]), %%zmm24\n\t"                                                                \
  "vmovups bf_w + 64(%[b]), %%zmm25\n\t"                                                           \
  "vmovups bf_w + 128(%[b]), %%zmm26\n\t"                                                          \
  "vmovups bf_w + 192(%[b]), %%zmm27\n\t"
#define BF_GT_STEP                                                                                 \
  BF_GT_LOAD_B                                                                                     \
  BF_GT_ROW("a0", 0, 1, 2, 3) BF_GT_ROW("a1", 4, 5, 6, 7) BF_GT_ROW("a2", 8, 9, 10, 11)            \
  BF_GT_ROW("a3", 12, 13, 14, 15) BF_GT_ROW("a4", 16, 17, 18, 19) BF_GT_ROW("a5", 20, 21, 22, 23)
#define BF_GT_ADD_ROW(r0, r1, r2, r3)                                                              \
  "vaddps (%[y]), %%zmm" #r0 ", %%zmm" #r0 "\n\t"                                                  \
  "vaddps 64(%[y]), %%zmm" #r1 ", %%zmm" #r1 "\n\t"                                                \
  "vaddps 128(%[y]), %%zmm" #r2 ", %%zmm" #r2 "\n\t"                                               \
  "vaddps 192(%[y]), %%zmm" #r3 ", %%zmm" #r3 "\n\t"                                               \
  BF_ASM_STORE4("vmovups", r0, r1, r2, r3)
#define BF_GT_ROWS(M)                                                                              \
  M(0, 1, 2, 3) M(4, 5, 6, 7) M(8, 9, 10, 11) M(12, 13, 14, 15) M(16, 17, 18, 19) M(20, 21, 22, 23)
// The 24 sums to c, rows ys bytes apart, by the asm operand mode: 0 stored, 1 added to what c
// holds, 2 stored past the caches.
#define BF_GT_STORES                                                                               \
  "cmpq $1, %[mode]\n\t"                                                                           \
  "je 3f\n\t"                                                                                      \
  "cmpq $2, %[mode]\n\t"                                                                           \
  "je 4f\n\t"                                                                                      \
  BF_GT_ROWS(BF_GT_PLAIN)                                                                          \
  "jmp 5f\n\t"                                                                                     \
  "3:\n\t"                                                                                         \
  BF_GT_ROWS(BF_GT_ADD_ROW)                                                                        \
  "jmp 5f\n\t"                                                                                     \
  "4:\n\t"                                                                                         \
  BF_GT_ROWS(BF_GT_NT)                                                                             \
  "5:\n\t"
// What the 6 x 4 tiles change: 24 sums, B's four vectors, the broadcast value of A.
#define BF_GT_CLOBBERS                                                                             \
  "zmm0", "zmm1", "zmm2", "zmm3", "zmm4", "zmm5", "zmm6", "zmm7", "zmm8", "zmm9", "zmm10",       \
  "zmm11", "zmm12", "zmm13", "zmm14", "zmm15", "zmm16", "zmm17", "zmm18", "zmm19", "zmm20",        \
  "zmm21", "zmm22", "zmm23", "zmm24", "zmm25", "zmm26", "zmm27", "zmm28", "cc", "memory"
#define BF_GT_NT(r0, r1, r2, r3) BF_ASM_STORE4("vmovntps", r0, r1, r2, r3)
#define BF_GT_PLAIN(r0, r1, r2, r3) BF_ASM_STORE4("vmovups", r0, r1, r2, r3)
// clang-format on
// MicroTile's 6 x 4 tile on AVX-512 in float, A's rows read in place and B from its packed
// panel, for whole tiles: c[r, j] (+)= sum over k < kc of arows[r][k] * bp[k * 64 + j], the
// products fused into the sums in MicroTile's order (its bits, and AVX2's); `accumulate` adds
// to what c holds, else stored past the caches when `nt`. Each value of A is broadcast into a
// register that its four multiply-adds share: 10 loads a step for 24 multiply-adds. With the
// broadcasts inside the multiply-adds ({1to16}) a step takes 28 loads: on a Zen 4 EPYC, whose
// 512-bit units take a multiply-add a cycle, that measured 0.3-1.8% faster than the broadcasts
// compiled into registers; on a Zen 5 EPYC, which takes two a cycle, the loads were the limit: the
// builds alternated, 3-4 rounds, one pinned core: the 1x1 layer's forward 0.84-0.91 of the time,
// its input gradient 0.81-0.86, fc6's 0.87-0.88 and 0.82-0.84, the Winograd forward and input
// gradient of resnet_28x128 0.88-0.91 (two threads: 0.87-0.98).
inline void GemmTile6x4Avx512(int64_t kc, const float* const* arows, const float* bp, float* c,
                              int64_t ldc, bool accumulate, bool nt) {
  const float *a0 = arows[0], *a1 = arows[1], *a2 = arows[2], *a3 = arows[3], *a4 = arows[4],
              *a5 = arows[5];
  const int64_t mode = accumulate ? 1 : nt ? 2 : 0, ldc_bytes = ldc * 4;
  int64_t k = 0;
  asm volatile(
      BF_ASM_ZERO("0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, "
                  "22, 23")
      "xor %k[k], %k[k]\n\t"
      "sub $4, %[kc]\n\t"
      "jl 7f\n\t"
      "6:\n\t"
      ".set bf_d, 0\n\t"
      ".set bf_w, 0\n\t"
      ".rept 4\n\t"
      BF_GT_STEP
      ".set bf_d, bf_d + 4\n\t"
      ".set bf_w, bf_w + 256\n\t"
      ".endr\n\t"
      "add $4, %[k]\n\t"
      "add $1024, %[b]\n\t"
      "cmp %[kc], %[k]\n\t"
      "jle 6b\n\t"
      "7:\n\t"
      "add $4, %[kc]\n\t"
      "cmp %[kc], %[k]\n\t"
      "je 2f\n\t"
      "8:\n\t"
      ".set bf_d, 0\n\t"
      ".set bf_w, 0\n\t"
      BF_GT_STEP
      "inc %[k]\n\t"
      "add $256, %[b]\n\t"
      "cmp %[kc], %[k]\n\t"
      "jne 8b\n\t"
      "2:\n\t"
      BF_GT_STORES
      : [k] "=&r"(k), [kc] "+r"(kc), [b] "+r"(bp), [y] "+r"(c)
      : [a0] "r"(a0), [a1] "r"(a1), [a2] "r"(a2), [a3] "r"(a3), [a4] "r"(a4), [a5] "r"(a5),
        [ys] "r"(ldc_bytes), [mode] "m"(mode)
      : BF_GT_CLOBBERS);
}
// GemmTile6x4Avx512's tile with A from a micro-panel: step k's 6 values at ap + k * a_step (a_step
// 6 where packed, a transposed A's row stride where read in place), one pointer advanced a step
// at a time; the same products in the same order (MicroTile's bits), 4 steps a loop pass where
// the compiled MicroTile took one. Builds alternated, one pinned core of a Zen 5 EPYC, 6 + 6
// rounds: the 1x1 filter gradient (x^T packed) 0.93-0.98 of its time, the Winograd filter
// gradient (V^T read in place) of fc6 0.92-0.96, resnet_28x128 0.92-0.95, resnet_56x64 0.91-0.99.
// clang-format off
#define BF_GP_ROW(off, r0, r1, r2, r3)                                                             \
  "vbroadcastss " #off "(%[a]), %%zmm28\n\t"                                                       \
  "vfmadd231ps %%zmm28, %%zmm24, %%zmm" #r0 "\n\t"                                                 \
  "vfmadd231ps %%zmm28, %%zmm25, %%zmm" #r1 "\n\t"                                                 \
  "vfmadd231ps %%zmm28, %%zmm26, %%zmm" #r2 "\n\t"                                                 \
  "vfmadd231ps %%zmm28, %%zmm27, %%zmm" #r3 "\n\t"
#define BF_GP_STEP                                                                                 \
  BF_GT_LOAD_B                                                                                     \
  BF_GP_ROW(0, 0, 1, 2, 3) BF_GP_ROW(4, 4, 5, 6, 7) BF_GP_ROW(8, 8, 9, 10, 11)                     \
  BF_GP_ROW(12, 12, 13, 14, 15) BF_GP_ROW(16, 16, 17, 18, 19) BF_GP_ROW(20, 20, 21, 22, 23)        \
  "add %[as], %[a]\n\t"
// clang-format on
inline void GemmTile6x4PanelAvx512(int64_t kc, const float* ap, int64_t a_step, const float* bp,
                                   float* c, int64_t ldc, bool accumulate, bool nt) {
  const int64_t mode = accumulate ? 1 : nt ? 2 : 0, ldc_bytes = ldc * 4, as = a_step * 4;
  // clang-format off
  asm volatile(
      BF_ASM_ZERO("0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, "
                  "22, 23")
      "sub $4, %[kc]\n\t"
      "jl 7f\n\t"
      "6:\n\t"
      ".set bf_w, 0\n\t"
      ".rept 4\n\t"
      BF_GP_STEP
      ".set bf_w, bf_w + 256\n\t"
      ".endr\n\t"
      "add $1024, %[b]\n\t"
      "sub $4, %[kc]\n\t"
      "jge 6b\n\t"
      "7:\n\t"
      "add $4, %[kc]\n\t"
      "jz 2f\n\t"
      "8:\n\t"
      ".set bf_w, 0\n\t"
      BF_GP_STEP
      "add $256, %[b]\n\t"
      "dec %[kc]\n\t"
      "jnz 8b\n\t"
      "2:\n\t"
      BF_GT_STORES
      : [kc] "+r"(kc), [a] "+r"(ap), [b] "+r"(bp), [y] "+r"(c)
      : [as] "r"(as), [ys] "r"(ldc_bytes), [mode] "m"(mode)
      : BF_GT_CLOBBERS);
  // clang-format on
}
#undef BF_GP_STEP
#undef BF_GP_ROW
#undef BF_GT_CLOBBERS
#undef BF_GT_STORES
#undef BF_GT_LOAD_B
#undef BF_GT_PLAIN
#undef BF_GT_NT
#undef BF_GT_ROWS
#undef BF_GT_ADD_ROW
#undef BF_GT_STEP
#undef BF_GT_ROW
#endif

// One MR x NR register tile over kc values of k: c[r, j] (+)= sum_k a[r][k] * b[k][j], only
// the rows < `rows` and columns < `cols` stored; `accumulate` adds to what c holds; `stream`:
// a whole tile that does not accumulate stored with StreamVec.
// A is a micro-panel at `ap` (kPacked): for each k, MR contiguous values, a_step apart (MR where
// packed, a transposed A's row stride where read in place); or else MR rows of A read in place,
// each kc contiguous values at arow[r] (rows past `rows` repeat a valid row; their sums are not
// stored). B is `panel`, read from its source and packed on the way when kPacksB.
template <typename C, typename V, int MR, int NV, bool kPacked, bool kPacksB>
BF_CONV_INLINE void MicroTile(int64_t kc, const C* __restrict ap, const C* const* arows,
                              const PanelB<C>& panel, C* __restrict c, int64_t ldc, int64_t rows,
                              int64_t cols, bool accumulate, bool stream, int64_t a_step = MR) {
  using Vec = V;
  constexpr int L = sizeof(Vec) / sizeof(C), NR = NV * L;
  Vec acc[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = Vec{};
  // B's rows: the packed panel's, NR apart, or (packing it) the source's.
  C* __restrict bp = panel.bp;
  const C* __restrict src = kPacksB ? panel.src : bp;
  const int64_t src_step = kPacksB ? panel.ld : NR;
  const C* arow[MR] = {};
  if constexpr (!kPacked)
    for (int r = 0; r < MR; ++r) arow[r] = arows[r];
  for (int64_t k = 0; k < kc; ++k) {
    Vec b[NV];
    for (int v = 0; v < NV; ++v) {
      b[v] = LoadVec<V>(src + k * src_step + v * L);
      if constexpr (kPacksB) StoreVec(bp + k * NR + v * L, b[v]);
    }
    for (int r = 0; r < MR; ++r) {
      const C s = kPacked ? ap[k * a_step + r] : arow[r][k];
      for (int v = 0; v < NV; ++v) acc[r][v] += b[v] * s;
    }
  }
  if (rows == MR && cols == NR) {
    const bool nt = stream && !accumulate;
    for (int r = 0; r < MR; ++r)
      for (int v = 0; v < NV; ++v) {
        C* p = c + r * ldc + v * L;
        PutVec(p, accumulate ? LoadVec<V>(p) + acc[r][v] : acc[r][v], nt);
      }
    return;
  }
  alignas(64) C tmp[MR * NR];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) StoreVec(tmp + r * NR + v * L, acc[r][v]);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j)
      c[r * ldc + j] = accumulate ? c[r * ldc + j] + tmp[r * NR + j] : tmp[r * NR + j];
}

// A tile of fewer than MR rows of A read in place (M's last rows: fc6's forward has 512 =
// 85 x 6 + 2) as a tile of 2 or 4 rows, where MicroTile's MR-row tile would repeat a row to
// fill its registers and spend MR rows' multiply-adds on them; false where MR has no narrower
// tile or `rows` needs all of it. Each sum takes its products in MicroTile's order: the same
// bits. Processes with and without it alternated, 3 + 3: fc6's forward 0.5-0.6%
// faster on one pinned core and 0.7-0.9% on two threads, its input gradient 0.6-0.9% on one.
template <typename C, typename V, int MR, int NV>
BF_CONV_INLINE bool NarrowTile(int64_t kc, const C* const* arows, const PanelB<C>& panel, C* c,
                               int64_t ldc, int64_t rows, int64_t cols, bool accumulate) {
  if constexpr (MR > 4) {
    if (rows <= 2) {
      MicroTile<C, V, 2, NV, false, false>(kc, nullptr, arows, panel, c, ldc, rows, cols,
                                           accumulate, false);
      return true;
    }
    if (rows <= 4) {
      MicroTile<C, V, 4, NV, false, false>(kc, nullptr, arows, panel, c, ldc, rows, cols,
                                           accumulate, false);
      return true;
    }
  }
  return false;
}

// The stored source of B's next block, prefetched into L2 while the last quarter of the
// current block's tiles run, a share of its lines before each tile, so that PackB finds it
// there: `total` lines, runs of `run_lines` lines `stride` bytes apart from `base` (a run that
// starts inside a line leaves its last line to PackB's own prefetch). fc6's
// 18.9 MB filter comes from memory, and its packing took 4.5% of the forward (skipped, as a
// timing experiment), of which only 1.2% when packed a second time from the caches. Measured
// (one pinned core, paired call by call): the whole block's time as the window 1.000-1.005 of
// fc6's forward, half or a quarter 0.986, an eighth 0.989. Issued inside the tiles, a few
// lines per step, the prefetches did better in the same binary (0.975), but the tiles' loop
// cut into steps ran the 1x1 layers' input gradient 2-5% slower and fc6's filter gradient
// 3-5% slower against the build before (bf_vs_onednn, three runs alternated).
struct NextBlockPrefetch {
  const char* base = nullptr;  // the next run's first line
  int64_t stride = 0, run_lines = 1, total = 0, per_tile = 0, issued = 0, start = 0, tile = 0;
  int64_t line = 0;  // the next line's place in its run
  void Tile() {
    if (tile++ < start) return;
    for (int64_t q = 0; q < per_tile && issued < total; ++q, ++issued) {
      __builtin_prefetch(base + line * 64, 0, 2);
      if (++line == run_lines) line = 0, base += stride;
    }
  }
};

// The NextBlockPrefetch for the block of B after (jc, pc) (the next Kc rows of the same Nc
// columns, else the first of the next Nc), over the current block's `tiles` register tiles;
// none (total 0) after the last block.
template <typename C>
NextBlockPrefetch PrefetchAfter(const MatrixView<C>& b, int64_t jc, int64_t pc, int64_t n,
                                int64_t k, int64_t Kc, int64_t Nc, int64_t tiles) {
  NextBlockPrefetch p;
  int64_t pk = pc + Kc, pj = jc;
  if (pk >= k) pk = 0, pj = jc + Nc;
  if (pj >= n) return p;
  const int64_t next_kc = std::min(Kc, k - pk), next_nc = std::min(Nc, n - pj);
  const int64_t bytes = StoredBytes(b);
  // Stored runs: the block's rows along its columns, or its columns along k (transposed).
  const int64_t runs = b.transposed ? next_nc : next_kc;
  const int64_t run_bytes = (b.transposed ? next_kc : next_nc) * bytes;
  p.base = StoredAt(b, b.transposed ? pj * b.ld + pk : pk * b.ld + pj);
  p.stride = b.ld * bytes;
  p.run_lines = (run_bytes + 63) / 64;
  p.total = runs * p.run_lines;
  const int64_t window = std::max<int64_t>(1, tiles / 4);
  p.start = tiles - window;
  p.per_tile = (p.total + window - 1) / window;
  return p;
}

template <typename C, typename V, int MR, int NV>
BF_CONV_INLINE void GemmRowsT(const MatrixView<C>& a, const MatrixView<C>& b, int64_t m0,
                              int64_t m1, int64_t n, int64_t k, C* c, int64_t ldc, C* work,
                              const KernelContext& ctx, const ColumnSink* sink, bool stream,
                              bool accumulate) {
  constexpr int64_t L = 64 / sizeof(C), NR = NV * L, Mc = kMcPanels * MR;
  const int64_t Kc = KcFor(a.transposed, sizeof(C)), Nc = NcFor(NR, sizeof(C), Kc);
  // Every tile's 64-byte vectors aligned, and C written once: a single block of k.
  stream = stream && !accumulate && k <= Kc && sink == nullptr &&
           reinterpret_cast<uintptr_t>(c) % 64 == 0 &&
           ldc * static_cast<int64_t>(sizeof(C)) % 64 == 0;
  C* ap = work;
  C* bp = work + Mc * MostKc(sizeof(C));
  // A transposed A whose stored rows are an odd number of cache lines apart (the Winograd filter
  // gradient's V) is read in place by its whole micro-panels: MR contiguous values per k, the
  // k's lines spread over every L1 set. Packing it had taken about 21% of resnet_56x64's
  // filter gradient GEMMs (64 x 64 per point, k = 128 tiles) on a Zen 5 core; read in place,
  // builds alternated, 6 rounds, one pinned core: resnet_28x128's filter gradient 0.87-0.90 of
  // its time, resnet_56x64's 0.88-0.96, fc6's the same. Rows an even number of lines apart (the
  // 1x1 filter gradient's x: 1 KB) would fall in a few sets: those are packed.
  const bool a_in_place = a.transposed && a.kind == MatrixView<C>::Kind::kDense &&
                          a.data != nullptr && a.ld * static_cast<int64_t>(sizeof(C)) % 128 == 64;
  C* wide = bp + BBlockElements(NR, sizeof(C));  // B's runs widened from 16-bit floats
  // A B of one whole panel's columns, stored rows NR apart, already is its packed panel (the
  // Winograd kernels' B on 64 output channels: the forward's transformed filter, the filter
  // gradient's transformed out_backprop): read in place. One pinned core, 200 calls paired with
  // packing it: resnet_56x64's filter gradient 0.92 of its time (its GEMMs have 64 rows, so
  // packing B cost a store per 11 tiles' loads of it), the forward and input gradient 1.00 (their
  // B serves hundreds of rows). Laying the filter gradient's D out in panels for every width (a
  // GEMM per panel) measured no better on resnet_28x128 and 1.07-1.21 of the time on fc6.
  // A row-major A (a plain matrix, or im2col rows along the taps) is read in place where each
  // of a micro-panel's MR rows holds the block's kc values contiguously (inside the input):
  // packing would cost one store per element for every block of Nc columns. Other micro-panels
  // (rows reaching into the padding or across a tap boundary) are packed just before their
  // tiles. A transposed A is packed a block at a time.
  const bool b_in_place = b.kind == MatrixView<C>::Kind::kDense && !b.transposed &&
                          b.data != nullptr && b.ld == NR && n == NR;
  for (int64_t jc = 0; jc < n; jc += Nc) {
    const int64_t nc = std::min(Nc, n - jc);
    C* cblock = sink == nullptr ? c + jc : c;
    for (int64_t pc = 0; pc < k; pc += Kc) {
      if (ctx.cancelled()) return;
      const int64_t kc = std::min(Kc, k - pc);
      const bool adds = accumulate || pc > 0;  // to what C holds
      // The tiles of the block's first micro-panel of A pack B's panels as they read them (B
      // dense and not transposed, of C, and the block all whole panels of columns): its rows
      // come from L2, where NextBlockPrefetch put them, in the shadow of the tiles' multiply-
      // adds, where a separate pass read them before any tile ran. One pinned core, 3 processes
      // of each alternated: fc6's forward 45.0 -> 44.4 ms, the 1x1 layer's 7.37 -> 7.30. (Not
      // where A is transposed: fc6's filter gradient took 1% longer.)
      const bool packs_first = !b_in_place && !a.transposed && !b.transposed && b.data != nullptr &&
                               nc % NR == 0 && jc + nc <= n;
      if (!packs_first && !b_in_place) PackB<C, V, NR>(b, pc, kc, jc, nc, n, bp, wide);
      // Only the packing tiles write the panel (packs_first), never one read in place.
      C* const bblock = b_in_place ? const_cast<C*>(b.data + pc * NR) : bp;
      const int64_t tiles = (m1 - m0 + MR - 1) / MR * ((nc + NR - 1) / NR);
      NextBlockPrefetch next = PrefetchAfter(b, jc, pc, n, k, Kc, Nc, tiles);
      for (int64_t ic = m0; ic < m1; ic += Mc) {
        // Polled per block of A as well: one pass of a block of B over the rows can take a
        // large share of the run (a 1x1 layer's 8192 rows, milliseconds).
        if (ctx.cancelled()) return;
        const int64_t mc = std::min(Mc, m1 - ic);
        if (a.transposed && !a_in_place) PackTransposedA<C, MR>(a, ic, mc, m1, pc, kc, ap);
        for (int64_t ir = 0; ir < mc; ir += MR) {
          const int64_t rows = std::min<int64_t>(MR, mc - ir);
          const C* rowp[MR];
          bool in_place = !a.transposed;
          for (int r = 0; r < MR && in_place; ++r) {
            int64_t len = 0;
            rowp[r] = Run(a, ic + ir + std::min<int64_t>(r, rows - 1), pc, &len);
            in_place = rowp[r] != nullptr && len >= kc;
          }
          if (!a.transposed && !in_place)
            PackRowPanel<C, MR>(a, ic + ir, rows, pc, kc, ap + ir * kc);
          // A transposed A read in place: whole micro-panels where they are, a last one of fewer
          // than MR rows packed.
          const bool panel_in_place = a_in_place && rows == MR;
          if (a_in_place && !panel_in_place)
            PackTransposedA<C, MR>(a, ic + ir, rows, m1, pc, kc, ap + ir * kc);
          const C* __restrict apanel = panel_in_place ? a.data + pc * a.ld + ic + ir : ap + ir * kc;
          const int64_t a_step = panel_in_place ? a.ld : MR;
          C* crow = cblock + (ic - m0 + ir) * ldc;
          const bool packs = packs_first && ic == m0 && ir == 0;
          for (int64_t jr = 0; jr < nc; jr += NR) {
            const int64_t cols = std::min(NR, nc - jr);
            next.Tile();
            C* __restrict c_tile = crow + jr;
            PanelB<C> panel{bblock + jr * kc};
            if (packs) {
              panel.src = b.data + pc * b.ld + jc + jr;
              panel.ld = b.ld;
              if (in_place) {
                MicroTile<C, V, MR, NV, false, true>(kc, nullptr, rowp, panel, c_tile, ldc, rows,
                                                     cols, adds, stream);
              } else {
                MicroTile<C, V, MR, NV, true, true>(kc, apanel, nullptr, panel, c_tile, ldc, rows,
                                                    cols, adds, stream);
              }
            } else if (in_place) {
              if constexpr (kAsmTiles<C, V> && MR == 6 && NV == 4) {
                if (rows == MR && cols == NR) {
                  GemmTile6x4Avx512(kc, rowp, panel.bp, c_tile, ldc, adds, stream);
                  continue;
                }
              }
              if (NarrowTile<C, V, MR, NV>(kc, rowp, panel, c_tile, ldc, rows, cols, adds))
                continue;
              MicroTile<C, V, MR, NV, false, false>(kc, nullptr, rowp, panel, c_tile, ldc, rows,
                                                    cols, adds, stream);
            } else {
              if constexpr (kAsmTiles<C, V> && MR == 6 && NV == 4) {
                if (rows == MR && cols == NR) {
                  GemmTile6x4PanelAvx512(kc, apanel, a_step, panel.bp, c_tile, ldc, adds, stream);
                  continue;
                }
              }
              MicroTile<C, V, MR, NV, true, false>(kc, apanel, nullptr, panel, c_tile, ldc, rows,
                                                   cols, adds, stream, a_step);
            }
          }
        }
      }
    }
    if (sink != nullptr) sink->fn(sink->state, jc, jc + nc);
  }
  if (stream) StreamFence();
}

// One GemmRows per ISA and compute type, each compiled for its ISA.
// NOLINTBEGIN(bugprone-macro-parentheses): C is spliced into parameter types.
#define BF_GEMM_ROWS_VARIANT(Suffix, Target, Tile, C)                                           \
  Target void GemmRows##Suffix(const MatrixView<C>& a, const MatrixView<C>& b, int64_t m0,      \
                               int64_t m1, int64_t n, int64_t k, C* c, int64_t ldc, C* work,    \
                               const KernelContext& ctx, const ColumnSink* sink, bool stream,   \
                               bool accumulate) {                                               \
    GemmRowsT<C, VecFor<C, Isa::k##Suffix>, Tile.mr, Tile.nv>(a, b, m0, m1, n, k, c, ldc, work, \
                                                              ctx, sink, stream, accumulate);   \
  }
// NOLINTEND(bugprone-macro-parentheses)
BF_GEMM_ROWS_VARIANT(Avx512, BF_TARGET_AVX512, kTileAvx512, float)
BF_GEMM_ROWS_VARIANT(Avx512, BF_TARGET_AVX512, kTileAvx512, double)
BF_GEMM_ROWS_VARIANT(Avx2, BF_TARGET_AVX2, kTileAvx2, float)
BF_GEMM_ROWS_VARIANT(Avx2, BF_TARGET_AVX2, kTileAvx2, double)
BF_GEMM_ROWS_VARIANT(Base, BF_TARGET_BASE, kTileBase, float)
BF_GEMM_ROWS_VARIANT(Base, BF_TARGET_BASE, kTileBase, double)

GemmTile TileOf(Isa isa, size_t elem_size) {
  GemmTile t = isa == Isa::kAvx512 ? kTileAvx512 : isa == Isa::kAvx2 ? kTileAvx2 : kTileBase;
  t.nr = t.nv * static_cast<int>(64 / elem_size);
  return t;
}

}  // namespace

GemmTile ActiveGemmTile(size_t elem_size) { return TileOf(ActiveIsa(), elem_size); }

int64_t GemmColumnBlock(const GemmTile& tile, size_t elem_size, bool a_transposed) {
  return NcFor(tile.nr, elem_size, KcFor(a_transposed, elem_size));
}

int64_t GemmWorkspaceElements(const GemmTile& tile, size_t elem_size) {
  const int64_t widest =
      std::max(GemmColumnBlock(tile, elem_size, false), GemmColumnBlock(tile, elem_size, true));
  return kMcPanels * tile.mr * MostKc(elem_size) + BBlockElements(tile.nr, elem_size) +
         std::max(widest, MostKc(elem_size) * kPackColumns);
}

template <typename C>
void GemmRows(const MatrixView<C>& a, const MatrixView<C>& b, int64_t m0, int64_t m1, int64_t n,
              int64_t k, C* c, int64_t ldc, C* work, const GemmTile& tile, const KernelContext& ctx,
              const ColumnSink* sink, bool stream, bool accumulate) {
  if (m0 >= m1 || n <= 0) return;
  if (k <= 0 && accumulate) return;  // nothing to add
  if (k <= 0) {                      // an empty sum
    const int64_t block = sink == nullptr ? n : GemmColumnBlock(tile, sizeof(C), a.transposed);
    for (int64_t j0 = 0; j0 < n; j0 += block) {
      const int64_t j1 = std::min(n, j0 + block);
      for (int64_t i = m0; i < m1; ++i) std::fill_n(c + (i - m0) * ldc, j1 - j0, C{0});
      if (sink != nullptr) sink->fn(sink->state, j0, j1);
    }
    return;
  }
  // The variant of `tile` (ActiveGemmTile's, so one this CPU runs).
  const auto same = [&](const GemmTile& t) { return t.mr == tile.mr && t.nv == tile.nv; };
  if (same(kTileAvx512))
    return GemmRowsAvx512(a, b, m0, m1, n, k, c, ldc, work, ctx, sink, stream, accumulate);
  if (same(kTileAvx2))
    return GemmRowsAvx2(a, b, m0, m1, n, k, c, ldc, work, ctx, sink, stream, accumulate);
  return GemmRowsBase(a, b, m0, m1, n, k, c, ldc, work, ctx, sink, stream, accumulate);
}

template void GemmRows<float>(const MatrixView<float>&, const MatrixView<float>&, int64_t, int64_t,
                              int64_t, int64_t, float*, int64_t, float*, const GemmTile&,
                              const KernelContext&, const ColumnSink*, bool, bool);
template void GemmRows<double>(const MatrixView<double>&, const MatrixView<double>&, int64_t,
                               int64_t, int64_t, int64_t, double*, int64_t, double*,
                               const GemmTile&, const KernelContext&, const ColumnSink*, bool,
                               bool);

}  // namespace blockflow::conv::internal
