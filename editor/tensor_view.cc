#include "editor/tensor_view.h"

#include <QPainter>
#include <algorithm>
#include <cmath>
#include <limits>

namespace blockflow::editor {

Slice2D MakeSlice(const Shape& shape, SliceLayout layout, int64_t batch, int64_t channel) {
  Slice2D s;
  const int rank = shape.rank();
  std::vector<int64_t> stride(static_cast<size_t>(rank), 1);
  for (int i = rank - 2; i >= 0; --i)
    stride[static_cast<size_t>(i)] = stride[static_cast<size_t>(i) + 1] * shape.dim(i + 1);
  auto dim = [&](int i) { return shape.dim(i); };
  auto st = [&](int i) { return stride[static_cast<size_t>(i)]; };
  int b = -1, ch = -1, r = -1, c = -1;
  if (rank == 1) {
    c = 0;
  } else if (rank == 2) {
    r = 0, c = 1;
  } else if (rank == 3) {
    b = 0, r = 1, c = 2;
    s.batch_label = "index 0";
  } else if (rank == 4) {
    switch (layout) {
      case SliceLayout::kNHWC:
        b = 0, r = 1, c = 2, ch = 3;
        s.description = "NHWC: rows H, columns W";
        break;
      case SliceLayout::kNCHW:
        b = 0, ch = 1, r = 2, c = 3;
        s.description = "NCHW: rows H, columns W";
        break;
      case SliceLayout::kHWIO:
        r = 0, c = 1, b = 2, ch = 3;
        s.batch_label = "in";
        s.channel_label = "out";
        s.description = "HWIO: rows H, columns W";
        break;
    }
  } else if (rank > 4) {
    r = rank - 2, c = rank - 1;
    s.batch_label = "leading index";
  }
  if (r >= 0) s.rows = dim(r), s.row_stride = st(r);
  if (c >= 0) s.cols = dim(c), s.col_stride = st(c);
  if (rank > 4) {
    s.num_batches = 1;
    for (int i = 0; i < rank - 2; ++i) s.num_batches *= dim(i);
    s.batch = std::clamp<int64_t>(batch, 0, std::max<int64_t>(s.num_batches - 1, 0));
    s.base = s.batch * st(rank - 3);
    return s;
  }
  if (b >= 0) {
    s.num_batches = dim(b);
    s.batch = std::clamp<int64_t>(batch, 0, std::max<int64_t>(s.num_batches - 1, 0));
    s.base += s.batch * st(b);
  }
  if (ch >= 0) {
    s.num_channels = dim(ch);
    s.channel = std::clamp<int64_t>(channel, 0, std::max<int64_t>(s.num_channels - 1, 0));
    s.base += s.channel * st(ch);
  }
  return s;
}

QColor DivergingColor(double t) {
  // Moreland's cool-warm map, sampled at five points and interpolated linearly.
  static const double kStops[5][3] = {
      {59, 76, 192}, {141, 176, 254}, {221, 221, 221}, {244, 154, 123}, {180, 4, 38}};
  if (std::isnan(t)) t = 0;  // callers colour NaN themselves; never index out of the table
  const double u = std::clamp((t + 1) * 2, 0.0, 4.0);
  const int i = std::min(static_cast<int>(u), 3);
  const double f = u - i;
  auto mix = [&](int k) {
    return static_cast<int>(std::lround(kStops[i][k] * (1 - f) + kStops[i + 1][k] * f));
  };
  return QColor(mix(0), mix(1), mix(2));
}

double FiniteAbsMax(const Tensor& tensor) {
  double m = 0;
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    const double v = tensor.GetAsDouble(i);
    if (std::isfinite(v)) m = std::max(m, std::abs(v));
  }
  return m;
}

