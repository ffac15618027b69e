// Looking at tensors: a 2-D slice of any tensor (layout-aware for rank 4), a heatmap image of
// a slice with a diverging colormap centred on 0, and a table model over a slice.
#pragma once

#include <QAbstractTableModel>
#include <QColor>
#include <QImage>
#include <QString>

#include "core/tensor.h"

namespace blockflow::editor {

/// How a rank-4 tensor maps to (batch, channel, rows, cols).
enum class SliceLayout { kNHWC, kNCHW, kHWIO };

/// A 2-D view into a tensor: element (r, c) is at flat index base + r*row_stride + c*col_stride.
struct Slice2D {
  int64_t rows = 1, cols = 1;
  int64_t base = 0, row_stride = 0, col_stride = 0;
  int64_t num_batches = 1, num_channels = 1;  // ranges of the two selectors (1: no selector)
  int64_t batch = 0, channel = 0;             // the chosen (clamped) selector values
  QString batch_label = "batch", channel_label = "channel", description;
  int64_t Offset(int64_t r, int64_t c) const { return base + r * row_stride + c * col_stride; }
};

/// The slice of `shape` at (batch, channel) for `layout`; out-of-range selectors are clamped.
Slice2D MakeSlice(const Shape& shape, SliceLayout layout, int64_t batch, int64_t channel);
/// The diverging colour for t in [-1, 1] (blue, light grey at 0, red).
QColor DivergingColor(double t);
/// One pixel per element; colours scaled by `scale` when it is > 0 (e.g. the whole tensor's
/// FiniteAbsMax, so that slices compare), else by the largest finite |value| of the slice. The
/// scale used is returned in `abs_max`. NaN is magenta.
QImage HeatmapImage(const Tensor& tensor, const Slice2D& slice, double* abs_max = nullptr,
                    double scale = 0);
/// The largest finite |value| of the whole tensor (0 when there is none).
double FiniteAbsMax(const Tensor& tensor);
/// A horizontal colour bar of the colormap.
QImage ColorBarImage(int width, int height);
/// A value as the tables show it (integers exactly, floats with 6 significant digits).
QString FormatValue(const Tensor& tensor, int64_t index);

/// A table model over a tensor slice.
class TensorSliceModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  using QAbstractTableModel::QAbstractTableModel;
  void SetSlice(const Tensor& tensor, const Slice2D& slice);
  void ClearSlice();
  // Qt's signatures, default arguments included.
  // NOLINTBEGIN(google-default-arguments)
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  // NOLINTEND(google-default-arguments)
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  Tensor tensor_;
  Slice2D slice_;
  bool has_ = false;
};

}  // namespace blockflow::editor
