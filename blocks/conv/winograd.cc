#include "blocks/conv/winograd.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "blocks/conv/isa.h"
#include "blocks/conv/optimized_util.h"
#include "blocks/conv/packed_gemm.h"
#include "blocks/conv/run_kernels.h"
#include "core/team.h"

namespace blockflow::conv::internal {
namespace {

// 4 x 4 transformed points per tile; 2 x 2 output pixels and 4 x 4 input pixels per tile.
constexpr int64_t kPoints = 16, kTileOut = 2, kTileIn = 4;

// The transforms below are loops over channels, contiguous in every operand, vectorized (`omp
// simd`: the compiler cannot tell on its own that the rows they read and write do not overlap)
// for each ISA, which BF_CONV_ISA_FNS compiles them once per row of the ISA table. They add,
// subtract and halve, never multiply-add, so no ISA fuses any of them and the bits match.

// The output channels a transform stages at a time before it copies them out (StreamVec's
// runs where it stores past the caches).
constexpr int64_t kStagedRun = 64;

// U[4i + j][q] = (G g G^T)[i][j] at u + (4i + j) * us + q, for the n output channels q of one
// input channel whose 3x3 filter values are g[(kh * 3 + kw) * plane + q] (HWIO, from the first
// of them). G = [1 0 0; h h h; h -h h; 0 0 1] with h = 1/2.
template <typename C>
BF_CONV_INLINE void WinoFilterPoints(const C* __restrict g, int64_t plane, int64_t n, int64_t us,
                                     C* __restrict u) {
  const C half = static_cast<C>(0.5);
#pragma omp simd
  for (int64_t q = 0; q < n; ++q) {
    C t[4][3];  // G g: rows of the filter combined, per filter column j
    for (int j = 0; j < 3; ++j) {
      const C g0 = g[j * plane + q], g1 = g[(3 + j) * plane + q], g2 = g[(6 + j) * plane + q];
      t[0][j] = g0;
      t[1][j] = half * (g0 + g1 + g2);
      t[2][j] = half * (g0 - g1 + g2);
      t[3][j] = g2;
    }
    for (int i = 0; i < 4; ++i) {  // (G g) G^T: its columns combined, per row i
      u[(4 * i + 0) * us + q] = t[i][0];
      u[(4 * i + 1) * us + q] = half * (t[i][0] + t[i][1] + t[i][2]);
      u[(4 * i + 2) * us + q] = half * (t[i][0] - t[i][1] + t[i][2]);
      u[(4 * i + 3) * us + q] = t[i][2];
    }
  }
}

// U[4i + j][c][k] = (G g G^T)[i][j] for the input channels [c0, c1) and output channels
// [k0, k1), g the 3x3 filter of (c, k): w[(kh * 3 + kw) * cin * cout + c * cout + k] (HWIO);
// point xi's value of (c, k) at u + xi * us + c * ldu + k - k0. With `stream`, each run of
// output channels is staged and stored past the caches (PutRun): the same values.
template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void WinoFilterT(const C* __restrict w, int64_t cin, int64_t cout, int64_t c0,
                                int64_t c1, int64_t k0, int64_t k1, int64_t us, int64_t ldu,
                                bool stream, C* __restrict u) {
  const int64_t plane = cin * cout;
  alignas(64) C stage[kPoints][kStagedRun];
  for (int64_t c = c0; c < c1; ++c) {
    const C* g = w + c * cout;
    C* uc = u + c * ldu;  // column k of row c at uc + k - k0
    if (!stream) {
      WinoFilterPoints(g + k0, plane, k1 - k0, us, uc);
      continue;
    }
    for (int64_t r0 = k0; r0 < k1; r0 += kStagedRun) {
      const int64_t run = std::min(kStagedRun, k1 - r0);
      WinoFilterPoints(g + r0, plane, run, kStagedRun, &stage[0][0]);
      for (int xi = 0; xi < kPoints; ++xi)
        PutRun<V>(stage[xi], run, uc + xi * us + (r0 - k0), true);
    }
  }
  if (stream) StreamFence();
}

// V[4i + j][t][c] = (B^T d B)[i][j] for the `tiles` tiles of a block, tile t's input pixel (a, b)
// at px[t * 16 + 4a + b] (a row of zeros outside the input); point xi's matrix at v + xi * vs,
// rows vrow apart. B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1].
template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void WinoInputT(const C* const* px, int64_t tiles, int64_t cin, int64_t vrow,
                               int64_t vs, C* __restrict v) {
  for (int64_t t = 0; t < tiles; ++t) {
    const C* const* p = px + t * kPoints;
    C* vt = v + t * vrow;
#pragma omp simd
    for (int64_t c = 0; c < cin; ++c) {
      C q[4][4];  // B^T d: rows of the input combined, per input column j
      for (int j = 0; j < 4; ++j) {
        const C d0 = p[j][c], d1 = p[4 + j][c], d2 = p[8 + j][c], d3 = p[12 + j][c];
        q[0][j] = d0 - d2;
        q[1][j] = d1 + d2;
        q[2][j] = d2 - d1;
        q[3][j] = d1 - d3;
      }
      for (int i = 0; i < 4; ++i) {  // (B^T d) B: its columns combined, per row i
        vt[(4 * i + 0) * vs + c] = q[i][0] - q[i][2];
        vt[(4 * i + 1) * vs + c] = q[i][1] + q[i][2];
        vt[(4 * i + 2) * vs + c] = q[i][2] - q[i][1];
        vt[(4 * i + 3) * vs + c] = q[i][1] - q[i][3];
      }
    }
  }
}

// y = A^T M A for the `tiles` tiles of a block: tile t's output pixel (a, b) stored at
// py[t * 4 + 2a + b] (a scratch row for the pixels past the output's edge), point xi's product
// at m + xi * ms, rows cout apart. A^T = [1 1 1 0; 0 1 -1 -1].
template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void WinoOutputT(const C* __restrict m, int64_t tiles, int64_t cout, int64_t ms,
                                C* const* py) {
  for (int64_t t = 0; t < tiles; ++t) {
    const C* mt = m + t * cout;
    C* const* y = py + t * kTileOut * kTileOut;
#pragma omp simd
    for (int64_t k = 0; k < cout; ++k) {
      C r[2][4];  // A^T M: rows combined, per column j
      for (int j = 0; j < 4; ++j) {
        const C m0 = mt[j * ms + k], m1 = mt[(4 + j) * ms + k], m2 = mt[(8 + j) * ms + k],
                m3 = mt[(12 + j) * ms + k];
        r[0][j] = m0 + m1 + m2;
        r[1][j] = m1 - m2 - m3;
      }
      for (int64_t i = 0; i < 2; ++i) {
        y[2 * i][k] = r[i][0] + r[i][1] + r[i][2];
        y[2 * i + 1][k] = r[i][1] - r[i][2] - r[i][3];
      }
    }
  }
}

// The filter gradient's transforms, the forward's adjoints (dy = A^T M A gives dM = A dy A^T, and
// U = G g G^T gives dg = G^T dU G). D[4i + j][t][k] = (A dy A^T)[i][j] for the `tiles` tiles of
// a block, tile t's out_backprop pixel (a, b) at py[t * 4 + 2a + b] (a row of zeros past the
// output's edge), its `kn` channels; point xi's matrix at d + xi * ds, rows kn apart.
template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void WinoOutBackpropT(const C* const* py, int64_t tiles, int64_t kn, int64_t ds,
                                     C* __restrict d) {
  for (int64_t t = 0; t < tiles; ++t) {
    const C* const* p = py + t * kTileOut * kTileOut;
    C* dt = d + t * kn;
#pragma omp simd
    for (int64_t k = 0; k < kn; ++k) {
      C r[4][2];  // A dy: rows combined, per column b
      for (int b = 0; b < 2; ++b) {
        const C y0 = p[b][k], y1 = p[2 + b][k];
        r[0][b] = y0;
        r[1][b] = y0 + y1;
        r[2][b] = y0 - y1;
        r[3][b] = -y1;
      }
      for (int i = 0; i < 4; ++i) {  // (A dy) A^T: its columns combined, per row i
        dt[(4 * i + 0) * ds + k] = r[i][0];
        dt[(4 * i + 1) * ds + k] = r[i][0] + r[i][1];
        dt[(4 * i + 2) * ds + k] = r[i][0] - r[i][1];
        dt[(4 * i + 3) * ds + k] = -r[i][1];
      }
    }
  }
}

// dw[tap * plane + c * ldw + k] = (G^T dU G)[kh][kw] (tap = kh * 3 + kw) for the `rows` input
// channels c and `kn` output channels k of a block of the HWIO filter gradient at dw, dU the
// sum of `parts` partial sums `part_step` apart (added in order), each point xi's plane at
// du + xi * us, its rows ldu apart.
template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void WinoFilterGradT(const C* __restrict du, int64_t ldu, int64_t us, int64_t parts,
                                    int64_t part_step, int64_t rows, int64_t kn, int64_t ldw,
                                    int64_t plane, bool stream, C* __restrict dw) {
  const C half = static_cast<C>(0.5);
  // A run of kStagedRun output channels at a time is staged, its 9 taps side by side, and then
  // copied out tap by tap: the 9 taps' planes of dw lie a multiple of 4 KB apart when a plane is
  // (fc6's are 2 MB apart), and 9 rows written at once in an 8-way L1 set evict one another.
  alignas(64) C stage[9][kStagedRun];
  for (int64_t c = 0; c < rows; ++c) {
    const C* uc = du + c * ldu;
    C* wc = dw + c * ldw;
    for (int64_t r0 = 0; r0 < kn; r0 += kStagedRun) {
      const int64_t run = std::min(kStagedRun, kn - r0);
#pragma omp simd
      for (int64_t q = 0; q < run; ++q) {
        const int64_t k = r0 + q;
        C u[kPoints];
        for (int xi = 0; xi < kPoints; ++xi) u[xi] = uc[xi * us + k];
        for (int64_t part = 1; part < parts; ++part)
          for (int xi = 0; xi < kPoints; ++xi) u[xi] += uc[part * part_step + xi * us + k];
        C sr[3][4];  // G^T dU: rows combined, per column j
        for (int j = 0; j < 4; ++j) {
          sr[0][j] = u[j] + half * (u[4 + j] + u[8 + j]);
          sr[1][j] = half * (u[4 + j] - u[8 + j]);
          sr[2][j] = half * (u[4 + j] + u[8 + j]) + u[12 + j];
        }
        for (int i = 0; i < 3; ++i) {  // (G^T dU) G: its columns combined, per row i
          stage[3 * i + 0][q] = sr[i][0] + half * (sr[i][1] + sr[i][2]);
          stage[3 * i + 1][q] = half * (sr[i][1] - sr[i][2]);
          stage[3 * i + 2][q] = half * (sr[i][1] + sr[i][2]) + sr[i][3];
        }
      }
      for (int tap = 0; tap < 9; ++tap) PutRun<V>(stage[tap], run, wc + tap * plane + r0, stream);
    }
  }
  if (stream) StreamFence();
}

template <typename C>
using WinoFilterFn = void (*)(const C*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                              int64_t, int64_t, bool, C*);
template <typename C>
using WinoInputFn = void (*)(const C* const*, int64_t, int64_t, int64_t, int64_t, C*);
template <typename C>
using WinoOutputFn = void (*)(const C*, int64_t, int64_t, int64_t, C* const*);
template <typename C>
using WinoOutBackpropFn = void (*)(const C* const*, int64_t, int64_t, int64_t, C*);
template <typename C>
using WinoFilterGradFn = void (*)(const C*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                                  int64_t, int64_t, bool, C*);
// NOLINTBEGIN(bugprone-macro-parentheses): C is spliced into parameter types.
#define BF_WINO_FNS(C)                                                                        \
  BF_CONV_ISA_FNS(WinoFilter, WinoFilterT, C, WinoFilterFn<C>,                                \
                  (const C* w, int64_t cin, int64_t cout, int64_t c0, int64_t c1, int64_t k0, \
                   int64_t k1, int64_t us, int64_t ldu, bool stream, C* u),                   \
                  (w, cin, cout, c0, c1, k0, k1, us, ldu, stream, u))                         \
  BF_CONV_ISA_FNS(                                                                            \
      WinoInput, WinoInputT, C, WinoInputFn<C>,                                               \
      (const C* const* px, int64_t tiles, int64_t cin, int64_t vrow, int64_t vs, C* v),       \
      (px, tiles, cin, vrow, vs, v))                                                          \
  BF_CONV_ISA_FNS(WinoOutput, WinoOutputT, C, WinoOutputFn<C>,                                \
                  (const C* m, int64_t tiles, int64_t cout, int64_t ms, C* const* py),        \
                  (m, tiles, cout, ms, py))                                                   \
  BF_CONV_ISA_FNS(WinoOutBackprop, WinoOutBackpropT, C, WinoOutBackpropFn<C>,                 \
                  (const C* const* py, int64_t tiles, int64_t kn, int64_t ds, C* d),          \
                  (py, tiles, kn, ds, d))                                                     \
  BF_CONV_ISA_FNS(WinoFilterGrad, WinoFilterGradT, C, WinoFilterGradFn<C>,                    \
                  (const C* du, int64_t ldu, int64_t us, int64_t parts, int64_t part_step,    \
                   int64_t rows, int64_t kn, int64_t ldw, int64_t plane, bool stream, C* dw), \
                  (du, ldu, us, parts, part_step, rows, kn, ldw, plane, stream, dw))
BF_WINO_FNS(float)
BF_WINO_FNS(double)
#undef BF_WINO_FNS
// NOLINTEND(bugprone-macro-parentheses)

// The distance between the 16 points' matrices in a buffer of `count` elements each: whole 64-byte
// lines, an odd number of them, so that the 16 rows a transform reads or writes at once fall in
// different sets of L1 (matrices a multiple of 4 KB apart all share one set, and 16 rows of an
// 8-way L1 set evict one another: fc6's filter gradient spent 45% of its time transforming its
// sums, 2 MB apart, on one core).
template <typename C>
int64_t PointStride(int64_t count) {
  int64_t lines = (count * static_cast<int64_t>(sizeof(C)) + 63) / 64;
  if (lines % 2 == 0) ++lines;
  return lines * 64 / static_cast<int64_t>(sizeof(C));
}

// The tiles of a layer's output, 2 x 2 pixels each, numbered image by image, row by row.
struct TileGrid {
  explicit TileGrid(const ConvGeometry& geometry)
      : g(geometry),
        tiles_w((g.out_w + 1) / 2),
        image_tiles((g.out_h + 1) / 2 * tiles_w),
        tiles(g.batch * image_tiles) {}
  // Tile id's 4 x 4 input pixels, pixel (a, b) at px[4a + b]: rows of x (NHWC, in_depth
  // values each), `outside` for those outside the input.
  template <typename C>
  void Inputs(int64_t id, const C* x, const C* outside, const C** px) const {
    const int64_t n = id / image_tiles, th = id % image_tiles / tiles_w, tw = id % tiles_w;
    const int64_t ih0 = th * kTileOut - g.pad_top, iw0 = tw * kTileOut - g.pad_left;
    for (int64_t a = 0; a < kTileIn; ++a) {
      const int64_t ih = ih0 + a;
      for (int64_t b = 0; b < kTileIn; ++b) {
        const int64_t iw = iw0 + b;
        const bool inside = ih >= 0 && ih < g.in_h && iw >= 0 && iw < g.in_w;
        px[a * kTileIn + b] = inside ? x + ((n * g.in_h + ih) * g.in_w + iw) * g.in_depth : outside;
      }
    }
  }
  // Tile id's 2 x 2 output pixels, pixel (a, b) at py[2a + b]: rows of y (NHWC, out_depth
  // values each; y may point past the first pixel's first channel), `outside` past the output's
  // edge.
  template <typename P>
  void Outputs(int64_t id, P y, P outside, P* py) const {
    const int64_t n = id / image_tiles, th = id % image_tiles / tiles_w, tw = id % tiles_w;
    for (int64_t a = 0; a < kTileOut; ++a) {
      const int64_t oh = th * kTileOut + a;
      for (int64_t b = 0; b < kTileOut; ++b) {
        const int64_t ow = tw * kTileOut + b;
        py[a * kTileOut + b] = oh < g.out_h && ow < g.out_w
                                   ? y + ((n * g.out_h + oh) * g.out_w + ow) * g.out_depth
                                   : outside;
      }
    }
  }
  const ConvGeometry& g;
  int64_t tiles_w, image_tiles, tiles;
};

// Thread t's output channels [k0, k1) of `cout` where `team` threads split them: whole GEMM
// panels of `nr` columns each (the last one partial), as evenly as they go.
std::pair<int64_t, int64_t> ColumnsOf(int64_t cout, int64_t nr, int t, int team) {
  const int64_t panels = (cout + nr - 1) / nr;
  return {std::min(cout, panels * t / team * nr), std::min(cout, panels * (t + 1) / team * nr)};
}

// How the threads share a layer: by tiles, or by output channels. Where the transformed filter
// (16 planes of cin x cout) fits half of L2, the GEMM packs a plane of it per block from there,
// and blocks of about kBlockTiles tiles keep their transformed inputs and products (16 x 96
// rows of cin and of cout values) in L2 as well; the threads split the blocks. A larger filter
// comes from further out once per block, so its blocks take up to kMostTiles tiles, and where
// the output channels give each thread kWinoThreadColumns of them the threads split those
// instead: each then transforms and reads only its columns of the filter, and transforms every
// tile's input itself (fc6's forward on two threads, 32 MB of planes: 14.1-16.7 ms with the
// tiles split, each thread reading all of them, 14.2-14.6 with the channels split, against 24.6
// on one). With fewer columns a thread, transforming every input twice costs more than the
// filter's reads: split by a GEMM panel (64 columns) a thread, resnet_28x128's forward on two
// threads took 1.15 of the time of the tiles split (100 calls paired), 256 -> 256 and 128 ->
// 256 layers 1.08-1.10, where 512 output channels split two ways measured 0.98-1.03 and fc6's
// 1024 0.95.
// A large filter whose planes each thread reads once (one block of tiles a thread, of at most
// kFusedMostTiles) is not transformed into planes at all: the plan is fused, each thread
// transforming FusedColumns of its columns at a time into a buffer of its own and multiplying
// its block by them right away, so the planes (fc6's 32 MB) are never written to memory and read
// back; its block's transformed inputs are read again for every FusedColumns columns instead.
// fc6's forward (132 tiles a block), paired call by call on the Zen 5 EPYC, same bits: one
// thread 0.91-0.95 of its time (against planes that the L3 kept), two threads 0.84-0.85
// (0.76-0.81 against the planes stored past the caches, builds alternated); in float64 0.92 and
// 0.83. Blocks of 258 tiles (fc6 at batch 64, one thread) measured 1.12: the inputs' reads then
// cost more. Fused by two panels of columns, two threads measured 0.94; by a panel and a half (a
// partial panel), 1.2.
constexpr int64_t kBlockTiles = 96, kMostTiles = 384, kWinoThreadColumns = 256;
constexpr int64_t kFusedMostTiles = 192;
// The filter's columns a fused plan transforms at a time: one GEMM panel, or 256 bytes of
// columns where panels are narrower (AVX2's 16 floats; 32 and 64 columns measured alike there).
int64_t FusedColumns(const GemmTile& tile, size_t elem_size) {
  return std::max<int64_t>(tile.nr, 256 / static_cast<int64_t>(elem_size));
}
struct WinoPlan {
  bool by_columns = false;  // the threads split the output channels, not the tiles
  bool fused = false;       // each thread transforms its filter columns as it multiplies
  int64_t tb = 0;           // tiles per block, a multiple of the GEMM tile's rows
  int64_t blocks = 0;       // tb tiles each, the last fewer
};
WinoPlan PlanWinograd(int64_t tiles, int64_t cin, int64_t cout, size_t elem_size, int nt,
                      const GemmTile& tile) {
  const int64_t planes_bytes = kPoints * cin * cout * static_cast<int64_t>(elem_size);
  const bool large = planes_bytes > CacheBytes(2, int64_t{1} << 20) / 2;
  WinoPlan p;
  p.by_columns = large && nt > 1 && cout >= int64_t{nt} * kWinoThreadColumns;
  const int64_t sharing = p.by_columns ? 1 : nt;  // threads among which the tiles are split
  const int64_t own = (tiles + sharing - 1) / sharing;
  const int64_t wanted = large ? std::clamp<int64_t>(own, kBlockTiles, kMostTiles) : kBlockTiles;
  p.blocks = (tiles + wanted - 1) / wanted;
  p.blocks = (p.blocks + sharing - 1) / sharing * sharing;
  const int64_t tb = (tiles + p.blocks - 1) / p.blocks;
  p.tb = (tb + tile.mr - 1) / tile.mr * tile.mr;
  p.blocks = (tiles + p.tb - 1) / p.tb;
  const bool one_block = p.blocks <= sharing;  // a block of tiles a thread at most
  p.fused = large && one_block && p.tb <= kFusedMostTiles;
  return p;
}

// A buffer whose every value is written before it is read (a transformed or turned filter, the
// threads' work and sums): a kept Reused buffer up to kReusedKeepBytes, past that a block of the
// scratch pool taken as it is (a Reused buffer that large is freed after each call, and resizing
// its successor zeroed it first: fc6's 32 MB filter, 4% of its forward; two threads' 24 MB of
// work, 6.8% of the samples of its forward on two threads).
template <typename C>
class WrittenFirst {
 public:
  WrittenFirst(int64_t count, int slot) : count_(static_cast<size_t>(count)), kept_(slot) {
    if (count_ * sizeof(C) <= kReusedKeepBytes) {
      kept_->resize(count_);
      data_ = kept_.data();
    } else {
      data_ = AlignedAllocator<C>().allocate(count_);
    }
  }
  ~WrittenFirst() {
    if (data_ != kept_.data()) AlignedAllocator<C>().deallocate(data_, count_);
  }
  WrittenFirst(const WrittenFirst&) = delete;
  WrittenFirst& operator=(const WrittenFirst&) = delete;
  C* data() { return data_; }

