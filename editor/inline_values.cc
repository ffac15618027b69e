#include "editor/inline_values.h"

#include <QFormLayout>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLineEdit>
#include <QToolButton>
#include <algorithm>
#include <cmath>

#include "core/layout.h"
#include "editor/attr_editors.h"

namespace blockflow::editor {

namespace {

bool HasInlineFlag(const Node& node) {
  if (node.op != "Const" || !node.ui.is_object()) return false;
  auto it = node.ui.find("inline");
  return it != node.ui.end() && it->is_boolean() && it->get<bool>();
}

const PortDef* InputDef(const Graph& graph, const std::string& consumer, const std::string& port) {
  const Node* node = graph.FindNode(consumer);
  const OpSchema* schema = node ? OpRegistry::Global().Find(node->op) : nullptr;
  const int pi = schema ? schema->InputIndex(port) : -1;
  return pi < 0 ? nullptr : &schema->inputs()[static_cast<size_t>(pi)];
}

// Flattens nested JSON lists of numbers into `flat`, recording the shape; false when the lists
// are ragged or hold something else.
bool Flatten(const nlohmann::json& v, size_t depth, std::vector<int64_t>* shape,
             nlohmann::json* flat) {
  if (v.is_number()) {
    if (depth != shape->size()) return false;
    if (v.is_number_float() && !std::isfinite(v.get<double>())) return false;
    flat->push_back(v);
    return true;
  }
  if (!v.is_array()) return false;
  const auto n = static_cast<int64_t>(v.size());
  if (depth == shape->size()) {
    if (!flat->empty()) return false;  // a number came first at this depth elsewhere
    shape->push_back(n);
  } else if (depth > shape->size() || (*shape)[depth] != n) {
    return false;
  }
  for (const auto& e : v) {
    if (!Flatten(e, depth + 1, shape, flat)) return false;
  }
  return true;
}

bool Allows(const PortDef& port, DType d) {
  return port.dtypes.empty() ||
         std::find(port.dtypes.begin(), port.dtypes.end(), d) != port.dtypes.end();
}

QString Number(const nlohmann::json& v) { return QString::fromStdString(v.dump()); }

// Nested list text of `flat` with `shape`, from element `at` on.
QString Nested(const nlohmann::json& flat, const std::vector<int64_t>& shape, size_t dim,
               size_t* at) {
  if (dim == shape.size()) return *at < flat.size() ? Number(flat[(*at)++]) : QString("?");
  QStringList parts;
  for (int64_t i = 0; i < shape[dim]; ++i) parts << Nested(flat, shape, dim + 1, at);
  return "[" + parts.join(", ") + "]";
}

// The dtype the other inputs of `consumer` that take the same dtypes as `port` have.
DType PeerDType(const GraphDocument& doc, const std::string& consumer, const PortDef& port) {
  const Node* node = doc.graph().FindNode(consumer);
  const OpSchema* schema = node ? doc.registry().Find(node->op) : nullptr;
  const NodeInfo* info = doc.InfoFor(consumer);
  if (!schema || !info) return DType::kInvalid;
  for (size_t pi = 0; pi < schema->inputs().size(); ++pi) {
    const PortDef& other = schema->inputs()[pi];
    if (other.name == port.name || other.dtypes != port.dtypes) continue;
    if (!node->inputs.count(other.name) || pi >= info->port_starts.size()) continue;
    const auto start = static_cast<size_t>(info->port_starts[pi]);
    if (start < info->inputs.size() && info->inputs[start].dtype != DType::kInvalid)
      return info->inputs[start].dtype;
  }
  return DType::kInvalid;
}

}  // namespace

InlineIndex::InlineIndex(const Graph& graph) {
  std::map<std::string, int> wires_out;
  std::map<std::string, WireRef> only;
  for (const Node& n : graph.nodes()) {
    for (const auto& [port, eps] : n.inputs) {
      for (const Endpoint& ep : eps) {
        const int count = ++wires_out[ep.node];
        if (count == 1) only[ep.node] = WireRef{ep, n.id, port};
      }
    }
  }
  for (const Node& n : graph.nodes()) {
    if (!HasInlineFlag(n)) continue;
    auto w = wires_out.find(n.id);
    if (w == wires_out.end() || w->second != 1) continue;
    const WireRef& wire = only[n.id];
    const PortDef* def = InputDef(graph, wire.consumer, wire.port);
    if (!def || def->is_list || wire.producer.index != 0) continue;
    target_[n.id] = wire;
    by_consumer_[wire.consumer][wire.port] = n.id;
  }
}

const WireRef* InlineIndex::TargetOf(const std::string& id) const {
  auto it = target_.find(id);
  return it == target_.end() ? nullptr : &it->second;
}

std::map<std::string, std::string> InlineIndex::InputsOf(const std::string& consumer) const {
  auto it = by_consumer_.find(consumer);
  return it == by_consumer_.end() ? std::map<std::string, std::string>() : it->second;
}

std::map<std::string, QString> InlineIndex::TextsOf(const Graph& graph,
                                                    const std::string& consumer) const {
  std::map<std::string, QString> out;
  for (const auto& [port, id] : InputsOf(consumer)) {
    if (const Node* k = graph.FindNode(id)) out[port] = InlineValueText(*k);
  }
  return out;
}

QString InlineValueText(const Node& konst) {
  const nlohmann::json& a = konst.attrs;
  if (!a.is_object()) return "?";
  if (a.contains("file") && a["file"].is_string())
    return QString::fromStdString(a["file"].get<std::string>());
  std::vector<int64_t> shape;
  if (a.contains("shape") && a["shape"].is_array()) {
    for (const auto& d : a["shape"]) shape.push_back(d.is_number_integer() ? d.get<int64_t>() : -1);
  }
  if (!a.contains("value")) return "?";
  const nlohmann::json& v = a["value"];
  if (v.is_number()) {
    if (shape.empty()) return Number(v);
    QStringList dims;
    for (int64_t d : shape) dims << QString::number(d);
    return QString("[%1] filled with %2").arg(dims.join(","), Number(v));
  }
  if (!v.is_array()) return "?";
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  if (shape.empty() && v.size() == 1) return Number(v[0]);
  if (shape.size() <= 1 || count != static_cast<int64_t>(v.size())) {
    QStringList parts;
    for (const auto& e : v) parts << Number(e);
    return "[" + parts.join(", ") + "]";
  }
  size_t at = 0;
  return Nested(v, shape, 0, &at);
}

Expected<nlohmann::json> ParseInlineValue(const QString& text, const PortDef& port, DType keep,
                                          DType peer) {
  const QString t = text.trimmed();
  if (t.isEmpty()) return InvalidArgument("no value given");
  std::vector<int64_t> shape;
  nlohmann::json flat = nlohmann::json::array();
  const nlohmann::json parsed =
      nlohmann::json::parse(t.toStdString(), nullptr, /*allow_exceptions=*/false);
  bool scalar = false;
  if (!parsed.is_discarded() && (parsed.is_number() || parsed.is_array())) {
    if (!Flatten(parsed, 0, &shape, &flat)) {
      return InvalidArgument("'" + t.toStdString() +
                             "' is not a number or a list of numbers (nested lists must all "
                             "have the same length)");
    }
    scalar = parsed.is_number();
  } else {
    QString err;
    flat = ParseNumberList(t, &err);
    if (flat.is_null() || flat.empty()) {
      return InvalidArgument(err.isEmpty()
                                 ? "'" + t.toStdString() + "' is not a number or a list of numbers"
                                 : err.toStdString());
    }
    shape = {static_cast<int64_t>(flat.size())};
  }
  const bool whole = std::all_of(flat.begin(), flat.end(), [](const nlohmann::json& v) {
    return v.is_number_integer() || (v.is_number_float() && std::isfinite(v.get<double>()) &&
                                     std::floor(v.get<double>()) == v.get<double>());
  });
  auto fits = [&](DType d) {
    return d != DType::kInvalid && Allows(port, d) && (whole || IsFloatingDType(d));
  };
  DType dtype = DType::kInvalid;
  for (DType d : {keep, peer}) {
    if (dtype == DType::kInvalid && fits(d)) dtype = d;
  }
  if (dtype == DType::kInvalid && whole && Allows(port, DType::kInt32)) dtype = DType::kInt32;
  if (dtype == DType::kInvalid && Allows(port, DType::kFloat32)) dtype = DType::kFloat32;
  if (dtype == DType::kInvalid) {
    for (DType d : port.dtypes) {
      if (dtype == DType::kInvalid && fits(d)) dtype = d;
    }
  }
  if (dtype == DType::kInvalid) {
    return InvalidArgument("input '" + port.name + "' takes whole numbers only; '" +
                           t.toStdString() + "' is not");
  }
  if (!IsFloatingDType(dtype)) {
    for (auto& v : flat) v = static_cast<int64_t>(std::llround(v.get<double>()));
  }
  nlohmann::json attrs = {{"dtype", std::string(DTypeName(dtype))},
                          {"shape", scalar ? nlohmann::json::array() : nlohmann::json(shape)},
                          {"value", scalar ? flat[0] : flat}};
  return attrs;
}

Status SetInlineValue(GraphDocument* doc, const std::string& consumer, const std::string& port,
                      const QString& text) {
  const Graph& graph = doc->graph();
  const Node* node = graph.FindNode(consumer);
  if (!node) return NotFound("no node '" + consumer + "'");
  const PortDef* def = InputDef(graph, consumer, port);
  if (!def)
    return NotFound("node '" + consumer + "' (" + node->op + ") has no input '" + port + "'");
  const std::string who = "'" + consumer + "'." + port + ": ";
  if (def->is_list) return InvalidArgument(who + "a list input takes wires, not a typed value");
  const InlineIndex index(graph);
  const auto inline_inputs = index.InputsOf(consumer);
  auto existing = inline_inputs.find(port);
  auto wired = node->inputs.find(port);
  if (existing == inline_inputs.end() && wired != node->inputs.end() && !wired->second.empty()) {
    return InvalidArgument(who + "is wired to '" + wired->second[0].ToString() +
                           "'; delete that wire to type a value instead");
  }
  Graph after = graph;
  if (text.trimmed().isEmpty()) {
    if (existing == inline_inputs.end()) return Status::OK();
    after.RemoveNode(existing->second);
    doc->ApplyEdit(
        QString("Clear %1.%2").arg(QString::fromStdString(consumer), QString::fromStdString(port)),
        std::move(after));
    return Status::OK();
  }
  DType keep = DType::kInvalid;
  if (existing != inline_inputs.end()) {
    const Node* k = graph.FindNode(existing->second);
    if (k && k->attrs.contains("dtype") && k->attrs["dtype"].is_string())
      keep = ParseDType(k->attrs["dtype"].get<std::string>()).value_or(DType::kInvalid);
  }
  Expected<nlohmann::json> attrs =
      ParseInlineValue(text, *def, keep, PeerDType(*doc, consumer, *def));
  if (!attrs.ok()) return attrs.status().WithPrefix(who);
  if (existing != inline_inputs.end()) {
    Node* k = after.FindNode(existing->second);
    if (k->attrs == *attrs) return Status::OK();
    k->attrs = *attrs;
  } else {
    Node k;
    k.id = after.UniqueId(consumer + "/" + port);
    k.op = "Const";
    k.attrs = *attrs;
    k.ui = {{"inline", true}};
    RETURN_IF_ERROR(after.AddNode(k));
    after.FindNode(consumer)->inputs[port] = {Endpoint{k.id, 0}};
  }
  doc->ApplyEdit(
      QString("Set %1.%2 = %3")
          .arg(QString::fromStdString(consumer), QString::fromStdString(port), text.trimmed()),
      std::move(after));
  return Status::OK();
}

Status UnfoldInlineValue(GraphDocument* doc, const std::string& consumer, const std::string& port) {
  const Graph& graph = doc->graph();
  const auto inputs = InlineIndex(graph).InputsOf(consumer);
  auto it = inputs.find(port);
  if (it == inputs.end())
    return NotFound("'" + consumer + "'." + port + " has no inline value to unfold");
  Graph after = graph;
  Node* k = after.FindNode(it->second);
  k->ui.erase("inline");
  // Left of the consumer, level with the port's row.
  const Node* c = graph.FindNode(consumer);
  const std::optional<std::pair<double, double>> at = NodePositionXY(*c);
  const OpSchema* schema = doc->registry().Find(c->op);
  const int row = schema ? std::max(schema->InputIndex(port), 0) : 0;
  SetNodePosition(*k, (at ? at->first : 0) - 300, (at ? at->second : 0) + 35.0 * row);
  doc->ApplyEdit(QString("Unfold %1").arg(QString::fromStdString(it->second)), std::move(after));
  return Status::OK();
}

bool CanFoldIntoPort(const Graph& graph, const std::string& id) {
  const Node* node = graph.FindNode(id);
  if (!node || node->op != "Const") return false;
  Graph probe;
  Node copy = *node;
  copy.ui = {{"inline", true}};
  (void)probe.AddNode(copy);
  for (const std::string& c : graph.Consumers(id)) {
    if (const Node* n = graph.FindNode(c)) (void)probe.AddNode(*n);
  }
  return InlineIndex(probe).IsInline(id);
}

Status FoldIntoPort(GraphDocument* doc, const std::string& id) {
  if (!CanFoldIntoPort(doc->graph(), id)) {
    return InvalidArgument("'" + id +
                           "' cannot be folded into a port: only a Const that feeds exactly one "
                           "input (not a list input) can");
  }
  Graph after = doc->graph();
  Node* k = after.FindNode(id);
  if (!k->ui.is_object()) k->ui = nlohmann::json::object();
  k->ui.erase("x");
  k->ui.erase("y");
  k->ui["inline"] = true;
  doc->ApplyEdit(QString("Fold %1 into its port").arg(QString::fromStdString(id)),
                 std::move(after));
  return Status::OK();
}

std::vector<std::string> WithInlineInputs(const Graph& graph, const std::vector<std::string>& ids) {
  const InlineIndex index(graph);
  std::set<std::string> have(ids.begin(), ids.end());
  std::vector<std::string> out = ids;
  for (const std::string& id : ids) {
    for (const auto& [port, k] : index.InputsOf(id)) {
      if (have.insert(k).second) out.push_back(k);
    }
  }
  return out;
}

void DropOrphanedInlineConsts(const Graph& before, Graph& after) {
  const InlineIndex was(before);
  std::vector<std::string> drop;
  for (const Node& n : after.nodes()) {
    if (!HasInlineFlag(n) || !was.IsInline(n.id)) continue;
    if (after.Consumers(n.id).empty()) drop.push_back(n.id);
  }
  for (const std::string& id : drop) after.RemoveNode(id);
}

nlohmann::json InlineInputsKey(const Graph& graph, const std::string& id) {
  nlohmann::json key = nlohmann::json::object();
  for (const auto& [port, k] : InlineIndex(graph).InputsOf(id)) {
    if (const Node* n = graph.FindNode(k)) key[port] = n->attrs;
  }
  return key;
}

void AddInlineInputRows(QFormLayout* form, GraphDocument* doc, const Node& node,
                        const std::function<void(const QString&, bool)>& report,
                        std::map<std::string, QWidget*>* editors) {
  const OpSchema* schema = doc->registry().Find(node.op);
  if (!schema) return;
  const Graph& graph = doc->graph();
  const auto inline_inputs = InlineIndex(graph).InputsOf(node.id);
  const std::string id = node.id;
  for (const PortDef& def : schema->inputs()) {
    if (def.is_list) continue;
    auto k = inline_inputs.find(def.name);
    const bool is_inline = k != inline_inputs.end();
    auto wired = node.inputs.find(def.name);
    if (!is_inline && wired != node.inputs.end() && !wired->second.empty()) continue;
    auto* w = new QWidget;
    auto* h = new QHBoxLayout(w);
    h->setContentsMargins(0, 0, 0, 0);
    h->setSpacing(4);
    auto* edit = new QLineEdit;
    edit->setObjectName(QString::fromStdString("inline_" + def.name));
    if (is_inline) {
      if (const Node* kn = graph.FindNode(k->second)) edit->setText(InlineValueText(*kn));
    }
    edit->setPlaceholderText("wire it, or type a value: 3, 3, 3, 1");
    edit->setToolTip(QString("Input '%1': a value typed here is stored as a Const drawn folded "
                             "into the port (ui.inline). Empty: no value.")
                         .arg(QString::fromStdString(def.name)));
    h->addWidget(edit, 1);
    const std::string port = def.name;
    QObject::connect(edit, &QLineEdit::editingFinished, edit, [doc, id, port, edit, report] {
      const Status st = SetInlineValue(doc, id, port, edit->text());
      edit->setStyleSheet(st.ok() ? "" : kErrorStyle);
      edit->setToolTip(st.ok() ? QString() : QString::fromStdString(st.message()));
      if (!st.ok()) report(QString::fromStdString(st.message()), true);
    });
    if (is_inline) {
      auto* unfold = new QToolButton;
      unfold->setText("Unfold");
      unfold->setObjectName(QString::fromStdString("unfold_" + def.name));
      unfold->setToolTip("Show this value as a Const node of its own");
      QObject::connect(unfold, &QToolButton::clicked, unfold, [doc, id, port, report] {
        const Status st = UnfoldInlineValue(doc, id, port);
        if (!st.ok()) report(QString::fromStdString(st.message()), true);
      });
      h->addWidget(unfold);
    }
    form->addRow(QString::fromStdString("→ " + def.name), w);
    (*editors)["inline_" + def.name] = edit;
  }
}

namespace {

// A line edit that closes itself on Escape, focus loss or commit.
class PopupLineEdit : public QLineEdit {
 public:
  using QLineEdit::QLineEdit;
  std::function<void()> on_commit;

