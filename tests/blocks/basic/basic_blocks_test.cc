// The basic blocks, through Scope/ClientSession as a user would run them.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "blocks/ops.h"
#include "blocks/register_blocks.h"
#include "core/npy.h"

namespace blockflow {
namespace {

Tensor RunOne(const Scope& root, const Output& fetch, const RunOptions& options = {}) {
  RegisterBuiltinBlocks();
  std::vector<Tensor> out;
  Status s = ClientSession(root).Run({}, {fetch}, &out, options);
  EXPECT_TRUE(s.ok()) << s.message();
  return s.ok() ? out[0] : Tensor();
}

std::string RunError(const Scope& root, const Output& fetch) {
  RegisterBuiltinBlocks();
  std::vector<Tensor> out;
  Status s = ClientSession(root).Run({}, {fetch}, &out);
  EXPECT_FALSE(s.ok());
  return s.message();
}

std::vector<double> Values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.num_elements(); ++i) v.push_back(t.GetAsDouble(i));
  return v;
}

TEST(BasicBlocksTest, BroadcastingArithmetic) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root, Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3}));
  auto col = ops::Const(root, Tensor::FromVector<float>({10, 20}, Shape{2, 1}));
  auto row = ops::Const(root, Tensor::FromVector<float>({1, 0, -1}));
  EXPECT_EQ(Values(RunOne(root, ops::Add(root, a, col))),
            (std::vector<double>{11, 12, 13, 24, 25, 26}));
  EXPECT_EQ(Values(RunOne(root, ops::Sub(root, a, row))), (std::vector<double>{0, 2, 4, 3, 5, 7}));
  Tensor m = RunOne(root, ops::Mul(root, col, row));
  EXPECT_EQ(m.shape(), (Shape{2, 3}));
  EXPECT_EQ(Values(m), (std::vector<double>{10, 0, -10, 20, 0, -20}));
  auto bad = ops::Add(root, a, ops::Const(root, Tensor::FromVector<float>({1, 2})));
  EXPECT_NE(RunError(root, bad).find("cannot be broadcast"), std::string::npos);
}

// Every broadcasting pattern of rank 3 (each dimension of x and y either full or 1), checked
// against the definition element by element; the outputs come from reused, unzeroed memory.
TEST(BasicBlocksTest, BroadcastingMatchesTheDefinitionForEveryPattern) {
  const int64_t full[3] = {3, 4, 5};
  for (int mx = 0; mx < 8; ++mx) {
    for (int my = 0; my < 8; ++my) {
      std::vector<int64_t> dx, dy;
      for (int d = 0; d < 3; ++d) {
        dx.push_back(mx >> d & 1 ? 1 : full[d]);
        dy.push_back(my >> d & 1 ? 1 : full[d]);
      }
      Tensor x(DType::kFloat64, Shape(dx)), y(DType::kFloat64, Shape(dy));
      for (int64_t i = 0; i < x.num_elements(); ++i) x.SetFromDouble(i, 1 + i);
      for (int64_t i = 0; i < y.num_elements(); ++i) y.SetFromDouble(i, 100 * (i + 1));
      Scope root = Scope::NewRootScope();
      Tensor z = RunOne(root, ops::Sub(root, ops::Const(root, x), ops::Const(root, y)));
      const std::vector<int64_t> dz = {std::max(dx[0], dy[0]), std::max(dx[1], dy[1]),
                                       std::max(dx[2], dy[2])};
      ASSERT_EQ(z.shape(), Shape(dz)) << mx << " " << my;
      for (int64_t a = 0; a < dz[0]; ++a) {
        for (int64_t b = 0; b < dz[1]; ++b) {
          for (int64_t c = 0; c < dz[2]; ++c) {
            auto at = [&](const std::vector<int64_t>& d, int64_t i, int64_t j, int64_t k) {
              return (d[0] == 1 ? 0 : i) * d[1] * d[2] + (d[1] == 1 ? 0 : j) * d[2] +
                     (d[2] == 1 ? 0 : k);
            };
            const double want = (1 + at(dx, a, b, c)) - 100 * (at(dy, a, b, c) + 1);
            ASSERT_EQ(z.GetAsDouble((a * dz[1] + b) * dz[2] + c), want) << mx << " " << my;
          }
        }
      }
    }
  }
}

