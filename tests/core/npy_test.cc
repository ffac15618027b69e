#include "core/npy.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace blockflow {
namespace {
namespace fs = std::filesystem;

class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("bf_npy_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(NpyTest, RoundTripsEveryDTypeAndShape) {
  for (DType d : AllDTypes()) {
    for (const Shape& shape : {Shape{}, Shape{0}, Shape{3}, Shape{2, 0, 5}, Shape{2, 3, 4}}) {
      Tensor t(d, shape);
      for (int64_t i = 0; i < t.num_elements(); ++i)
        t.SetFromDouble(i, static_cast<double>(i % 7) - 3);
      const std::string path = Path("t.npy");
      ASSERT_TRUE(WriteNpy(path, t).ok());
      auto back = ReadNpy(path, d);
      ASSERT_TRUE(back.ok()) << back.status().message();
      EXPECT_TRUE(back->BitwiseEquals(t)) << DTypeName(d) << shape.ToString();
    }
  }
}

TEST_F(NpyTest, HeaderIsNumPyVersion1) {
  const std::string bytes = SerializeNpy(Tensor(DType::kFloat32, Shape{2, 3}));
  const std::string header = bytes.substr(10, static_cast<unsigned char>(bytes[8]));
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 0), 0u);
  EXPECT_EQ((10 + header.size()) % 64, 0u);
  EXPECT_EQ(header.back(), '\n');
  EXPECT_NE(SerializeNpy(Tensor(DType::kInt32, Shape{4})).find("'shape': (4,)"), std::string::npos);
  EXPECT_NE(SerializeNpy(Tensor(DType::kBFloat16, Shape{1})).find("'<u2'"), std::string::npos);
}

TEST_F(NpyTest, BFloat16IsReadOnlyWhenExpected) {
  Tensor b(DType::kBFloat16, Shape{2});
  b.SetFromDouble(0, 1.5);
  ASSERT_TRUE(WriteNpy(Path("b.npy"), b).ok());
  auto as_bf16 = ReadNpy(Path("b.npy"), DType::kBFloat16);
  ASSERT_TRUE(as_bf16.ok());
  EXPECT_EQ(as_bf16->GetAsDouble(0), 1.5);
  auto plain = ReadNpy(Path("b.npy"));
  ASSERT_FALSE(plain.ok());
  EXPECT_NE(plain.status().message().find("'<u2'"), std::string::npos);
}

TEST_F(NpyTest, BadFilesAreErrorsNamingTheFile) {
  const std::string good = SerializeNpy(Tensor::FromVector<float>({1, 2, 3}));
  struct Case {
    std::string bytes, expect;
  } cases[] = {
      {"hello world", "magic"},
      {good.substr(0, good.size() - 4), "needs 12 data bytes, file has 8"},
      {good + "xxxx", "file has 16"},
      {std::string(good).replace(good.find("<f4"), 3, ">f4"), "unsupported dtype '>f4'"},
      {std::string(good).replace(good.find("False"), 5, "Maybe"),
       "fortran_order must be True or False"},
      {std::string(good).replace(good.find("(3,)"), 4, "(a,)"), "bad shape"},
      {good.substr(0, 12), "truncated header"},
      {std::string(good).replace(good.find("(3,)"), 4, "(3,,)"), "bad shape"},
      {std::string(good).replace(good.find("(3,)"), 4, "3   "), "bad shape"},
      {std::string(good).replace(good.find("(3,)"), 4, "(99999999999999999999,)").substr(0, 0) +
           "x",
       "magic"},
  };
  for (const Case& c : cases) {
    std::ofstream(Path("bad.npy"), std::ios::binary) << c.bytes;
    auto r = ReadNpy(Path("bad.npy"));
    ASSERT_FALSE(r.ok()) << c.expect;
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("bad.npy"), std::string::npos);
  }
  auto wrong = ReadNpy(Path("none.npy"));
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("cannot read"), std::string::npos);
  ASSERT_TRUE(WriteNpy(Path("f.npy"), Tensor::FromVector<float>({1})).ok());
  auto mismatch = ReadNpy(Path("f.npy"), DType::kFloat64);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("expected float64"), std::string::npos);
  EXPECT_FALSE(ReadNpy(dir_.string()).ok());
}

TEST_F(NpyTest, HeaderOnlyReadChecksTheFileSize) {
  ASSERT_TRUE(WriteNpy(Path("h.npy"), Tensor(DType::kFloat64, Shape{3, 4})).ok());
  auto info = ReadNpyInfo(Path("h.npy"));
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->first, DType::kFloat64);
  EXPECT_EQ(info->second, (Shape{3, 4}));
  const std::string bytes = SerializeNpy(Tensor(DType::kFloat64, Shape{3, 4}));
  std::ofstream(Path("short.npy"), std::ios::binary) << bytes.substr(0, bytes.size() - 8);
  auto bad = ReadNpyInfo(Path("short.npy"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("needs 96 data bytes, file has 88"), std::string::npos)
      << bad.status().message();
  EXPECT_FALSE(ReadNpyInfo(Path("h.npy"), DType::kFloat32).ok());
}

