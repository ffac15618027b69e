// The convolution kernels poll the cancel flag (KernelContext::cancelled) between rows, so
// Ctrl-C and the editor's Cancel stop a long convolution: a flag set before the run skips all the
// work, and one set from another thread a few milliseconds into a run that needs tens of GFLOP
// stops it early, with Cancelled.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <utility>

#include "conv_test_util.h"
#include "tests/util/block_compare.h"

namespace blockflow::conv::testing {
namespace {

using ::blockflow::testing::AnalyzedBlock;
using ::blockflow::testing::BlockCase;

// A Conv2D of 2 x 64 x 64 x 512 by 3 x 3 x 512 x 512 (38.7 GFLOP per op), or a depthwise one of
// 2 x 64 x 64 x 64 by 31 x 31 x 64 x 8 (8.1 GFLOP): a good part of a second of work for the
// optimized kernels, minutes for the reference ones.
Problem BigProblem(bool depthwise) {
  Problem p;
  p.depthwise = depthwise;
  p.padding = "SAME";
  p.n = 2;
  p.h = 64;
  p.w = 64;
  p.c = depthwise ? 64 : 512;
  p.fh = depthwise ? 31 : 3;
  p.fw = p.fh;
  p.cog = 512;
  p.mult = 8;
  return p;
}

// Conv2D problems that take the packed GEMM (conv2d.cc's UseGemm): a 1x1 layer of 2 x 64 x 64 x
// 1024 to 1024 channels (17.2 GFLOP per op) and a fc6-like 3x3 VALID layer on 384 x 6 x 6 x 512
// to 1024 channels (58 GFLOP per op; its input gradient goes through the column buffer in
// groups of 128 images, each zeroed as it starts, so a cancelled run leaves the later ones).
Problem GemmProblem(int variant) {
  Problem p;
  p.padding = "VALID";
  p.n = variant == 0 ? 2 : 384;
  p.h = p.w = variant == 0 ? 64 : 6;
  p.c = variant == 0 ? 1024 : 512;
  p.fh = p.fw = variant == 0 ? 1 : 3;
  p.cog = 1024;
  return p;
}

// Counts the elements of `t` that still hold the NaN it was filled with.
int64_t Untouched(const Tensor& t) {
  int64_t n = 0;
  for (int64_t i = 0; i < t.num_elements(); ++i) n += std::isnan(t.GetAsDouble(i)) ? 1 : 0;
  return n;
}

// The random operands of a run of problem p.
struct Operands {
  Tensor x, w, dy;
};
Operands RandomOperands(const Problem& p, const Resolved& r) {
  std::mt19937_64 rng(7);
  Operands o;
  o.x = RandomTensor(DType::kFloat32, p.InputShape(), rng);
  o.w = RandomTensor(DType::kFloat32, p.FilterShape(), rng);
  o.dy = RandomTensor(DType::kFloat32, OutputShape(r.attrs, r.geometry), rng);
  return o;
}

// Element `i` of op `op`'s output for a GemmProblem (NHWC, stride 1, VALID, no dilation), summed
// in double; *magnitude: the sum of its terms' magnitudes.
double ExactAt(int op, const Problem& p, const Operands& o, int64_t i, double* magnitude) {
  const int64_t oh = p.h - p.fh + 1, ow = p.w - p.fw + 1, co = p.cog;
  const auto x = [&](int64_t n, int64_t h, int64_t w, int64_t c) {
    return o.x.GetAsDouble(((n * p.h + h) * p.w + w) * p.c + c);
  };
  const auto f = [&](int64_t kh, int64_t kw, int64_t c, int64_t k) {
    return o.w.GetAsDouble(((kh * p.fw + kw) * p.c + c) * co + k);
  };
  const auto dy = [&](int64_t n, int64_t h, int64_t w, int64_t k) {
    return o.dy.GetAsDouble(((n * oh + h) * ow + w) * co + k);
  };
  double sum = 0;
  *magnitude = 0;
  const auto add = [&](double a, double b) {
    sum += a * b;
    *magnitude += std::fabs(a * b);
  };
  if (op == 0) {  // y[n, h, w, k] = sum x[n, h + kh, w + kw, c] * f[kh, kw, c, k]
    const int64_t k = i % co, w = i / co % ow, h = i / co / ow % oh, n = i / co / ow / oh;
    for (int64_t kh = 0; kh < p.fh; ++kh)
      for (int64_t kw = 0; kw < p.fw; ++kw)
        for (int64_t c = 0; c < p.c; ++c) add(x(n, h + kh, w + kw, c), f(kh, kw, c, k));
  } else if (op == 1) {  // dx[n, h, w, c] = sum dy[n, h - kh, w - kw, k] * f[kh, kw, c, k]
    const int64_t c = i % p.c, w = i / p.c % p.w, h = i / p.c / p.w % p.h;
    const int64_t n = i / p.c / p.w / p.h;
    for (int64_t kh = 0; kh < p.fh; ++kh)
      for (int64_t kw = 0; kw < p.fw; ++kw) {
        if (h - kh < 0 || h - kh >= oh || w - kw < 0 || w - kw >= ow) continue;
        for (int64_t k = 0; k < co; ++k) add(dy(n, h - kh, w - kw, k), f(kh, kw, c, k));
      }
  } else {  // df[kh, kw, c, k] = sum x[n, h + kh, w + kw, c] * dy[n, h, w, k]
    const int64_t k = i % co, c = i / co % p.c, kw = i / co / p.c % p.fw;
    const int64_t kh = i / co / p.c / p.fw;
    for (int64_t n = 0; n < p.n; ++n)
      for (int64_t h = 0; h < oh; ++h)
        for (int64_t w = 0; w < ow; ++w) add(x(n, h + kh, w + kw, c), dy(n, h, w, k));
  }
  return sum;
}

// Of `samples` elements of `t` (op `op`'s output for a GemmProblem) drawn at random, those that
// are not the op's result: outputs never written (NaN) or sums a cancelled run left partial. A
// float32 sum of K terms lies within K * 2^-24 (at most 9216 * 2^-24 < 1e-3 here) of its terms'
// magnitude from the exact one; a partial sum misses whole blocks of terms. (Sampled against
// exact sums instead of compared with an uncancelled run: those full runs, 17 and 58 GFLOP per
// op, took most of three minutes under the sanitizers.)
int64_t Unfinished(int op, const Problem& p, const Operands& o, const Tensor& t, int samples) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int64_t> pick(0, t.num_elements() - 1);
  int64_t n = 0;
  for (int s = 0; s < samples; ++s) {
    const int64_t i = pick(rng);
    double magnitude = 0;
    const double exact = ExactAt(op, p, o, i, &magnitude);
    n += !(std::fabs(t.GetAsDouble(i) - exact) <= 1e-3 * magnitude);  // NaN counts
  }
  return n;
}

// RunCancelled's after_ms for the flag set before the start, and for a run to the end.
constexpr int kCancelBefore = -1, kNoCancel = -2;

// Runs op `op` of `p` directly into a NaN-filled output with the cancel flag set `after_ms`
// milliseconds after the start (kCancelBefore: before it; kNoCancel: never); returns the status
// and the output, and in *used (if given) the operands.
Status RunCancelled(KernelKind kind, int op, const Problem& p, int after_ms, Tensor* out,
                    Operands* used = nullptr) {
  Expected<Resolved> r = Resolve(p);
  if (!r.ok()) return r.status();
  Operands o = RandomOperands(p, *r);
  const Tensor &x = o.x, &w = o.w, &dy = o.dy;
  const ConvState s = StateOf(op, *r);
  *out = Tensor(DType::kFloat32, OperandShapes(s).out);
  std::memset(out->raw(), 0xff, out->num_bytes());
  std::atomic<bool> cancel{after_ms == kCancelBefore};
  KernelContext k;
  k.num_threads = 2;
  k.cancel = &cancel;
  std::thread canceller([&] {
    if (after_ms < 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
    cancel = true;
  });
  const Tensor& a = s.op == ConvOp::kBackpropInput ? w : x;
  const Tensor& b = s.op == ConvOp::kForward ? w : dy;
  Status status = RunConv(kind, s, a, b, out, k);
  canceller.join();
  if (used != nullptr) *used = std::move(o);
  return status;
}

// A flag set before the run: every op of both families and both kernels return Cancelled
// without writing any output element.
TEST(Cancel, FlagSetBeforeTheRunSkipsAllWork) {
  for (bool depthwise : {false, true}) {
    Problem p = BigProblem(depthwise);
    p.n = 1;
    p.h = p.w = 16;
    for (KernelKind kind : {KernelKind::kReference, KernelKind::kOptimized}) {
      for (int op = 0; op < 3; ++op) {
        Tensor out;
        const Status s = RunCancelled(kind, op, p, kCancelBefore, &out);
        EXPECT_EQ(s.code(), StatusCode::kCancelled) << p.ToString() << " op " << op;
        EXPECT_EQ(Untouched(out), out.num_elements()) << p.ToString() << " op " << op;
      }
    }
  }
  for (int variant = 0; variant < 2; ++variant) {
    Problem p = GemmProblem(variant);
    p.n = 1;
    for (int op = 0; op < 3; ++op) {
      Tensor out;
      const Status s = RunCancelled(KernelKind::kOptimized, op, p, kCancelBefore, &out);
      EXPECT_EQ(s.code(), StatusCode::kCancelled) << p.ToString() << " op " << op;
      EXPECT_EQ(Untouched(out), out.num_elements()) << p.ToString() << " op " << op;
    }
  }
}

// A flag set a few milliseconds in: the run stops early (output rows left unwritten).
TEST(Cancel, OptimizedKernelsStopEarly) {
  for (bool depthwise : {false, true}) {
    for (int op = 0; op < 3; ++op) {
      Tensor out;
      const Status s = RunCancelled(KernelKind::kOptimized, op, BigProblem(depthwise), 20, &out);
      EXPECT_EQ(s.code(), StatusCode::kCancelled) << "depthwise " << depthwise << " op " << op;
      EXPECT_GT(Untouched(out), 0) << "depthwise " << depthwise << " op " << op;
    }
  }
  // The GEMM's first pass over k may write every output element well before the flag (one
  // block of B can span all the columns): there the cancelled run leaves partial sums. Sampled
  // against exact sums, which first find nothing unfinished in small runs to the end.
  for (int variant = 0; variant < 2; ++variant) {
    Problem small = GemmProblem(variant);
    small.n = 2;
    small.h = small.w = variant == 0 ? 8 : 6;
    for (int op = 0; op < 3; ++op) {
      Tensor out;
      Operands used;
      ASSERT_TRUE(RunCancelled(KernelKind::kOptimized, op, small, kNoCancel, &out, &used).ok());
      EXPECT_EQ(Unfinished(op, small, used, out, 512), 0) << small.ToString() << " op " << op;
    }
  }
  for (int variant = 0; variant < 2; ++variant) {
    const Problem p = GemmProblem(variant);
    for (int op = 0; op < 3; ++op) {
      Tensor out;
      Operands used;
      const Status s = RunCancelled(KernelKind::kOptimized, op, p, 20, &out, &used);
      EXPECT_EQ(s.code(), StatusCode::kCancelled) << p.ToString() << " op " << op;
      EXPECT_GT(Unfinished(op, p, used, out, 512), 0) << p.ToString() << " op " << op;
    }
  }
}

// Through the block, as a Session runs it: the reference Conv2D (minutes of work; no CPU does
// its 38.7 GFLOP of scalar loops in 2 s) returns Cancelled soon after the flag is set.
TEST(Cancel, BlockReturnsCancelledQuickly) {
  const Problem p = BigProblem(false);
  std::mt19937_64 rng(8);
  const BlockCase c{"Conv2D",
                    p.Json(),
                    {{"input", RandomTensor(DType::kFloat32, p.InputShape(), rng)},
                     {"filter", RandomTensor(DType::kFloat32, p.FilterShape(), rng)}}};
  const AnalyzedBlock block(c);
  ASSERT_TRUE(block.status().ok()) << block.status().message();
  for (bool reference : {true, false}) {
    std::atomic<bool> cancel{false};
    std::chrono::steady_clock::time_point set_at;
    std::thread canceller([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      set_at = std::chrono::steady_clock::now();
      cancel = true;
    });
    Expected<std::vector<Tensor>> out = block.Run(reference, 2, &cancel);
    const auto returned = std::chrono::steady_clock::now();
    canceller.join();
    ASSERT_FALSE(out.ok()) << "reference " << reference;
    EXPECT_EQ(out.status().code(), StatusCode::kCancelled) << out.status().message();
    if (reference) {
      EXPECT_LT(std::chrono::duration<double>(returned - set_at).count(), 2.0);
    }
  }
}

}  // namespace
}  // namespace blockflow::conv::testing
