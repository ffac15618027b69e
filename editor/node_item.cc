#include "editor/node_item.h"

#include <QFontMetricsF>
#include <QGraphicsScene>
#include <QPainter>
#include <QPainterPathStroker>
#include <QStyleOptionGraphicsItem>
#include <algorithm>
#include <cmath>

#include "editor/graph_scene.h"
#include "editor/theme.h"

namespace blockflow::editor {

namespace {

constexpr double kTitleH = 44;
constexpr double kRowH = 35;
constexpr double kFooterH = 20;
constexpr double kPortR = 6;
constexpr double kPad = 14;
// The room a port's detail line gets ("float32 [1,8,8,2]" fits; longer ones are elided).
constexpr const char* kDetailRoom = "float32 [64,64,64]";

QFont TitleFont() {
  QFont f;
  f.setPointSizeF(10.5);
  f.setBold(true);
  return f;
}
QFont IdFont() {
  QFont f;
  f.setPointSizeF(8.5);
  return f;
}
QFont PortFont() {
  QFont f;
  f.setPointSizeF(9);
  return f;
}
QFont DetailFont() {
  QFont f("DejaVu Sans Mono");
  f.setStyleHint(QFont::Monospace);
  f.setPointSizeF(7.8);
  return f;
}

QString DetailOf(const PortInfo& p) {
  if (p.dtype == DType::kInvalid) return "?";
  QString s = QString::fromStdString(std::string(DTypeName(p.dtype))) + " " +
              QString::fromStdString(p.shape.ToString());
  // Small integer constants (sizes, shapes) are worth seeing on the canvas.
  if (p.value && !IsFloatingDType(p.dtype) && p.value->num_elements() > 0 &&
      p.value->num_elements() <= 8) {
    QStringList parts;
    for (int64_t i = 0; i < p.value->num_elements(); ++i) {
      parts << QString::number(static_cast<qlonglong>(p.value->GetAsDouble(i)));
    }
    s += " = {" + parts.join(",") + "}";
  }
  return s;
}

QString DTypeList(const std::vector<DType>& dtypes) {
  QStringList names;
  for (DType d : dtypes) names << QString::fromStdString(std::string(DTypeName(d)));
  return names.join(", ");
}

}  // namespace

// ---------------------------------------------------------------- PortItem

PortItem::PortItem(QGraphicsItem* parent, std::string node_id, bool is_output, int index,
                   std::string name, DType dtype, bool connected)
    : QGraphicsItem(parent),
      node_id_(std::move(node_id)),
      is_output_(is_output),
      index_(index),
      name_(std::move(name)),
      dtype_(dtype),
      connected_(connected) {
  setAcceptHoverEvents(true);
  setCursor(Qt::CrossCursor);
  setZValue(2);
}

QRectF PortItem::boundingRect() const {
  const double r = kPortR + 5;
  return QRectF(-r, -r, 2 * r, 2 * r);
}

void PortItem::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) {
  painter->setRenderHint(QPainter::Antialiasing);
  const QColor c = DTypeColor(dtype_);
  double r = kPortR + (hovered_ || target_state_ ? 2 : 0);
  if (target_state_ != 0) {
    painter->setPen(QPen(target_state_ > 0 ? palette::kOk : palette::kError, 2.5));
    painter->setBrush(Qt::NoBrush);
    painter->drawEllipse(QPointF(0, 0), r + 3, r + 3);
  }
  painter->setPen(QPen(c.lighter(connected_ ? 125 : 100), 2));
  painter->setBrush(connected_ ? QBrush(c) : QBrush(palette::kNodeBody));
  painter->drawEllipse(QPointF(0, 0), r, r);
}

void PortItem::SetTargetState(int state) {
  if (state == target_state_) return;
  target_state_ = state;
  update();
}

void PortItem::hoverEnterEvent(QGraphicsSceneHoverEvent*) {
  hovered_ = true;
  update();
}
void PortItem::hoverLeaveEvent(QGraphicsSceneHoverEvent*) {
  hovered_ = false;
  update();
}

// ---------------------------------------------------------------- NodeItem

NodeItem::NodeItem(std::string id) : id_(std::move(id)) {
  setFlags(ItemIsMovable | ItemIsSelectable | ItemSendsGeometryChanges |
           ItemSendsScenePositionChanges);
  setZValue(1);
  setCacheMode(DeviceCoordinateCache);
}

