// Conv2D's Winograd path (blocks/conv/winograd.cc), the forward and the stride-1 gradients:
// which layers take it, its results against the reference kernel and the direct kernels at
// every ISA, and its bits across thread counts and between AVX2 and AVX-512.
#include "blocks/conv/winograd.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "blocks/conv/isa.h"
#include "conv_test_util.h"
#include "tests/util/block_compare.h"

namespace blockflow::conv::testing {
namespace {

// 3x3 stride-1 layers the path takes, sized to leave partial tiles (odd output heights and
// widths), paddings on one side only or wider than the filter's reach, channel counts off the
// vectors and the GEMM's 6-row tiles, more than one block of tiles per thread, and threads
// splitting the output channels.
std::vector<Problem> WinogradProblems() {
  struct Case {
    const char* format;
    const char* padding;
    int64_t n, h, w, c, cog;
    int64_t pt = 0, pb = 0, pl = 0, pr = 0;
  };
  const Case cases[] = {
      {"NHWC", "SAME", 2, 7, 5, 32, 32},   // 7 x 5 outputs: a row and a column of half tiles
      {"NHWC", "VALID", 3, 6, 6, 64, 97},  // fc6 cut down: 4 x 4 outputs, 97 channels
      {"NCHW", "SAME", 2, 9, 8, 33, 40},   // NCHW, converted whole
      {"NHWC", "EXPLICIT", 1, 5, 7, 48, 35, 2, 0, 3, 1},  // padding wider than the filter reach
      {"NHWC", "SAME", 3, 30, 31, 32, 64},                // 720 tiles: several blocks per thread
      {"NHWC", "VALID", 1, 4, 4, 40, 36},                 // 2 x 2 outputs: one tile
      // A transformed filter past half of a 1 MB L2 (16 x 96 x 160 floats) whose 160 output
      // channels are too few to split (256 a thread): the threads split the tiles, each
      // transforming the whole filter as it multiplies its block (a fused plan).
      {"NHWC", "VALID", 2, 5, 6, 96, 160},
      // Filter-gradient sums of 8.5 MB (16 x 256 x 520 floats): more than 16 MB for two
      // threads' own, so two or three threads split the output channels (SplitsColumns); the
      // forward's two threads split them too (256 and 264: a partial panel).
      {"NHWC", "VALID", 1, 4, 5, 256, 520},
      // 256 tiles of a transformed filter past half of a 1 or 2 MB L2 (16 x 96 x 176 floats): on
      // one thread a block of 258 tiles reading the whole transformed filter, on two and three
      // threads a block a thread, each transforming its filter's columns as it multiplies (a
      // fused plan; the two layers above are fused at every thread count).
      {"NHWC", "SAME", 1, 32, 31, 96, 176},
      // A transformed filter of 16 x 32 x 520 floats whose two threads split the output
      // channels, reading them from the one they share: 200 tiles, a block too large for a fused
      // plan (three threads split the tiles, a block a thread, fused).
      {"NHWC", "SAME", 2, 20, 20, 32, 520},
  };
  std::vector<Problem> out;
  for (const Case& c : cases) {
    Problem p = DenseProblem(c.format, c.padding, c.n, c.h, c.w, c.c, c.cog, 3, 3);
    p.pt = c.pt;
    p.pb = c.pb;
    p.pl = c.pl;
    p.pr = c.pr;
    out.push_back(p);
  }
  return out;
}

// The ops (0 forward, 1 input gradient, 2 filter gradient) of problem r that take the Winograd
// path in float32.
std::vector<int> WinogradOps(const Resolved& r) {
  std::vector<int> ops;
  for (int op : {0, 1, 2})
    if (internal::UseWinograd(r.geometry, static_cast<ConvOp>(op), DType::kFloat32))
      ops.push_back(op);
  return ops;
}

TEST(Winograd, TakesThreeByThreeStrideOneLayersOfFloat32AndFloat64) {
  const WinogradSetting on(true);
  Expected<Resolved> r = Resolve(WinogradProblems()[0]);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ConvGeometry g = r->geometry;
  for (ConvOp op : {ConvOp::kForward, ConvOp::kBackpropInput, ConvOp::kBackpropFilter}) {
    EXPECT_TRUE(internal::UseWinograd(g, op, DType::kFloat32));
    EXPECT_TRUE(internal::UseWinograd(g, op, DType::kFloat64));
    // 16-bit layers keep sums that are exact in float32 (the direct kernels).
    EXPECT_FALSE(internal::UseWinograd(g, op, DType::kFloat16));
    EXPECT_FALSE(internal::UseWinograd(g, op, DType::kBFloat16));
    auto changed = [&](auto edit) {
      ConvGeometry h = g;
      edit(h);
      return internal::UseWinograd(h, op, DType::kFloat32);
    };
    EXPECT_FALSE(changed([](ConvGeometry& h) { h.stride_w = 2; }));
    EXPECT_FALSE(changed([](ConvGeometry& h) { h.stride_h = 2; }));
    EXPECT_FALSE(changed([](ConvGeometry& h) { h.dilation_h = 2; }));
    EXPECT_FALSE(changed([](ConvGeometry& h) { h.filter_w = 5; }));
    EXPECT_FALSE(changed([](ConvGeometry& h) { h.groups = 2; }));
    EXPECT_FALSE(changed([](ConvGeometry& h) { h.depthwise = true; }));
    EXPECT_FALSE(changed([](ConvGeometry& h) { h.in_depth = internal::kWinogradMinChannels - 1; }));
    EXPECT_FALSE(
        changed([](ConvGeometry& h) { h.out_depth = internal::kWinogradMinChannels - 1; }));
    // Padding past the filter's reach: the forward and the filter gradient read zeros, the
    // input gradient's turned forward would need a negative padding.
    EXPECT_EQ(changed([](ConvGeometry& h) { h.pad_left = 3; }), op != ConvOp::kBackpropInput);
  }
  // Where Winograd would need more than 2/3 of the direct kernels' products: a 1x1 output (16
  // against 9), and fc6's input gradient (a 6x6 result: 9 tiles, 144 against 16 x 9).
  Problem one = WinogradProblems()[0];
  one.padding = "VALID";
  one.h = 3;
  one.w = 3;
  Expected<Resolved> small = Resolve(one);
  ASSERT_TRUE(small.ok()) << small.status().message();
  EXPECT_FALSE(internal::UseWinograd(small->geometry, ConvOp::kForward, DType::kFloat32));
  EXPECT_FALSE(internal::UseWinograd(small->geometry, ConvOp::kBackpropFilter, DType::kFloat32));
  one.h = 6;
  one.w = 6;
  Expected<Resolved> fc6 = Resolve(one);
  ASSERT_TRUE(fc6.ok()) << fc6.status().message();
  EXPECT_TRUE(internal::UseWinograd(fc6->geometry, ConvOp::kForward, DType::kFloat32));
  EXPECT_FALSE(internal::UseWinograd(fc6->geometry, ConvOp::kBackpropInput, DType::kFloat32));
  EXPECT_TRUE(internal::UseWinograd(fc6->geometry, ConvOp::kBackpropFilter, DType::kFloat32));
  internal::SetWinogradForTesting(false);
  for (ConvOp op : {ConvOp::kForward, ConvOp::kBackpropInput, ConvOp::kBackpropFilter})
    EXPECT_FALSE(internal::UseWinograd(g, op, DType::kFloat32));
}

// t with every element replaced by its magnitude.
Tensor Magnitudes(const Tensor& t) {
  Tensor out(t.dtype(), t.shape());
  for (int64_t i = 0; i < t.num_elements(); ++i) out.SetFromDouble(i, std::fabs(t.GetAsDouble(i)));
  return out;
}

// |out - ref| within 64 units of rounding (2^-24 in float32, 2^-53 in float64) of the sum of
// the element's products' magnitudes, `mag` (the reference op on the operands' magnitudes):
// rounding grows with a sum's terms, not with its value (a filter gradient's elements each sum
// up to thousands of products, 2790 for the 720-tile layer, that cancel to far less than them),
// and Winograd's terms are sums of up to 4 inputs times sums of up to 4 filter or out_backprop
// values, several times the products they stand for. A wrong sign or a lost tile misses by a
// share of the products' size, millions of units.
::testing::AssertionResult WithinRounding(const Tensor& ref, const Tensor& mag, const Tensor& out,
                                          const std::string& what) {
  const double unit = std::ldexp(1.0, ref.dtype() == DType::kFloat64 ? -53 : -24);
  if (out.shape() != ref.shape()) return ::testing::AssertionFailure() << what << ": shape";
  for (int64_t i = 0; i < ref.num_elements(); ++i) {
    const double r = ref.GetAsDouble(i), o = out.GetAsDouble(i), m = mag.GetAsDouble(i);
    if (!(std::fabs(r - o) <= 64 * unit * m)) {  // also catches NaN
      return ::testing::AssertionFailure()
             << what << " element " << i << ": " << r << " vs " << o << " (magnitudes " << m << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

// Within rounding of the reference (WithinRounding) at every ISA, thread count and both dtypes,
// and not the direct kernels' bits (so the path did run): every problem's forward and filter
// gradient, and the input gradients that take the path.
TEST(Winograd, MatchesTheReferenceAtEveryIsa) {
  const WinogradSetting restore(true);
  std::mt19937_64 rng(4242);
  int checked = 0, differed = 0, runs = 0;
  for (const Problem& p : WinogradProblems()) {
    Expected<Resolved> r = Resolve(p);
    ASSERT_TRUE(r.ok()) << p.ToString() << ": " << r.status().message();
    const std::vector<int> ops = WinogradOps(*r);
    ASSERT_FALSE(ops.empty()) << p.ToString();
    for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
      const Tensor x = RandomTensor(dtype, p.InputShape(), rng);
      const Tensor w = RandomTensor(dtype, p.FilterShape(), rng);
      const Tensor dy = RandomTensor(dtype, OutputShape(r->attrs, r->geometry), rng);
      for (int op : ops) {
        ASSERT_TRUE(internal::UseWinograd(r->geometry, static_cast<ConvOp>(op), dtype));
        const std::string what =
            p.ToString() + " op " + std::to_string(op) + " " + std::string(DTypeName(dtype));
        Expected<Tensor> ref = RunOp(KernelKind::kReference, op, *r, x, w, dy, 1);
        ASSERT_TRUE(ref.ok()) << what << ": " << ref.status().message();
        Expected<Tensor> mag =
            RunOp(KernelKind::kReference, op, *r, Magnitudes(x), Magnitudes(w), Magnitudes(dy), 1);
        ASSERT_TRUE(mag.ok()) << what << ": " << mag.status().message();
        internal::SetWinogradForTesting(false);
        internal::SetIsaForTesting(internal::Isa::kAvx512);
        Expected<Tensor> direct = RunOp(KernelKind::kOptimized, op, *r, x, w, dy, 1);
        ASSERT_TRUE(direct.ok()) << what << ": " << direct.status().message();
        internal::SetWinogradForTesting(true);
        ++runs;
        for (internal::Isa isa :
             {internal::Isa::kBase, internal::Isa::kAvx2, internal::Isa::kAvx512}) {
          internal::SetIsaForTesting(isa);
          for (int threads : {1, 2}) {
            Expected<Tensor> wino = RunOp(KernelKind::kOptimized, op, *r, x, w, dy, threads);
            ASSERT_TRUE(wino.ok()) << what << ": " << wino.status().message();
            EXPECT_TRUE(WithinRounding(*ref, *mag, *wino,
                                       what + " isa " + internal::IsaName(internal::ActiveIsa()) +
                                           " threads " + std::to_string(threads)));
            if (isa == internal::Isa::kAvx512 && threads == 1 && !wino->BitwiseEquals(*direct))
              ++differed;
            ++checked;
          }
        }
      }
    }
  }
  // Every problem's forward and filter gradient and five problems' input gradients (not the
  // over-padded one's, nor those of the VALID layers, whose padded input gradients would need as
  // many products as the direct kernels or more), in two dtypes.
  EXPECT_EQ(runs, (2 * static_cast<int>(WinogradProblems().size()) + 5) * 2);
  EXPECT_EQ(checked, runs * 3 * 2);
  EXPECT_EQ(differed, runs);
}

// Whether the filter gradient's threads (2 or 3) split the output channels of layer g, not its
// tiles: where their own sums (16 planes of cin x cout floats each) would pass 16 MB.
bool SplitsColumns(const ConvGeometry& g) {
  constexpr int64_t kBound = int64_t{16} << 20;
  return int64_t{32} * int64_t{sizeof(float)} * g.in_depth * g.out_depth > kBound;
}

// The forward and the input gradient transform, multiply and transform back each tile on one
// thread in an order the geometry fixes, and the GEMM sums every element over the channels in
// one order: the same bits at 1, 2 and 3 threads. The filter gradient sums over the tiles, which
// the threads may split, each adding up its own: the same bits for a given thread count, run
// after run; where the threads split the output channels instead, one thread's bits. Every op: the
// same bits at AVX2 as at AVX-512 (both fuse the multiply-adds; the baseline, which has no fused
// multiply-add, rounds each product apart).
TEST(Winograd, SameBitsPerThreadCountAndAtAvx2AndAvx512) {
  const WinogradSetting restore(true);
  std::mt19937_64 rng(77);
  int ops = 0;
  for (const Problem& p : WinogradProblems()) {
    Expected<Resolved> r = Resolve(p);
    ASSERT_TRUE(r.ok()) << p.ToString() << ": " << r.status().message();
    const Tensor x = RandomTensor(DType::kFloat32, p.InputShape(), rng);
    const Tensor w = RandomTensor(DType::kFloat32, p.FilterShape(), rng);
    const Tensor dy = RandomTensor(DType::kFloat32, OutputShape(r->attrs, r->geometry), rng);
    for (int op : WinogradOps(*r)) {
      const std::string what = p.ToString() + " op " + std::to_string(op);
      auto run = [&](internal::Isa isa, int threads) {
        internal::SetIsaForTesting(isa);
        Expected<Tensor> out = RunOp(KernelKind::kOptimized, op, *r, x, w, dy, threads);
        EXPECT_TRUE(out.ok()) << what << ": " << out.status().message();
        return out.ok() ? *out : Tensor();
      };
      const Tensor one = run(internal::Isa::kAvx512, 1);
      for (int threads : {1, 2, 3}) {
        const std::string at = what + " threads " + std::to_string(threads);
        const Tensor first = run(internal::Isa::kAvx512, threads);
        EXPECT_TRUE(first.BitwiseEquals(run(internal::Isa::kAvx512, threads))) << at;
        EXPECT_TRUE(first.BitwiseEquals(run(internal::Isa::kAvx2, threads))) << at << " avx2";
        if (op != 2 || SplitsColumns(r->geometry)) {
          EXPECT_TRUE(one.BitwiseEquals(first)) << at;
        }
      }
      ++ops;
    }
  }
  // Every problem's forward and filter gradient, and five problems' input gradients.
  EXPECT_EQ(ops, 2 * static_cast<int>(WinogradProblems().size()) + 5);
}

// The filter gradient stores a dw past kStreamShareBytes a thread past the caches where the
// shared L3 would not keep it, and the forward a shared transformed filter where that outgrows
// half of the L3 (both with an L3 of one byte here, on any host): the same bits as stored plainly
// (an L3 that keeps everything), within rounding of the reference, at 1, 2 and 3 threads, in
// float32 and float64. 256 x 520 channels: a dw of 4.8 and 9.6 MB, whose threads split the
// channels from two threads on (staged in runs of 64 output channels, streamed where a run
// starts on a whole line and fills whole lines: each row's last run of 8 values is stored
// plainly in float32). 96 x 200: 0.7 and 1.4 MB, the filter gradient's threads splitting the
// tiles: streamed on one thread, and on two in float64. The forwards of those two layers are
// fused (no transformed filter stored); the 32 x 31 layer's forward stores its transformed
// filter (1.1 MB, in float64 2.2 MB) where its plan is not fused, on one thread; the 32 x 520
// layer's on one and two threads, the two transforming 256 and 264 output channels each. (Only
// AVX-512 streams: on a host without it, this checks the plain stores.)
TEST(Winograd, LargeBuffersStoredPastTheCachesKeepTheirBits) {
  const WinogradSetting restore(true);
  std::mt19937_64 rng(91);
  int compared = 0;
  for (const Problem& p : {DenseProblem("NHWC", "VALID", 1, 4, 5, 256, 520, 3, 3),
                           DenseProblem("NHWC", "SAME", 2, 6, 7, 96, 200, 3, 3),
                           DenseProblem("NHWC", "SAME", 1, 32, 31, 96, 176, 3, 3),
                           DenseProblem("NHWC", "SAME", 2, 20, 20, 32, 520, 3, 3)}) {
    Expected<Resolved> r = Resolve(p);
    ASSERT_TRUE(r.ok()) << p.ToString() << ": " << r.status().message();
    for (ConvOp op : {ConvOp::kForward, ConvOp::kBackpropFilter})
      ASSERT_TRUE(internal::UseWinograd(r->geometry, op, DType::kFloat32)) << p.ToString();
    for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
      const Tensor x = RandomTensor(dtype, p.InputShape(), rng);
      const Tensor w = RandomTensor(dtype, p.FilterShape(), rng);
      const Tensor dy = RandomTensor(dtype, OutputShape(r->attrs, r->geometry), rng);
      for (int op : {0, 2}) {
        Expected<Tensor> ref = RunOp(KernelKind::kReference, op, *r, x, w, dy, 1);
        ASSERT_TRUE(ref.ok()) << ref.status().message();
        Expected<Tensor> mag =
            RunOp(KernelKind::kReference, op, *r, Magnitudes(x), Magnitudes(w), Magnitudes(dy), 1);
        ASSERT_TRUE(mag.ok()) << mag.status().message();
        for (int threads : {1, 2, 3}) {
          const std::string what = p.ToString() + " op " + std::to_string(op) + " " +
                                   std::string(DTypeName(dtype)) + " threads " +
                                   std::to_string(threads);
          auto run = [&](int64_t l3) {
            const SharedCacheOf cache(l3);
            Expected<Tensor> out = RunOp(KernelKind::kOptimized, op, *r, x, w, dy, threads);
            EXPECT_TRUE(out.ok()) << what << ": " << out.status().message();
            return out.ok() ? *out : Tensor();
          };
          const Tensor plain = run(int64_t{1} << 40), streamed = run(1);
          EXPECT_TRUE(streamed.BitwiseEquals(plain)) << what;
          EXPECT_TRUE(WithinRounding(*ref, *mag, streamed, what));
          ++compared;
        }
      }
    }
  }
  EXPECT_EQ(compared, 4 * 2 * 2 * 3);
}

}  // namespace
}  // namespace blockflow::conv::testing
