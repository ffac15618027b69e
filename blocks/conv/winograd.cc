#include "blocks/conv/winograd.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "blocks/conv/isa.h"
#include "blocks/conv/optimized_util.h"
#include "blocks/conv/packed_gemm.h"
#include "blocks/conv/run_kernels.h"

namespace blockflow::conv::internal {
namespace {

// 4 x 4 transformed points per tile; 2 x 2 output pixels and 4 x 4 input pixels per tile.
constexpr int64_t kPoints = 16, kTileOut = 2, kTileIn = 4;

// The transforms below are loops over channels, contiguous in every operand, vectorized (`omp
// simd`: the compiler cannot tell on its own that the rows they read and write do not overlap)
// for each ISA, which BF_CONV_ISA_FNS compiles them once per row of the ISA table. They add,
// subtract and halve, never multiply-add, so no ISA fuses any of them and the bits match.

// U[4i + j][c][k] = (G g G^T)[i][j] for the input channels [c0, c1) and output channels
// [k0, k1), g the 3x3 filter of (c, k): w[(kh * 3 + kw) * cin * cout + c * cout + k] (HWIO).
// G = [1 0 0; h h h; h -h h; 0 0 1] with h = 1/2.
template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void WinoFilterT(const C* __restrict w, int64_t cin, int64_t cout, int64_t c0,
                                int64_t c1, int64_t k0, int64_t k1, C* __restrict u) {
  const int64_t plane = cin * cout;
  const C half = static_cast<C>(0.5);
  for (int64_t c = c0; c < c1; ++c) {
    const C* g = w + c * cout;
    C* uc = u + c * cout;
#pragma omp simd
    for (int64_t k = k0; k < k1; ++k) {
      C t[4][3];  // G g: rows of the filter combined, per filter column j
      for (int j = 0; j < 3; ++j) {
        const C g0 = g[j * plane + k], g1 = g[(3 + j) * plane + k], g2 = g[(6 + j) * plane + k];
        t[0][j] = g0;
        t[1][j] = half * (g0 + g1 + g2);
        t[2][j] = half * (g0 - g1 + g2);
        t[3][j] = g2;
      }
      for (int i = 0; i < 4; ++i) {  // (G g) G^T: its columns combined, per row i
        uc[(4 * i + 0) * plane + k] = t[i][0];
        uc[(4 * i + 1) * plane + k] = half * (t[i][0] + t[i][1] + t[i][2]);
        uc[(4 * i + 2) * plane + k] = half * (t[i][0] - t[i][1] + t[i][2]);
        uc[(4 * i + 3) * plane + k] = t[i][2];
      }
    }
  }
}

// V[4i + j][t][c] = (B^T d B)[i][j] for the `tiles` tiles of a block, tile t's input pixel (a, b)
// at px[t * 16 + 4a + b] (a row of zeros outside the input); point xi's matrix at v + xi * vs,
// rows cin apart. B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1].
template <typename C, typename V, int P, int NV>
BF_CONV_INLINE void WinoInputT(const C* const* px, int64_t tiles, int64_t cin, int64_t vs,
                               C* __restrict v) {
  for (int64_t t = 0; t < tiles; ++t) {
    const C* const* p = px + t * kPoints;
    C* vt = v + t * cin;
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

template <typename C>
using WinoFilterFn = void (*)(const C*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, C*);
template <typename C>
using WinoInputFn = void (*)(const C* const*, int64_t, int64_t, int64_t, C*);
template <typename C>
using WinoOutputFn = void (*)(const C*, int64_t, int64_t, int64_t, C* const*);
// NOLINTBEGIN(bugprone-macro-parentheses): C is spliced into parameter types.
#define BF_WINO_FNS(C)                                                                        \
  BF_CONV_ISA_FNS(WinoFilter, WinoFilterT, C, WinoFilterFn<C>,                                \
                  (const C* w, int64_t cin, int64_t cout, int64_t c0, int64_t c1, int64_t k0, \
                   int64_t k1, C* u),                                                         \
                  (w, cin, cout, c0, c1, k0, k1, u))                                          \
  BF_CONV_ISA_FNS(WinoInput, WinoInputT, C, WinoInputFn<C>,                                   \
                  (const C* const* px, int64_t tiles, int64_t cin, int64_t vs, C* v),         \
                  (px, tiles, cin, vs, v))                                                    \
  BF_CONV_ISA_FNS(WinoOutput, WinoOutputT, C, WinoOutputFn<C>,                                \
                  (const C* m, int64_t tiles, int64_t cout, int64_t ms, C* const* py),        \
                  (m, tiles, cout, ms, py))
BF_WINO_FNS(float)
BF_WINO_FNS(double)
#undef BF_WINO_FNS
// NOLINTEND(bugprone-macro-parentheses)

// How the threads share a layer: by tiles, or by output channels. Where the transformed filter
// (16 planes of cin x cout) fits half of L2, the GEMM packs a plane of it per block from there,
// and blocks of about kBlockTiles tiles keep their transformed inputs and products (16 x 96
// rows of cin and of cout values) in L2 as well; the threads split the blocks. A larger filter
// comes from further out once per block, so its blocks take up to kMostTiles tiles, and where
// the output channels fill a GEMM panel per thread the threads split those instead: each then
// transforms and reads only its columns of the filter, and transforms every tile's input
// itself (fc6's forward on two threads, 32 MB of planes: 14.1-16.7 ms with the tiles split,
// each thread reading all of them, 14.2-14.6 with the channels split, against 24.6 on one).
constexpr int64_t kBlockTiles = 96, kMostTiles = 384;
struct WinoPlan {
  bool by_columns = false;  // the threads split the output channels, not the tiles
  int64_t tb = 0;           // tiles per block, a multiple of the GEMM tile's rows
  int64_t blocks = 0;       // tb tiles each, the last fewer
};
WinoPlan PlanWinograd(int64_t tiles, int64_t cin, int64_t cout, size_t elem_size, int nt,
                      const GemmTile& tile) {
  const int64_t planes_bytes = kPoints * cin * cout * static_cast<int64_t>(elem_size);
  const bool large = planes_bytes > CacheBytes(2, int64_t{1} << 20) / 2;
  WinoPlan p;
  p.by_columns = large && nt > 1 && cout >= int64_t{nt} * tile.nr;
  const int64_t sharing = p.by_columns ? 1 : nt;  // threads among which the tiles are split
  const int64_t own = (tiles + sharing - 1) / sharing;
  const int64_t wanted = large ? std::clamp<int64_t>(own, kBlockTiles, kMostTiles) : kBlockTiles;
  p.blocks = (tiles + wanted - 1) / wanted;
  p.blocks = (p.blocks + sharing - 1) / sharing * sharing;
  const int64_t tb = (tiles + p.blocks - 1) / p.blocks;
  p.tb = (tb + tile.mr - 1) / tile.mr * tile.mr;
  p.blocks = (tiles + p.tb - 1) / p.tb;
  return p;
}

// A filter's buffer (transformed, or turned), written whole before it is read: a kept Reused buffer
// up to kReusedKeepBytes, past that a block of the scratch pool taken as it is (a Reused buffer
// that large is freed after each call, and resizing its successor zeroed it first: 32 MB for fc6,
// 4% of its forward).
template <typename C>
class FilterPlanes {
 public:
  FilterPlanes(int64_t count, int slot) : count_(static_cast<size_t>(count)), kept_(slot) {
    if (count_ * sizeof(C) <= kReusedKeepBytes) {
      kept_->resize(count_);
      data_ = kept_.data();
    } else {
      data_ = AlignedAllocator<C>().allocate(count_);
    }
  }
  ~FilterPlanes() {
    if (data_ != kept_.data()) AlignedAllocator<C>().deallocate(data_, count_);
  }
  FilterPlanes(const FilterPlanes&) = delete;
  FilterPlanes& operator=(const FilterPlanes&) = delete;
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
  const int64_t tiles_h = (g.out_h + 1) / 2, tiles_w = (g.out_w + 1) / 2;
  const int64_t image_tiles = tiles_h * tiles_w, tiles = g.batch * image_tiles;
  const GemmTile tile = ActiveGemmTile(sizeof(C));
  if (tiles == 0) return;
  const int nt = ThreadsFor(ctx.num_threads, tiles * kPoints * plane, 1 << 18);
  const WinoPlan plan = PlanWinograd(tiles, cin, cout, sizeof(C), nt, tile);
  const int64_t tb = plan.tb;
  // The transformed filter, shared; per thread the GEMM's workspace, a block's transformed
  // inputs (16 x tb x cin) and products (16 x tb x its channels), and a row for the pixels past
  // the output's edge.
  FilterPlanes<C> u(kPoints * plane, kSlotPackedFilter);
  const int64_t gemm_work = WholeLines<C>(GemmWorkspaceElements(tile, sizeof(C)));
  const int64_t v_size = WholeLines<C>(kPoints * tb * cin);
  const int64_t m_size = WholeLines<C>(kPoints * tb * cout);
  const int64_t per_thread = ThreadStride<C>(gemm_work + v_size + m_size + cout, nt);
  Reused<C> work(kSlotGemmWork);
  work->resize(static_cast<size_t>(nt * per_thread));
  PerThread<const C*> inputs(nt, tb * kPoints);
  PerThread<C*> outputs(nt, tb * kTileOut * kTileOut);
  const WorkBuffer<C> zeros(static_cast<size_t>(cin), C{0});
  const WinoFilterFn<C> filter = WinoFilter(C{});
  const WinoInputFn<C> input = WinoInput(C{});
  const WinoOutputFn<C> output = WinoOutput(C{});
#pragma omp parallel num_threads(nt)
  {
    const int t = omp_get_thread_num();
    // This thread's output channels [k0, k1) and blocks of tiles [b0, b1).
    int64_t k0 = 0, k1 = cout, b0 = 0, b1 = plan.blocks;
    if (plan.by_columns) {
      const int64_t panels = (cout + tile.nr - 1) / tile.nr;
      k0 = std::min(cout, panels * t / nt * tile.nr);
      k1 = std::min(cout, panels * (t + 1) / nt * tile.nr);
      filter(w, cin, cout, 0, cin, k0, k1, u.data());
    } else {
      b0 = plan.blocks * t / nt;
      b1 = plan.blocks * (t + 1) / nt;
      filter(w, cin, cout, cin * t / nt, cin * (t + 1) / nt, 0, cout, u.data());
    }
#pragma omp barrier
    const int64_t kn = k1 - k0;
    C* const gw = work.data() + t * per_thread;
    C* const v = gw + gemm_work;
    C* const m = v + v_size;
    C* const scratch = m + m_size;
    const C** px = inputs[t];
    C** py = outputs[t];
    for (int64_t b = b0; b < b1 && kn > 0 && !ctx.cancelled(); ++b) {
      const int64_t t0 = b * tb, count = std::min(tb, tiles - t0);
      for (int64_t i = 0; i < count; ++i) {
        const int64_t id = t0 + i, n = id / image_tiles, th = id % image_tiles / tiles_w,
                      tw = id % tiles_w;
        const int64_t ih0 = th * kTileOut - g.pad_top, iw0 = tw * kTileOut - g.pad_left;
        for (int64_t a = 0; a < kTileIn; ++a) {
          const int64_t ih = ih0 + a;
          for (int64_t c = 0; c < kTileIn; ++c) {
            const int64_t iw = iw0 + c;
            const bool inside = ih >= 0 && ih < g.in_h && iw >= 0 && iw < g.in_w;
            px[i * kPoints + a * kTileIn + c] =
                inside ? x + ((n * g.in_h + ih) * g.in_w + iw) * cin : zeros.data();
          }
        }
        for (int64_t a = 0; a < kTileOut; ++a) {
          const int64_t oh = th * kTileOut + a;
          for (int64_t c = 0; c < kTileOut; ++c) {
            const int64_t ow = tw * kTileOut + c;
            py[i * kTileOut * kTileOut + a * kTileOut + c] =
                oh < g.out_h && ow < g.out_w ? y + ((n * g.out_h + oh) * g.out_w + ow) * cout + k0
                                             : scratch;
          }
        }
      }
      input(px, count, cin, tb * cin, v);
      for (int64_t xi = 0; xi < kPoints; ++xi) {
        GemmRows(MatrixView<C>::Dense(v + xi * tb * cin, cin, cin, false),
                 MatrixView<C>::Dense(u.data() + xi * plane + k0, cout, kn, false), 0, count, kn,
                 cin, m + xi * tb * kn, kn, gw, tile, ctx);
      }
      output(m, count, kn, tb * kn, py);
    }
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
  FilterPlanes<C> turned(taps * ci * co, kSlotFilterCopy);
  C* wt = turned.data();
  const int nt = ThreadsFor(ctx.num_threads, taps * ci * co, 1 << 16);
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int64_t tap = 0; tap < taps; ++tap)
    TransposeConvert(args.w + (taps - 1 - tap) * ci * co, co, wt + tap * co * ci, ci, ci, co);
  WinogradRun(f, args.dy, wt, args.result, ctx);
}
// UseWinograd takes no filter gradient.
template <typename T>
void WinogradKernels<T>::BackpropFilter(const KernelArgs<T>&, const KernelContext&) {
  BF_CHECK(false, "the Winograd kernels compute no filter gradient");
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
  if (!shape || op == ConvOp::kBackpropFilter) return false;
  // The input gradient as a forward (no side padded past the filter's reach).
  const bool forward = op == ConvOp::kForward;
  if (!forward && !DenseInputGradientForward(g)) return false;
  // Products per channel pair: 16 per 2x2 tile of the result against the direct kernels' 9 per
  // pixel of the forward's output. Taken where Winograd needs at most 2/3 as many, so that its
  // transforms pay: not for fc6's input gradient (a 6x6 result from a 4x4 out_backprop, 144
  // either way; 23% slower than the GEMM) nor for outputs of a pixel or two.
  const int64_t rh = forward ? g.out_h : g.in_h, rw = forward ? g.out_w : g.in_w;
  const int64_t winograd = (rh + 1) / 2 * ((rw + 1) / 2) * kPoints;
  return 3 * winograd <= int64_t{2} * 9 * g.out_h * g.out_w;
}

Status RunWinogradKernels(const ConvState& s, const Tensor& a, const Tensor& b, Tensor* out,
                          const KernelContext& k) {
  return RunOptimizedKernels<WinogradKernels>(s, a, b, out, k);
}

}  // namespace blockflow::conv::internal