void NodeItem::SetContent(const Node& node, const OpSchema* schema, const NodeInfo* info,
                          const std::vector<std::string>& issues,
                          const std::function<const PortInfo*(const Endpoint&)>& producer_output) {
  op_ = QString::fromStdString(node.op);
  category_ = schema ? QString::fromStdString(schema->category()) : QString("Unknown");
  issues_ = issues;
  inputs_.clear();
  outputs_.clear();
  if (schema) {
    for (size_t pi = 0; pi < schema->inputs().size(); ++pi) {
      const PortDef& def = schema->inputs()[pi];
      PortLabel l;
      l.port_name = def.name;
      l.name = QString::fromStdString(def.name) + (def.is_list ? "[]" : "");
      auto it = node.inputs.find(def.name);
      const size_t wired = it == node.inputs.end() ? 0 : it->second.size();
      l.connected = wired > 0;
      l.missing = !l.connected && !def.is_list;
      if (l.connected && info && pi < info->port_starts.size()) {
        const size_t start = static_cast<size_t>(info->port_starts[pi]);
        if (start < info->inputs.size()) {
          l.dtype = info->inputs[start].dtype;
          l.detail = DetailOf(info->inputs[start]);
        }
      }
      if (l.connected && (l.detail.isEmpty() || l.detail == "?") && producer_output) {
        if (const PortInfo* p = producer_output(it->second[0]); p && p->dtype != DType::kInvalid) {
          l.dtype = p->dtype;
          l.detail = DetailOf(*p);
        }
      }
      if (l.connected && def.is_list)
        l.detail = QString("%1 × %2").arg(wired).arg(l.detail.isEmpty() ? "?" : l.detail);
      if (l.detail.isEmpty()) l.detail = l.connected ? "?" : (def.is_list ? "empty" : "not wired");
      if (l.dtype == DType::kInvalid && def.dtypes.size() == 1) l.dtype = def.dtypes[0];
      l.tooltip = QString("%1 — accepts %2%3")
                      .arg(QString::fromStdString(def.name), DTypeList(def.dtypes),
                           def.doc.empty() ? QString() : "\n" + QString::fromStdString(def.doc));
      inputs_.push_back(l);
    }
    size_t n = schema->outputs().size();
    if (schema->variadic_outputs() && info) n = std::max(n, info->outputs.size());
    for (size_t k = 0; k < n && !schema->outputs().empty(); ++k) {
      const OutputDef& def = schema->outputs()[std::min(k, schema->outputs().size() - 1)];
      PortLabel l;
      l.port_name = def.name;
      l.name = QString::fromStdString(def.name);
      if (k >= schema->outputs().size() - 1 && schema->variadic_outputs())
        l.name += QString(":%1").arg(k);
      l.connected = true;
      if (info && k < info->outputs.size() && info->outputs[k].dtype != DType::kInvalid) {
        l.dtype = info->outputs[k].dtype;
        l.detail = DetailOf(info->outputs[k]);
      } else {
        if (def.dtypes.size() == 1) l.dtype = def.dtypes[0];
        l.detail = "?";
      }
      l.tooltip = QString("%1 — %2%3")
                      .arg(QString::fromStdString(def.name), DTypeList(def.dtypes),
                           def.doc.empty() ? QString() : "\n" + QString::fromStdString(def.doc));
      outputs_.push_back(l);
    }
  } else {
    // Unknown op: still show the wired ports so the wires stay visible.
    for (const auto& [port, eps] : node.inputs) {
      PortLabel l;
      l.port_name = port;
      l.name = QString::fromStdString(port);
      l.connected = true;
      l.detail = "?";
      inputs_.push_back(l);
    }
    PortLabel out;
    out.port_name = "output";
    out.name = "output";
    out.detail = "?";
    outputs_.push_back(out);
  }
  QString tip;
  if (!issues_.empty()) {
    QStringList lines;
    for (const auto& s : issues_) lines << QString::fromStdString(s);
    tip = lines.join("\n");
  } else {
    tip = op_;
    if (schema && !schema->doc().empty()) tip += " — " + QString::fromStdString(schema->doc());
  }
  setToolTip(tip);
  Relayout();
}

void NodeItem::SetInlineValues(const std::map<std::string, QString>& texts) {
  if (texts.empty()) return;
  for (PortLabel& l : inputs_) {
    auto it = texts.find(l.port_name);
    if (it == texts.end()) continue;
    l.inline_value = true;
    l.detail = "= " + it->second;
    l.tooltip += "\nValue typed on the port (an inline Const); double-click to edit";
  }
  Relayout();
}