TEST(BasicBlocksTest, HalfArithmeticRoundsOnce) {
  Scope root = Scope::NewRootScope();
  Tensor x(DType::kFloat16, Shape{1}), y(DType::kFloat16, Shape{1});
  x.SetFromDouble(0, 2048);
  y.SetFromDouble(0, 1);  // 2049 is not a half: ties to even → 2048
  Tensor z = RunOne(root, ops::Add(root, ops::Const(root, x), ops::Const(root, y)));
  EXPECT_EQ(z.dtype(), DType::kFloat16);
  EXPECT_EQ(z.GetAsDouble(0), 2048);
}

TEST(BasicBlocksTest, SumOverAxes) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root, Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 6}, Shape{2, 3}));
  auto ax1 = ops::Const(root, Tensor::FromVector<int32_t>({1}));
  auto axm2 = ops::Const(root, Tensor::FromVector<int64_t>({-2}));
  auto both = ops::Const(root, Tensor::FromVector<int32_t>({0, 1}));
  EXPECT_EQ(Values(RunOne(root, ops::Sum(root, a, ax1))), (std::vector<double>{6, 15}));
  Tensor k = RunOne(root, ops::Sum(root, a, axm2, /*keep_dims=*/true));
  EXPECT_EQ(k.shape(), (Shape{1, 3}));
  EXPECT_EQ(Values(k), (std::vector<double>{5, 7, 9}));
  EXPECT_EQ(RunOne(root, ops::Sum(root, a, both)).shape(), Shape{});
  auto dup = ops::Const(root, Tensor::FromVector<int32_t>({1, -1}));
  EXPECT_NE(RunError(root, ops::Sum(root, a, dup)).find("axis -1 is listed twice"),
            std::string::npos);
  auto far = ops::Const(root, Tensor::FromVector<int32_t>({2}));
  EXPECT_NE(
      RunError(root, ops::Sum(root, a, far)).find("axis 2 is out of range for a tensor of rank 2"),
      std::string::npos);
}

