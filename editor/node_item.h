// Scene items: a NodeItem draws one node of the document's graph (title, id, ports with
// their inferred dtype and shape, issue badge, run state); PortItems are its sockets;
// EdgeItems draw wires. Items hold no graph data of their own beyond what they display.
#pragma once

#include <QGraphicsItem>
#include <QGraphicsPathItem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/graph.h"
#include "editor/graph_document.h"

namespace blockflow::editor {

class GraphScene;

/// Where a node is in the last run.
enum class RunState { kIdle, kPending, kRunning, kDone, kFailed, kConstant };

/// One socket of a node: an input port (by schema index) or an output (by index).
class PortItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 2 };
  PortItem(QGraphicsItem* parent, std::string node_id, bool is_output, int index, std::string name,
           DType dtype, bool connected);
  int type() const override { return Type; }
  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

  const std::string& node_id() const { return node_id_; }
  bool is_output() const { return is_output_; }
  int index() const { return index_; }
  const std::string& name() const { return name_; }
  DType dtype() const { return dtype_; }
  /// Highlights the port as a drop target (green: accepted, red: refused).
  void SetTargetState(int state);

 protected:
  void hoverEnterEvent(QGraphicsSceneHoverEvent* event) override;
  void hoverLeaveEvent(QGraphicsSceneHoverEvent* event) override;

 private:
  std::string node_id_;
  bool is_output_;
  int index_;
  std::string name_;
  DType dtype_;
  bool connected_;
  bool hovered_ = false;
  int target_state_ = 0;
};

/// What a node shows for one port row side.
struct PortLabel {
  std::string port_name;  // the schema's port name
  QString name;
  QString detail;  // "float32 [1,8,8,2]" or "not wired"
  DType dtype = DType::kInvalid;
  bool connected = false;
  bool missing = false;       // a required input with no wire
  bool inline_value = false;  // fed by a Const drawn folded into the port (inline_values.h)
  QString tooltip;
};

class NodeItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 1 };
  explicit NodeItem(std::string id);
  int type() const override { return Type; }
  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

  const std::string& id() const { return id_; }
  /// Refreshes what the node shows from the document (schema, inference, issues).
  /// `producer_output` finds what inference knows about a wired endpoint (used when this
  /// node's own analysis stopped before its inputs were recorded).
  void SetContent(const Node& node, const OpSchema* schema, const NodeInfo* info,
                  const std::vector<std::string>& issues,
                  const std::function<const PortInfo*(const Endpoint&)>& producer_output = {});
  void SetRunState(RunState state, double ms, const QString& message);
  RunState run_state() const { return run_state_; }
  bool has_issues() const { return !issues_.empty(); }
  /// Scene position of input port `port` / output `index` (the socket centre).
  QPointF InputAnchor(int port) const;
  QPointF OutputAnchor(int index) const;
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  DType OutputDType(int index) const;
  PortItem* FindPort(bool is_output, const std::string& name) const;
  /// The size of the node's box (without its shadow and badge).
  QSizeF body_size() const { return QSizeF(width_, height_); }
  const QString& category() const { return category_; }
  /// Shows inline values (port → value text) in their input rows; after SetContent.
  void SetInlineValues(const std::map<std::string, QString>& texts);
  /// The input port whose row holds scene point `scene_pos` ("" if none).
  std::string InputPortAt(QPointF scene_pos) const;

 protected:
  QVariant itemChange(GraphicsItemChange change, const QVariant& value) override;

 private:
  void Relayout();
  double RowY(int row) const;

  std::string id_;
  QString op_, category_;
  std::vector<PortLabel> inputs_, outputs_;
  std::vector<std::string> issues_;
  std::vector<PortItem*> ports_;
  double width_ = 180, height_ = 80;
  RunState run_state_ = RunState::kIdle;
  double run_ms_ = -1;
  QString run_message_;
};

/// A wire from an output to an input; selectable (Delete removes it).
class EdgeItem : public QGraphicsPathItem {
 public:
  enum { Type = UserType + 3 };
  EdgeItem(WireRef wire, QColor color);
  int type() const override { return Type; }
  const WireRef& wire() const { return wire_; }
  int to_row = 0;  // input row of the consumer
  void SetEnds(QPointF from, QPointF to);
  QPainterPath shape() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

  /// The curve used for wires (also for the wire being dragged).
  static QPainterPath WirePath(QPointF from, QPointF to);

 private:
  WireRef wire_;
  QColor color_;
};

}  // namespace blockflow::editor
