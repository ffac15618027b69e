// The adjoint identity <Conv(x, w), dy> = <x, BackpropInput(w, dy)> = <w, BackpropFilter(x, dy)>
// for Conv2D and depthwise, in float64, over seeded random problems (formats, paddings,
// strides, dilations, groups, multipliers, biased to small and odd sizes), on both kernels;
// and central finite differences of L(x, w) = <Conv(x, w), dy> on a few small problems.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "conv_test_util.h"

namespace blockflow::conv::testing {
namespace {

class AdjointTest : public ::testing::TestWithParam<bool> {};

TEST_P(AdjointTest, InnerProductsAgree) {
  const bool depthwise = GetParam();
  std::mt19937_64 rng(depthwise ? 2024 : 2023);
  int cases = 0, nonempty = 0;
  for (int i = 0; i < 100; ++i) {
    const Problem p = RandomProblem(rng, depthwise);
    Expected<Resolved> r = Resolve(p);
    ASSERT_TRUE(r.ok());
    const Tensor x = RandomTensor(DType::kFloat64, p.InputShape(), rng);
    const Tensor w = RandomTensor(DType::kFloat64, p.FilterShape(), rng);
    const Tensor dy = RandomTensor(DType::kFloat64, OutputShape(r->attrs, r->geometry), rng);
    for (KernelKind kind : {KernelKind::kReference, KernelKind::kOptimized}) {
      Expected<Tensor> y = RunOp(kind, 0, *r, x, w, dy, 2);
      Expected<Tensor> dx = RunOp(kind, 1, *r, x, w, dy, 2);
      Expected<Tensor> dw = RunOp(kind, 2, *r, x, w, dy, 2);
      ASSERT_TRUE(y.ok() && dx.ok() && dw.ok()) << p.ToString();
      const double a = Dot(*y, dy), b = Dot(x, *dx), c = Dot(w, *dw);
      const double scale = AbsDot(*y, dy) + AbsDot(x, *dx) + AbsDot(w, *dw) + 1e-300;
      EXPECT_LE(std::fabs(a - b), 1e-13 * scale) << p.ToString() << ": " << a << " vs " << b;
      EXPECT_LE(std::fabs(a - c), 1e-13 * scale) << p.ToString() << ": " << a << " vs " << c;
    }
    ++cases;
    nonempty += dy.num_elements() > 0 && x.num_elements() > 0;
  }
  EXPECT_EQ(cases, 100);
  EXPECT_GT(nonempty, 80);  // most problems are not trivially empty
}

INSTANTIATE_TEST_SUITE_P(Families, AdjointTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param_info) {
                           return std::string(param_info.param ? "Depthwise" : "Conv2D");
                         });

// L(x, w) = <Conv(x, w), dy>; dL/dx = BackpropInput(w, dy), dL/dw = BackpropFilter(x, dy).
void CheckFiniteDifferences(const Problem& p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Expected<Resolved> r = Resolve(p);
  ASSERT_TRUE(r.ok()) << r.status().message();
  Tensor x = RandomTensor(DType::kFloat64, p.InputShape(), rng);
  Tensor w = RandomTensor(DType::kFloat64, p.FilterShape(), rng);
  const Tensor dy = RandomTensor(DType::kFloat64, OutputShape(r->attrs, r->geometry), rng);
  auto loss = [&]() {
    Expected<Tensor> y = RunOp(KernelKind::kOptimized, 0, *r, x, w, dy, 1);
    EXPECT_TRUE(y.ok());
    return Dot(*y, dy);
  };
  Expected<Tensor> dx = RunOp(KernelKind::kOptimized, 1, *r, x, w, dy, 1);
  Expected<Tensor> dw = RunOp(KernelKind::kOptimized, 2, *r, x, w, dy, 1);
  ASSERT_TRUE(dx.ok() && dw.ok());
  const double h = 1e-3;
  auto check = [&](Tensor& t, const Tensor& grad, const char* name) {
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      const double v = t.GetAsDouble(i);
      t.SetFromDouble(i, v + h);
      const double up = loss();
      t.SetFromDouble(i, v - h);
      const double down = loss();
      t.SetFromDouble(i, v);
      const double fd = (up - down) / (2 * h);
      // L is linear in each argument, so the only error is rounding (~1e-16 / h).
      ASSERT_NEAR(fd, grad.GetAsDouble(i), 1e-9) << p.ToString() << " d" << name << "[" << i << "]";
    }
  };
  check(x, *dx, "x");
  check(w, *dw, "w");
}

TEST(FiniteDifferences, Conv2DStridedDilatedNchw) {
  Problem p;
  p.format = "NCHW";
  p.padding = "SAME";
  p.n = 1;
  p.h = 5;
  p.w = 4;
  p.c = 2;
  p.fh = 2;
  p.fw = 3;
  p.cog = 2;
  p.sh = 2;
  p.sw = 1;
  p.dh = 1;
  p.dw = 2;
  CheckFiniteDifferences(p, 11);
}

TEST(FiniteDifferences, Conv2DGroupedExplicit) {
  Problem p;
  p.padding = "EXPLICIT";
  p.n = 2;
  p.h = 4;
  p.w = 5;
  p.c = 4;
  p.groups = 2;
  p.fh = 3;
  p.fw = 2;
  p.cog = 1;
  p.sh = 1;
  p.sw = 2;
  p.pt = 1;
  p.pb = 0;
  p.pl = 2;
  p.pr = 1;
  CheckFiniteDifferences(p, 12);
}

TEST(FiniteDifferences, DepthwiseMultiplierValid) {
  Problem p;
  p.depthwise = true;
  p.padding = "VALID";
  p.n = 1;
  p.h = 6;
  p.w = 5;
  p.c = 3;
  p.mult = 2;
  p.fh = 2;
  p.fw = 2;
  p.sh = 2;
  p.sw = 3;
  p.dh = 2;
  p.dw = 1;
  CheckFiniteDifferences(p, 13);
}

TEST(FiniteDifferences, DepthwiseSameNchw) {
  Problem p;
  p.depthwise = true;
  p.format = "NCHW";
  p.padding = "SAME";
  p.n = 2;
  p.h = 3;
  p.w = 4;
  p.c = 2;
  p.mult = 1;
  p.fh = 3;
  p.fw = 3;
  CheckFiniteDifferences(p, 14);
}

}  // namespace
}  // namespace blockflow::conv::testing