TEST(BasicBlocksTest, ReshapeAndTranspose) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root, Tensor::FromVector<float>({0, 1, 2, 3, 4, 5}, Shape{2, 3}));
  Tensor r =
      RunOne(root, ops::Reshape(root, a, ops::Const(root, Tensor::FromVector<int32_t>({3, -1}))));
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  Tensor t =
      RunOne(root, ops::Transpose(root, a, ops::Const(root, Tensor::FromVector<int32_t>({1, 0}))));
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  EXPECT_EQ(Values(t), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  Tensor b(DType::kFloat64, Shape{2, 3, 4});
  for (int64_t i = 0; i < 24; ++i) b.SetFromDouble(i, static_cast<double>(i));
  Tensor t3 =
      RunOne(root, ops::Transpose(root, ops::Const(root, b),
                                  ops::Const(root, Tensor::FromVector<int32_t>({2, 0, 1}))));
  EXPECT_EQ(t3.shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(t3.GetAsDouble(1 * 6 + 1 * 3 + 2), 1 * 12 + 2 * 4 + 1);  // y[k,i,j] = b[i,j,k]
  auto bad = ops::Reshape(root, a, ops::Const(root, Tensor::FromVector<int32_t>({4, -1})));
  EXPECT_NE(RunError(root, bad).find("cannot reshape [2,3] (6 elements) to [4,-1]"),
            std::string::npos);
  auto perm = ops::Transpose(root, a, ops::Const(root, Tensor::FromVector<int32_t>({0, 0})));
  EXPECT_NE(RunError(root, perm).find("is not a permutation"), std::string::npos);
}

TEST(BasicBlocksTest, FillZerosLikeIdentity) {
  Scope root = Scope::NewRootScope();
  auto dims = ops::Const(root, Tensor::FromVector<int32_t>({2, 2}));
  Tensor f = RunOne(root, ops::Fill(root, dims, ops::Const(root, Tensor::Scalar<double>(2.5))));
  EXPECT_EQ(f.dtype(), DType::kFloat64);
  EXPECT_EQ(Values(f), (std::vector<double>{2.5, 2.5, 2.5, 2.5}));
  Tensor z = RunOne(
      root, ops::ZerosLike(
                root, ops::Identity(root, ops::Const(root, Tensor::FromVector<int64_t>({7, 8})))));
  EXPECT_EQ(z.dtype(), DType::kInt64);
  EXPECT_EQ(Values(z), (std::vector<double>{0, 0}));
}

TEST(BasicBlocksTest, RandomIsDeterministicAcrossRunsAndThreads) {
  for (bool normal : {false, true}) {
    Scope root = Scope::NewRootScope();
    auto shape = ops::Const(root, Tensor::FromVector<int32_t>({64, 64}));
    auto r = normal ? ops::RandomStandardNormal(root, shape, DType::kFloat32, 7, 3)
                    : ops::RandomUniform(root, shape, DType::kFloat32, 7, 3);
    auto other = normal ? ops::RandomStandardNormal(root, shape, DType::kFloat32, 8, 3)
                        : ops::RandomUniform(root, shape, DType::kFloat32, 8, 3);
    RunOptions one, four;
    one.num_threads = 1;
    four.num_threads = 4;
    Tensor a = RunOne(root, r, one), b = RunOne(root, r, four), c = RunOne(root, other);
    EXPECT_TRUE(a.BitwiseEquals(b));
    EXPECT_FALSE(a.BitwiseEquals(c));
    TensorStats s = a.Stats();
    if (normal) {
      EXPECT_NEAR(s.mean, 0.0, 0.05);
      double var = 0;
      for (int64_t i = 0; i < a.num_elements(); ++i) var += a.GetAsDouble(i) * a.GetAsDouble(i);
      EXPECT_NEAR(var / a.num_elements(), 1.0, 0.07);
    } else {
      EXPECT_GE(s.min, 0.0);
      EXPECT_LT(s.max, 1.0);
      EXPECT_NEAR(s.mean, 0.5, 0.02);
    }
  }
}

TEST(BasicBlocksTest, ConstFromFileAndErrors) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(BLOCKFLOW_TEST_TMP) / "const_test";
  fs::create_directories(dir);
  Tensor b(DType::kBFloat16, Shape{2});
  b.SetFromDouble(0, -1.25);
  ASSERT_TRUE(WriteNpy((dir / "b.npy").string(), b).ok());
  Scope root = Scope::NewRootScope();
  root.graph().base_dir = dir.string();
  Tensor got = RunOne(root, ops::ConstFromFile(root, DType::kBFloat16, "b.npy"));
  EXPECT_TRUE(got.BitwiseEquals(b));
  auto wrong = ops::ConstFromFile(root, DType::kFloat32, "b.npy");
  EXPECT_NE(RunError(root, wrong).find("only read as bfloat16"), std::string::npos);
  auto missing = ops::ConstFromFile(root, DType::kFloat32, "missing.npy");
  EXPECT_NE(RunError(root, missing).find("cannot read"), std::string::npos);
  auto frac = root.AddNode("Const", {}, {{"dtype", "int32"}, {"value", {1.5}}});
  EXPECT_NE(RunError(root, frac).find("not an integer"), std::string::npos);
  auto both = root.AddNode("Const", {}, {{"dtype", "int32"}, {"value", {1}}, {"file", "b.npy"}});
  EXPECT_NE(RunError(root, both).find("exactly one of attrs 'value' and 'file'"),
            std::string::npos);
}

TEST(BasicBlocksTest, IntegersWrapAndConstRangesAreChecked) {
  Scope root = Scope::NewRootScope();
  auto big = ops::Const(root, Tensor::FromVector<int32_t>({2147483647, -2147483647 - 1}));
  auto one = ops::Const(root, Tensor::FromVector<int32_t>({1, 1}));
  EXPECT_EQ(Values(RunOne(root, ops::Add(root, big, one))),
            (std::vector<double>{-2147483648.0, -2147483647.0}));
  EXPECT_EQ(Values(RunOne(root, ops::Sub(root, big, one))),
            (std::vector<double>{2147483646.0, 2147483647.0}));
  auto too_big = root.AddNode("Const", {}, {{"dtype", "int32"}, {"value", {3000000000ll}}});
  EXPECT_NE(RunError(root, too_big).find("3000000000, which is out of range for int32"),
            std::string::npos);
  auto huge_u =
      root.AddNode("Const", {}, {{"dtype", "int64"}, {"value", {18446744073709551615ull}}});
  EXPECT_NE(RunError(root, huge_u).find("out of range for int64"), std::string::npos);
  auto bad_shape = root.AddNode(
      "Const", {}, {{"dtype", "int64"}, {"shape", {18446744073709551615ull}}, {"value", 1}});
  EXPECT_NE(RunError(root, bad_shape).find("attr 'shape' must be a list of dimensions"),
            std::string::npos);
}

