// Panner: pans a QGraphicsView by its scroll bars with a middle drag, or a left drag while Space
// is held (as most canvas editors do). An event filter on the view (Space) and its viewport
// (the mouse), so the view itself keeps Qt's own handling of every other event.
//
//   new Panner(view);  // owned by the view
#pragma once

#include <QEvent>
#include <QObject>
#include <QPoint>

class QGraphicsView;
class QKeyEvent;
class QMouseEvent;

namespace blockflow::editor {

class Panner : public QObject {
 public:
  /// Installs itself on `view` and its viewport; `view` owns it.
  explicit Panner(QGraphicsView* view);
  /// True between the press and the release of a panning drag.
  bool panning() const { return panning_; }

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  bool OnSpace(QKeyEvent* event, bool held);
  bool OnMouse(QEvent::Type type, QMouseEvent* event);

  QGraphicsView* view_;
  bool space_held_ = false;
  bool panning_ = false;
  QPoint last_;
};

}  // namespace blockflow::editor