 private:
  size_t count_;
  Reused<C> kept_;
  C* data_ = nullptr;
};

// The forward of geometry g: y (NHWC, g's output) from x (NHWC) and the HWIO filter w.
template <typename C>
void WinogradRun(const ConvGeometry& g, const C* x, const C* w, C* y, const KernelContext& ctx) {
  const int64_t cin = g.in_depth, cout = g.out_depth, plane = cin * cout;
  const TileGrid grid(g);
  const int64_t tiles = grid.tiles;
  const GemmTile tile = ActiveGemmTile(sizeof(C));
  if (tiles == 0) return;
  const int nt = ThreadsFor(ctx.num_threads, tiles * kPoints * plane, 1 << 18);
  const WinoPlan plan = PlanWinograd(tiles, cin, cout, sizeof(C), nt, tile);
  const int64_t tb = plan.tb;
  // The transformed filter: shared, the threads transforming it whole before they multiply; or
  // fused (PlanWinograd), `fused` columns at a time in a buffer of each thread's own. Per thread
  // the GEMM's workspace, a block's transformed inputs (16 x tb x cin) and products (16 x tb x
  // its channels), a row for the pixels past the output's edge, and the fused columns.
  const int64_t vs = PointStride<C>(tb * cin);
  const int64_t fused = FusedColumns(tile, sizeof(C));
  const int64_t us = plan.fused ? PointStride<C>(cin * fused) : PointStride<C>(plane);
  WrittenFirst<C> u(plan.fused ? 0 : kPoints * us, kSlotPackedFilter);
  // The shared transformed filter stored past the caches where it outgrows half the shared L3,
  // so that the GEMMs find it in memory anyway: fc6's 32 MB, before its plan was fused, had been
  // read in before each line was written. One pinned core, 60 calls paired: 0.951 of the
  // forward's time, two threads 0.90. (Streamed whenever it passed 512 KB a thread,
  // resnet_28x128's 1 MB measured 1.016: the GEMMs then read from memory what L2 and L3 had
  // kept.)
  const int64_t u_bytes = kPoints * us * static_cast<int64_t>(sizeof(C));
  const bool stream = !plan.fused && OutgrowsSharedCache(u_bytes, 2);
  const int64_t gemm_work = WholeLines<C>(GemmWorkspaceElements(tile, sizeof(C)));
  // Room for the products of every column, fused or not: fused, only the first panel's is
  // written (its pages alone are touched), and products room for a panel alone, which moves the
  // fused columns nearer, measured 2-4% slower on fc6's forward (one and two threads, builds
  // alternated).
  const int64_t v_size = kPoints * vs, m_size = kPoints * PointStride<C>(tb * cout);
  const int64_t own_u = plan.fused ? kPoints * us : 0;
  const int64_t per_thread =
      ThreadStride<C>(gemm_work + v_size + m_size + WholeLines<C>(cout) + own_u, nt);
  WrittenFirst<C> work(nt * per_thread, kSlotGemmWork);
  PerThread<const C*> inputs(nt, tb * kPoints);
  PerThread<C*> outputs(nt, tb * kTileOut * kTileOut);
  const WorkBuffer<C> zeros(static_cast<size_t>(cin), C{0});
  const WinoFilterFn<C> filter = WinoFilter(C{});
  const WinoInputFn<C> input = WinoInput(C{});
  const WinoOutputFn<C> output = WinoOutput(C{});
  InTeam(nt, [&] {
    // Split over the threads the region got (OpenMP may give fewer than asked).
    const int t = TeamThread(), team = TeamSize();
    // This thread's output channels [k0, k1) and blocks of tiles [b0, b1).
    int64_t k0 = 0, k1 = cout, b0 = 0, b1 = plan.blocks;
    if (plan.by_columns) {
      std::tie(k0, k1) = ColumnsOf(cout, tile.nr, t, team);
    } else {
      b0 = plan.blocks * t / team;
      b1 = plan.blocks * (t + 1) / team;
    }
    if (!plan.fused) {  // the shared planes: each thread its columns, or its input channels
      const int64_t c0 = plan.by_columns ? 0 : cin * t / team;
      const int64_t c1 = plan.by_columns ? cin : cin * (t + 1) / team;
      filter(w, cin, cout, c0, c1, k0, k1, us, cout, stream, u.data() + k0);
      TeamBarrier();
    }
    C* const gw = work.data() + t * per_thread;
    C* const v = gw + gemm_work;
    C* const m = v + v_size;
    C* const scratch = m + m_size;
    C* const mine = scratch + WholeLines<C>(cout);  // the fused filter's columns
    const int64_t step = plan.fused ? fused : k1 - k0;
    const C** px = inputs[t];
    C** py = outputs[t];
    for (int64_t b = b0; b < b1 && k1 > k0 && !ctx.cancelled(); ++b) {
      const int64_t t0 = b * tb, count = std::min(tb, tiles - t0);
      for (int64_t i = 0; i < count; ++i) grid.Inputs(t0 + i, x, zeros.data(), px + i * kPoints);
      input(px, count, cin, cin, vs, v);
      for (int64_t j0 = k0; j0 < k1; j0 += step) {
        const int64_t kn = std::min(step, k1 - j0), ms = PointStride<C>(tb * kn);
        // Column j0 of U: in the shared planes (rows cout apart), or fused in mine (kn apart).
        const int64_t ldu = plan.fused ? kn : cout;
        const C* const uj = plan.fused ? mine : u.data() + j0;
        if (plan.fused) filter(w, cin, cout, 0, cin, j0, j0 + kn, us, kn, false, mine);
        for (int64_t i = 0; i < count; ++i)
          grid.Outputs(t0 + i, y + j0, scratch, py + i * kTileOut * kTileOut);
        for (int64_t xi = 0; xi < kPoints; ++xi) {
          GemmRows(MatrixView<C>::Dense(v + xi * vs, cin, cin, false),
                   MatrixView<C>::Dense(uj + xi * us, ldu, kn, false), 0, count, kn, cin,
                   m + xi * ms, kn, gw, tile, ctx);
        }
        output(m, count, kn, ms, py);
      }
    }
  });
}

// The filter gradient sums each point's products over every tile: dU[xi] = V[xi]^T * D[xi], a
// [cin, tiles] x [tiles, cout] product per point, through the GEMM a block of tiles at a time
// (k = the block's tiles), each block's sums added to those of the blocks before (`accumulate`),
// and then transformed into dw. Each thread sums into planes of its own. The threads split the
// tiles, and their planes are added in thread order at the end (the bits depend on the thread
// count, as the direct kernels' do), or, where planes for every thread would outgrow
// kReusedKeepBytes and the output channels give each thread kWinoPanel of them, the output
// channels: each thread then sums every tile for its columns (transforming every tile's input
// itself) in the blocks one thread would take, the bits of one thread.
constexpr int64_t kFilterBlockTiles = 128;
constexpr int64_t kWinoPanel = 64;

template <typename C>
void WinogradFilterGradRun(const ConvGeometry& g, const C* x, const C* dy, C* dw,
                           const KernelContext& ctx) {
  const int64_t cin = g.in_depth, cout = g.out_depth, plane = cin * cout;
  const TileGrid grid(g);
  const int64_t tiles = grid.tiles;
  if (tiles == 0) return;  // dw is zero
  const GemmTile tile = ActiveGemmTile(sizeof(C));
  int nt = ThreadsFor(ctx.num_threads, tiles * kPoints * plane, 1 << 18);
  const int64_t planes_bytes = kPoints * plane * static_cast<int64_t>(sizeof(C));
  const bool by_columns = nt > 1 && nt * planes_bytes > static_cast<int64_t>(kReusedKeepBytes) &&
                          cout >= int64_t{nt} * kWinoPanel;
  if (!by_columns) nt = static_cast<int>(std::min<int64_t>(nt, tiles));
  const int64_t sharing = by_columns ? 1 : nt;  // threads among which the tiles are split
  const int64_t tb = std::min(kFilterBlockTiles, (tiles + sharing - 1) / sharing);
  // dw stored past the caches by the direct kernels' rule for their results (StreamsShare):
  // fc6's 18.9 MB had been read in before each line was written. One pinned core, 60 calls
  // paired: 0.935 of its time; two threads 0.90; resnet_28x128's 590 KB (one thread) 0.994.
  const bool stream = StreamsShare(9 * plane * static_cast<int64_t>(sizeof(C)), nt);
  int got = nt;  // the threads the region got
  // The pass's buffers, freed before a pass planned again for fewer threads (below) takes its own.
  {
    // Per thread: its planes of dU (16 x cin x its columns, at most `most`), the GEMM's
    // workspace, and a block's transformed inputs (16 x tb x cin) and out_backprop (16 x tb x its
    // columns).
    const int64_t panels = (cout + tile.nr - 1) / tile.nr;
    const int64_t most = by_columns ? std::min(cout, (panels + nt - 1) / nt * tile.nr) : cout;
    // V's rows (a tile's cin values) an odd number of lines apart: the GEMM reads V^T in place,
    // and its reads down a column of V then spread over every L1 set.
    const int64_t vrow = PointStride<C>(cin);
    const int64_t us = PointStride<C>(cin * most), vs = PointStride<C>(tb * vrow);
    const int64_t ds = PointStride<C>(tb * most);
    const int64_t part_step = ThreadStride<C>(kPoints * us, nt);
    WrittenFirst<C> sums(nt * part_step, kSlotPartialSums);
    const int64_t gemm_work = WholeLines<C>(GemmWorkspaceElements(tile, sizeof(C)));
    const int64_t per_thread = ThreadStride<C>(gemm_work + kPoints * (vs + ds), nt);
    WrittenFirst<C> work(nt * per_thread, kSlotGemmWork);
    PerThread<const C*> inputs(nt, tb * kPoints);
    PerThread<const C*> outputs(nt, tb * kTileOut * kTileOut);
    const WorkBuffer<C> zeros(static_cast<size_t>(std::max(cin, cout)), C{0});
    const WinoInputFn<C> input = WinoInput(C{});
    const WinoOutBackpropFn<C> out_backprop = WinoOutBackprop(C{});
    const WinoFilterGradFn<C> filter_grad = WinoFilterGrad(C{});
    bool complete = false;  // every thread's sums whole (no cancellation): dw is written
    InTeam(nt, [&] {
      // Split over the threads the region got (OpenMP may give fewer than asked), but planes
      // sized for nt threads' columns have no room for a smaller team's: that team sums nothing,
      // and the run is planned again below for the threads it had.
      const int t = TeamThread(), team = TeamSize();
      const bool replan = by_columns && team < nt;
      // This thread's output channels [k0, k1) and tiles [t0, t1).
      int64_t k0 = 0, k1 = cout, t0 = 0, t1 = tiles;
      if (replan) {
        k1 = 0;
      } else if (by_columns) {
        std::tie(k0, k1) = ColumnsOf(cout, tile.nr, t, team);
      } else {
        t0 = tiles * t / team;
        t1 = tiles * (t + 1) / team;
      }
      C* const du = sums.data() + t * part_step;
      C* const gw = work.data() + t * per_thread;
      C* const v = gw + gemm_work;
      C* const d = v + kPoints * vs;
      const C** px = inputs[t];
      const C** py = outputs[t];
      const int64_t kn = k1 - k0;
      for (int64_t b0 = t0; b0 < t1 && kn > 0 && !ctx.cancelled(); b0 += tb) {
        const int64_t count = std::min(tb, t1 - b0);
        for (int64_t i = 0; i < count; ++i) {
          grid.Inputs(b0 + i, x, zeros.data(), px + i * kPoints);
          grid.Outputs(b0 + i, dy + k0, zeros.data(), py + i * kTileOut * kTileOut);
        }
        input(px, count, cin, vrow, vs, v);
        out_backprop(py, count, kn, ds, d);
        for (int64_t xi = 0; xi < kPoints; ++xi) {
          GemmRows(MatrixView<C>::Dense(v + xi * vs, vrow, cin, true),
                   MatrixView<C>::Dense(d + xi * ds, kn, kn, false), 0, cin, kn, count,
                   du + xi * us, kn, gw, tile, ctx, nullptr, false, /*accumulate=*/b0 > t0);
        }
      }
      // dw is transformed from complete sums only, by every thread or by none: one thread
      // decides once all have summed (a thread that saw the cancellation stopped before the
      // barrier), and the second barrier hands the decision and every thread's sums to all.
      // A cancelled run leaves dw as it was.
      TeamBarrier();
      if (t == 0) {
        complete = !ctx.cancelled() && !replan;
        got = team;
      }
      TeamBarrier();
      if (complete && sharing == 1 && kn > 0)
        filter_grad(du, kn, us, 1, 0, cin, kn, cout, plane, stream, dw + k0);
      if (complete && sharing > 1) {
        const int64_t c0 = cin * t / team, c1 = cin * (t + 1) / team;
        filter_grad(sums.data() + c0 * cout, cout, us, team, part_step, c1 - c0, cout, cout, plane,
                    stream, dw + c0 * cout);
      }
    });
  }
  if (by_columns && got < nt && !ctx.cancelled()) {
    KernelContext fewer = ctx;
    fewer.num_threads = got;
    WinogradFilterGradRun(g, x, dy, dw, fewer);
  }
}

BF_CONV_OPTIMIZED_KERNEL_SET(WinogradKernels);

// Every operand whole, NHWC of the compute type (UseWinograd takes float32 and float64 only).
template <typename T>
RowConverted WinogradKernels<T>::ConvertsRows(const ConvState&) {
  return {};
}
template <typename T>
void WinogradKernels<T>::Forward(const KernelArgs<T>& args, const KernelContext& ctx) {
  WinogradRun(args.g, args.x, args.w, args.result, ctx);
}

// The stride-1 input gradient as the forward of dy by the filter turned half a turn with its
// channels swapped (DenseInputGradientForward), turned here a tap at a time:
// w'[tap'][co][ci] = w[8 - tap'][ci][co].
template <typename T>
void WinogradKernels<T>::BackpropInput(const KernelArgs<T>& args, const KernelContext& ctx) {
  using C = ComputeT<T>;
  const ConvGeometry& g = args.g;
  const ConvGeometry f = *DenseInputGradientForward(g);  // UseWinograd checked it exists
  const int64_t ci = g.in_depth, co = g.out_depth, taps = g.filter_h * g.filter_w;
  WrittenFirst<C> turned(taps * ci * co, kSlotFilterCopy);
  C* wt = turned.data();
  const int nt = ThreadsFor(ctx.num_threads, taps * ci * co, 1 << 16);
  ParallelFor(nt, taps, [&](int64_t tap) {
    TransposeConvert(args.w + (taps - 1 - tap) * ci * co, co, wt + tap * co * ci, ci, ci, co);
  });
  WinogradRun(f, args.dy, wt, args.result, ctx);
}
template <typename T>
void WinogradKernels<T>::BackpropFilter(const KernelArgs<T>& args, const KernelContext& ctx) {
  if constexpr (std::is_same_v<T, ComputeT<T>>) {
    WinogradFilterGradRun(args.g, args.x, args.dy, args.filter_grad->template data<T>(), ctx);
  } else {
    BF_CHECK(false, "the Winograd kernels take float32 and float64 only");
  }
}

std::atomic<int>& WinogradSetting() {
  static std::atomic<int> setting{-1};  // -1: the environment's word
  return setting;
}

}  // namespace

void SetWinogradForTesting(bool on) { WinogradSetting().store(on ? 1 : 0); }

bool UseWinograd(const ConvGeometry& g, ConvOp op, DType dtype) {
  static const bool env_on = [] {
    const char* v = std::getenv("BLOCKFLOW_CONV_WINOGRAD");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  const int forced = WinogradSetting().load();
  if (!(forced < 0 ? env_on : forced == 1)) return false;
  const bool shape = !g.depthwise && g.groups == 1 && g.filter_h == 3 && g.filter_w == 3 &&
                     g.stride_h == 1 && g.stride_w == 1 && g.dilation_h == 1 && g.dilation_w == 1 &&
                     g.in_depth >= kWinogradMinChannels && g.out_depth >= kWinogradMinChannels &&
                     (dtype == DType::kFloat32 || dtype == DType::kFloat64);
  if (!shape) return false;
  // The input gradient as a forward (no side padded past the filter's reach).
  const bool input_grad = op == ConvOp::kBackpropInput;
  if (input_grad && !DenseInputGradientForward(g)) return false;
  // Products per channel pair: 16 per 2x2 tile of the result against the direct kernels' 9 per
  // pixel of the forward's output. Taken where Winograd needs at most 2/3 as many, so that its
  // transforms pay: not for fc6's input gradient (a 6x6 result from a 4x4 out_backprop, 144
  // either way; 23% slower than the GEMM) nor for outputs of a pixel or two.
  const int64_t rh = input_grad ? g.in_h : g.out_h, rw = input_grad ? g.in_w : g.out_w;
  const int64_t winograd = (rh + 1) / 2 * ((rw + 1) / 2) * kPoints;
  return 3 * winograd <= int64_t{2} * 9 * g.out_h * g.out_w;
}

Status RunWinogradKernels(const ConvState& s, const Tensor& a, const Tensor& b, Tensor* out,
                          const KernelContext& k) {
  return RunOptimizedKernels<WinogradKernels>(s, a, b, out, k);
}

}  // namespace blockflow::conv::internal