std::string NodeItem::InputPortAt(QPointF scene_pos) const {
  const QPointF p = mapFromScene(scene_pos);
  if (p.x() < -kPortR || p.x() > width_ * 0.6) return "";
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const double y = RowY(static_cast<int>(i));
    if (p.y() >= y - 2 && p.y() < y + kRowH - 2) return inputs_[i].port_name;
  }
  return "";
}

void NodeItem::SetRunState(RunState state, double ms, const QString& message) {
  const bool footer_changed = (state == RunState::kIdle) != (run_state_ == RunState::kIdle);
  run_state_ = state;
  run_ms_ = ms;
  run_message_ = message;
  if (footer_changed) {
    Relayout();
  } else {
    update();
  }
}

double NodeItem::RowY(int row) const { return kTitleH + 5 + row * kRowH; }

void NodeItem::Relayout() {
  prepareGeometryChange();
  const QFontMetricsF tf(TitleFont()), idf(IdFont()), pf(PortFont()), df(DetailFont());
  double w = std::max(tf.horizontalAdvance(op_) + 2 * kPad + 22,
                      idf.horizontalAdvance(QString::fromStdString(id_)) + 2 * kPad);
  // The width depends on what the schema fixes (title, id, port names), never on inferred
  // details: wiring a node must not widen it and move its output ports under the cursor.
  // Details get a fixed room and are elided to it (in full in the port's tooltip).
  double in_w = 0, out_w = 0;
  for (const auto& l : inputs_) in_w = std::max(in_w, pf.horizontalAdvance(l.name));
  for (const auto& l : outputs_) out_w = std::max(out_w, pf.horizontalAdvance(l.name));
  const double detail_w = df.horizontalAdvance(kDetailRoom);
  const bool two_sided = !inputs_.empty() && !outputs_.empty();
  w = std::max({w, in_w + out_w + 2 * kPad + 24,
                (two_sided ? 2 * detail_w + 12 : detail_w) + 2 * kPad, 170.0});
  width_ = std::ceil(w);
  const int rows = static_cast<int>(std::max(inputs_.size(), outputs_.size()));
  height_ = RowY(std::max(rows, 1)) + 4 + (run_state_ != RunState::kIdle ? kFooterH : 0);

  // The scene may hold a port as the target of a wire being dragged (a run state change
  // relayouts nodes in the middle of a drag).
  if (auto* s = dynamic_cast<GraphScene*>(scene()); s && !ports_.empty()) s->ForgetPortsOf(this);
  for (PortItem* p : ports_) {
    p->setParentItem(nullptr);
    delete p;
  }
  ports_.clear();
  for (size_t i = 0; i < inputs_.size(); ++i) {
    auto* p = new PortItem(this, id_, false, static_cast<int>(i), inputs_[i].port_name,
                           inputs_[i].dtype, inputs_[i].connected);
    p->setPos(0, RowY(static_cast<int>(i)) + 11);
    p->setToolTip(inputs_[i].tooltip + "\n" + inputs_[i].detail);
    ports_.push_back(p);
  }
  for (size_t i = 0; i < outputs_.size(); ++i) {
    auto* p = new PortItem(this, id_, true, static_cast<int>(i), outputs_[i].port_name,
                           outputs_[i].dtype, true);
    p->setPos(width_, RowY(static_cast<int>(i)) + 11);
    p->setToolTip(outputs_[i].tooltip + "\n" + outputs_[i].detail);
    ports_.push_back(p);
  }
  update();
}

QRectF NodeItem::boundingRect() const { return QRectF(-4, -14, width_ + 14, height_ + 22); }

QPointF NodeItem::InputAnchor(int port) const { return mapToScene(QPointF(0, RowY(port) + 11)); }
QPointF NodeItem::OutputAnchor(int index) const {
  return mapToScene(QPointF(width_, RowY(index) + 11));
}

DType NodeItem::OutputDType(int index) const {
  if (index < 0 || index >= num_outputs()) return DType::kInvalid;
  return outputs_[static_cast<size_t>(index)].dtype;
}

PortItem* NodeItem::FindPort(bool is_output, const std::string& name) const {
  for (PortItem* p : ports_) {
    if (p->is_output() == is_output && p->name() == name) return p;
  }
  return nullptr;
}

void NodeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  const QRectF body(0, 0, width_, height_);
  // Far out (a fitted graph of hundreds of nodes) text is unreadable and slow: boxes only.
  if (option->levelOfDetailFromTransform(painter->worldTransform()) < 0.3) {
    painter->setPen(Qt::NoPen);
    painter->setBrush(palette::kNodeBody);
    painter->drawRect(body);
    painter->setBrush(CategoryColor(category_));
    painter->drawRect(QRectF(0, 0, width_, kTitleH));
    QPen border(issues_.empty() ? palette::kNodeBorder : palette::kError, issues_.empty() ? 0 : 6);
    if (isSelected()) border = QPen(palette::kSelection, 8);
    painter->setPen(border);
    painter->setBrush(Qt::NoBrush);
    painter->drawRect(body);
    return;
  }
  painter->setRenderHint(QPainter::Antialiasing);
  painter->setRenderHint(QPainter::TextAntialiasing);
  // Soft shadow.
  painter->setPen(Qt::NoPen);
  painter->setBrush(QColor(0, 0, 0, 70));
  painter->drawRoundedRect(body.translated(3, 4), 9, 9);
  painter->setBrush(palette::kNodeBody);
  painter->drawRoundedRect(body, 9, 9);

  // Title bar in the category colour.
  QPainterPath title;
  title.addRoundedRect(QRectF(0, 0, width_, kTitleH), 9, 9);
  QPainterPath square_bottom;
  square_bottom.addRect(QRectF(0, kTitleH / 2, width_, kTitleH / 2));
  title = title.united(square_bottom);
  const QColor cat = CategoryColor(category_);
  QLinearGradient grad(0, 0, 0, kTitleH);
  grad.setColorAt(0, cat.lighter(115));
  grad.setColorAt(1, cat.darker(110));
  painter->setBrush(grad);
  painter->drawPath(title);

  painter->setFont(TitleFont());
  painter->setPen(palette::kText);
  painter->drawText(QRectF(kPad, 4, width_ - 2 * kPad - 20, 20), Qt::AlignLeft | Qt::AlignVCenter,
                    op_);
  painter->setFont(IdFont());
  painter->setPen(QColor(0xd5, 0xd9, 0xde));
  painter->drawText(QRectF(kPad, 23, width_ - 2 * kPad, 16), Qt::AlignLeft | Qt::AlignVCenter,
                    QString::fromStdString(id_));

  // Port rows. A detail shares its line with the other side's detail of the same row.
  const QFontMetricsF df(DetailFont());
  auto detail_room = [&](size_t row, bool output) {
    const bool shared = output ? row < inputs_.size() : row < outputs_.size();
    return shared ? (width_ - 2 * kPad) / 2 - 6 : width_ - 2 * kPad;
  };
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const double y = RowY(static_cast<int>(i));
    painter->setFont(PortFont());
    painter->setPen(palette::kText);
    painter->drawText(QRectF(kPad, y, width_ / 2, 20), Qt::AlignLeft | Qt::AlignVCenter,
                      inputs_[i].name);
    painter->setFont(DetailFont());
    if (inputs_[i].inline_value) {
      // The value folded into the port: a chip in the dtype's colour.
      const double w = QFontMetricsF(DetailFont()).horizontalAdvance(inputs_[i].detail) + 10;
      QColor chip = DTypeColor(inputs_[i].dtype);
      chip.setAlpha(70);
      painter->setPen(Qt::NoPen);
      painter->setBrush(chip);
      painter->drawRoundedRect(QRectF(kPad - 5, y + 16, std::min(w, width_ - kPad), 15), 4, 4);
      painter->setPen(palette::kText);
    } else {
      painter->setPen(inputs_[i].missing ? palette::kError : palette::kTextDim);
    }
    painter->drawText(QRectF(kPad, y + 16, width_ - 2 * kPad, 15), Qt::AlignLeft | Qt::AlignVCenter,
                      df.elidedText(inputs_[i].detail, Qt::ElideRight, detail_room(i, false)));
  }
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const double y = RowY(static_cast<int>(i));
    painter->setFont(PortFont());
    painter->setPen(palette::kText);
    painter->drawText(QRectF(width_ / 2, y, width_ / 2 - kPad, 20),
                      Qt::AlignRight | Qt::AlignVCenter, outputs_[i].name);
    painter->setFont(DetailFont());
    painter->setPen(palette::kTextDim);
    painter->drawText(QRectF(kPad, y + 16, width_ - 2 * kPad, 15),
                      Qt::AlignRight | Qt::AlignVCenter,
                      df.elidedText(outputs_[i].detail, Qt::ElideRight, detail_room(i, true)));
  }

  // Run state footer.
  struct StateLook {
    RunState state;
    QColor color;
    const char* text;
  };
  static const StateLook kLooks[] = {{RunState::kPending, palette::kPending, "pending"},
                                     {RunState::kRunning, palette::kRunning, "running…"},
                                     {RunState::kDone, palette::kOk, "done"},
                                     {RunState::kFailed, palette::kError, "failed"},
                                     {RunState::kConstant, QColor(0x6aa8f7), "constant"}};
  QColor state_color;
  QString state_text;
  for (const StateLook& look : kLooks) {
    if (look.state == run_state_) {
      state_color = look.color;
      state_text = QString::fromUtf8(look.text);
    }
  }
  if (run_state_ != RunState::kIdle) {
    const double y = height_ - kFooterH;
    painter->setPen(QPen(QColor(0x3a, 0x3e, 0x45), 1));
    painter->drawLine(QPointF(8, y), QPointF(width_ - 8, y));
    painter->setPen(Qt::NoPen);
    painter->setBrush(state_color);
    painter->drawEllipse(QPointF(kPad + 3, y + kFooterH / 2), 4, 4);
    painter->setFont(IdFont());
    painter->setPen(state_color.lighter(110));
    painter->drawText(QRectF(kPad + 12, y, width_ / 2, kFooterH), Qt::AlignLeft | Qt::AlignVCenter,
                      state_text);
    if (run_ms_ >= 0 && (run_state_ == RunState::kDone || run_state_ == RunState::kFailed)) {
      painter->setPen(palette::kTextDim);
      const QString t = run_ms_ < 10 ? QString::number(run_ms_, 'f', 3) + " ms"
                                     : QString::number(run_ms_, 'f', 1) + " ms";
      painter->drawText(QRectF(width_ / 2, y, width_ / 2 - kPad, kFooterH),
                        Qt::AlignRight | Qt::AlignVCenter, t);
    }
  }

  // Border: selection wins, then the run state, then issues.
  QPen border(palette::kNodeBorder, 1.2);
  if (run_state_ == RunState::kRunning || run_state_ == RunState::kFailed)
    border = QPen(state_color, 2);
  if (!issues_.empty()) border = QPen(palette::kError, 1.8);
  if (isSelected()) border = QPen(palette::kSelection, 2.4);
  painter->setPen(border);
  painter->setBrush(Qt::NoBrush);
  painter->drawRoundedRect(body, 9, 9);

  // Issue badge.
  if (!issues_.empty()) {
    const QPointF c(width_ - 2, -2);
    painter->setPen(QPen(palette::kNodeBody, 2));
    painter->setBrush(palette::kError);
    painter->drawEllipse(c, 10, 10);
    QFont f = TitleFont();
    f.setPointSizeF(9.5);
    painter->setFont(f);
    painter->setPen(Qt::white);
    painter->drawText(QRectF(c.x() - 10, c.y() - 10, 20, 20), Qt::AlignCenter, "!");
  }
}

