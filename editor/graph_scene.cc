#include "editor/graph_scene.h"

#include <QGraphicsSceneContextMenuEvent>
#include <QGraphicsSceneDragDropEvent>
#include <QGraphicsSceneMouseEvent>
#include <QGraphicsView>
#include <QMenu>
#include <QMimeData>
#include <QPainter>
#include <QToolTip>
#include <algorithm>
#include <cmath>
#include <set>

#include "editor/inline_values.h"
#include "editor/theme.h"

namespace blockflow::editor {

GraphScene::GraphScene(GraphDocument* doc, QObject* parent) : QGraphicsScene(parent), doc_(doc) {
  setItemIndexMethod(QGraphicsScene::NoIndex);  // few items, many moves
  connect(doc_, &GraphDocument::graphChanged, this, [this](bool) { Sync(); });
  Sync();
}

NodeItem* GraphScene::FindNode(const std::string& id) const {
  auto it = nodes_.find(id);
  return it == nodes_.end() ? nullptr : it->second;
}

GraphScene::~GraphScene() {
  // Deleting selected items emits selectionChanged; nobody should see a half-destroyed scene.
  blockSignals(true);
  nodes_.clear();
  edges_.clear();
  clear();
}

void GraphScene::Sync() {
  const std::vector<std::string> selected_before = SelectedNodeIds();
  QSignalBlocker blocker(this);
  syncing_ = true;
  ClearDragTarget();
  const Graph& g = doc_->graph();
  const InlineIndex inline_index(g);  // inline Consts are drawn inside the node they feed
  std::set<std::string> live;
  for (const Node& node : g.nodes()) {
    if (inline_index.IsInline(node.id)) continue;
    live.insert(node.id);
    NodeItem* item = FindNode(node.id);
    if (!item) {
      item = new NodeItem(node.id);
      addItem(item);
      nodes_[node.id] = item;
      auto rs = run_states_.find(node.id);
      if (rs != run_states_.end()) {
        item->SetRunState(std::get<0>(rs->second), std::get<1>(rs->second),
                          std::get<2>(rs->second));
      }
    }
    item->SetContent(node, doc_->registry().Find(node.op), doc_->InfoFor(node.id),
                     doc_->IssuesFor(node.id), [this](const Endpoint& ep) -> const PortInfo* {
                       const NodeInfo* p = doc_->InfoFor(ep.node);
                       if (!p || ep.index < 0 || ep.index >= static_cast<int>(p->outputs.size()))
                         return nullptr;
                       return &p->outputs[static_cast<size_t>(ep.index)];
                     });
    item->SetInlineValues(inline_index.TextsOf(g, node.id));
    const QPointF p = NodePosition(node).value_or(QPointF(0, 0));
    if (item->pos() != p) item->setPos(p);
  }
  for (auto it = nodes_.begin(); it != nodes_.end();) {
    if (!live.count(it->first)) {
      NodeItem* dead = it->second;
      it = nodes_.erase(it);
      delete dead;
    } else {
      ++it;
    }
  }
  for (EdgeItem* e : edges_) delete e;
  edges_.clear();
  for (const Node& node : g.nodes()) {
    NodeItem* consumer = FindNode(node.id);
    if (!consumer) continue;  // an inline Const
    const OpSchema* schema = doc_->registry().Find(node.op);
    int fallback_row = 0;
    for (const auto& [port, eps] : node.inputs) {
      const int row = schema ? schema->InputIndex(port) : fallback_row++;
      if (row < 0 || row >= consumer->num_inputs()) continue;
      for (const Endpoint& ep : eps) {
        NodeItem* producer = FindNode(ep.node);
        if (!producer || ep.index < 0 || ep.index >= producer->num_outputs()) continue;
        auto* e =
            new EdgeItem(WireRef{ep, node.id, port}, DTypeColor(producer->OutputDType(ep.index)));
        e->to_row = row;
        addItem(e);
        edges_.push_back(e);
        UpdateEdge(e);
      }
    }
  }
  syncing_ = false;
  // Keep room around the graph for panning.
  setSceneRect(itemsBoundingRect().adjusted(-3000, -3000, 3000, 3000));
  blocker.unblock();
  if (SelectedNodeIds() != selected_before) emit selectionChanged();
}

void GraphScene::UpdateEdge(EdgeItem* e) {
  NodeItem* from = FindNode(e->wire().producer.node);
  NodeItem* to = FindNode(e->wire().consumer);
  if (!from || !to) return;
  e->SetEnds(from->OutputAnchor(e->wire().producer.index), to->InputAnchor(e->to_row));
}

void GraphScene::UpdateEdgesOf(const std::string& id) {
  if (syncing_) return;
  for (EdgeItem* e : edges_) {
    if (e->wire().producer.node == id || e->wire().consumer == id) UpdateEdge(e);
  }
}

std::vector<std::string> GraphScene::SelectedNodeIds() const {
  std::vector<std::string> ids;
  for (const Node& n : doc_->graph().nodes()) {
    NodeItem* item = FindNode(n.id);
    if (item && item->isSelected()) ids.push_back(n.id);
  }
  return ids;
}

std::vector<WireRef> GraphScene::SelectedWires() const {
  std::vector<WireRef> wires;
  for (EdgeItem* e : edges_) {
    if (e->isSelected()) wires.push_back(e->wire());
  }
  return wires;
}

void GraphScene::SelectNodes(const std::vector<std::string>& ids) {
  {
    const QSignalBlocker block(this);
    clearSelection();
    for (const std::string& id : ids) {
      if (NodeItem* item = FindNode(id)) item->setSelected(true);
    }
  }
  emit selectionChanged();
}

void GraphScene::DeleteSelection() {
  const auto ids = SelectedNodeIds();
  const auto wires = SelectedWires();
  if (ids.empty() && wires.empty()) return;
  doc_->Remove(ids, wires);
}

bool GraphScene::HandleDrop(const QMimeData* mime, QPointF scene_pos) {
  if (!mime || !mime->hasFormat(kOpMimeType)) return false;
  const std::string op = QString::fromUtf8(mime->data(kOpMimeType)).toStdString();
  Expected<std::string> id = doc_->AddNode(op, scene_pos - QPointF(20, 20));
  if (!id.ok()) {
    emit statusMessage(QString::fromStdString(id.status().message()), true);
    return false;
  }
  SelectNodes({*id});
  emit statusMessage(
      QString("Added %1 (%2)").arg(QString::fromStdString(*id), QString::fromStdString(op)), false);
  return true;
}

Status GraphScene::ConnectPorts(const PortItem* a, const PortItem* b) {
  if (a->is_output() == b->is_output()) {
    return InvalidArgument(a->is_output()
                               ? "refused: connect an output (right side) to an input (left side)"
                               : "refused: connect an input (left side) to an output (right side)");
  }
  const PortItem* out = a->is_output() ? a : b;
  const PortItem* in = a->is_output() ? b : a;
  return doc_->Connect(Endpoint{out->node_id(), out->index()}, in->node_id(), in->name());
}

void GraphScene::ForgetPortsOf(const NodeItem* node) {
  if (drag_target_ && drag_target_->parentItem() == node) ClearDragTarget();
}

void GraphScene::SetRunState(const std::string& id, RunState state, double ms,
                             const QString& message) {
  run_states_[id] = {state, ms, message};
  if (NodeItem* item = FindNode(id)) item->SetRunState(state, ms, message);
}

void GraphScene::ClearRunStates() {
  run_states_.clear();
  for (auto& [id, item] : nodes_) item->SetRunState(RunState::kIdle, -1, {});
}

PortItem* GraphScene::PortNear(QPointF scene_pos) const {
  // A generous hit area: sockets are small.
  PortItem* best = nullptr;
  double best_d = 14;
  for (QGraphicsItem* it : items(QRectF(scene_pos - QPointF(14, 14), QSizeF(28, 28)))) {
    if (it->type() != PortItem::Type) continue;
    const double d = QLineF(it->scenePos(), scene_pos).length();
    if (d < best_d) {
      best_d = d;
      best = static_cast<PortItem*>(it);
    }
  }
  return best;
}

void GraphScene::ClearDragTarget() {
  if (drag_target_) drag_target_->SetTargetState(0);
  drag_target_ = nullptr;
}

void GraphScene::mousePressEvent(QGraphicsSceneMouseEvent* event) {
  if (event->button() == Qt::LeftButton) {
    if (PortItem* p = PortNear(event->scenePos())) {
      drag_ = DragSource{p->node_id(), p->name(),  p->is_output(),
                         p->index(),   p->dtype(), p->scenePos()};
      detaching_.reset();
      // Dragging off a connected input picks its wire up by that end: dropped elsewhere it
      // is rewired, dropped on empty canvas it is detached.
      const Node* node = p->is_output() ? nullptr : doc_->graph().FindNode(p->node_id());
      const std::vector<Endpoint>* wired = nullptr;
      if (node) {
        auto it = node->inputs.find(p->name());
        if (it != node->inputs.end() && !it->second.empty()) wired = &it->second;
      }
      if (wired) {
        const Endpoint ep = wired->back();
        if (NodeItem* producer = FindNode(ep.node);
            producer && ep.index < producer->num_outputs()) {
          detaching_ = WireRef{ep, p->node_id(), p->name()};
          drag_ = DragSource{ep.node,
                             "",
                             true,
                             ep.index,
                             producer->OutputDType(ep.index),
                             producer->OutputAnchor(ep.index)};
          for (EdgeItem* e : edges_) {
            if (e->wire() == *detaching_) e->hide();
          }
        }
      }
      drag_wire_ = addPath(detaching_ ? EdgeItem::WirePath(drag_->anchor, event->scenePos())
                                      : EdgeItem::WirePath(p->scenePos(), event->scenePos()),
                           QPen(DTypeColor(drag_->dtype), 2.2, Qt::DashLine, Qt::RoundCap));
      drag_wire_->setZValue(5);
      event->accept();
      return;
    }
  }
  QGraphicsScene::mousePressEvent(event);
}

void GraphScene::mouseMoveEvent(QGraphicsSceneMouseEvent* event) {
  if (!drag_) {
    QGraphicsScene::mouseMoveEvent(event);
    return;
  }
  const QPointF pos = event->scenePos();
  PortItem* target = PortNear(pos);
  if (target && target->is_output() == drag_->is_output) target = nullptr;
  if (target != drag_target_) {
    ClearDragTarget();
    if (target) {
      const PortItem* out_port = drag_->is_output ? nullptr : target;
      const Endpoint from = drag_->is_output ? Endpoint{drag_->node_id, drag_->index}
                                             : Endpoint{out_port->node_id(), out_port->index()};
      const std::string consumer = drag_->is_output ? target->node_id() : drag_->node_id;
      const std::string port = drag_->is_output ? target->name() : drag_->port;
      const bool same = detaching_ && detaching_->consumer == consumer && detaching_->port == port;
      const Status st = same ? Status::OK() : doc_->CheckConnection(from, consumer, port);
      target->SetTargetState(st.ok() ? 1 : -1);
      drag_target_ = target;
      // Hover feedback lives at the cursor: the status bar is for what has happened.
      SetHoverFeedback(st.ok() ? QString() : QString::fromStdString(st.message()),
                       event->screenPos());
    } else {
      SetHoverFeedback(QString(), event->screenPos());
    }
  }
  const QPointF end = target ? target->scenePos() : pos;
  drag_wire_->setPath(drag_->is_output ? EdgeItem::WirePath(drag_->anchor, end)
                                       : EdgeItem::WirePath(end, drag_->anchor));
}

void GraphScene::mouseReleaseEvent(QGraphicsSceneMouseEvent* event) {
  if (!drag_) {
    QGraphicsScene::mouseReleaseEvent(event);
    CommitMoves();
    return;
  }
  const DragSource src = *drag_;
  drag_.reset();
  ClearDragTarget();
  SetHoverFeedback(QString(), event->screenPos());
  delete drag_wire_;
  drag_wire_ = nullptr;
  PortItem* target = PortNear(event->scenePos());
  if (detaching_) {
    const WireRef wire = *detaching_;
    detaching_.reset();
    FinishDetach(wire, target);
    return;
  }
  if (!target) {
    // Dropped on empty canvas (a real drag, not a click on the port): offer the blocks that
    // can take the wire.
    const QList<QGraphicsItem*> under = items(event->scenePos());
    const bool empty = std::none_of(under.begin(), under.end(),
                                    [](QGraphicsItem* it) { return it->type() == NodeItem::Type; });
    if (empty && QLineF(src.anchor, event->scenePos()).length() > 30) {
      WireFit fit;
      fit.from_output = src.is_output;
      if (src.is_output) {
        fit.dtypes = {src.dtype};
      } else if (const Node* n = doc_->graph().FindNode(src.node_id)) {
        if (const OpSchema* schema = doc_->registry().Find(n->op)) {
          const int pi = schema->InputIndex(src.port);
          if (pi >= 0) fit.dtypes = schema->inputs()[static_cast<size_t>(pi)].dtypes;
        }
      }
      emit wireDroppedOnCanvas(event->scenePos(),
                               WireEnd{src.node_id, src.port, src.is_output, src.index}, fit);
    }
    return;
  }
  NodeItem* node = FindNode(src.node_id);
  PortItem* source = node ? node->FindPort(src.is_output, src.port) : nullptr;
  if (!source || source == target) return;
  const std::string consumer = src.is_output ? target->node_id() : src.node_id;
  const std::string port = src.is_output ? target->name() : src.port;
  const Status st = ConnectPorts(source, target);
  if (!st.ok()) {
    emit statusMessage(QString::fromStdString(st.message()), true);
  } else {
    emit statusMessage(QString("Connected → %1.%2")
                           .arg(QString::fromStdString(consumer), QString::fromStdString(port)),
                       false);
  }
}

void GraphScene::SetHoverFeedback(const QString& text, QPoint screen_pos) {
  if (text == hover_feedback_) return;
  hover_feedback_ = text;
  if (text.isEmpty()) {
    QToolTip::hideText();
  } else {
    QToolTip::showText(screen_pos + QPoint(14, 14), text);
  }
}

void GraphScene::FinishDetach(const WireRef& wire, PortItem* target) {
  auto restore = [this] {
    for (EdgeItem* e : edges_) e->show();
  };
  if (!target) {
    doc_->Remove({}, {wire});
    emit statusMessage(
        QString("Detached %1 from %2.%3")
            .arg(QString::fromStdString(wire.producer.ToString()),
                 QString::fromStdString(wire.consumer), QString::fromStdString(wire.port)),
        false);
    return;
  }
  if (target->is_output() || (target->node_id() == wire.consumer && target->name() == wire.port)) {
    restore();  // put back where it was, or dropped on an output: nothing changes
    return;
  }
  const Status st = doc_->CheckConnection(wire.producer, target->node_id(), target->name());
  if (!st.ok()) {
    restore();
    emit statusMessage(QString::fromStdString(st.message()), true);
    return;
  }
  doc_->undo_stack()->beginMacro(QString("Move wire %1 → %2.%3")
                                     .arg(QString::fromStdString(wire.producer.ToString()),
                                          QString::fromStdString(target->node_id()),
                                          QString::fromStdString(target->name())));
  const std::string consumer = target->node_id(), port = target->name();  // Remove syncs ports
  doc_->Remove({}, {wire});
  const Status connected = doc_->Connect(wire.producer, consumer, port);
  doc_->undo_stack()->endMacro();
  emit statusMessage(connected.ok()
                         ? QString("Connected → %1.%2")
                               .arg(QString::fromStdString(consumer), QString::fromStdString(port))
                         : QString::fromStdString(connected.message()),
                     !connected.ok());
}

void GraphScene::CommitMoves() {
  std::map<std::string, QPointF> moved;
  for (const Node& n : doc_->graph().nodes()) {
    NodeItem* item = FindNode(n.id);
    if (!item) continue;
    const QPointF p = item->pos();
    const auto old = NodePosition(n);
    if (!old || std::lround(old->x()) != std::lround(p.x()) ||
        std::lround(old->y()) != std::lround(p.y())) {
      moved[n.id] = p;
    }
  }
  if (!moved.empty()) doc_->MoveNodes(moved);
}

void GraphScene::mouseDoubleClickEvent(QGraphicsSceneMouseEvent* event) {
  if (event->button() == Qt::LeftButton && EditInlineValueAt(event->scenePos())) {
    event->accept();
    return;
  }
  if (event->button() == Qt::LeftButton && !itemAt(event->scenePos(), QTransform())) {
    emit quickAddRequested(event->scenePos());
    event->accept();
    return;
  }
  QGraphicsScene::mouseDoubleClickEvent(event);
}

NodeItem* GraphScene::NodeAt(QPointF scene_pos) const {
  for (QGraphicsItem* it : items(scene_pos)) {
    if (it->type() == NodeItem::Type) return static_cast<NodeItem*>(it);
    if (it->parentItem() && it->parentItem()->type() == NodeItem::Type)
      return static_cast<NodeItem*>(it->parentItem());
  }
  return nullptr;
}

std::string GraphScene::EditableInputAt(QPointF scene_pos, std::string* node_id) const {
  NodeItem* item = NodeAt(scene_pos);
  if (!item) return "";
  std::string port = item->InputPortAt(scene_pos);
  const Node* node = doc_->graph().FindNode(item->id());
  const OpSchema* schema = node ? doc_->registry().Find(node->op) : nullptr;
  const int pi = schema ? schema->InputIndex(port) : -1;
  if (pi < 0 || schema->inputs()[static_cast<size_t>(pi)].is_list) return "";
  auto wired = node->inputs.find(port);
  const bool is_inline = InlineIndex(doc_->graph()).InputsOf(node->id).count(port) > 0;
  if (!is_inline && wired != node->inputs.end() && !wired->second.empty()) return "";
  *node_id = item->id();
  return port;
}

bool GraphScene::EditInlineValueAt(QPointF scene_pos) {
  std::string node_id;
  const std::string port = EditableInputAt(scene_pos, &node_id);
  if (port.empty() || views().isEmpty()) return false;
  QGraphicsView* view = views().first();
  const QPoint global = view->viewport()->mapToGlobal(view->mapFromScene(scene_pos));
  OpenInlineValueEditor(view, global, doc_, node_id, port, [this](const QString& text, bool error) {
    emit statusMessage(text, error);
  });
  return true;
}

void GraphScene::contextMenuEvent(QGraphicsSceneContextMenuEvent* event) {
  NodeItem* item = NodeAt(event->scenePos());
  if (!item) {
    QGraphicsScene::contextMenuEvent(event);
    return;
  }
  const std::string id = item->id();
  QMenu menu;
  std::string editable_node;
  const std::string port = EditableInputAt(event->scenePos(), &editable_node);
  const QPointF at = event->scenePos();
  if (!port.empty()) {
    menu.addAction(QString("Type a Value for '%1'…").arg(QString::fromStdString(port)), this,
                   [this, at] { EditInlineValueAt(at); });
  }
  for (const auto& [p, k] : InlineIndex(doc_->graph()).InputsOf(id)) {
    menu.addAction(QString("Unfold '%1' into a Node").arg(QString::fromStdString(p)), this,
                   [this, id, p = p] {
                     const Status st = UnfoldInlineValue(doc_, id, p);
                     if (!st.ok()) emit statusMessage(QString::fromStdString(st.message()), true);
                   });
  }
  if (CanFoldIntoPort(doc_->graph(), id)) {
    menu.addAction("Fold into the Port It Feeds", this, [this, id] {
      const Status st = FoldIntoPort(doc_, id);
      if (!st.ok()) emit statusMessage(QString::fromStdString(st.message()), true);
    });
  }
  if (menu.isEmpty()) {
    QGraphicsScene::contextMenuEvent(event);
    return;
  }
  menu.exec(event->screenPos());
  event->accept();
}

void GraphScene::dragEnterEvent(QGraphicsSceneDragDropEvent* event) {
  if (event->mimeData()->hasFormat(kOpMimeType)) {
    event->acceptProposedAction();
  } else {
    QGraphicsScene::dragEnterEvent(event);
  }
}

void GraphScene::dragMoveEvent(QGraphicsSceneDragDropEvent* event) {
  if (event->mimeData()->hasFormat(kOpMimeType)) {
    event->acceptProposedAction();
  } else {
    QGraphicsScene::dragMoveEvent(event);
  }
}

void GraphScene::dropEvent(QGraphicsSceneDragDropEvent* event) {
  if (HandleDrop(event->mimeData(), event->scenePos())) {
    event->acceptProposedAction();
  } else {
    QGraphicsScene::dropEvent(event);
  }
}

void GraphScene::drawBackground(QPainter* painter, const QRectF& rect) {
  painter->fillRect(rect, palette::kCanvas);
  const double minor = 24, major = minor * 5;
  auto draw_grid = [&](double step, const QColor& color) {
    const double left = std::floor(rect.left() / step) * step;
    const double top = std::floor(rect.top() / step) * step;
    const double nx = std::ceil((rect.right() - left) / step),
                 ny = std::ceil((rect.bottom() - top) / step);
    // Lines are counted, not stepped to: far out (a file may place a node at 1e18) `x += step`
    // does not change x, and the loop would never end. A grid too dense to see is not drawn.
    if (!(nx >= 0 && ny >= 0) || nx + ny > 5000) return;
    painter->setPen(QPen(color, 0));
    QVector<QLineF> lines;
    for (int i = 0; i < static_cast<int>(nx); ++i) {
      const double x = left + i * step;
      lines.append(QLineF(x, rect.top(), x, rect.bottom()));
    }
    for (int i = 0; i < static_cast<int>(ny); ++i) {
      const double y = top + i * step;
      lines.append(QLineF(rect.left(), y, rect.right(), y));
    }
    painter->drawLines(lines);
  };
  draw_grid(minor, palette::kGridMinor);
  draw_grid(major, palette::kGridMajor);
}

}  // namespace blockflow::editor