QImage HeatmapImage(const Tensor& tensor, const Slice2D& s, double* abs_max, double scale) {
  if (abs_max) *abs_max = 0;
  // An empty slice ([3e9, 0] too: no walking 3e9 empty rows), or one no image can hold.
  constexpr int64_t kMaxSide = std::numeric_limits<int>::max();
  if (s.rows <= 0 || s.cols <= 0 || s.rows > kMaxSide || s.cols > kMaxSide) return QImage();
  double m = 0;
  const int64_t n = tensor.num_elements();
  for (int64_t r = 0; r < s.rows && !(scale > 0); ++r) {
    for (int64_t c = 0; c < s.cols; ++c) {
      const int64_t i = s.Offset(r, c);
      if (i >= n) continue;
      const double v = tensor.GetAsDouble(i);
      if (std::isfinite(v)) m = std::max(m, std::abs(v));
    }
  }
  if (scale > 0) m = scale;
  if (abs_max) *abs_max = m;
  QImage img(static_cast<int>(s.cols), static_cast<int>(s.rows), QImage::Format_RGB32);
  if (img.isNull()) return QImage();  // too large to allocate: no scanLine to write
  for (int64_t r = 0; r < s.rows; ++r) {
    auto* line = reinterpret_cast<QRgb*>(img.scanLine(static_cast<int>(r)));
    for (int64_t c = 0; c < s.cols; ++c) {
      const int64_t i = s.Offset(r, c);
      const double v = i < n ? tensor.GetAsDouble(i) : 0.0;
      QColor color;
      if (std::isnan(v)) {
        color = QColor(255, 0, 255);
      } else if (std::isinf(v)) {
        color = v > 0 ? QColor(110, 0, 20) : QColor(20, 25, 110);
      } else {
        // Divide (not multiply by 1/m): 1/m overflows to inf when m is subnormal, and 0*inf is NaN.
        color = DivergingColor(m > 0 ? v / m : 0.0);
      }
      line[c] = color.rgb();
    }
  }
  return img;
}

QImage ColorBarImage(int width, int height) {
  QImage img(width, height, QImage::Format_RGB32);
  for (int x = 0; x < width; ++x) {
    const QRgb c = DivergingColor(2.0 * x / std::max(width - 1, 1) - 1).rgb();
    for (int y = 0; y < height; ++y) img.setPixel(x, y, c);
  }
  return img;
}

QString FormatValue(const Tensor& tensor, int64_t index) {
  const double v = tensor.GetAsDouble(index);
  if (!IsFloatingDType(tensor.dtype())) return QString::number(static_cast<qlonglong>(v));
  return QString::number(v, 'g', 6);
}

void TensorSliceModel::SetSlice(const Tensor& tensor, const Slice2D& slice) {
  beginResetModel();
  tensor_ = tensor;
  slice_ = slice;
  has_ = true;
  endResetModel();
}

void TensorSliceModel::ClearSlice() {
  beginResetModel();
  has_ = false;
  tensor_ = Tensor();
  endResetModel();
}

// Rows or columns of the table: none when the slice is empty (a [0, 3000000000] slice has no
// cells, and 3e9 does not fit an int), at most INT_MAX.
static int TableCount(const Slice2D& s, int64_t n) {
  if (s.rows <= 0 || s.cols <= 0) return 0;
  return static_cast<int>(std::min<int64_t>(n, std::numeric_limits<int>::max()));
}

// NOLINTBEGIN(google-default-arguments): Qt's signatures (the default is in the header).
int TensorSliceModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !has_ ? 0 : TableCount(slice_, slice_.rows);
}
int TensorSliceModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() || !has_ ? 0 : TableCount(slice_, slice_.cols);
}
// NOLINTEND(google-default-arguments)

QVariant TensorSliceModel::data(const QModelIndex& index, int role) const {
  if (!has_ || !index.isValid()) return {};
  const int64_t i = slice_.Offset(index.row(), index.column());
  if (i >= tensor_.num_elements()) return {};
  if (role == Qt::DisplayRole) return FormatValue(tensor_, i);
  if (role == Qt::TextAlignmentRole) return static_cast<int>(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ToolTipRole) return QString("flat index %1").arg(i);
  return {};
}

QVariant TensorSliceModel::headerData(int section, Qt::Orientation, int role) const {
  if (role == Qt::DisplayRole) return section;
  return {};
}

}  // namespace blockflow::editor
