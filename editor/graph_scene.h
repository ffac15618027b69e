// GraphScene: the canvas. It mirrors the document's graph as NodeItems and EdgeItems
// (rebuilt from the graph and its analysis after every change) and turns mouse gestures
// into document edits: wiring by dragging between ports, moving nodes, palette drops.
#pragma once

#include <QGraphicsScene>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "editor/graph_document.h"
#include "editor/node_item.h"
#include "editor/search.h"

class QMimeData;

namespace blockflow::editor {

/// The fixed end of a wire dropped on empty canvas: an output (index) or an input (port).
struct WireEnd {
  std::string node_id, port;
  bool is_output = true;
  int index = 0;
};

class GraphScene : public QGraphicsScene {
  Q_OBJECT

 public:
  /// The MIME type of a palette drag: the op name as UTF-8.
  static constexpr const char* kOpMimeType = "application/x-blockflow-op";

  explicit GraphScene(GraphDocument* doc, QObject* parent = nullptr);
  ~GraphScene() override;
  GraphDocument* document() const { return doc_; }

  /// Rebuilds the items from the document (called after every document change).
  void Sync();
  /// Re-routes the wires of node `id` (while it moves).
  void UpdateEdgesOf(const std::string& id);

  NodeItem* FindNode(const std::string& id) const;
  const std::vector<EdgeItem*>& edges() const { return edges_; }
  /// Ids of the selected nodes, in graph order.
  std::vector<std::string> SelectedNodeIds() const;
  std::vector<WireRef> SelectedWires() const;
  void SelectNodes(const std::vector<std::string>& ids);
  /// Deletes the selected nodes and wires (one undoable edit).
  void DeleteSelection();

  /// Adds the block named by a palette drag's MIME data at `scene_pos`; the dropEvent path.
  bool HandleDrop(const QMimeData* mime, QPointF scene_pos);
  /// Wires two ports (an output and an input, in either order); refusals are reported.
  Status ConnectPorts(const PortItem* a, const PortItem* b);

  /// Node `node` is about to delete its PortItems (they are rebuilt on every relayout): forget
  /// any pointer to them.
  void ForgetPortsOf(const NodeItem* node);

  /// The node drawn at `scene_pos` (its body or one of its ports), or null.
  NodeItem* NodeAt(QPointF scene_pos) const;
  /// Opens the inline value editor of the input row at `scene_pos` when that input is unwired
  /// or holds an inline value (inline_values.h); false when there is no such row.
  bool EditInlineValueAt(QPointF scene_pos);

  void SetRunState(const std::string& id, RunState state, double ms = -1,
                   const QString& message = {});
  void ClearRunStates();

  /// The refusal shown at the cursor while a wire hovers over a port that will not take it
  /// ("" when there is none).
  const QString& hover_feedback() const { return hover_feedback_; }

 signals:
  /// A message for the status bar (`error`: shown in red).
  void statusMessage(const QString& text, bool error);
  /// The user asked for the quick-add popup at `scene_pos` (double-click on empty canvas).
  void quickAddRequested(QPointF scene_pos);
  /// A wire was dragged from `end` and dropped on empty canvas at `scene_pos`; `fit` says which
  /// blocks could take it.
  void wireDroppedOnCanvas(QPointF scene_pos, const WireEnd& end, const WireFit& fit);

 protected:
  // Wiring: a press on a port starts a wire (or picks up a connected input's), the move draws
  // it, the release connects, rewires or detaches; otherwise moves, committed on release.
  void mousePressEvent(QGraphicsSceneMouseEvent* event) override;
  void mouseMoveEvent(QGraphicsSceneMouseEvent* event) override;
  void mouseReleaseEvent(QGraphicsSceneMouseEvent* event) override;
  /// Edits an inline value, or opens quick-add on empty canvas.
  void mouseDoubleClickEvent(QGraphicsSceneMouseEvent* event) override;
  // Blocks dragged in from the palette.
  void dragEnterEvent(QGraphicsSceneDragDropEvent* event) override;
  void dragMoveEvent(QGraphicsSceneDragDropEvent* event) override;
  void dropEvent(QGraphicsSceneDragDropEvent* event) override;
  /// The canvas colour and its minor and major grid.
  void drawBackground(QPainter* painter, const QRectF& rect) override;
  /// A block's menu.
  void contextMenuEvent(QGraphicsSceneContextMenuEvent* event) override;

 private:
  PortItem* PortNear(QPointF scene_pos) const;
  // The input port at `scene_pos` that can take a typed value, and its node.
  std::string EditableInputAt(QPointF scene_pos, std::string* node_id) const;
  void UpdateEdge(EdgeItem* e);
  void ClearDragTarget();
  void CommitMoves();
  void SetHoverFeedback(const QString& text, QPoint screen_pos);
  void FinishDetach(const WireRef& wire, PortItem* target);

  GraphDocument* doc_;
  std::map<std::string, NodeItem*> nodes_;
  std::vector<EdgeItem*> edges_;
  std::map<std::string, std::tuple<RunState, double, QString>> run_states_;
  bool syncing_ = false;
  // The wire being dragged from a port.
  struct DragSource {
    std::string node_id, port;
    bool is_output = false;
    int index = 0;
    DType dtype = DType::kInvalid;
    QPointF anchor;
  };
  std::optional<DragSource> drag_;
  QGraphicsPathItem* drag_wire_ = nullptr;
  PortItem* drag_target_ = nullptr;
  // Set while a wire picked up from a connected input is dragged (its old wire).
  std::optional<WireRef> detaching_;
  QString hover_feedback_;
};

}  // namespace blockflow::editor
