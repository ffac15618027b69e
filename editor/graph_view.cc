#include "editor/graph_view.h"

#include <QKeyEvent>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "editor/graph_scene.h"
#include "editor/panner.h"

namespace blockflow::editor {

namespace {
constexpr double kMinZoom = 0.15, kMaxZoom = 3.0;
// Small graphs are shown a little larger than 100%, not blown up to fill the canvas.
constexpr double kMaxFitZoom = 1.3;
}  // namespace

GraphView::GraphView(GraphScene* scene, QWidget* parent) : QGraphicsView(scene, parent) {
  setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing |
                 QPainter::SmoothPixmapTransform);
  setDragMode(QGraphicsView::RubberBandDrag);
  setRubberBandSelectionMode(Qt::IntersectsItemShape);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setResizeAnchor(QGraphicsView::AnchorViewCenter);
  setViewportUpdateMode(QGraphicsView::FullViewportUpdate);
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setFrameShape(QFrame::NoFrame);
  setAcceptDrops(true);
  setFocusPolicy(Qt::StrongFocus);
  new Panner(this);  // middle drag, or Space + left drag
}

void GraphView::FitToGraph() {
  QRectF r;
  for (QGraphicsItem* item : scene()->items()) {
    if (item->parentItem() == nullptr) r |= item->sceneBoundingRect();
  }
  if (r.isEmpty()) {
    ResetZoom();
    centerOn(0, 0);
    return;
  }
  r.adjust(-40, -40, 40, 40);
  fitInView(r, Qt::KeepAspectRatio);
  if (zoom() > kMaxFitZoom) {
    const double f = kMaxFitZoom / zoom();
    scale(f, f);
  }
  // No lower limit: the whole graph is shown however large it is.
  centerOn(r.center());
}

double GraphView::MinZoom() const {
  // Far enough out to see the whole graph, which may need less than kMinZoom.
  const QRectF r = scene()->itemsBoundingRect().adjusted(-40, -40, 40, 40);
  const QRect vp = viewport()->rect();
  if (r.isEmpty() || vp.isEmpty()) return kMinZoom;
  return std::min(kMinZoom, 0.9 * std::min(vp.width() / r.width(), vp.height() / r.height()));
}

void GraphView::ZoomBy(double factor) {
  const double z = zoom();
  const double target = std::clamp(z * factor, std::min(MinZoom(), z), kMaxZoom);
  const double f = target / z;
  scale(f, f);
}

void GraphView::ResetZoom() {
  const QPointF c = mapToScene(viewport()->rect().center());
  setTransform(QTransform());
  centerOn(c);
}

bool GraphView::event(QEvent* event) {
  // Tab would otherwise move the keyboard focus away from the canvas.
  if (event->type() == QEvent::KeyPress && static_cast<QKeyEvent*>(event)->key() == Qt::Key_Tab) {
    const QPoint local = mapFromGlobal(QCursor::pos());
    const QPoint at = viewport()->rect().contains(local) ? local : viewport()->rect().center();
    emit quickAddRequested(mapToScene(at), viewport()->mapToGlobal(at));
    return true;
  }
  return QGraphicsView::event(event);
}

void GraphView::wheelEvent(QWheelEvent* event) {
  const double steps = event->angleDelta().y() / 120.0;
  if (steps == 0) return;
  ZoomBy(std::pow(1.15, steps));
  event->accept();
}

}  // namespace blockflow::editor
