// GraphView: the canvas widget. Wheel zooms about the cursor, middle drag or space+drag pans,
// left drag on empty canvas selects with a rubber band, Tab opens quick-add at the cursor.
#pragma once

#include <QGraphicsView>

namespace blockflow::editor {

class GraphScene;

class GraphView : public QGraphicsView {
  Q_OBJECT

 public:
  explicit GraphView(GraphScene* scene, QWidget* parent = nullptr);
  /// Fits the whole graph in view, magnifying at most 130% (and shrinking as far as it takes).
  void FitToGraph();
  /// The smallest zoom the wheel reaches: 0.15, or less when the graph needs it to fit.
  double MinZoom() const;
  void ZoomBy(double factor);
  void ResetZoom();
  double zoom() const { return transform().m11(); }

 signals:
  /// Tab pressed over the canvas: open quick-add at `scene_pos` (`global_pos` on screen).
  void quickAddRequested(QPointF scene_pos, QPoint global_pos);

 protected:
  /// Takes Tab (quick-add) before Qt moves the focus with it.
  bool event(QEvent* event) override;
  /// Zooms in or out, a step per wheel notch.
  void wheelEvent(QWheelEvent* event) override;
};

}  // namespace blockflow::editor
