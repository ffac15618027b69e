// Optimized kernels against reference kernels over a grid of shapes, formats, paddings,
// strides, dilations, groups and multipliers, plus seeded random problems, in all four dtypes.
// float32 within 2e-5 * (1 + |ref|), float64 within 1e-12 * (1 + |ref|). float16/bfloat16 inputs
// are multiples of 1/128 (1/64 for bfloat16), so every float32 partial sum is exact and both
// kernels, accumulating in float32 and rounding once, must agree bit for bit.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/shape_suite.h"
#include "blocks/conv/isa.h"
#include "blocks/conv/layout.h"
#include "conv_test_util.h"
#include "core/team.h"
#include "tests/util/block_compare.h"

namespace blockflow::conv::testing {
namespace {

using ::blockflow::testing::BlockCase;
using ::blockflow::testing::CompareBlockKernels;
using ::blockflow::testing::TensorsClose;

// Conv2D problems the packed GEMM takes (conv2d.cc's UseGemm: groups 1, >= 32 channels, and
// a 1x1 stride-1 unpadded layer or <= 64 output pixels with >= 64 channels each side), sized to
// leave remainders in every blocking dimension: rows against the register tiles (6 with
// AVX-512 and AVX2, 2 baseline) and the 120-row A blocks, columns against the 16/32/64-wide
// panels and the 512-float B blocks, depth against the 256-deep K blocks.
std::vector<Problem> GemmProblems() {
  struct Gemm {
    const char* format;
    const char* padding;
    int64_t n, h, w, c, cog, fh, fw, sh, sw, dh, dw;
  };
  const Gemm gemms[] = {
      // 1x1: 154 pixels (2 A blocks, a partial tile), 37 -> 45 channels (partial panels).
      {"NHWC", "VALID", 2, 7, 11, 37, 45, 1, 1, 1, 1, 1, 1},
      // 1x1 to 1100 channels: split by columns, each thread's columns more than one 512-float
      // B block at 2 threads (its own block of C copied out a block of columns at a time).
      {"NHWC", "VALID", 2, 7, 11, 37, 1100, 1, 1, 1, 1, 1, 1},
      // 1x1, SAME (no padding at 1x1 stride 1), NCHW: K 260 (> 256) forward and 530 back,
      // N 530 (> 512) forward and filter gradient, 260 back.
      {"NCHW", "SAME", 2, 7, 11, 260, 530, 1, 1, 1, 1, 1, 1},
      // The full window, VALID: one output pixel per image, K = 5 * 4 * 70 = 1400.
      {"NHWC", "VALID", 3, 5, 4, 70, 66, 5, 4, 1, 1, 1, 1},
      // Small spatial, many channels: fc6 cut down (6x6, 3x3 VALID, 16 pixels per image).
      {"NHWC", "VALID", 3, 6, 6, 64, 97, 3, 3, 1, 1, 1, 1},
      // Stride 2 with SAME padding (im2col and col2im in the padding), and dilation 2.
      {"NHWC", "SAME", 3, 6, 7, 65, 67, 3, 3, 2, 2, 1, 1},
      {"NCHW", "VALID", 2, 7, 7, 64, 80, 3, 3, 1, 1, 2, 2},
      {"NHWC", "EXPLICIT", 2, 5, 6, 66, 64, 3, 2, 2, 1, 1, 1},
      // 128 channels: K blocks that start a tap with two taps' inputs contiguous after it
      // (their micro-panels read in place where the rows are inside the input, packed where
      // they reach into the padding) and K blocks that run past the end of a filter row.
      {"NHWC", "SAME", 2, 4, 5, 128, 70, 3, 3, 1, 1, 1, 1},
  };
  std::vector<Problem> out;
  for (const Gemm& b : gemms) {
    Problem p = DenseProblem(b.format, b.padding, b.n, b.h, b.w, b.c, b.cog, b.fh, b.fw);
    p.sh = b.sh;
    p.sw = b.sw;
    p.dh = b.dh;
    p.dw = b.dw;
    if (p.padding == "EXPLICIT") {
      p.pt = 1;
      p.pb = 2;
      p.pl = 0;
      p.pr = 1;
    }
    out.push_back(p);
  }
  return out;
}

std::vector<Problem> GridProblems(bool depthwise) {
  std::vector<Problem> out;
  for (const char* format : {"NHWC", "NCHW"})
    for (const char* padding : {"SAME", "VALID", "EXPLICIT"})
      for (auto [sh, sw] : {std::pair<int64_t, int64_t>{1, 1}, {2, 1}, {2, 3}})
        for (auto [dh, dw] : {std::pair<int64_t, int64_t>{1, 1}, {1, 2}})
          for (int variant = 0; variant < 2; ++variant) {
            Problem p;
            p.depthwise = depthwise;
            p.format = format;
            p.padding = padding;
            p.n = 2;
            p.h = 7;
            p.w = 6;
            p.fh = 3;
            p.fw = 2;
            p.sh = sh;
            p.sw = sw;
            p.dh = dh;
            p.dw = dw;
            if (p.padding == "EXPLICIT") {
              p.pt = 1;
              p.pb = 2;
              p.pl = 0;
              p.pr = 1;
            }
            if (depthwise) {
              p.c = 3;
              p.mult = variant ? 2 : 1;
            } else {
              p.groups = variant ? 2 : 1;
              p.c = 4;
              p.cog = 3;
            }
            out.push_back(p);
          }
  // Larger channel counts, so the vector tiles (16 floats or 8 doubles per vector, two vectors
  // with AVX-512) run, with channel remainders, groups, stride phases and dilation.
  struct Big {
    const char* format;
    const char* padding;
    int64_t h, w, c, groups, cog, mult, sh, sw, dh, dw;
    int64_t f = 3;      // filter height and width
    bool dense = true;  // also a Conv2D case (false: a depthwise path's, too large for Conv2D's
                        // filter gradient to meet the float32 tolerance over its 2000 terms)
  };
  const Big bigs[] = {
      {"NHWC", "SAME", 9, 13, 16, 1, 21, 1, 1, 1, 1, 1},
      {"NCHW", "SAME", 9, 13, 16, 1, 21, 1, 1, 1, 1, 1},
      {"NHWC", "SAME", 7, 11, 36, 1, 37, 1, 2, 1, 1, 1},
      {"NCHW", "EXPLICIT", 8, 9, 36, 2, 33, 2, 1, 2, 2, 1},
      {"NHWC", "VALID", 10, 12, 64, 2, 32, 1, 2, 3, 1, 2},
      {"NHWC", "SAME", 9, 10, 37, 1, 16, 1, 2, 2, 1, 1},
      {"NHWC", "EXPLICIT", 6, 9, 17, 1, 16, 2, 2, 3, 1, 1},
      // 5 x 5 on two vectors of channels (the depthwise 5-tap rows): padded edges on both sides
      // and a partial pixel tile.
      {"NHWC", "SAME", 6, 11, 32, 1, 16, 1, 1, 1, 1, 1, 5},
      {"NHWC", "EXPLICIT", 6, 11, 32, 1, 16, 1, 1, 1, 1, 1, 5},
      // 5 x 5 on 248 channels, whose depthwise forward takes each block of channels along the
      // whole row (one tile position's inputs and the filter outgrow L1): 15 vectors (the last
      // a block of one) and 8 channels in plain loops.
      {"NHWC", "SAME", 5, 9, 248, 1, 16, 1, 1, 1, 1, 1, 5},
      // 5 x 5 on rows of 27 pixels, which the float depthwise tiles take 7 pixels wide (the last
      // tile partial, the first and last reading the padding), on two vectors and 8 channels.
      {"NHWC", "SAME", 4, 27, 40, 1, 16, 1, 1, 1, 1, 1, 5},
      // Rows of 1 and 2 pixels on two vectors of channels: every column of a 3 x 3 tile is an
      // edge column.
      {"NHWC", "SAME", 3, 1, 32, 1, 16, 1, 1, 1, 1, 1},
      {"NHWC", "SAME", 4, 2, 32, 1, 16, 2, 1, 1, 1, 1},
      // Rows of 13 and 14 pixels (and 13 and 14 columns per stride phase) on two or more
      // vectors of channels: the dense 7-pixel tiles, a partial one on 13.
      {"NHWC", "SAME", 5, 13, 40, 1, 40, 1, 1, 1, 1, 1},
      {"NHWC", "SAME", 5, 28, 32, 1, 36, 1, 2, 2, 1, 1},
      // Channel counts (times the multiplier) whose pixels are a multiple of 4 KiB apart (float32
      // and float64 at 1024, float64 at 512): the depthwise kernels read the input in place, or,
      // where they convert its rows anyway (float16, bfloat16, a multiplier), through rows with
      // a padded pixel stride.
      {"NHWC", "SAME", 4, 5, 1024, 1, 8, 1, 1, 1, 1, 1},
      {"NHWC", "SAME", 5, 6, 512, 1, 8, 1, 1, 1, 1, 1},
      {"NHWC", "VALID", 5, 6, 512, 1, 8, 2, 1, 2, 1, 1},
      // Pixels 2 KiB apart (float32 at 512 channels, above; float64 at 256), which the
      // depthwise 3x3 sweeps read in place.
      {"NHWC", "SAME", 4, 5, 256, 1, 8, 1, 1, 1, 1, 1},
      // Few input channels, whose filter gradient takes each filter row's fw x C taps as one
      // run: the stem's 3 channels 7 x 7 at stride 2, 2 channels 5 x 5 (a run of 10, whose
      // last tile of 7 overlaps the first), 7 channels 1 x 1 (a run of exactly 7).
      {"NHWC", "SAME", 11, 15, 3, 1, 37, 1, 2, 2, 1, 1, 7},
      {"NHWC", "EXPLICIT", 8, 10, 2, 1, 48, 1, 1, 2, 1, 1, 5},
      {"NCHW", "VALID", 5, 9, 7, 1, 33, 1, 1, 1, 1, 1, 1},
      // Few input channels into 64 and more output channels, whose forward takes 6-pixel tiles
      // of 4 vectors: a partial tile of 2 on 8 columns, and one vector left over (80); dilated
      // taps (per tap, no runs) on 13 columns.
      {"NHWC", "SAME", 9, 15, 3, 1, 80, 1, 2, 2, 1, 1, 7},
      {"NCHW", "EXPLICIT", 7, 13, 5, 1, 64, 1, 1, 1, 1, 2, 3},
      // The stem (7 x 7, 3 channels, stride 2) on AVX-512 in float takes written-out tiles of
      // 12 and 4 pixels by 2 vectors: rows of 31 columns (12, 12, 4 and a partial 4; the first
      // and last tiles read staged padding) with one vector left over (80), NCHW with explicit
      // padding, and a row of 397 columns, more tiles than the row's list holds (the compiled
      // tiles then).
      {"NHWC", "SAME", 9, 61, 3, 1, 80, 1, 2, 2, 1, 1, 7},
      {"NCHW", "EXPLICIT", 8, 50, 3, 1, 64, 1, 2, 2, 1, 1, 7},
      {"NHWC", "VALID", 7, 800, 3, 1, 64, 1, 2, 2, 1, 1, 7},
      // Two images per filter-gradient work item (9 output rows) at column stride 2, whose
      // tiles read their inputs packed per stride phase: 21 columns (11 in phase 0, 10 in
      // phase 1), three tiles of 8 channels.
      {"NHWC", "SAME", 9, 21, 24, 1, 32, 1, 1, 2, 1, 1},
      // A stride-1 input gradient computed as the forward of the turned filter: dilated, with a
      // channel left over after two vectors (the forward's plain loop for it).
      {"NHWC", "SAME", 9, 11, 33, 1, 20, 1, 1, 1, 2, 2},
      // NCHW rows of 16 pixels and more (a vector of a plane's row and a tail, in the depthwise
      // plane kernels): stride 1, stride 2 with explicit padding, and a multiplier of 2.
      {"NCHW", "SAME", 4, 18, 37, 1, 16, 1, 1, 1, 1, 1},
      {"NCHW", "EXPLICIT", 5, 33, 20, 1, 16, 1, 2, 2, 1, 1},
      {"NCHW", "VALID", 4, 19, 9, 1, 16, 2, 1, 1, 1, 1},
      // The depthwise plane kernels' phases and offsets: a multiplier of 3 at row stride 2 with
      // column dilation 2 and explicit padding, a 5 x 5 filter at row dilation 2.
      {"NCHW", "EXPLICIT", 7, 20, 6, 1, 1, 3, 2, 1, 1, 2},
      {"NCHW", "SAME", 6, 40, 3, 1, 1, 1, 1, 1, 2, 1, 5},
      // The multiplier-1 NCHW depthwise ops in channel blocks: the forward down the planes in
      // bands of rows that fit its 128 KB, 19 rows a band on 26 columns (bands of 19, 19 and 2,
      // the last reading the padding below), and 4 on 100 columns at stride 2 with row dilation
      // 2 and explicit padding (the first band starting in the padding above; the strided input
      // gradient's dx in bands of 10 rows there, 17 rows in two); 56 channels, a
      // block of 32 (16 in float64) and a partial one of 24 (8), which the filter gradient's
      // 3x3 sweep takes as 16 and 8.
      {"NCHW", "SAME", 40, 26, 56, 1, 16, 1, 1, 1, 1, 1, 3, false},
      // Explicit padding of 3 on the right of a 3-wide filter: the stride-1 input gradient's
      // turned forward has a negative padding there.
      {"NCHW", "EXPLICIT", 6, 11, 40, 1, 16, 1, 1, 1, 1, 1},
      {"NCHW", "EXPLICIT", 17, 100, 36, 1, 16, 1, 2, 2, 2, 1, 3, false},
      // No output rows (VALID, 2 rows under a 3-row filter) on 18 output columns: an empty
      // out_backprop, which RunConv answers with zeros before any kernel (the depthwise filter
      // gradient's sweep once divided by zero cutting its bands).
      {"NHWC", "VALID", 2, 20, 40, 1, 1, 1, 1, 1, 1, 1},
      {"NCHW", "VALID", 2, 20, 3, 1, 1, 1, 1, 1, 1, 1},
      {"NCHW", "VALID", 2, 40, 3, 1, 1, 1, 1, 1, 1, 1},
      // A depthwise channel multiplier of 0 (no output channels; Conv2D: 3 per group), at
      // stride 1 and 2 in both layouts: an empty filter, so the input gradient is zeros (the
      // NHWC depthwise input gradient once read past an empty buffer).
      {"NHWC", "SAME", 6, 20, 16, 1, 3, 0, 1, 1, 1, 1},
      {"NCHW", "SAME", 6, 20, 16, 1, 3, 0, 1, 1, 1, 1},
      {"NHWC", "SAME", 6, 20, 16, 1, 3, 0, 2, 2, 1, 1},
      {"NCHW", "SAME", 6, 20, 16, 1, 3, 0, 2, 2, 1, 1},
  };
  const auto add = [&](const Big& b) {
    if (!depthwise && !b.dense) return;
    Problem p;
    p.depthwise = depthwise;
    p.format = b.format;
    p.padding = b.padding;
    p.n = 2;
    p.h = b.h;
    p.w = b.w;
    p.fh = b.f;
    p.fw = b.f;
    p.c = b.c;
    p.groups = depthwise ? 1 : b.groups;
    p.cog = b.cog;
    p.mult = b.mult;
    p.sh = b.sh;
    p.sw = b.sw;
    p.dh = b.dh;
    p.dw = b.dw;
    if (p.padding == "EXPLICIT") {
      p.pt = 2;
      p.pb = 0;
      p.pl = 1;
      p.pr = 3;
    }
    out.push_back(p);
  };
  for (const Big& b : bigs) add(b);
  if (!depthwise) {
    for (const Problem& p : GemmProblems()) out.push_back(p);
  }
  std::mt19937_64 rng(depthwise ? 77 : 78);
  for (int i = 0; i < 40; ++i) out.push_back(RandomProblem(rng, depthwise));
  // Cases added since go last, so that the cases above keep the random values they were drawn
  // (a test draws every case's operands from one stream, in this order). 24 input channels and
  // more per group into 64 and more output channels, whose filter gradient takes tiles of 6
  // input channels by 4 vectors with AVX-512 in float: 28 channels (4 blocks of 6, then a tile
  // of 4) into 97 (4 vectors, then 2, then 1 channel), and two groups of 26 (2 left over) into
  // 80 at column stride 2 (4 vectors, then 1).
  add({"NHWC", "SAME", 6, 9, 28, 1, 97, 1, 1, 1, 1, 1});
  add({"NHWC", "EXPLICIT", 7, 11, 52, 2, 80, 1, 1, 2, 1, 1});
  return out;
}

// Runs `op` through the optimized kernels on `threads` threads at every ISA variant this CPU has
// (baseline, AVX2, AVX-512: the widest last), checking each result against `ref`; `*last` is
// the widest one's. A mismatch is a fatal failure.
void CheckEveryIsa(const Tensor& ref, int op, const Resolved& r, const Tensor& x, const Tensor& w,
                   const Tensor& dy, int threads, const std::string& what, Expected<Tensor>* last) {
  for (internal::Isa isa : {internal::Isa::kBase, internal::Isa::kAvx2, internal::Isa::kAvx512}) {
    internal::SetIsaForTesting(isa);
    *last = RunOp(KernelKind::kOptimized, op, r, x, w, dy, threads);
    ASSERT_TRUE(last->ok()) << what << ": " << last->status().message();
    ASSERT_TRUE(TensorsClose(ref, **last,
                             what + " threads " + std::to_string(threads) + " isa " +
                                 internal::IsaName(internal::ActiveIsa())));
  }
}

// The grid (RandomTensor's) on which 16-bit operands sum exactly in float, whatever the order:
// both sides of a comparison then round to the same bits. 0 (no grid) for float32 and float64.
int ExactGrid(DType dtype) {
  return dtype == DType::kFloat16 ? 128 : dtype == DType::kBFloat16 ? 64 : 0;
}

class CompareTest : public ::testing::TestWithParam<std::tuple<bool, DType>> {};

TEST_P(CompareTest, OptimizedMatchesReference) {
  const auto [depthwise, dtype] = GetParam();
  std::mt19937_64 rng(1234 + static_cast<int>(dtype) + (depthwise ? 100 : 0));
  int checked = 0;
  for (const Problem& p : GridProblems(depthwise)) {
    Expected<Resolved> r = Resolve(p);
    ASSERT_TRUE(r.ok()) << p.ToString() << ": " << r.status().message();
    const int grid = ExactGrid(dtype);
    const Tensor x = RandomTensor(dtype, p.InputShape(), rng, grid);
    const Tensor w = RandomTensor(dtype, p.FilterShape(), rng, grid);
    const Tensor dy = RandomTensor(dtype, OutputShape(r->attrs, r->geometry), rng, grid);
    for (int op = 0; op < 3; ++op) {
      const std::string what =
          p.ToString() + " op " + std::to_string(op) + " " + std::string(DTypeName(dtype));
      Expected<Tensor> ref = RunOp(KernelKind::kReference, op, *r, x, w, dy, 1);
      ASSERT_TRUE(ref.ok()) << what << ": " << ref.status().message();
      for (int threads : {1, 2}) {
        Expected<Tensor> opt = Status(Internal("not run"));
        CheckEveryIsa(*ref, op, *r, x, w, dy, threads, what, &opt);
        if (::testing::Test::HasFatalFailure()) return;
        // Deterministic: the same thread count gives the same bits.
        Expected<Tensor> again = RunOp(KernelKind::kOptimized, op, *r, x, w, dy, threads);
        ASSERT_TRUE(again.ok());
        ASSERT_TRUE(opt->BitwiseEquals(*again)) << what;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 300);
}

INSTANTIATE_TEST_SUITE_P(Kernels, CompareTest,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Values(DType::kFloat32, DType::kFloat64,
                                                              DType::kFloat16, DType::kBFloat16)),
                         [](const ::testing::TestParamInfo<std::tuple<bool, DType>>& param_info) {
                           return std::string(std::get<0>(param_info.param) ? "Depthwise_"
                                                                            : "Conv2D_") +
                                  std::string(DTypeName(std::get<1>(param_info.param)));
                         });

// Op `op` of r on the optimized kernels gives the same bits at 2 and 3 threads as at 1 (at
// the active ISA); `what` names the case. Returns the number of comparisons made.
int ExpectSameBitsAtEveryThreadCount(int op, const Resolved& r, const Tensor& x, const Tensor& w,
                                     const Tensor& dy, const std::string& what) {
  Expected<Tensor> one = RunOp(KernelKind::kOptimized, op, r, x, w, dy, 1);
  EXPECT_TRUE(one.ok()) << what << ": " << one.status().message();
  if (!one.ok()) return 0;
  int checked = 0;
  for (int threads : {2, 3}) {
    Expected<Tensor> more = RunOp(KernelKind::kOptimized, op, r, x, w, dy, threads);
    EXPECT_TRUE(more.ok()) << what << ": " << more.status().message();
    if (!more.ok()) continue;
    EXPECT_TRUE(one->BitwiseEquals(*more)) << what << " threads " << threads;
    ++checked;
  }
  return checked;
}

// Ops `ops` of p (resolved as r) on random operands of `dtype`: the same bits at 1, 2 and 3
// threads (ExpectSameBitsAtEveryThreadCount) at every ISA. Returns the comparisons made.
int ExpectSameBitsAtEveryIsa(const Problem& p, const Resolved& r, DType dtype,
                             std::initializer_list<int> ops, std::mt19937_64& rng) {
  const Tensor x = RandomTensor(dtype, p.InputShape(), rng);
  const Tensor w = RandomTensor(dtype, p.FilterShape(), rng);
  const Tensor dy = RandomTensor(dtype, OutputShape(r.attrs, r.geometry), rng);
  int checked = 0;
  for (internal::Isa isa : {internal::Isa::kBase, internal::Isa::kAvx2, internal::Isa::kAvx512}) {
    internal::SetIsaForTesting(isa);
    for (int op : ops) {
      const std::string what = p.ToString() + " " + std::string(DTypeName(dtype)) + " op " +
                               std::to_string(op) + " isa " +
                               internal::IsaName(internal::ActiveIsa());
      checked += ExpectSameBitsAtEveryThreadCount(op, r, x, w, dy, what);
    }
  }
  return checked;
}

// The packed GEMM computes every output element in one thread, summing in one order: its
// results (all three ops, the filter gradient included) are the same bits at 1, 2 and 3
// threads, at every ISA. (With the Winograd path off: it takes the 3x3 layers' ops, and its
// filter gradient's threads split the sum.)
TEST(GemmPath, SameBitsAtEveryThreadCount) {
  const WinogradSetting off(false);
  std::mt19937_64 rng(91);
  int checked = 0;
  for (const Problem& p : GemmProblems()) {
    Expected<Resolved> r = Resolve(p);
    ASSERT_TRUE(r.ok()) << p.ToString() << ": " << r.status().message();
    const Tensor x = RandomTensor(DType::kFloat32, p.InputShape(), rng);
    const Tensor w = RandomTensor(DType::kFloat32, p.FilterShape(), rng);
    const Tensor dy = RandomTensor(DType::kFloat32, OutputShape(r->attrs, r->geometry), rng);
    for (internal::Isa isa : {internal::Isa::kBase, internal::Isa::kAvx2, internal::Isa::kAvx512}) {
      internal::SetIsaForTesting(isa);
      for (int op = 0; op < 3; ++op) {
        const std::string what = p.ToString() + " op " + std::to_string(op) + " isa " +
                                 internal::IsaName(internal::ActiveIsa());
        checked += ExpectSameBitsAtEveryThreadCount(op, *r, x, w, dy, what);
      }
    }
  }
  EXPECT_EQ(checked, static_cast<int>(GemmProblems().size()) * 3 * 3 * 2);
}

// The benchmark suite's shapes (bench/shapes.json, the one list of shapes), each op run as a
// block (RunNodeKernel: prepared state, pooled outputs) on both kernels: the shapes the suite
// marks `naive` at batch 2 and full size, the others at batch 1 with height and width cut to 13
// (every channel count, filter, stride and padding of the suite, at test cost).
// float32 sums of up to 9 x 512 products in either order: their rounding, relative to outputs
// that cancel to well below the terms' size, passes the grid's 2e-5.
constexpr ::blockflow::testing::Tolerance kSuiteTolerance{2e-4, 1e-12};

// Every op of every shape of the benchmark suite (see the test below) as a block case, named.
std::vector<std::pair<std::string, BlockCase>> SuiteCases() {
  Expected<std::vector<SuiteShape>> suite = LoadShapeSuite(BF_BENCH_SHAPES);
  EXPECT_TRUE(suite.ok()) << suite.status().message();
  if (!suite.ok()) return {};
  std::mt19937_64 rng(31);
  std::vector<std::pair<std::string, BlockCase>> cases;
  for (const SuiteShape& s : *suite) {
    const Shape& full = s.input;
    const Shape in =
        s.naive ? Shape{std::min<int64_t>(2, full.dim(0)), full.dim(1), full.dim(2), full.dim(3)}
                : Shape{1, std::min<int64_t>(13, full.dim(1)), std::min<int64_t>(13, full.dim(2)),
                        full.dim(3)};
    Expected<ConvState> state = s.State(ConvOp::kForward, in);
    EXPECT_TRUE(state.ok()) << s.name << ": " << state.status().message();
    if (!state.ok()) return {};
    const Tensor x = RandomTensor(DType::kFloat32, in, rng);
    const Tensor w = RandomTensor(DType::kFloat32, s.filter, rng);
    const Tensor dy =
        RandomTensor(DType::kFloat32, OutputShape(state->attrs, state->geometry), rng);
    for (ConvOp op : s.ops) {
      BlockCase c{ConvOpName(op, s.depthwise), s.attrs, {}};
      if (op == ConvOp::kForward) c.inputs = {{"input", x}, {"filter", w}};
      if (op == ConvOp::kBackpropInput) {
        c.inputs = {{"input_sizes", SizesTensor(in)}, {"filter", w}, {"out_backprop", dy}};
      }
      if (op == ConvOp::kBackpropFilter) {
        c.inputs = {{"input", x}, {"filter_sizes", SizesTensor(s.filter)}, {"out_backprop", dy}};
      }
      cases.emplace_back(s.name + " " + in.ToString(), std::move(c));
    }
  }
  return cases;
}

TEST(ShapeSuite, OptimizedMatchesReferenceThroughTheBlock) {
  const std::vector<std::pair<std::string, BlockCase>> cases = SuiteCases();
  ASSERT_FALSE(cases.empty());
  for (const auto& [name, c] : cases) {
    // The reference once (at 2 threads), the optimized kernels at 1 and 2.
    EXPECT_TRUE(CompareBlockKernels(c, {2, 1}, kSuiteTolerance)) << name;
  }
  Expected<std::vector<SuiteShape>> suite = LoadShapeSuite(BF_BENCH_SHAPES);
  ASSERT_TRUE(suite.ok());
  EXPECT_GE(cases.size(), 3 * suite->size());
}

// Nesting off (OpenMP's max-active-levels 1) while alive, and the team bound as given; both
// restored after.
class NestingOff {
 public:
  explicit NestingOff(bool team_bound) : levels_(omp_get_max_active_levels()) {
    omp_set_max_active_levels(1);
    internal::SetTeamBoundForTesting(team_bound);
  }
  ~NestingOff() {
    omp_set_max_active_levels(levels_);
    internal::SetTeamBoundForTesting(true);
  }
  NestingOff(const NestingOff&) = delete;
  NestingOff& operator=(const NestingOff&) = delete;

 private:
  int levels_;
};

// OpenMP may give a parallel region fewer threads than its num_threads clause asks
// (OMP_THREAD_LIMIT, OMP_DYNAMIC, a region nested in another). Where it tells in advance the
// kernels plan for the team they will get (TeamBound); where it does not (OMP_DYNAMIC) they split
// their work, and add their per-thread sums, over the threads they got, and the Winograd filter
// gradient whose planes were sized for more threads' columns plans again. Called from inside a
// parallel region with nesting off, a kernel asked for 2 threads gets 1: every op of the suite's
// shapes, Winograd on and off, still equals the reference, planned for 1 thread (the bound on)
// and planned for 2 (off, as under OMP_DYNAMIC). (Split over the 2 threads they had asked for,
// the GEMM and Winograd kernels had left half their results unwritten, and the summed filter
// gradients had added a partial sum no thread wrote.)
TEST(SmallerTeams, KernelsSplitOverTheThreadsTheyGet) {
  const std::vector<std::pair<std::string, BlockCase>> cases = SuiteCases();
  ASSERT_FALSE(cases.empty());
  int outer = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
  outer = omp_get_num_threads();
  // The outer team must be active for the kernels' regions to be cut to one thread.
  if (outer != 2) GTEST_SKIP() << "OpenMP gives no second thread here";
  for (bool bound : {true, false}) {
    const NestingOff nesting_off(bound);
    for (bool winograd : {true, false}) {
      const WinogradSetting setting(winograd);
      for (const auto& [name, block] : cases) {
        const BlockCase& c = block;  // not a structured binding: OpenMP regions capture it
        ::testing::AssertionResult result = ::testing::AssertionFailure() << "not run";
        int team_bound = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
        {
          team_bound = internal::TeamBound(2);
          result = CompareBlockKernels(c, {2}, kSuiteTolerance);
        }
        EXPECT_EQ(team_bound, bound ? 1 : 2);
        EXPECT_TRUE(result) << name << (winograd ? "" : " (Winograd off)")
                            << (bound ? "" : " (planned for 2 threads)");
      }
    }
  }
}

// The kernels' loops (ParallelFor): every item once, item i on thread i where there are fewer
// items than threads (OpenMP's static schedule), and one thread on the calling thread itself.
// Inside a caller's OpenMP region, one or two threads of it each running a one-thread team,
// every team covers all its items on its own caller's thread.
TEST(SmallerTeams, ParallelForCoversEveryItemOnce) {
  for (int nt : {1, 2, 3}) {
    for (int64_t n : {int64_t{2}, int64_t{100}}) {
      std::vector<int> hits(static_cast<size_t>(n), 0), thread(static_cast<size_t>(n), -1);
      std::vector<std::thread::id> ran_on(static_cast<size_t>(n));
      internal::ParallelFor(nt, n, [&](int64_t i) {
        ++hits[static_cast<size_t>(i)];
        thread[static_cast<size_t>(i)] = TeamThread();
        ran_on[static_cast<size_t>(i)] = std::this_thread::get_id();
      });
      EXPECT_EQ(std::count(hits.begin(), hits.end(), 1), n) << nt << " threads";
      if (n < nt) {
        for (int64_t i = 0; i < n; ++i) EXPECT_EQ(thread[static_cast<size_t>(i)], i);
      }
      if (nt == 1) {
        EXPECT_EQ(std::count(ran_on.begin(), ran_on.end(), std::this_thread::get_id()), n);
      }
    }
  }
  for (int callers : {1, 2}) {
    std::vector<int> covered(2, 0), own_thread(2, 0);
    int outer = 0;
#pragma omp parallel num_threads(callers)
    {
#pragma omp single
      outer = omp_get_num_threads();
      const auto caller = static_cast<size_t>(omp_get_thread_num());
      const std::thread::id me = std::this_thread::get_id();
      internal::ParallelFor(1, 10, [&](int64_t) {
        ++covered[caller];
        own_thread[caller] += std::this_thread::get_id() == me ? 1 : 0;
      });
    }
    if (outer != callers) GTEST_SKIP() << "OpenMP gives no second thread here";
    for (int t = 0; t < outer; ++t) {
      EXPECT_EQ(covered[static_cast<size_t>(t)], 10) << outer << " callers";
      EXPECT_EQ(own_thread[static_cast<size_t>(t)], 10) << outer << " callers";
    }
  }
}

// Teams on the process's pool and teams in OpenMP regions give the same bits: every
// op of the suite's shapes, Winograd on and off, gives the same bits on either at 2 and 3
// threads (the filter gradients' per-thread partial sums included).
TEST(SmallerTeams, PoolAndOpenMpGiveTheSameBits) {
  const std::vector<std::pair<std::string, BlockCase>> cases = SuiteCases();
  ASSERT_FALSE(cases.empty());
  for (bool winograd : {true, false}) {
    const WinogradSetting setting(winograd);
    for (const auto& [name, c] : cases) {
      const ::blockflow::testing::AnalyzedBlock block(c);
      ASSERT_TRUE(block.status().ok()) << name << ": " << block.status().message();
      for (int nt : {2, 3}) {
        std::vector<Tensor> outs[2];
        for (TeamRuntime runtime : {TeamRuntime::kPool, TeamRuntime::kOpenMp}) {
          const TeamRuntime before = GetTeamRuntime();
          SetTeamRuntime(runtime);
          Expected<std::vector<Tensor>> out = block.Run(/*reference=*/false, nt);
          SetTeamRuntime(before);
          ASSERT_TRUE(out.ok()) << name << ": " << out.status().message();
          outs[runtime == TeamRuntime::kPool ? 0 : 1] = std::move(*out);
        }
        ASSERT_EQ(outs[0].size(), outs[1].size());
        for (size_t k = 0; k < outs[0].size(); ++k) {
          const Tensor &pool = outs[0][k], &openmp = outs[1][k];
          ASSERT_EQ(pool.num_bytes(), openmp.num_bytes());
          EXPECT_EQ(std::memcmp(pool.raw(), openmp.raw(), pool.num_bytes()), 0)
              << name << (winograd ? "" : " (Winograd off)") << ", " << nt << " threads";
        }
      }
    }
  }
}

// Problem p's op (0 forward, 1 input gradient, 2 filter gradient) in `dtype` on random
// operands (on a grid of 1/grid when grid > 0, see RandomTensor), `values(geometry)` of whose
// values (4 bytes or more each: those it writes, or reads) are asserted above `min_bytes` (the
// bound of the kernels' path for large operands): the optimized kernels' result equals the
// reference's at every ISA and 1 and 2 threads.
void CheckLargeAgainstReference(const Problem& p, int op, DType dtype, int64_t min_bytes,
                                const std::function<int64_t(const ConvGeometry&)>& values,
                                std::mt19937_64& rng, int grid = 0) {
  Expected<Resolved> resolved = Resolve(p);
  ASSERT_TRUE(resolved.ok()) << p.ToString();
  const Resolved& r = *resolved;
  ASSERT_GT(values(r.geometry) * 4, min_bytes) << p.ToString();
  const Tensor x = RandomTensor(dtype, p.InputShape(), rng, grid);
  const Tensor w = RandomTensor(dtype, p.FilterShape(), rng, grid);
  const Tensor dy = RandomTensor(dtype, OutputShape(r.attrs, r.geometry), rng, grid);
  Expected<Tensor> ref = RunOp(KernelKind::kReference, op, r, x, w, dy, 1);
  ASSERT_TRUE(ref.ok());
  for (int threads : {1, 2}) {
    Expected<Tensor> opt = Status(Internal("not run"));
    CheckEveryIsa(
        *ref, op, r, x, w, dy, threads,
        "op " + std::to_string(op) + " " + p.ToString() + " " + std::string(DTypeName(dtype)),
        &opt);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Where operands outgrow the L3, the depthwise forward and stride-1 input gradient prefetch the
// next row's input and result rows as they go (RowsAhead): in the 3x3 sweeps (64 channels: two
// blocks; 80: two and a half vectors, the half in tiles), in tiles (1024 channels, whose pixels
// share the L1's sets; a 5x5 filter), with a multiplier (the input in a ring: only the result
// prefetched), over two images (the last row of the first prefetches the second's), in float32
// and float64. The same values as the reference at every ISA and 1 and 2 threads.
TEST(RowsAhead, DepthwiseForwardAndInputGradient) {
  struct Case {
    int64_t channels, mult, f;  // channels: C * M; f: the filter's side
    const char* padding;
  };
  const Case cases[] = {{64, 1, 3, "SAME"},
                        {80, 1, 3, "VALID"},
                        {1024, 1, 3, "SAME"},
                        {48, 1, 5, "SAME"},
                        {64, 2, 3, "SAME"}};
  const SharedCacheOf tiny_l3(1);
  std::mt19937_64 rng(29);
  for (DType dtype : {DType::kFloat32, DType::kFloat64})
    for (const Case& k : cases)
      for (int op : {0, 1}) {
        Problem p;
        p.depthwise = true;
        p.padding = k.padding;
        p.n = 2;
        p.h = 9;
        p.w = 11;
        p.c = k.channels / k.mult;
        p.mult = k.mult;
        p.fh = p.fw = k.f;
        CheckLargeAgainstReference(
            p, op, dtype, 0, [](const ConvGeometry& g) { return g.out_h; }, rng);
        if (::testing::Test::HasFatalFailure()) return;
      }
}

// The depthwise 3x3 filter gradient's sweeps read NHWC images whose pixels are a multiple of
// 2 KiB apart through a per-thread copy of the image in channel blocks (SweepBlocksImages):
// float32 at 1024 channels (4 KiB) and at 512 (2 KiB; 20 x 20 pixels, whose x and dy outgrow an
// L2 of up to 1.6 MB, so that its rows also go in bands; 24 x 24, whose 1.2 MB dy image outgrows
// an L2 of 1 MB and is then copied as well), float64 at 256, over one image (whose blocks both
// threads share, each copying it) and over three. The same values as the reference at every ISA
// and 1 and 2 threads.
TEST(DepthwiseSweep, FilterGradientCopiesImagesWhosePixelsCrowdL1Sets) {
  struct Case {
    DType dtype;
    int64_t n, h, w, c;
    const char* padding;
  };
  const Case cases[] = {{DType::kFloat32, 1, 5, 6, 1024, "SAME"},
                        {DType::kFloat32, 3, 4, 7, 1024, "VALID"},
                        {DType::kFloat32, 1, 20, 20, 512, "SAME"},
                        {DType::kFloat32, 1, 24, 24, 512, "SAME"},
                        {DType::kFloat64, 3, 6, 5, 256, "SAME"}};
  std::mt19937_64 rng(37);
  for (const Case& k : cases) {
    Problem p;
    p.depthwise = true;
    p.padding = k.padding;
    p.n = k.n;
    p.h = k.h;
    p.w = k.w;
    p.c = k.c;
    p.fh = p.fw = 3;
    CheckLargeAgainstReference(
        p, 2, k.dtype, 0, [](const ConvGeometry& g) { return g.out_h; }, rng);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// The dense filter gradient's tiles read x's rows packed (PackTileInputs), and a thread keeps
// them from one output row to the next within a call, a slot per filter row: at row strides 1
// to 3, column strides 1 and 2, row dilation 2, filters of 3 and 8 rows (the most it packs) and
// of 9 (read in place), over work items of a few images each (out of 6) whose rows must not
// serve another item (images of 2 rows: each item reads the same rows as the last), with a partial
// tile of output channels, in float32, float64 and float16 (rows converted into a thread's buffer
// an item at a time). The packed columns hold every input channel: 16 channels make whole tiles
// of 8; 28 make tiles of 8 (or, with 72 output channels, the wide tiles of 6) and then one of 4
// (read from x); 56 in two groups of 28 read each group's channels of the same columns; 30 (with
// 72 output channels, five wide tiles of 6) are 120 bytes a column, copied 16 bytes at a time and
// then the last two values. Each problem runs on one input and then on another: the second
// result must be made of its own rows, not of those the first call left packed. The same values
// as the reference at every ISA and 1 and 2 threads.
TEST(PackedRows, FilterGradientKeepsRowsWithinACallOnly) {
  struct Case {
    int64_t fh, sh, sw, dh, h, c, groups, cog;
  };
  // Images of 2 rows: every output row reads both, in every work item.
  const Case cases[] = {
      {3, 1, 1, 1, 19, 16, 1, 40}, {3, 2, 2, 1, 19, 16, 1, 40}, {3, 3, 2, 1, 19, 16, 1, 40},
      {3, 1, 1, 2, 19, 16, 1, 40}, {8, 1, 2, 1, 19, 16, 1, 40}, {9, 2, 1, 1, 19, 16, 1, 40},
      {3, 1, 1, 1, 2, 16, 1, 40},  {3, 2, 2, 1, 19, 28, 1, 40}, {3, 1, 2, 1, 19, 28, 1, 72},
      {3, 2, 2, 1, 19, 56, 2, 40}, {3, 2, 2, 1, 19, 30, 1, 72}};
  std::mt19937_64 rng(31);
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16})
    for (const Case& k : cases) {
      Problem p;
      p.padding = "SAME";
      p.n = 6;
      p.h = k.h;
      p.w = 33;
      p.c = k.c;
      p.groups = k.groups;
      p.cog = k.cog;
      p.fh = k.fh;
      p.fw = 3;
      p.sh = k.sh;
      p.sw = k.sw;
      p.dh = k.dh;
      Expected<Resolved> resolved = Resolve(p);
      ASSERT_TRUE(resolved.ok()) << p.ToString();
      const Resolved& r = *resolved;
      // float16's grid for every type: sums of over 3000 products, exact in any order.
      const int grid = ExactGrid(DType::kFloat16);
      const Tensor first = RandomTensor(dtype, p.InputShape(), rng, grid);
      const Tensor x = RandomTensor(dtype, p.InputShape(), rng, grid);
      const Tensor w = RandomTensor(dtype, p.FilterShape(), rng, grid);
      const Tensor dy = RandomTensor(dtype, OutputShape(r.attrs, r.geometry), rng, grid);
      Expected<Tensor> ref = RunOp(KernelKind::kReference, 2, r, x, w, dy, 1);
      ASSERT_TRUE(ref.ok());
      for (int threads : {1, 2}) {
        ASSERT_TRUE(RunOp(KernelKind::kOptimized, 2, r, first, w, dy, threads).ok());
        Expected<Tensor> opt = Status(Internal("not run"));
        CheckEveryIsa(*ref, 2, r, x, w, dy, threads,
                      p.ToString() + " " + std::string(DTypeName(dtype)), &opt);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
}

// Depthwise outputs larger than 5 MiB store past the caches (non-temporal stores with
// AVX-512) where the L3 would not keep them: the forward and the stride-1 input gradient (which
// runs the forward's rows), and the strided input gradient, with and without a multiplier (whose
// expanded stride-2 gradient is the large one; at stride 1 its rows go through a per-thread row,
// not streamed). The same values as the reference, in float32, at every ISA and 1 and 2 threads.
TEST(StreamedStores, LargeDepthwiseOutputs) {
  struct Case {
    int op;                                // 0 forward, 1 input gradient
    int64_t stride, mult, h, w, channels;  // channels: C * M
  };
  const Case cases[] = {
      {1, 2, 1, 260, 256, 64},  {1, 2, 2, 260, 256, 64},  {0, 1, 1, 130, 128, 128},
      {0, 1, 2, 130, 128, 128}, {1, 1, 1, 130, 128, 128}, {1, 1, 2, 130, 128, 128},
  };
  const SharedCacheOf no_l3(0);
  std::mt19937_64 rng(21);
  for (const Case& k : cases) {
    Problem p;
    p.depthwise = true;
    p.padding = "SAME";
    p.n = 1;
    p.h = k.h;
    p.w = k.w;
    p.c = k.channels / k.mult;
    p.mult = k.mult;
    p.fh = p.fw = 3;
    p.sh = p.sw = k.stride;
    CheckLargeAgainstReference(
        p, k.op, DType::kFloat32, int64_t{5} << 20,
        [&](const ConvGeometry& g) {
          return k.op == 0 ? g.out_h * g.out_w * k.channels : k.h * k.w * k.channels;
        },
        rng);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// A depthwise 3x3 filter gradient at stride 1 (AVX-512: the sweep) whose images' x and dy
// outgrow a core's L2 cache (1 MiB when unknown), so that it sweeps each image in
// bands of rows (float32: of 2-4 rows on 1-2 MiB of L2, float64 of 1-2), the last band shorter
// than the others (131 rows): two vectors and a half of channels (80 float32), or 5 blocks of
// two vectors (float64), with a multiplier of 2 (its input expanded into rows). The
// same values as the reference at every ISA and 1 and 2 threads: operands in eighths, whose
// 13100 products a tap sum exactly in any order (20 bits), so that only a wrong sum differs.
TEST(LargeOperands, DepthwiseFilterGradientInBands) {
  std::mt19937_64 rng(23);
  const int64_t l2 = internal::CacheBytes(2, int64_t{1} << 20);  // as the kernel takes it
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (int64_t mult : {1, 2}) {
      Problem p;
      p.depthwise = true;
      p.padding = "SAME";
      p.n = 1;
      p.h = 131;
      p.w = 100;
      p.c = 80 / mult;
      p.mult = mult;
      p.fh = p.fw = 3;
      CheckLargeAgainstReference(
          p, 2, dtype, l2,
          [&](const ConvGeometry& g) {
            return (g.in_h * g.in_w + g.out_h * g.out_w) * g.out_depth;
          },
          rng, 8);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// Dense results of which each thread writes more than 512 KiB, with whole channel vectors,
// store past the caches (non-temporal stores with AVX-512) where the L3 would not keep them;
// these, over 2 MiB, do on one thread and on two: the direct forward (also in its few-channel
// tiles), the stride-1 input gradient (which runs as a forward), the strided input gradient, and
// the 1x1 forward through the GEMM (one block of k, with a partial block of rows and of columns).
// Row widths leave partial pixel tiles, whose stores are plain. The same values as the
// reference, in float32 and float64, at every ISA and 1 and 2 threads.
TEST(StreamedStores, LargeDenseResults) {
  struct Case {
    int op;  // 0 forward, 1 input gradient
    int64_t fsize, stride, h, w, c, co;
  };
  const Case cases[] = {
      {0, 3, 1, 72, 61, 16, 128},  // direct forward, 2.25 MB
      {0, 7, 2, 190, 190, 3, 64},  // the few-channel forward's 6 x 4 tiles, 2.31 MB
      {0, 1, 1, 61, 100, 32, 96},  // 1x1 through the GEMM: 6100 rows, 96 columns, 2.34 MB
      {1, 3, 1, 72, 61, 128, 16},  // the input gradient as a forward, 2.25 MB
      {1, 3, 2, 96, 97, 64, 32},   // the strided input gradient, 2.38 MB
  };
  const SharedCacheOf no_l3(0);
  std::mt19937_64 rng(22);
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (const Case& k : cases) {
      Problem p;
      p.padding = k.fsize == 1 ? "VALID" : "SAME";
      p.h = k.h;
      p.w = k.w;
      p.c = k.c;
      p.cog = k.co;
      p.fh = p.fw = k.fsize;
      p.sh = p.sw = k.stride;
      CheckLargeAgainstReference(
          p, k.op, dtype, int64_t{2} << 20,
          [&](const ConvGeometry& g) {
            return k.op == 0 ? g.out_h * g.out_w * k.co : k.h * k.w * k.c;
          },
          rng);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// Empty tensors: outputs have the right shape and are all zeros, on both kernels.
TEST(EmptyTensors, ZerosOfTheRightShape) {
  std::mt19937_64 rng(5);
  for (bool depthwise : {false, true}) {
    Problem p;
    p.depthwise = depthwise;
    p.padding = "SAME";
    p.n = 0;
    p.h = 5;
    p.w = 4;
    p.c = 2;
    p.fh = 3;
    p.fw = 3;
    p.cog = 3;
    p.mult = 2;
    Expected<Resolved> r = Resolve(p);
    ASSERT_TRUE(r.ok());
    const Tensor x = RandomTensor(DType::kFloat32, p.InputShape(), rng);
    Tensor w = RandomTensor(DType::kFloat32, p.FilterShape(), rng);
    const Tensor dy = RandomTensor(DType::kFloat32, OutputShape(r->attrs, r->geometry), rng);
    for (KernelKind kind : {KernelKind::kReference, KernelKind::kOptimized}) {
      Expected<Tensor> dw = RunOp(kind, 2, *r, x, w, dy, 2);
      ASSERT_TRUE(dw.ok());
      EXPECT_EQ(dw->shape(), p.FilterShape());
      for (int64_t i = 0; i < dw->num_elements(); ++i) ASSERT_EQ(dw->GetAsDouble(i), 0.0);
      Expected<Tensor> y = RunOp(kind, 0, *r, x, w, dy, 2);
      ASSERT_TRUE(y.ok());
      EXPECT_EQ(y->num_elements(), 0);
    }
  }
  // Zero-size spatial dims and channels: empty outputs, or (filter gradient) zeros.
  for (bool depthwise : {false, true}) {
    for (int variant = 0; variant < 3; ++variant) {
      Problem p;
      p.depthwise = depthwise;
      p.padding = "SAME";
      p.format = variant == 1 ? "NCHW" : "NHWC";
      p.n = 2;
      p.h = variant == 0 ? 0 : 3;
      p.w = variant == 1 ? 0 : 4;
      p.c = (variant == 2 && depthwise) ? 0 : 2;
      p.cog = (variant == 2 && !depthwise) ? 0 : 3;
      p.fh = 2;
      p.fw = 3;
      Expected<Resolved> r = Resolve(p);
      ASSERT_TRUE(r.ok()) << p.ToString() << ": " << r.status().message();
      const Tensor x = RandomTensor(DType::kFloat32, p.InputShape(), rng);
      const Tensor w = RandomTensor(DType::kFloat32, p.FilterShape(), rng);
      const Tensor dy = RandomTensor(DType::kFloat32, OutputShape(r->attrs, r->geometry), rng);
      for (KernelKind kind : {KernelKind::kReference, KernelKind::kOptimized}) {
        for (int op = 0; op < 3; ++op) {
          Expected<Tensor> out = RunOp(kind, op, *r, x, w, dy, 2);
          ASSERT_TRUE(out.ok()) << p.ToString() << " op " << op;
          const Shape want = op == 0   ? OutputShape(r->attrs, r->geometry)
                             : op == 1 ? p.InputShape()
                                       : p.FilterShape();
          EXPECT_EQ(out->shape(), want) << p.ToString() << " op " << op;
          for (int64_t i = 0; i < out->num_elements(); ++i) ASSERT_EQ(out->GetAsDouble(i), 0.0);
        }
      }
    }
  }
  // A VALID window that covers no input leaves the whole input gradient zero (out size 0).
  Problem p;
  p.padding = "VALID";
  p.h = 3;
  p.w = 3;
  p.fh = 6;
  p.fw = 1;
  p.sh = 2;
  p.c = 2;
  p.cog = 2;
  Expected<Resolved> r = Resolve(p);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->geometry.out_h, 0);  // TensorFlow: (3 - 6 + 2) / 2 truncates to 0
  std::mt19937_64 rng2(6);
  const Tensor w = RandomTensor(DType::kFloat64, p.FilterShape(), rng2);
  const Tensor dy(DType::kFloat64, OutputShape(r->attrs, r->geometry));
  for (KernelKind kind : {KernelKind::kReference, KernelKind::kOptimized}) {
    Tensor dx(DType::kFloat64, p.InputShape());
    for (int64_t i = 0; i < dx.num_elements(); ++i)
      dx.SetFromDouble(i, 7.0);  // must be overwritten
    KernelContext k;
    k.num_threads = 2;
    ASSERT_TRUE(RunConv(kind, StateOf(1, *r), w, dy, &dx, k).ok());
    for (int64_t i = 0; i < dx.num_elements(); ++i) ASSERT_EQ(dx.GetAsDouble(i), 0.0);
  }
}

// NCHW and NHWC are one problem: the optimized Conv2D kernels give the same bits in either
// layout (after transposing the activations), in float64, in float32 (whose transpositions take
// the AVX register path) and in float16 and bfloat16 (transposed through float blocks, widened
// and rounded a vector at a time), at every ISA and thread count. Shapes with vector tiles,
// channel remainders, strides, groups and a small-spatial, many-channel layer (a detector's fc6
// as a 3x3 VALID convolution, cut down). The depthwise ops have NCHW kernels of their own (a
// channel plane at a time, depthwise_planes.h), which sum in another order: they agree with the
// NHWC kernels within the grid's tolerance (and each with the reference, CompareTest).
TEST(NchwAgainstNhwc, BitwiseEqualAfterTransposition) {
  struct Case {
    bool depthwise;
    const char* padding;
    int64_t n, h, w, c, groups, cog, mult, fh, fw, sh, sw;
  };
  const Case cases[] = {
      {false, "VALID", 5, 6, 6, 64, 1, 96, 1, 3, 3, 1, 1},
      {false, "SAME", 2, 9, 13, 16, 1, 21, 1, 3, 3, 1, 1},
      {false, "SAME", 2, 11, 10, 37, 1, 40, 1, 3, 2, 2, 3},
      {false, "SAME", 2, 8, 9, 36, 2, 33, 1, 3, 3, 2, 1},
      {false, "SAME", 1, 15, 15, 3, 1, 24, 1, 7, 7, 2, 2},
      {false, "VALID", 3, 7, 7, 40, 1, 64, 1, 1, 1, 1, 1},
      {true, "SAME", 2, 9, 11, 24, 1, 1, 2, 3, 3, 2, 1},
      {true, "VALID", 2, 8, 8, 40, 1, 1, 1, 5, 5, 1, 1},
      // Depthwise rows of 16 pixels and more, and a multiplier of 2.
      {true, "SAME", 2, 5, 18, 40, 1, 1, 1, 3, 3, 1, 1},
      {true, "SAME", 2, 6, 35, 24, 1, 1, 1, 3, 3, 2, 2},
      {true, "SAME", 2, 4, 17, 12, 1, 1, 2, 3, 3, 1, 1},
  };
  std::mt19937_64 rng(14);
  int checked = 0;
  for (const Case& k : cases) {
    Problem p;
    p.depthwise = k.depthwise;
    p.padding = k.padding;
    p.n = k.n;
    p.h = k.h;
    p.w = k.w;
    p.c = k.c;
    p.groups = k.groups;
    p.cog = k.cog;
    p.mult = k.mult;
    p.fh = k.fh;
    p.fw = k.fw;
    p.sh = k.sh;
    p.sw = k.sw;
    Problem q = p;
    q.format = "NCHW";
    Expected<Resolved> rp = Resolve(p), rq = Resolve(q);
    ASSERT_TRUE(rp.ok() && rq.ok()) << p.ToString();
    for (DType dtype : {DType::kFloat64, DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
      // Depthwise 16-bit values on the exact grids (TensorsClose's test for them is bits).
      const int grid = k.depthwise ? ExactGrid(dtype) : 0;
      const Tensor x = RandomTensor(dtype, p.InputShape(), rng, grid);
      const Tensor w = RandomTensor(dtype, p.FilterShape(), rng, grid);
      const Tensor dy = RandomTensor(dtype, OutputShape(rp->attrs, rp->geometry), rng, grid);
      const Tensor x_nchw = Transposed(x, true), dy_nchw = Transposed(dy, true);
      for (int op = 0; op < 3; ++op) {
        for (int threads : {1, 2}) {
          for (internal::Isa isa :
               {internal::Isa::kBase, internal::Isa::kAvx2, internal::Isa::kAvx512}) {
            internal::SetIsaForTesting(isa);
            const std::string what = p.ToString() + " " + std::string(DTypeName(dtype)) + " op " +
                                     std::to_string(op) + " threads " + std::to_string(threads) +
                                     " isa " + internal::IsaName(internal::ActiveIsa());
            Expected<Tensor> a = RunOp(KernelKind::kOptimized, op, *rp, x, w, dy, threads);
            Expected<Tensor> b =
                RunOp(KernelKind::kOptimized, op, *rq, x_nchw, w, dy_nchw, threads);
            ASSERT_TRUE(a.ok() && b.ok()) << what;
            // The filter gradient is HWIO in both layouts; activations come back transposed.
            const Tensor b_nhwc = op == 2 ? std::move(*b) : Transposed(*b, false);
            ASSERT_EQ(a->shape(), b_nhwc.shape()) << what;
            if (k.depthwise) {
              EXPECT_TRUE(TensorsClose(*a, b_nhwc, what)) << what;
            } else {
              EXPECT_TRUE(a->BitwiseEquals(b_nhwc)) << what;
            }
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 11 * 4 * 3 * 2 * 3);
}

// With AVX-512 in float, the direct forward takes the 7-pixel tiles that read inside their rows
// two pairs of output-channel vectors at once, in asm (QuadTileAvx512), and the other tiles a
// pair at a time; each sum takes its products in the same order either way, and in the same
// order as AVX2's compiled tiles: the two ISAs give the same bits. Rows of 21 to 28 output
// pixels (in 7-pixel tiles, WideTiles) whose middle tiles read inside them, runs of a multiple of 4
// steps and not, output channels in whole pairs of pairs, with a pair (96) or a vector (80) left
// over, a filter row outside the input, stride 2, a 5 x 3 filter; and the stride-1 input gradient,
// which runs as a forward of its input channels. Likewise the packed GEMM's tiles of A's rows
// read in place by B's packed panels. The compiled tiles fuse each product into its sum, as the
// asm does, in GCC's builds and clang's alike (SplitVec::Product; before it, clang's -O1
// sanitizer build rounded AVX2 and AVX-512 differently even on rows no asm tile takes).
TEST(AsmTiles, SameBitsAsTheCompiledTiles) {
  struct Case {
    int op;  // 0 forward, 1 input gradient
    const char* padding;
    int64_t h, w, c, co, fh, fw, stride;
  };
  const Case cases[] = {
      {0, "SAME", 5, 21, 19, 64, 3, 3, 1},
      {0, "SAME", 4, 28, 16, 96, 3, 3, 1},
      {0, "VALID", 6, 30, 7, 80, 3, 3, 1},
      {0, "SAME", 7, 42, 16, 64, 3, 3, 2},
      {0, "VALID", 7, 23, 5, 128, 5, 3, 1},
      {1, "SAME", 5, 21, 64, 24, 3, 3, 1},
      // The packed GEMM's 6 x 4 tile in asm (GemmTile6x4Avx512): a 1x1 layer (k 300: a block
      // of 256 and one of 44 added to it; 100 columns: one whole 64-wide tile), its input
      // gradient, and a 3x3 VALID layer on 6 x 6 images of 64 channels (fc6 cut down).
      {0, "VALID", 4, 9, 300, 100, 1, 1, 1},
      {1, "VALID", 4, 9, 100, 300, 1, 1, 1},
      {0, "VALID", 6, 6, 64, 130, 3, 3, 1},
  };
  std::mt19937_64 rng(56);
  int compared = 0;
  for (const Case& k : cases) {
    const Problem p{.padding = k.padding,
                    .n = 2,
                    .h = k.h,
                    .w = k.w,
                    .c = k.c,
                    .fh = k.fh,
                    .fw = k.fw,
                    .cog = k.co,
                    .sh = k.stride,
                    .sw = k.stride};
    Expected<Resolved> r = Resolve(p);
    ASSERT_TRUE(r.ok()) << p.ToString();
    const Tensor x = RandomTensor(DType::kFloat32, p.InputShape(), rng);
    const Tensor w = RandomTensor(DType::kFloat32, p.FilterShape(), rng);
    const Tensor dy = RandomTensor(DType::kFloat32, OutputShape(r->attrs, r->geometry), rng);
    const std::string what = p.ToString() + " op " + std::to_string(k.op);
    Expected<Tensor> ref = RunOp(KernelKind::kReference, k.op, *r, x, w, dy, 1);
    ASSERT_TRUE(ref.ok()) << what;
    for (int threads : {1, 2}) {
      internal::SetIsaForTesting(internal::Isa::kAvx2);
      const bool avx2 = internal::ActiveIsa() == internal::Isa::kAvx2;
      Expected<Tensor> compiled = RunOp(KernelKind::kOptimized, k.op, *r, x, w, dy, threads);
      internal::SetIsaForTesting(internal::Isa::kAvx512);
      const bool avx512 = internal::ActiveIsa() == internal::Isa::kAvx512;
      Expected<Tensor> quad = RunOp(KernelKind::kOptimized, k.op, *r, x, w, dy, threads);
      ASSERT_TRUE(compiled.ok() && quad.ok()) << what;
      EXPECT_TRUE(TensorsClose(*ref, *compiled, what)) << what;
      EXPECT_TRUE(TensorsClose(*ref, *quad, what)) << what;
      if (avx2 && avx512) {
        EXPECT_TRUE(quad->BitwiseEquals(*compiled)) << what << " threads " << threads;
        ++compared;
      }
    }
  }
  // Both ISAs ran wherever the CPU has AVX-512 (where the asm tiles run at all).
  if (internal::ActiveIsa() == internal::Isa::kAvx512) {
    EXPECT_EQ(compared, 18);
  }
}

// The depthwise NCHW filter gradient sums each tap over flat rows a vector at a time, the last
// vector of a row reaching into the next row's pixels: those lanes are masked in both operands,
// so that an infinity in a column no output pairs with a tap adds nothing to that tap (as in the
// reference, which skips the pair), where a product with a zero would make it NaN. Rows of 21
// and 14 columns (a full vector and a tail, a tail only), row stride 1 and 2, at every ISA.
TEST(DepthwiseNchw, InfinitiesOnlyWhereTheReferencePutsThem) {
  std::mt19937_64 rng(31);
  int checked = 0, infinite = 0;
  for (auto [w, sh] : {std::pair<int64_t, int64_t>{21, 1}, {21, 2}, {14, 1}}) {
    Problem p;
    p.depthwise = true;
    p.format = "NCHW";
    p.padding = "SAME";
    p.n = 2;
    p.h = 5;
    p.w = w;
    p.c = 3;
    p.mult = 2;
    p.fh = 3;
    p.fw = 3;
    p.sh = sh;
    Expected<Resolved> r = Resolve(p);
    ASSERT_TRUE(r.ok()) << p.ToString();
    Tensor x = RandomTensor(DType::kFloat32, p.InputShape(), rng);
    const Tensor f = RandomTensor(DType::kFloat32, p.FilterShape(), rng);
    const Tensor dy = RandomTensor(DType::kFloat32, OutputShape(r->attrs, r->geometry), rng);
    // The last column of row 2 in every plane: at stride 1 no output pairs it with kw 0.
    for (int64_t plane = 0; plane < p.n * p.c; ++plane)
      x.SetFromDouble((plane * p.h + 2) * p.w + p.w - 1, std::numeric_limits<double>::infinity());
    for (int op : {0, 2}) {
      Expected<Tensor> ref = RunOp(KernelKind::kReference, op, *r, x, f, dy, 1);
      ASSERT_TRUE(ref.ok()) << p.ToString();
      for (internal::Isa isa :
           {internal::Isa::kBase, internal::Isa::kAvx2, internal::Isa::kAvx512}) {
        internal::SetIsaForTesting(isa);
        Expected<Tensor> opt = RunOp(KernelKind::kOptimized, op, *r, x, f, dy, 2);
        ASSERT_TRUE(opt.ok()) << p.ToString();
        ASSERT_EQ(ref->num_elements(), opt->num_elements());
        for (int64_t i = 0; i < ref->num_elements(); ++i) {
          const double a = ref->GetAsDouble(i), b = opt->GetAsDouble(i);
          const std::string what = p.ToString() + " op " + std::to_string(op) + " isa " +
                                   internal::IsaName(internal::ActiveIsa()) + " element " +
                                   std::to_string(i) + ": " + std::to_string(a) + " vs " +
                                   std::to_string(b);
          if (std::isfinite(a)) {
            EXPECT_NEAR(a, b, 1e-4 * (1 + std::fabs(a))) << what;
          } else {
            EXPECT_TRUE(std::isnan(a) ? std::isnan(b) : a == b) << what;
            ++infinite;
          }
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
  EXPECT_GT(infinite, 0);  // the infinities reached some outputs and filter taps
}

// The NCHW depthwise filter gradient in channel blocks (multiplier 1, stride 1, rows of up to
// 56 columns) sums each block over fixed chunks of the batch and adds the chunks in order: the
// same bits at 1, 2 and 3 threads, at every ISA and in every compute type. 144 channels are 5
// float blocks (the last one half full) and 9 double ones; 3x3 takes the sweep and 5x5 the row
// kernel; batches of 5 (chunks of 1 and 2 images), 3 and 1.
TEST(DepthwiseNchw, FilterGradientSameBitsAtEveryThreadCount) {
  struct Case {
    int64_t n, h, w, c, f;
  };
  const Case cases[] = {{5, 6, 9, 144, 3}, {3, 7, 8, 40, 5}, {1, 5, 56, 48, 3}};
  std::mt19937_64 rng(57);
  int checked = 0;
  for (const Case& k : cases) {
    const Problem p = DepthwiseProblem("NCHW", "SAME", k.n, k.h, k.w, k.c, 1, k.f, k.f);
    Expected<Resolved> r = Resolve(p);
    ASSERT_TRUE(r.ok()) << p.ToString();
    for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16})
      checked += ExpectSameBitsAtEveryIsa(p, *r, dtype, {2}, rng);
  }
  EXPECT_EQ(checked, 3 * 3 * 3 * 2);
}

// The depthwise forward and stride-1 input gradient share their rows out as the threads go
// (TeamRows): whichever thread computes a row, in whichever order, the same bits at 1, 2 and 3
// threads, at every ISA, in every compute type: NHWC, a multiplier of 2, and NCHW planes too
// wide for the channel blocks and too large for the plane kernels (DwForward and
// DwBackpropInputStride1 then convert rows).
TEST(DepthwiseRows, SharedOutRowsGiveTheSameBitsAtEveryThreadCount) {
  struct Case {
    const char* format;
    int64_t n, h, w, c, mult;
  };
  const Case cases[] = {
      {"NHWC", 3, 9, 7, 24, 1}, {"NHWC", 2, 7, 11, 10, 2}, {"NCHW", 2, 64, 130, 8, 1}};
  std::mt19937_64 rng(67);
  int checked = 0;
  for (const Case& k : cases) {
    const Problem p = DepthwiseProblem(k.format, "SAME", k.n, k.h, k.w, k.c, k.mult, 3, 3);
    Expected<Resolved> r = Resolve(p);
    ASSERT_TRUE(r.ok()) << p.ToString();
    for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16})
      checked += ExpectSameBitsAtEveryIsa(p, *r, dtype, {0, 1}, rng);
  }
  EXPECT_EQ(checked, 3 * 4 * 3 * 2 * 2);
}

// The GEMM input gradient of a layer whose filter passes kTapFilterBytes (fc6 cut down: 3
// images of 6 x 6, 512 -> 512 channels, 3x3 VALID: a 9.4 MB filter, 18.9 MB in float64) runs it
// a tap at a time, the threads splitting the input channels (ByTaps in blocks/conv/conv2d.cc):
// the reference's values at every ISA and 1 and 2 threads, the same bits at 1, 2 and 3 threads
// at AVX2 and AVX-512, and the same bits as NCHW (which goes by images: dx converted, so not
// ByTaps) after transposition.
TEST(GemmInputGradient, LargeFiltersGoATapAtATime) {
  const Problem p = DenseProblem("NHWC", "VALID", 3, 6, 6, 512, 512, 3, 3);
  Expected<Resolved> r = Resolve(p);
  ASSERT_TRUE(r.ok()) << p.ToString();
  std::mt19937_64 rng(61);
  int checked = 0;
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    // Values on a grid of 1/8: every sum exact, whichever order a path adds in.
    // The filter asserted past the 8 MB from which the input gradient goes a tap at a time.
    CheckLargeAgainstReference(
        p, 1, dtype, int64_t{8} << 20,
        [](const ConvGeometry& g) { return g.filter_h * g.filter_w * g.in_depth * g.out_depth; },
        rng, /*grid=*/8);
    if (::testing::Test::HasFatalFailure()) return;
    const Tensor x = RandomTensor(dtype, p.InputShape(), rng);
    const Tensor w = RandomTensor(dtype, p.FilterShape(), rng);
    const Tensor dy = RandomTensor(dtype, OutputShape(r->attrs, r->geometry), rng);
    Problem q = p;
    q.format = "NCHW";
    Expected<Resolved> rq = Resolve(q);
    ASSERT_TRUE(rq.ok()) << q.ToString();
    const Tensor dy_nchw = Transposed(dy, true);
    for (internal::Isa isa : {internal::Isa::kAvx2, internal::Isa::kAvx512}) {
      internal::SetIsaForTesting(isa);
      const std::string what = p.ToString() + " " + std::string(DTypeName(dtype)) + " isa " +
                               internal::IsaName(internal::ActiveIsa());
      checked += ExpectSameBitsAtEveryThreadCount(1, *r, x, w, dy, what);
      for (int threads : {1, 2}) {
        Expected<Tensor> nhwc = RunOp(KernelKind::kOptimized, 1, *r, x, w, dy, threads);
        Expected<Tensor> nchw = RunOp(KernelKind::kOptimized, 1, *rq, x, w, dy_nchw, threads);
        ASSERT_TRUE(nhwc.ok() && nchw.ok()) << what;
        EXPECT_TRUE(nhwc->BitwiseEquals(Transposed(*nchw, false)))
            << what << " threads " << threads << ": NHWC against NCHW";
        ++checked;
      }
    }
  }
  internal::SetIsaForTesting(internal::Isa::kAvx512);
  EXPECT_EQ(checked, 2 * 2 * 2 + 2 * 2 * 2);
}

}  // namespace
}  // namespace blockflow::conv::testing