TEST(BasicBlocksTest, NonFiniteConstantsSurviveSaveAndLoad) {
  Scope root = Scope::NewRootScope();
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  auto c = ops::Const(root.WithOpName("c"), Tensor::FromVector<float>({1, nan, inf, -inf}));
  const std::string json = SerializeGraph(root.graph());
  EXPECT_NE(json.find(R"("value": [1.0, "nan", "inf", "-inf"])"), std::string::npos) << json;
  auto loaded = ParseGraphJson(json, "g.json", ".");
  ASSERT_TRUE(loaded.ok());
  Session s(*loaded);
  std::vector<Tensor> out;
  ASSERT_TRUE(s.Run({}, {"c"}, &out).ok());
  EXPECT_TRUE(out[0].BitwiseEquals(RunOne(root, c)));
  EXPECT_TRUE(std::isnan(out[0].GetAsDouble(1)));
}

TEST(BasicBlocksTest, NarrowUniformNeverPilesUpAtZero) {
  Scope root = Scope::NewRootScope();
  auto shape = ops::Const(root, Tensor::FromVector<int32_t>({1 << 16}));
  for (DType d : {DType::kBFloat16, DType::kFloat16}) {
    Tensor t = RunOne(root, ops::RandomUniform(root, shape, d, 5));
    int64_t zeros = 0;
    for (int64_t i = 0; i < t.num_elements(); ++i) zeros += t.GetAsDouble(i) == 0.0;
    const double expected =
        static_cast<double>(t.num_elements()) / (d == DType::kBFloat16 ? 256 : 2048);
    EXPECT_LT(zeros, 3 * expected + 10) << DTypeName(d);
    EXPECT_LT(t.Stats().max, 1.0);
  }
}

TEST(BasicBlocksTest, LargeConstantsAreBuiltOnlyWhenTheGraphRuns) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(BLOCKFLOW_TEST_TMP) / "large_const";
  fs::create_directories(dir);
  Tensor big(DType::kFloat32, Shape{300, 300});
  big.SetFromDouble(89999, 7.0);
  ASSERT_TRUE(WriteNpy((dir / "big.npy").string(), big).ok());
  RegisterBuiltinBlocks();
  Scope root = Scope::NewRootScope();
  root.graph().base_dir = dir.string();
  auto file = ops::ConstFromFile(root.WithOpName("file"), DType::kFloat32, "big.npy");
  auto fill = root.WithOpName("fill").AddNode(
      "Const", {}, {{"dtype", "float64"}, {"shape", {512, 512}}, {"value", 0.5}});
  auto small = ops::Const(root.WithOpName("small"), Tensor::FromVector<int32_t>({1, 2}));
  GraphAnalysis a = AnalyzeGraph(root.graph());
  ASSERT_TRUE(a.ok()) << a.issues[0].ToString();
  EXPECT_EQ(a.nodes[0].outputs[0].shape, (Shape{300, 300}));
  EXPECT_EQ(a.nodes[0].outputs[0].value, nullptr);  // header only
  EXPECT_EQ(a.nodes[1].outputs[0].value, nullptr);
  ASSERT_NE(a.nodes[2].outputs[0].value, nullptr);  // small: known for shape functions
  EXPECT_TRUE(RunOne(root, file).BitwiseEquals(big));
  EXPECT_EQ(RunOne(root, fill).GetAsDouble(512 * 512 - 1), 0.5);
  auto bad_fill =
      root.AddNode("Const", {}, {{"dtype", "int32"}, {"shape", {512, 512}}, {"value", 0.5}});
  EXPECT_NE(RunError(root, bad_fill).find("not an integer"), std::string::npos);
}

TEST(BasicBlocksTest, HugeTensorsAreErrorsNotCrashes) {
  Scope root = Scope::NewRootScope();
  auto huge = root.AddNode(
      "Const", {}, {{"dtype", "float32"}, {"shape", {100000, 100000, 100000}}, {"value", 1}});
  EXPECT_NE(RunError(root, huge).find("cannot allocate float32[100000,100000,100000] (4 PB)"),
            std::string::npos)
      << RunError(root, huge);
  auto dims = ops::Const(root, Tensor::FromVector<int64_t>({1ll << 40, 1ll << 40}));
  auto fill = ops::Fill(root, dims, ops::Const(root, Tensor::Scalar<float>(1)));
  // Refused at analysis by the memory limit, before any allocation.
  EXPECT_NE(RunError(root, fill).find("more than the memory limit of"), std::string::npos)
      << RunError(root, fill);
  EXPECT_EQ((Shape{1ll << 40, 1ll << 40}).num_elements(), std::numeric_limits<int64_t>::max());
  EXPECT_FALSE(Tensor::Create(DType::kFloat64, Shape{1ll << 62}).ok());
}

}  // namespace
}  // namespace blockflow
