// Conv2D, DepthwiseConv2dNative and their input gradients take uninitialised (pooled) outputs:
// every output element must be written on every path. The pool is first filled with NaN
// garbage (tensors of the output's size, filled with all-ones bytes, a NaN in every float type,
// then freed), so the block's output reuses that memory; any element a kernel leaves unwritten
// shows as NaN against a reference computed into zeroed memory. The kernels' result buffers are
// filled with NaN the same way.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "blocks/conv/layout.h"
#include "conv_test_util.h"
#include "core/allocator.h"
#include "tests/util/block_compare.h"

namespace blockflow::conv::testing {
namespace {

using ::blockflow::testing::AnalyzedBlock;
using ::blockflow::testing::BlockCase;
using ::blockflow::testing::TensorsClose;

// Fills every pooled block that could serve an output of `shape` with NaN bytes: takes blocks
// of that size until the pool has to map a fresh one (none is cached any more), fills them all
// and gives them back.
void PoisonPool(DType dtype, const Shape& shape) {
  std::vector<Tensor> junk;
  for (uint64_t misses = BufferPool::Global().stats().misses;
       BufferPool::Global().stats().misses == misses;) {
    junk.push_back(Tensor::Uninitialized(dtype, shape));
  }
  for (Tensor& t : junk) std::memset(t.raw(), 0xff, t.num_bytes());
}

// The buffer a kernel computes a converted or transposed result in (the float32 buffer of a
// float16 op, an NCHW result before its transposition) is not zeroed either, and is kept
// between the calling thread's kernel calls (internal::Reused): filled with NaN here, so that an
// element a kernel leaves unwritten there shows too.
void PoisonResultBuffers(int64_t elements) {
  internal::Reused<float> f(internal::kSlotResult);
  f->assign(static_cast<size_t>(elements), std::numeric_limits<float>::quiet_NaN());
  internal::Reused<double> d(internal::kSlotResult);
  d->assign(static_cast<size_t>(elements), std::numeric_limits<double>::quiet_NaN());
}

struct Case {
  Problem p;
  DType dtype;
};

std::vector<Case> Cases() {
  std::vector<Case> cases;
  auto add = [&](bool depthwise, const char* format, const char* padding, int64_t h, int64_t w,
                 int64_t c, int64_t s, int64_t fh, DType dtype) {
    Problem p = DenseProblem(format, padding, 4, h, w, c, 37, fh, fh);
    p.depthwise = depthwise;
    p.sh = s;
    p.sw = s;
    p.mult = depthwise && c < 30 ? 2 : 1;
    if (p.padding == "EXPLICIT") {
      p.pt = 3;
      p.pb = 0;
      p.pl = 1;
      p.pr = 4;
    }
    cases.push_back({p, dtype});
  };
  for (bool dw : {false, true}) {
    add(dw, "NHWC", "SAME", 24, 21, 40, 1, 3, DType::kFloat32);   // direct store
    add(dw, "NHWC", "SAME", 24, 21, 37, 2, 3, DType::kFloat32);   // stride phases, remainder
    add(dw, "NHWC", "VALID", 50, 47, 17, 3, 2, DType::kFloat32);  // uncovered tail rows/cols
    add(dw, "NCHW", "EXPLICIT", 22, 19, 33, 2, 3, DType::kFloat32);
    add(dw, "NHWC", "SAME", 48, 41, 20, 2, 3, DType::kFloat16);
    add(dw, "NCHW", "SAME", 17, 15, 24, 1, 3, DType::kFloat64);
    add(dw, "NHWC", "VALID", 4, 40, 200, 2, 6, DType::kFloat32);  // out_h 0: dx all zeros
    add(dw, "NCHW", "SAME", 12, 34, 40, 1, 3, DType::kFloat16);   // rows of 34 pixels
  }
  return cases;
}

TEST(UninitializedOutputs, EveryElementIsWritten) {
  std::mt19937_64 rng(99);
  int checked = 0;
  for (const Case& c : Cases()) {
    Expected<Resolved> r = Resolve(c.p);
    ASSERT_TRUE(r.ok()) << c.p.ToString() << ": " << r.status().message();
    const int grid = c.dtype == DType::kFloat16 ? 128 : 0;
    const Tensor x = RandomTensor(c.dtype, c.p.InputShape(), rng, grid);
    const Tensor w = RandomTensor(c.dtype, c.p.FilterShape(), rng, grid);
    const Tensor dy = RandomTensor(c.dtype, OutputShape(r->attrs, r->geometry), rng, grid);
    for (int op : {0, 1}) {
      const std::string what =
          c.p.ToString() + " op " + std::to_string(op) + " " + std::string(DTypeName(c.dtype));
      // The reference kernel into zeroed memory.
      Expected<Tensor> expected = RunOp(KernelKind::kReference, op, *r, x, w, dy, 1);
      ASSERT_TRUE(expected.ok()) << what << ": " << expected.status().message();
      if (expected->num_elements() == 0) continue;  // the forward op of the out_h 0 case
      ASSERT_GE(expected->num_bytes(), BufferPool::kMinPooledBytes) << what;
      BlockCase block{ConvOpName(static_cast<ConvOp>(op), c.p.depthwise), c.p.Json(), {}};
      if (op == 0) {
        block.inputs = {{"input", x}, {"filter", w}};
      } else {
        block.inputs = {
            {"input_sizes", SizesTensor(c.p.InputShape())}, {"filter", w}, {"out_backprop", dy}};
      }
      const AnalyzedBlock analyzed(block);
      ASSERT_TRUE(analyzed.status().ok()) << what << ": " << analyzed.status().message();
      for (bool reference : {true, false}) {
        PoisonPool(c.dtype, expected->shape());
        PoisonResultBuffers(expected->num_elements());
        {  // The poison reaches the next output of this size.
          const Tensor probe = Tensor::Uninitialized(c.dtype, expected->shape());
          ASSERT_TRUE(std::isnan(probe.GetAsDouble(probe.num_elements() - 1))) << what;
        }
        Expected<std::vector<Tensor>> out = analyzed.Run(reference, 2);
        ASSERT_TRUE(out.ok()) << what << ": " << out.status().message();
        if (reference) {
          EXPECT_TRUE((*out)[0].BitwiseEquals(*expected)) << what << " reference";
        } else {
          EXPECT_TRUE(TensorsClose(*expected, (*out)[0], what + " optimized"));
        }
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 60);
}

// An NCHW filter gradient converts its operands a work item's images at a time into NHWC work
// buffers; here a single 260 x 260 x 64 image, 17 MB each for x and dy. Buffers above what a
// thread keeps to itself between calls (internal::kReusedKeepBytes) go back to
// BufferPool::Scratch(), and the next call takes them from there, paged in already, instead of
// mapping fresh memory (a page fault every 4 KB).
TEST(WorkBuffers, LargeOnesComeBackFromTheScratchPool) {
  Problem p;
  p.format = "NCHW";
  p.n = 1;
  p.c = 64;
  p.cog = 64;
  p.h = 260;
  p.w = 260;
  const int64_t bytes = p.n * p.c * p.h * p.w * int64_t{sizeof(float)};
  ASSERT_GT(static_cast<size_t>(bytes), internal::kReusedKeepBytes);
  Expected<Resolved> r = Resolve(p);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::mt19937_64 rng(5);
  const Tensor x = RandomTensor(DType::kFloat32, p.InputShape(), rng, 0);
  const Tensor w = RandomTensor(DType::kFloat32, p.FilterShape(), rng, 0);
  const Tensor dy = RandomTensor(DType::kFloat32, OutputShape(r->attrs, r->geometry), rng, 0);
  Expected<Tensor> first = RunOp(KernelKind::kOptimized, 2, *r, x, w, dy, 1);
  ASSERT_TRUE(first.ok()) << first.status().message();
  // x and dy, both in NHWC, came back to the pool.
  const PoolStats after_first = BufferPool::Scratch().stats();
  EXPECT_GE(after_first.bytes_cached, static_cast<size_t>(2 * bytes));
  Expected<Tensor> second = RunOp(KernelKind::kOptimized, 2, *r, x, w, dy, 1);
  ASSERT_TRUE(second.ok()) << second.status().message();
  const PoolStats after_second = BufferPool::Scratch().stats();
  EXPECT_EQ(after_second.misses, after_first.misses);
  EXPECT_GE(after_second.hits, after_first.hits + 2);
  EXPECT_TRUE(second->BitwiseEquals(*first));
}

// The float capacity of the calling thread's kernel-call buffer `slot` (internal::ReusedSlot),
// where ToNHWC and ToCompute put whole float copies of 16-bit operands.
size_t SlotCapacity(internal::ReusedSlot slot) {
  internal::Reused<float> f(slot);
  return f->capacity();
}
void DropSlot(internal::ReusedSlot slot) {
  internal::Reused<float> f(slot);
  f->clear();
  f->shrink_to_fit();
}

// The packed GEMM (1x1 layers, and layers of few output pixels) widens its 16-bit B as it packs
// it, a run at a time, instead of into a whole float copy before the kernel (a float16 fc6's
// 9.4 MB filter became 18.9 MB of floats on every call): the filter of the forward and the input
// gradient, out_backprop of the filter gradient. Each op is then the float32 one of the widened
// operands, rounded once, bit for bit. A direct layer, which still widens its (small) filter
// whole, shows that the probe sees a copy where there is one.
TEST(WorkBuffers, GemmWidensSixteenBitOperandsAsItPacksThem) {
  struct Layer {
    Problem p;
    bool gemm;
  };
  std::vector<Layer> layers;
  Problem pointwise;  // 1x1: 2 x 7 x 11 pixels, 40 -> 530 channels (two B blocks forward)
  pointwise.n = 2;
  pointwise.h = 7;
  pointwise.w = 11;
  pointwise.c = 40;
  pointwise.cog = 530;
  layers.push_back({pointwise, true});
  Problem small = pointwise;  // 3x3 VALID on 6x6: 16 output pixels an image
  small.h = small.w = 6;
  small.fh = small.fw = 3;
  small.c = 64;
  small.cog = 97;
  layers.push_back({small, true});
  Problem padded = small;  // 3x3 SAME at stride 2 on 6x7: the im2col A reaches into the padding
  padded.w = 7;
  padded.c = 65;
  padded.cog = 67;
  padded.padding = "SAME";
  padded.sh = padded.sw = 2;
  layers.push_back({padded, true});
  Problem direct = small;  // 3x3 on 20x20: 324 output pixels an image, the direct kernels
  direct.h = direct.w = 20;
  layers.push_back({direct, false});
  std::mt19937_64 rng(17);
  int checked = 0;
  for (const Layer& layer : layers) {
    Expected<Resolved> r = Resolve(layer.p);
    ASSERT_TRUE(r.ok()) << layer.p.ToString() << ": " << r.status().message();
    for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
      const Tensor x = RandomTensor(dtype, layer.p.InputShape(), rng, 64);
      const Tensor w = RandomTensor(dtype, layer.p.FilterShape(), rng, 64);
      const Tensor dy = RandomTensor(dtype, OutputShape(r->attrs, r->geometry), rng, 64);
      for (int op : {0, 1, 2}) {
        const std::string what =
            layer.p.ToString() + " op " + std::to_string(op) + " " + std::string(DTypeName(dtype));
        // The operand the GEMM takes as B.
        const internal::ReusedSlot b = op == 2 ? internal::kSlotOutBackprop : internal::kSlotFilter;
        DropSlot(b);
        Expected<Tensor> out = RunOp(KernelKind::kOptimized, op, *r, x, w, dy, 1);
        ASSERT_TRUE(out.ok()) << what << ": " << out.status().message();
        if (layer.gemm) {
          EXPECT_EQ(SlotCapacity(b), 0u) << what;
        } else if (op != 2) {  // the direct filter gradient converts dy in pieces
          EXPECT_GE(SlotCapacity(b), static_cast<size_t>(w.num_elements())) << what;
        }
        Expected<Tensor> wide = RunOp(KernelKind::kOptimized, op, *r, x.CastTo(DType::kFloat32),
                                      w.CastTo(DType::kFloat32), dy.CastTo(DType::kFloat32), 1);
        ASSERT_TRUE(wide.ok()) << what << ": " << wide.status().message();
        EXPECT_TRUE(out->BitwiseEquals(wide->CastTo(dtype))) << what;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 24);
}

// The GEMM input gradient of a layer of few input channels (the stem's: dy * w^T and col2im)
// converts a 16-bit or NCHW out_backprop and input gradient a group of images at a time in the
// thread's GEMM buffer: no whole float copy of either (the Operands slots stay empty), and the
// result is the float32 NHWC one, bit for bit (16-bit: of the widened operands, rounded once;
// NCHW: transposed). Batches of 3 on 1 and 2 threads (groups of 3, then of 1 and 2 images).
TEST(WorkBuffers, GemmInputGradientConvertsImagesInGroups) {
  Problem p;  // the stem's 7 x 7 filter at stride 2, 3 -> 64 channels
  p.n = 3;
  p.h = 19;
  p.w = 22;
  p.c = 3;
  p.cog = 64;
  p.fh = p.fw = 7;
  p.sh = p.sw = 2;
  p.padding = "SAME";
  Problem q = p;
  q.format = "NCHW";
  Expected<Resolved> rp = Resolve(p), rq = Resolve(q);
  ASSERT_TRUE(rp.ok() && rq.ok()) << p.ToString();
  std::mt19937_64 rng(23);
  const Tensor w = RandomTensor(DType::kFloat32, p.FilterShape(), rng, 64);
  const Tensor dy = RandomTensor(DType::kFloat32, OutputShape(rp->attrs, rp->geometry), rng, 64);
  int checked = 0;
  for (int threads : {1, 2}) {
    Expected<Tensor> want = RunOp(KernelKind::kOptimized, 1, *rp, Tensor(), w, dy, threads);
    ASSERT_TRUE(want.ok()) << want.status().message();
    for (DType dtype : {DType::kFloat16, DType::kBFloat16, DType::kFloat32}) {
      const bool nchw = dtype == DType::kFloat32;
      const std::string what = std::string(DTypeName(dtype)) + (nchw ? " NCHW" : " NHWC") +
                               " threads " + std::to_string(threads);
      DropSlot(internal::kSlotOutBackprop);
      DropSlot(internal::kSlotResult);
      const Tensor dy_op = nchw ? Transposed(dy, true) : dy.CastTo(dtype);
      Expected<Tensor> out = RunOp(KernelKind::kOptimized, 1, nchw ? *rq : *rp, Tensor(),
                                   nchw ? w : w.CastTo(dtype), dy_op, threads);
      ASSERT_TRUE(out.ok()) << what << ": " << out.status().message();
      EXPECT_EQ(SlotCapacity(internal::kSlotOutBackprop), 0u) << what;
      EXPECT_EQ(SlotCapacity(internal::kSlotResult), 0u) << what;
      const Tensor expected = nchw ? Transposed(*want, true) : want->CastTo(dtype);
      EXPECT_TRUE(out->BitwiseEquals(expected)) << what;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 6);
}

}  // namespace
}  // namespace blockflow::conv::testing