TEST_F(NpyTest, BoolBytesAreNormalised) {
  Tensor b(DType::kBool, Shape{3});
  std::string bytes = SerializeNpy(b);
  bytes[bytes.size() - 2] = 7;
  auto t = ParseNpy(bytes, "b.npy");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(static_cast<const unsigned char*>(t->raw())[1], 1);
}

TEST_F(NpyTest, ReadsFortranOrder) {
  // A [2, 3] int32 array stored column-major: [[0, 1, 2], [3, 4, 5]] is written 0 3 1 4 2 5.
  Tensor c = Tensor::FromVector<int32_t>({0, 3, 1, 4, 2, 5}, Shape{2, 3});
  std::string bytes = SerializeNpy(c);
  bytes.replace(bytes.find("False"), 5, "True ");
  auto t = ParseNpy(bytes, "f.npy");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->shape(), (Shape{2, 3}));
  EXPECT_EQ(t->ToInt64Vector(), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
}

TEST_F(NpyTest, AtomicWriteLeavesNoTempFilesAndMakesFolders) {
  ASSERT_TRUE(WriteNpy(Path("a/b/c.npy"), Tensor::FromVector<int64_t>({1, 2})).ok());
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir_)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
  // A path under a regular file cannot be written: an error, not a crash.
  EXPECT_FALSE(WriteNpy(Path("a/b/c.npy/d.npy"), Tensor::FromVector<int64_t>({1})).ok());
}

// The slice of `t` along `axis`, element by element: what ReadNpySlice must match.
Tensor SliceByIndex(const Tensor& t, int axis, int64_t begin, int64_t count) {
  std::vector<int64_t> dims = t.shape().dims();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= dims[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < dims.size(); ++d) inner *= dims[d];
  const int64_t extent = dims[static_cast<size_t>(axis)];
  dims[static_cast<size_t>(axis)] = count;
  Tensor out(t.dtype(), Shape(dims));
  int64_t k = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t a = begin; a < begin + count; ++a) {
      for (int64_t i = 0; i < inner; ++i) {
        out.SetFromDouble(k++, t.GetAsDouble((o * extent + a) * inner + i));
      }
    }
  }
  return out;
}

TEST_F(NpyTest, SlicesMatchTheWholeArrayByteForByte) {
  // Small rows (read in blocks) and large ones (read piece by piece), every axis, uneven shares.
  for (const Shape& shape : {Shape{7, 3, 5}, Shape{3, 2, 17000}, Shape{2, 3, 2, 9000}}) {
    const bool large = shape.num_elements() > 1000;
    for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kBFloat16}) {
      if (large && dtype != DType::kFloat32) continue;
      Tensor t(dtype, shape);
      for (int64_t i = 0; i < t.num_elements(); ++i)
        t.SetFromDouble(i, static_cast<double>(i % 251));
      ASSERT_TRUE(WriteNpy(Path("a.npy"), t).ok());
      for (int axis = 0; axis < shape.rank(); ++axis) {
        const int64_t extent = shape.dim(axis);
        for (int64_t parts : {1, 2, 3, 4}) {  // 4 > 3: some shares are empty
          for (int64_t r = 0; r < parts; ++r) {
            const int64_t begin = extent * r / parts, end = extent * (r + 1) / parts;
            Expected<Tensor> s = ReadNpySlice(Path("a.npy"), axis, begin, end - begin, dtype);
            ASSERT_TRUE(s.ok()) << s.status().message();
            EXPECT_TRUE(s->BitwiseEquals(SliceByIndex(t, axis, begin, end - begin)))
                << shape.ToString() << " " << DTypeName(dtype) << " axis " << axis << " [" << begin
                << ", " << end << ")";
          }
        }
      }
    }
  }
}

TEST_F(NpyTest, BadSlicesNameTheFileAndTheRange) {
  ASSERT_TRUE(WriteNpy(Path("a.npy"), Tensor(DType::kFloat32, Shape{4, 3})).ok());
  Expected<Tensor> s = ReadNpySlice(Path("a.npy"), 0, 3, 2);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("a.npy: entries [3, 5) along axis 0 are outside its 4"),
            std::string::npos)
      << s.status().message();
  s = ReadNpySlice(Path("a.npy"), 2, 0, 1);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("cannot slice axis 2 of shape [4,3]"), std::string::npos);
  s = ReadNpySlice(Path("a.npy"), 0, 0, 1, DType::kFloat64);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("expected float64"), std::string::npos);
  EXPECT_FALSE(ReadNpySlice(Path("missing.npy"), 0, 0, 1).ok());
}

}  // namespace
}  // namespace blockflow
