// The Conv2D forward's Winograd path (blocks/conv/winograd.cc): which layers take it, its results
// against the reference kernel and the direct kernels at every ISA, and its bits across thread
// counts and between AVX2 and AVX-512.
#include "blocks/conv/winograd.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "blocks/conv/isa.h"
#include "conv_test_util.h"
#include "tests/util/block_compare.h"

namespace blockflow::conv::testing {
namespace {

using ::blockflow::testing::TensorsClose;

// Turns the Winograd path on or off for a scope, and the ISA back to the CPU's after it.
class WinogradSetting {
 public:
  explicit WinogradSetting(bool on) { internal::SetWinogradForTesting(on); }
  ~WinogradSetting() {
    internal::SetWinogradForTesting(true);
    internal::SetIsaForTesting(internal::Isa::kAvx512);
  }
  WinogradSetting(const WinogradSetting&) = delete;
  WinogradSetting& operator=(const WinogradSetting&) = delete;
};

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
      {"NHWC", "VALID", 1, 3, 3, 40, 36},  // one output pixel: one tile, three pixels unused
      // A transformed filter past half of a 1 MB L2 (16 x 96 x 160 floats): two threads split
      // the 160 output channels (a 64-wide GEMM panel and the rest), not the tiles.
      {"NHWC", "VALID", 2, 5, 6, 96, 160},
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

TEST(Winograd, TakesThreeByThreeStrideOneForwardsOfFloat32AndFloat64) {
  const WinogradSetting on(true);
  Expected<Resolved> r = Resolve(WinogradProblems()[0]);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ConvGeometry g = r->geometry;
  EXPECT_TRUE(internal::UseWinograd(g, ConvOp::kForward, DType::kFloat32));
  EXPECT_TRUE(internal::UseWinograd(g, ConvOp::kForward, DType::kFloat64));
  // 16-bit layers keep sums that are exact in float32 (the direct kernels).
  EXPECT_FALSE(internal::UseWinograd(g, ConvOp::kForward, DType::kFloat16));
  EXPECT_FALSE(internal::UseWinograd(g, ConvOp::kForward, DType::kBFloat16));
  EXPECT_FALSE(internal::UseWinograd(g, ConvOp::kBackpropInput, DType::kFloat32));
  EXPECT_FALSE(internal::UseWinograd(g, ConvOp::kBackpropFilter, DType::kFloat32));
  auto changed = [&](auto edit) {
    ConvGeometry h = g;
    edit(h);
    return internal::UseWinograd(h, ConvOp::kForward, DType::kFloat32);
  };
  EXPECT_FALSE(changed([](ConvGeometry& h) { h.stride_w = 2; }));
  EXPECT_FALSE(changed([](ConvGeometry& h) { h.stride_h = 2; }));
  EXPECT_FALSE(changed([](ConvGeometry& h) { h.dilation_h = 2; }));
  EXPECT_FALSE(changed([](ConvGeometry& h) { h.filter_w = 5; }));
  EXPECT_FALSE(changed([](ConvGeometry& h) { h.groups = 2; }));
  EXPECT_FALSE(changed([](ConvGeometry& h) { h.depthwise = true; }));
  EXPECT_FALSE(changed([](ConvGeometry& h) { h.in_depth = internal::kWinogradMinChannels - 1; }));
  EXPECT_FALSE(changed([](ConvGeometry& h) { h.out_depth = internal::kWinogradMinChannels - 1; }));
  internal::SetWinogradForTesting(false);
  EXPECT_FALSE(internal::UseWinograd(g, ConvOp::kForward, DType::kFloat32));
}

// Within the compare grid's tolerance of the reference at every ISA, thread count and both
// dtypes, and not the direct kernels' bits (so the path did run).
TEST(Winograd, MatchesTheReferenceAtEveryIsa) {
  const WinogradSetting restore(true);
  std::mt19937_64 rng(4242);
  int checked = 0, differed = 0;
  for (const Problem& p : WinogradProblems()) {
    Expected<Resolved> r = Resolve(p);
    ASSERT_TRUE(r.ok()) << p.ToString() << ": " << r.status().message();
    for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
      ASSERT_TRUE(internal::UseWinograd(r->geometry, ConvOp::kForward, dtype)) << p.ToString();
      const Tensor x = RandomTensor(dtype, p.InputShape(), rng);
      const Tensor w = RandomTensor(dtype, p.FilterShape(), rng);
      const Tensor none;
      const std::string what = p.ToString() + " " + std::string(DTypeName(dtype));
      Expected<Tensor> ref = RunOp(KernelKind::kReference, 0, *r, x, w, none, 1);
      ASSERT_TRUE(ref.ok()) << what << ": " << ref.status().message();
      internal::SetWinogradForTesting(false);
      internal::SetIsaForTesting(internal::Isa::kAvx512);
      Expected<Tensor> direct = RunOp(KernelKind::kOptimized, 0, *r, x, w, none, 1);
      ASSERT_TRUE(direct.ok()) << what << ": " << direct.status().message();
      internal::SetWinogradForTesting(true);
      for (internal::Isa isa :
           {internal::Isa::kBase, internal::Isa::kAvx2, internal::Isa::kAvx512}) {
        internal::SetIsaForTesting(isa);
        for (int threads : {1, 2}) {
          Expected<Tensor> wino = RunOp(KernelKind::kOptimized, 0, *r, x, w, none, threads);
          ASSERT_TRUE(wino.ok()) << what << ": " << wino.status().message();
          EXPECT_TRUE(TensorsClose(*ref, *wino,
                                   what + " isa " + internal::IsaName(internal::ActiveIsa()) +
                                       " threads " + std::to_string(threads)));
          if (isa == internal::Isa::kAvx512 && threads == 1 && !wino->BitwiseEquals(*direct))
            ++differed;
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, static_cast<int>(WinogradProblems().size()) * 2 * 3 * 2);
  EXPECT_EQ(differed, static_cast<int>(WinogradProblems().size()) * 2);
}

// Each tile is transformed, multiplied and transformed back by one thread in an order the
// geometry fixes, and the GEMM sums every element over the channels in one order: the same bits
// at 1, 2 and 3 threads, and at AVX2 as at AVX-512 (both fuse the multiply-adds; the baseline,
// which has no fused multiply-add, rounds each product apart).
TEST(Winograd, SameBitsAtEveryThreadCountAndAtAvx2AndAvx512) {
  const WinogradSetting restore(true);
  std::mt19937_64 rng(77);
  int checked = 0;
  for (const Problem& p : WinogradProblems()) {
    Expected<Resolved> r = Resolve(p);
    ASSERT_TRUE(r.ok()) << p.ToString() << ": " << r.status().message();
    const Tensor x = RandomTensor(DType::kFloat32, p.InputShape(), rng);
    const Tensor w = RandomTensor(DType::kFloat32, p.FilterShape(), rng);
    const Tensor none;
    internal::SetIsaForTesting(internal::Isa::kAvx512);
    Expected<Tensor> first = RunOp(KernelKind::kOptimized, 0, *r, x, w, none, 1);
    ASSERT_TRUE(first.ok()) << p.ToString() << ": " << first.status().message();
    for (internal::Isa isa : {internal::Isa::kAvx512, internal::Isa::kAvx2}) {
      internal::SetIsaForTesting(isa);
      for (int threads : {1, 2, 3}) {
        Expected<Tensor> again = RunOp(KernelKind::kOptimized, 0, *r, x, w, none, threads);
        ASSERT_TRUE(again.ok()) << p.ToString() << ": " << again.status().message();
        EXPECT_TRUE(first->BitwiseEquals(*again))
            << p.ToString() << " isa " << internal::IsaName(internal::ActiveIsa()) << " threads "
            << threads;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, static_cast<int>(WinogradProblems().size()) * 2 * 3);
}

}  // namespace
}  // namespace blockflow::conv::testing
