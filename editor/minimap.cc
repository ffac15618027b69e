#include "editor/minimap.h"

#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QTimer>
#include <algorithm>

#include "editor/graph_scene.h"
#include "editor/graph_view.h"
#include "editor/theme.h"

namespace blockflow::editor {

namespace {
constexpr int kWidth = 240, kHeight = 150, kMargin = 12, kInset = 6;
}  // namespace

Minimap::Minimap(GraphView* view, GraphScene* scene)
    : QWidget(view->viewport()), view_(view), scene_(scene) {
  setObjectName("minimap");
  setFixedSize(kWidth, kHeight);
  setCursor(Qt::PointingHandCursor);
  setToolTip("Overview: click or drag to move the view");
  view_->viewport()->installEventFilter(this);
  connect(scene_, &QGraphicsScene::changed, this, [this] {
    // Many changes arrive at once (a relayout moves every node): one refresh for them all.
    if (refresh_pending_) return;
    refresh_pending_ = true;
    QTimer::singleShot(0, this, [this] {
      refresh_pending_ = false;
      Refresh();
    });
  });
  connect(view_->horizontalScrollBar(), &QScrollBar::valueChanged, this, [this] { update(); });
  connect(view_->verticalScrollBar(), &QScrollBar::valueChanged, this, [this] { update(); });
  Refresh();
  Place();
}

void Minimap::Refresh() {
  QRectF box;
  const Graph& g = scene_->document()->graph();
  for (const Node& n : g.nodes()) {
    if (NodeItem* item = scene_->FindNode(n.id)) box |= QRectF(item->pos(), item->body_size());
  }
  const double margin = std::max(box.width(), box.height()) * 0.04 + 20;
  box_ = box.isNull() ? QRectF() : box.adjusted(-margin, -margin, margin, margin);
  update();
}

double Minimap::Scale() const {
  if (box_.isEmpty()) return 1;
  return std::min((kWidth - 2.0 * kInset) / box_.width(), (kHeight - 2.0 * kInset) / box_.height());
}

QPointF Minimap::FromScene(QPointF p) const {
  const double s = Scale();
  // Centred in the widget.
  const QPointF offset((kWidth - box_.width() * s) / 2, (kHeight - box_.height() * s) / 2);
  return offset + (p - box_.topLeft()) * s;
}

QPointF Minimap::ToScene(QPointF p) const {
  const double s = Scale();
  const QPointF offset((kWidth - box_.width() * s) / 2, (kHeight - box_.height() * s) / 2);
  return box_.topLeft() + (p - offset) / s;
}

void Minimap::Place() {
  QWidget* vp = view_->viewport();
  move(vp->width() - kWidth - kMargin, vp->height() - kHeight - kMargin);
}

void Minimap::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  p.setPen(QPen(palette::kNodeBorder, 1));
  p.setBrush(QColor(0x17, 0x19, 0x1c, 225));
  p.drawRoundedRect(QRectF(0.5, 0.5, kWidth - 1, kHeight - 1), 6, 6);
  if (box_.isEmpty()) return;
  p.setRenderHint(QPainter::Antialiasing, false);
  p.setPen(Qt::NoPen);
  const double s = Scale();
  for (const Node& n : scene_->document()->graph().nodes()) {
    NodeItem* item = scene_->FindNode(n.id);
    if (!item) continue;
    const QPointF a = FromScene(item->pos());
    const QSizeF size = item->body_size() * s;
    QColor c = item->isSelected() ? palette::kSelection : CategoryColor(item->category());
    if (!item->isSelected() && item->has_issues()) c = palette::kError;
    p.setBrush(c);
    p.drawRect(QRectF(a, QSizeF(std::max(size.width(), 1.5), std::max(size.height(), 1.5))));
  }
  // The visible part of the canvas.
  const QRectF visible = view_->mapToScene(view_->viewport()->rect()).boundingRect();
  QRectF frame(FromScene(visible.topLeft()), FromScene(visible.bottomRight()));
  frame = frame.intersected(QRectF(1, 1, kWidth - 2, kHeight - 2));
  p.setRenderHint(QPainter::Antialiasing);
  p.setPen(QPen(QColor(0xe6, 0xe8, 0xeb, 200), 1.2));
  p.setBrush(QColor(0xe6, 0xe8, 0xeb, 28));
  p.drawRect(frame);
}

void Minimap::CenterViewAt(QPointF widget_pos) {
  if (box_.isEmpty()) return;
  view_->centerOn(ToScene(widget_pos));
  update();
}

void Minimap::mousePressEvent(QMouseEvent* event) {
  if (event->button() == Qt::LeftButton) CenterViewAt(event->position());
  event->accept();
}

void Minimap::mouseMoveEvent(QMouseEvent* event) {
  if (event->buttons() & Qt::LeftButton) CenterViewAt(event->position());
  event->accept();
}

bool Minimap::eventFilter(QObject* watched, QEvent* event) {
  if (watched == view_->viewport() && event->type() == QEvent::Resize) Place();
  return QWidget::eventFilter(watched, event);
}

}  // namespace blockflow::editor
