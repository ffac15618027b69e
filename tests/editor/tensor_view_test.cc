// Slices, heatmaps and their colours (NaN, subnormal scales), and the value table.
#include "editor/tensor_view.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace blockflow::editor {
namespace {

TEST(MakeSlice, FollowsNhwcAndNchw) {
  const Shape s{2, 3, 4, 5};
  Slice2D nhwc = MakeSlice(s, SliceLayout::kNHWC, 1, 2);
  EXPECT_EQ(nhwc.rows, 3);
  EXPECT_EQ(nhwc.cols, 4);
  EXPECT_EQ(nhwc.num_batches, 2);
  EXPECT_EQ(nhwc.num_channels, 5);
  EXPECT_EQ(nhwc.Offset(2, 3), 1 * 60 + 2 * 20 + 3 * 5 + 2);
  Slice2D nchw = MakeSlice(s, SliceLayout::kNCHW, 1, 2);
  EXPECT_EQ(nchw.rows, 4);
  EXPECT_EQ(nchw.cols, 5);
  EXPECT_EQ(nchw.num_channels, 3);
  EXPECT_EQ(nchw.Offset(3, 4), 1 * 60 + 2 * 20 + 3 * 5 + 4);
  Slice2D hwio = MakeSlice(s, SliceLayout::kHWIO, 3, 1);
  EXPECT_EQ(hwio.rows, 2);
  EXPECT_EQ(hwio.cols, 3);
  EXPECT_EQ(hwio.Offset(1, 2), 60 + 2 * 20 + 3 * 5 + 1);
}

TEST(MakeSlice, ClampsSelectorsAndHandlesLowRanks) {
  Slice2D s = MakeSlice(Shape{2, 3, 4, 5}, SliceLayout::kNHWC, 9, -4);
  EXPECT_EQ(s.batch, 1);
  EXPECT_EQ(s.channel, 0);
  Slice2D v = MakeSlice(Shape{7}, SliceLayout::kNHWC, 0, 0);
  EXPECT_EQ(v.rows, 1);
  EXPECT_EQ(v.cols, 7);
  EXPECT_EQ(v.Offset(0, 6), 6);
  Slice2D scalar = MakeSlice(Shape{}, SliceLayout::kNHWC, 0, 0);
  EXPECT_EQ(scalar.rows * scalar.cols, 1);
  Slice2D r3 = MakeSlice(Shape{3, 2, 2}, SliceLayout::kNHWC, 2, 0);
  EXPECT_EQ(r3.Offset(1, 1), 2 * 4 + 3);
}

TEST(Heatmap, DivergingColormapIsCentredOnZero) {
  EXPECT_EQ(DivergingColor(0), QColor(221, 221, 221));
  EXPECT_EQ(DivergingColor(-1), QColor(59, 76, 192));
  EXPECT_EQ(DivergingColor(1), QColor(180, 4, 38));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor t = Tensor::FromVector<float>({-2, 0, 1, nan}, Shape{2, 2});
  double abs_max = 0;
  QImage img = HeatmapImage(t, MakeSlice(t.shape(), SliceLayout::kNHWC, 0, 0), &abs_max);
  EXPECT_EQ(abs_max, 2);
  ASSERT_EQ(img.size(), QSize(2, 2));
  EXPECT_EQ(QColor(img.pixel(0, 0)), DivergingColor(-1));
  EXPECT_EQ(QColor(img.pixel(1, 0)), DivergingColor(0));
  EXPECT_EQ(QColor(img.pixel(0, 1)), DivergingColor(0.5));
  EXPECT_EQ(QColor(img.pixel(1, 1)), QColor(255, 0, 255));
}

TEST(TensorSliceModel, ShowsTheChosenSlice) {
  std::vector<int32_t> v(24);
  for (int i = 0; i < 24; ++i) v[static_cast<size_t>(i)] = i;
  Tensor t = Tensor::FromVector<int32_t>(v, Shape{1, 3, 4, 2});
  TensorSliceModel model;
  model.SetSlice(t, MakeSlice(t.shape(), SliceLayout::kNHWC, 0, 1));
  EXPECT_EQ(model.rowCount(), 3);
  EXPECT_EQ(model.columnCount(), 4);
  EXPECT_EQ(model.data(model.index(2, 3), Qt::DisplayRole).toString(), "23");
  EXPECT_EQ(model.data(model.index(0, 0), Qt::DisplayRole).toString(), "1");
}

TEST(Heatmap, HeatmapOfTinyValuesDoesNotProduceNaNColours) {
  // |max| is subnormal: 1/max overflows to inf and 0 * inf is NaN.
  const double tiny = 1e-310;
  Tensor t = Tensor::FromVector<double>(
      {0.0, tiny, -tiny, std::numeric_limits<double>::quiet_NaN()}, Shape{2, 2});
  const Slice2D s = MakeSlice(t.shape(), SliceLayout::kNHWC, 0, 0);
  double m = 0;
  const QImage img = HeatmapImage(t, s, &m);
  ASSERT_EQ(img.width(), 2);
  EXPECT_EQ(img.pixelColor(0, 0), DivergingColor(0));
  EXPECT_EQ(img.pixelColor(1, 0), DivergingColor(1));
  EXPECT_EQ(img.pixelColor(0, 1), DivergingColor(-1));
  EXPECT_EQ(img.pixelColor(1, 1), QColor(255, 0, 255));
}

TEST(Heatmap, DivergingColorOfNaNIsDefined) {
  const QColor c = DivergingColor(std::numeric_limits<double>::quiet_NaN());
  EXPECT_TRUE(c.isValid());
  EXPECT_EQ(DivergingColor(std::numeric_limits<double>::infinity()), DivergingColor(1));
  EXPECT_EQ(DivergingColor(-std::numeric_limits<double>::infinity()), DivergingColor(-1));
}

}  // namespace
}  // namespace blockflow::editor
