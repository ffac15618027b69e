// ResultPanel: the outputs of the selected node after a run: statistics, a heatmap of a chosen
// 2-D slice (batch/channel selectors, layout from the output port's schema) and a value table.
#pragma once

#include <QImage>
#include <QWidget>
#include <vector>

#include "core/tensor.h"
#include "editor/tensor_view.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QSpinBox;
class QTableView;

namespace blockflow::editor {
class HeatmapView;
}

namespace blockflow::editor {

class ResultPanel : public QWidget {
  Q_OBJECT

 public:
  explicit ResultPanel(QWidget* parent = nullptr);
  /// Shows a node's outputs. `names` and `layouts` describe the outputs in schema order (the
  /// last entry repeats for variadic outputs); a layout ("NHWC", "NCHW", "HWIO"; "" for NHWC)
  /// is the one shown first for a rank-4 output.
  void ShowOutputs(const QString& node_id, const std::vector<Tensor>& outputs,
                   const QStringList& names, const QStringList& layouts, const QString& note);
  /// Shows a message instead of results.
  void ShowMessage(const QString& message);

  /// For tests and scripted checks.
  const QImage& heatmap() const { return heatmap_; }
  TensorSliceModel* model() const { return model_; }
  QString StatsText() const;
  /// The layout the heatmap slices a rank-4 output in ("NHWC", "NCHW", "HWIO").
  QString LayoutText() const;
  /// The chosen channel (the selector under the stats).
  int channel() const;
  void SetChannel(int channel);
  /// Colours scaled per slice (true) or over the whole tensor (false, the default).
  QCheckBox* per_slice_scale() const { return per_slice_; }
  /// The |value| that the heatmap's colour scale ends at.
  double ScaleAbsMax() const { return scale_abs_max_; }

 private:
  void Refresh();
  void ShowLayoutOf(int output);

  std::vector<Tensor> outputs_;
  QStringList layouts_;
  QString shown_id_;  // the node whose outputs are shown ("" for a message)
  QLabel* title_;
  QWidget* body_;
  QComboBox* output_combo_;
  QLabel* stats_;
  QComboBox* layout_combo_;
  QLabel* batch_label_;
  QSpinBox* batch_spin_;
  QLabel* channel_label_;
  QSpinBox* channel_spin_;
  HeatmapView* image_view_;
  QLabel* scale_min_;
  QLabel* scale_max_;
  QLabel* colorbar_;
  QLabel* slice_note_;
  QCheckBox* per_slice_;
  std::vector<double> tensor_abs_max_;  // per output, computed once
  double scale_abs_max_ = 0;
  QTableView* table_;
  TensorSliceModel* model_;
  QImage heatmap_;
};

}  // namespace blockflow::editor
