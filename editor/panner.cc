#include "editor/panner.h"

#include <QGraphicsView>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QScrollBar>

namespace blockflow::editor {

Panner::Panner(QGraphicsView* view) : QObject(view), view_(view) {
  view->installEventFilter(this);
  view->viewport()->installEventFilter(this);
}

bool Panner::eventFilter(QObject* watched, QEvent* event) {
  switch (event->type()) {
    case QEvent::KeyPress:
    case QEvent::KeyRelease:
      return watched == view_ &&
             OnSpace(static_cast<QKeyEvent*>(event), event->type() == QEvent::KeyPress);
    case QEvent::MouseButtonPress:
    case QEvent::MouseMove:
    case QEvent::MouseButtonRelease:
      return watched == view_->viewport() &&
             OnMouse(event->type(), static_cast<QMouseEvent*>(event));
    default:
      return false;
  }
}

bool Panner::OnSpace(QKeyEvent* event, bool held) {
  if (event->key() != Qt::Key_Space || event->isAutoRepeat()) return false;
  space_held_ = held;
  if (!panning_) view_->viewport()->setCursor(held ? Qt::OpenHandCursor : Qt::ArrowCursor);
  event->accept();
  return true;
}

bool Panner::OnMouse(QEvent::Type type, QMouseEvent* event) {
  const bool button = event->button() == Qt::MiddleButton ||
                      (event->button() == Qt::LeftButton && (space_held_ || panning_));
  if (type == QEvent::MouseButtonPress && button) {
    panning_ = true;
    view_->viewport()->setCursor(Qt::ClosedHandCursor);
  } else if (type == QEvent::MouseMove && panning_) {
    const QPoint d = event->pos() - last_;
    view_->horizontalScrollBar()->setValue(view_->horizontalScrollBar()->value() - d.x());
    view_->verticalScrollBar()->setValue(view_->verticalScrollBar()->value() - d.y());
  } else if (type == QEvent::MouseButtonRelease && panning_ && button) {
    panning_ = false;
    view_->viewport()->setCursor(space_held_ ? Qt::OpenHandCursor : Qt::ArrowCursor);
  } else {
    return false;
  }
  last_ = event->pos();
  event->accept();
  return true;
}

}  // namespace blockflow::editor