QVariant NodeItem::itemChange(GraphicsItemChange change, const QVariant& value) {
  if (change == ItemPositionHasChanged) {
    if (auto* s = dynamic_cast<GraphScene*>(scene())) s->UpdateEdgesOf(id_);
  }
  return QGraphicsItem::itemChange(change, value);
}

// ---------------------------------------------------------------- EdgeItem

EdgeItem::EdgeItem(WireRef wire, QColor color) : wire_(std::move(wire)), color_(color) {
  setFlags(ItemIsSelectable);
  setZValue(0);
  setToolTip(QString("%1 → %2.%3")
                 .arg(QString::fromStdString(wire_.producer.ToString()),
                      QString::fromStdString(wire_.consumer), QString::fromStdString(wire_.port)));
}

QPainterPath EdgeItem::WirePath(QPointF from, QPointF to) {
  QPainterPath path(from);
  const double dx = std::max(60.0, std::abs(to.x() - from.x()) * 0.5);
  path.cubicTo(from + QPointF(dx, 0), to - QPointF(dx, 0), to);
  return path;
}

void EdgeItem::SetEnds(QPointF from, QPointF to) { setPath(WirePath(from, to)); }

QPainterPath EdgeItem::shape() const {
  QPainterPathStroker stroker;
  stroker.setWidth(12);
  return stroker.createStroke(path());
}

void EdgeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) {
  painter->setRenderHint(QPainter::Antialiasing);
  painter->setBrush(Qt::NoBrush);
  if (isSelected()) {
    painter->setPen(QPen(QColor(palette::kSelection.red(), palette::kSelection.green(),
                                palette::kSelection.blue(), 90),
                         8, Qt::SolidLine, Qt::RoundCap));
    painter->drawPath(path());
  }
  painter->setPen(
      QPen(isSelected() ? palette::kSelection : color_, 2.4, Qt::SolidLine, Qt::RoundCap));
  painter->drawPath(path());
}

}  // namespace blockflow::editor
