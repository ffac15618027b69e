// Panning the canvas: a middle drag, or a left drag while Space is held, moves the view by the
// drag; a plain left drag is left to the view (rubber band, moving blocks).
#include "editor/panner.h"

#include <gtest/gtest.h>

#include <QApplication>
#include <QGraphicsScene>
#include <QGraphicsView>
#include <QMouseEvent>
#include <QScrollBar>
#include <QTest>

namespace blockflow::editor {
namespace {

class PannerTest : public ::testing::Test {
 protected:
  PannerTest() : scene_(-2000, -2000, 4000, 4000), view_(&scene_) {
    view_.resize(400, 300);
    panner_ = new Panner(&view_);
    view_.show();
    QApplication::processEvents();
  }

  // Sends a mouse event of `button` at `pos` (viewport coordinates) to the viewport.
  void Mouse(QEvent::Type type, Qt::MouseButton button, QPoint pos) {
    QWidget* vp = view_.viewport();
    const Qt::MouseButtons held = type == QEvent::MouseButtonRelease ? Qt::NoButton : button;
    QMouseEvent e(type, QPointF(pos), vp->mapToGlobal(QPointF(pos)),
                  type == QEvent::MouseMove ? Qt::NoButton : button, held, Qt::NoModifier);
    QCoreApplication::sendEvent(vp, &e);
  }
  // Drags with `button` from (200, 150) by `by`; returns how far the scroll bars moved.
  QPoint Drag(Qt::MouseButton button, QPoint by) {
    const QPoint start(200, 150);
    const QPoint before(view_.horizontalScrollBar()->value(), view_.verticalScrollBar()->value());
    Mouse(QEvent::MouseButtonPress, button, start);
    Mouse(QEvent::MouseMove, button, start + by / 2);
    Mouse(QEvent::MouseMove, button, start + by);
    during_ = panner_->panning();
    Mouse(QEvent::MouseButtonRelease, button, start + by);
    return QPoint(view_.horizontalScrollBar()->value(), view_.verticalScrollBar()->value()) -
           before;
  }

  QGraphicsScene scene_;
  QGraphicsView view_;
  Panner* panner_ = nullptr;
  bool during_ = false;
};

TEST_F(PannerTest, MiddleDragMovesTheViewWithTheMouse) {
  ASSERT_GT(view_.horizontalScrollBar()->maximum(), 100);
  EXPECT_EQ(Drag(Qt::MiddleButton, QPoint(-50, -30)), QPoint(50, 30));
  EXPECT_TRUE(during_);
  EXPECT_FALSE(panner_->panning());
  EXPECT_EQ(view_.viewport()->cursor().shape(), Qt::ArrowCursor);
}

TEST_F(PannerTest, LeftDragPansOnlyWhileSpaceIsHeld) {
  EXPECT_EQ(Drag(Qt::LeftButton, QPoint(-40, -20)), QPoint(0, 0));
  EXPECT_FALSE(during_);

  QTest::keyPress(&view_, Qt::Key_Space);
  EXPECT_EQ(view_.viewport()->cursor().shape(), Qt::OpenHandCursor);
  EXPECT_EQ(Drag(Qt::LeftButton, QPoint(-40, -20)), QPoint(40, 20));
  EXPECT_TRUE(during_);
  EXPECT_EQ(view_.viewport()->cursor().shape(), Qt::OpenHandCursor);

  QTest::keyRelease(&view_, Qt::Key_Space);
  EXPECT_EQ(view_.viewport()->cursor().shape(), Qt::ArrowCursor);
  EXPECT_EQ(Drag(Qt::LeftButton, QPoint(-40, -20)), QPoint(0, 0));
}

TEST_F(PannerTest, OtherKeysReachTheView) {
  // A key the panner does not take is handled by the view: arrow keys scroll it.
  const int before = view_.horizontalScrollBar()->value();
  QTest::keyClick(&view_, Qt::Key_Right);
  EXPECT_GT(view_.horizontalScrollBar()->value(), before);
}

}  // namespace
}  // namespace blockflow::editor
