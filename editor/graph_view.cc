#include "editor/graph_view.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QScrollBar>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "editor/graph_scene.h"

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

void GraphView::mousePressEvent(QMouseEvent* event) {
  if (event->button() == Qt::MiddleButton || (space_held_ && event->button() == Qt::LeftButton)) {
    panning_ = true;
    pan_last_ = event->pos();
    viewport()->setCursor(Qt::ClosedHandCursor);
    event->accept();
    return;
  }
  QGraphicsView::mousePressEvent(event);
}

void GraphView::mouseMoveEvent(QMouseEvent* event) {
  if (panning_) {
    const QPoint d = event->pos() - pan_last_;
    pan_last_ = event->pos();
    horizontalScrollBar()->setValue(horizontalScrollBar()->value() - d.x());
    verticalScrollBar()->setValue(verticalScrollBar()->value() - d.y());
    event->accept();
    return;
  }
  QGraphicsView::mouseMoveEvent(event);
}

void GraphView::mouseReleaseEvent(QMouseEvent* event) {
  if (panning_ && (event->button() == Qt::MiddleButton || event->button() == Qt::LeftButton)) {
    panning_ = false;
    viewport()->setCursor(space_held_ ? Qt::OpenHandCursor : Qt::ArrowCursor);
    event->accept();
    return;
  }
  QGraphicsView::mouseReleaseEvent(event);
}

bool GraphView::TrackSpace(QKeyEvent* event, bool held) {
  if (event->key() != Qt::Key_Space || event->isAutoRepeat()) return false;
  space_held_ = held;
  if (!panning_) viewport()->setCursor(held ? Qt::OpenHandCursor : Qt::ArrowCursor);
  event->accept();
  return true;
}

void GraphView::keyPressEvent(QKeyEvent* event) {
  if (!TrackSpace(event, /*held=*/true)) QGraphicsView::keyPressEvent(event);
}

void GraphView::keyReleaseEvent(QKeyEvent* event) {
  if (!TrackSpace(event, /*held=*/false)) QGraphicsView::keyReleaseEvent(event);
}

}  // namespace blockflow::editor