 protected:
  void keyPressEvent(QKeyEvent* event) override {
    if (event->key() == Qt::Key_Escape) {
      close();
      return;
    }
    if (event->key() == Qt::Key_Return || event->key() == Qt::Key_Enter) {
      if (on_commit) on_commit();
      return;
    }
    QLineEdit::keyPressEvent(event);
  }
};

}  // namespace

void OpenInlineValueEditor(QWidget* parent, QPoint global_pos, GraphDocument* doc,
                           const std::string& consumer, const std::string& port,
                           const std::function<void(const QString&, bool)>& report) {
  auto* edit = new PopupLineEdit(parent);
  edit->setWindowFlags(Qt::Popup);
  edit->setAttribute(Qt::WA_DeleteOnClose);
  edit->setObjectName("inline_popup");
  edit->setMinimumWidth(220);
  edit->setPlaceholderText(QString::fromStdString(port) + ": a number or a list, e.g. 3, 3, 3, 1");
  const auto inputs = InlineIndex(doc->graph()).InputsOf(consumer);
  if (auto it = inputs.find(port); it != inputs.end()) {
    if (const Node* k = doc->graph().FindNode(it->second)) edit->setText(InlineValueText(*k));
  }
  edit->selectAll();
  edit->on_commit = [edit, doc, consumer, port, report] {
    const Status st = SetInlineValue(doc, consumer, port, edit->text());
    if (!st.ok()) {
      edit->setStyleSheet(kErrorStyle);
      edit->setToolTip(QString::fromStdString(st.message()));
      report(QString::fromStdString(st.message()), true);
      return;
    }
    edit->close();
  };
  edit->move(global_pos);
  edit->show();
  edit->setFocus();
}

}  // namespace blockflow::editor
