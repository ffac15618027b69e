// Minimap: an overview of the whole graph in a corner of the canvas: every node as a small box
// in its category colour, the visible part of the canvas as a frame. Click or drag in it to
// move the view there. It follows the scene (edits, moves) and the view (pan, zoom).
#pragma once

#include <QRectF>
#include <QWidget>

namespace blockflow::editor {

class GraphScene;
class GraphView;

class Minimap : public QWidget {
  Q_OBJECT

 public:
  /// A child of `view`'s viewport, kept in its bottom-right corner.
  Minimap(GraphView* view, GraphScene* scene);
  /// The scene rectangle the minimap shows (the nodes' box, with a margin).
  QRectF SceneBox() const { return box_; }
  /// The scene point under widget point `p`.
  QPointF ToScene(QPointF p) const;
  /// The widget point of scene point `p`.
  QPointF FromScene(QPointF p) const;
  /// Recomputes the box and repaints (called on scene and view changes).
  void Refresh();

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void Place();
  void CenterViewAt(QPointF widget_pos);
  double Scale() const;

  GraphView* view_;
  GraphScene* scene_;
  QRectF box_;
  bool refresh_pending_ = false;
};

}  // namespace blockflow::editor
