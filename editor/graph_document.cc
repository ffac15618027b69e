#include "editor/graph_document.h"

#include <QUndoCommand>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>

#include "core/layout.h"
#include "core/npy.h"
#include "editor/inline_values.h"

namespace blockflow::editor {

namespace fs = std::filesystem;

// Stores whole graphs before and after an edit: simple, and exact for every kind of edit.
class SnapshotCommand : public QUndoCommand {
 public:
  SnapshotCommand(GraphDocument* doc, const QString& text, Graph before, Graph after,
                  bool layout_only)
      : QUndoCommand(text),
        doc_(doc),
        before_(std::move(before)),
        after_(std::move(after)),
        layout_only_(layout_only) {}
  void undo() override { doc_->Replace(before_, layout_only_); }
  void redo() override { doc_->Replace(after_, layout_only_); }

 private:
  GraphDocument* doc_;
  Graph before_, after_;
  bool layout_only_;
};

std::optional<QPointF> NodePosition(const Node& node) {
  std::optional<std::pair<double, double>> p = NodePositionXY(node);
  if (!p) return std::nullopt;
  return QPointF(p->first, p->second);
}

static void SetPosition(Node& node, QPointF p) { SetNodePosition(node, p.x(), p.y()); }

std::string IdBaseForOp(const std::string& op) {
  std::string out;
  for (size_t i = 0; i < op.size(); ++i) {
    const char c = op[i];
    if (std::isupper(static_cast<unsigned char>(c))) {
      // A word starts after a lower-case letter, or where an acronym or a number ends
      // ("Conv2DBackprop" → conv2d_backprop).
      const bool prev_lower = i > 0 && std::islower(static_cast<unsigned char>(op[i - 1]));
      const bool next_lower =
          i + 1 < op.size() && std::islower(static_cast<unsigned char>(op[i + 1]));
      const bool prev_upper = i > 0 && (std::isupper(static_cast<unsigned char>(op[i - 1])) ||
                                        std::isdigit(static_cast<unsigned char>(op[i - 1])));
      if (!out.empty() && (prev_lower || (prev_upper && next_lower))) out += '_';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (std::isalnum(static_cast<unsigned char>(c))) {
      out += c;
    } else {
      out += '_';
    }
  }
  return out.empty() ? "node" : out;
}

GraphDocument::GraphDocument(QObject* parent) : QObject(parent), registry_(OpRegistry::Global()) {
  connect(&undo_stack_, &QUndoStack::cleanChanged, this, &GraphDocument::fileStateChanged);
  Reanalyze();
}

const NodeInfo* GraphDocument::InfoFor(const std::string& id) const {
  const int i = graph_.IndexOf(id);
  if (i < 0 || i >= static_cast<int>(analysis_.nodes.size())) return nullptr;
  return &analysis_.nodes[static_cast<size_t>(i)];
}

std::vector<std::string> GraphDocument::IssuesFor(const std::string& id) const {
  std::vector<std::string> out;
  for (const NodeIssue& issue : analysis_.issues) {
    if (issue.node_id == id) out.push_back(issue.ToString());
  }
  return out;
}

void GraphDocument::NewGraph() { Reset(Graph()); }

void GraphDocument::Reset(Graph graph) {
  undo_stack_.clear();
  detached_copy_ = false;
  const bool allow_outside_files = graph_.allow_outside_files;  // the editor's settings stay
  const uint64_t memory_limit = graph_.memory_limit;
  graph_ = std::move(graph);
  graph_.allow_outside_files = allow_outside_files;
  graph_.memory_limit = memory_limit;
  unplaced_on_load_.clear();
  const InlineIndex inline_index(graph_);  // drawn in their ports: no position of their own
  std::set<std::string> inline_unplaced;
  for (const Node& n : graph_.nodes()) {
    if (NodePosition(n)) continue;
    if (inline_index.IsInline(n.id)) {
      inline_unplaced.insert(n.id);
    } else {
      unplaced_on_load_.push_back(n.id);
    }
  }
  AssignMissingPositions(graph_);
  for (Node& n : graph_.nodes()) {
    if (!inline_unplaced.count(n.id)) continue;
    n.ui.erase("x");
    n.ui.erase("y");
  }
  Reanalyze();
  undo_stack_.setClean();
  emit graphChanged(false);
  emit fileStateChanged();
}

Status GraphDocument::Open(const QString& path) {
  Expected<Graph> g = LoadGraphFile(path.toStdString());
  if (!g.ok()) return g.status();
  Reset(std::move(g).value());
  return Status::OK();
}

// Calls fn(value, path) for every relative file name of the graph: attrs whose schema gives a
// file kind (a Const's `file`) and `ui.feed`.
template <typename Fn>
static void ForEachRelativeFile(Graph& graph, Fn fn) {
  auto visit = [&](nlohmann::json& v) {
    if (!v.is_string()) return;
    const fs::path p(v.get<std::string>());
    if (p.is_absolute() || p.empty()) return;
    fn(v, p);
  };
  for (Node& node : graph.nodes()) {
    const OpSchema* schema = OpRegistry::Global().Find(node.op);
    if (schema && node.attrs.is_object()) {
      for (const AttrDef& def : schema->attrs()) {
        if (def.file_kind != FileKind::kNone && node.attrs.contains(def.name))
          visit(node.attrs[def.name]);
      }
    }
    if (node.ui.is_object() && node.ui.contains("feed")) visit(node.ui["feed"]);
  }
}

// Keeps relative file names pointing at the same files when a graph is saved elsewhere.
static void RebaseRelativeFiles(Graph& graph, const std::string& old_dir,
                                const std::string& new_dir) {
  // Compared as folders: "/g/." and "/g" are the same folder.
  auto folder = [](const std::string& d) { return (fs::path(d) / "").lexically_normal(); };
  if (old_dir.empty() || folder(old_dir) == folder(new_dir)) return;
  ForEachRelativeFile(graph, [&](nlohmann::json& v, const fs::path& p) {
    const fs::path abs = (fs::path(old_dir) / p).lexically_normal();
    const fs::path rel = abs.lexically_relative(fs::path(new_dir).lexically_normal());
    v = rel.empty() ? abs.string() : rel.string();  // no relative path between them: absolute
  });
}

// Copies `src` to `dst` (creating its folder) unless `dst` already holds the same bytes; a
// different file at `dst` is an error, never overwritten.
static Status CopyDataFile(const fs::path& src, const fs::path& dst) {
  std::error_code ec;
  if (!fs::is_regular_file(src, ec)) return Status::OK();  // missing: analysis says so
  if (fs::exists(dst, ec)) {
    Expected<std::string> a = ReadFile(src.string()), b = ReadFile(dst.string());
    if (a.ok() && b.ok() && *a == *b) return Status::OK();
    return InvalidArgument("cannot copy '" + src.string() + "' beside the saved graph: '" +
                           dst.string() + "' exists and is a different file (not overwritten)");
  }
  fs::create_directories(dst.parent_path(), ec);
  if (!ec) fs::copy_file(src, dst, ec);
  if (ec)
    return Internal("cannot copy '" + src.string() + "' to '" + dst.string() +
                    "': " + ec.message());
  return Status::OK();
}

// Keeps the files a graph names when it is saved from `old_dir` into `new_dir`. A file inside
// the old folder keeps its relative name and is copied along when the graph is a detached copy
// (a sample) or when the new folder does not contain it (the rule that a graph's files lie in
// its folder would refuse the saved graph otherwise, unless the graph may name files outside).
// Any other name is rebased to point at the same file from the new folder.
static Status MoveGraphFiles(Graph& graph, const std::string& old_dir, const std::string& new_dir,
                             bool copy_all) {
  auto folder = [](const std::string& d) { return (fs::path(d) / "").lexically_normal(); };
  if (old_dir.empty() || folder(old_dir) == folder(new_dir)) return Status::OK();
  Status status;
  ForEachRelativeFile(graph, [&](nlohmann::json& v, const fs::path& name) {
    if (!status.ok()) return;
    const fs::path rel = name.lexically_normal();
    const fs::path abs = (fs::path(old_dir) / rel).lexically_normal();
    const fs::path moved = abs.lexically_relative(fs::path(new_dir).lexically_normal());
    const bool inside_old = !rel.empty() && *rel.begin() != "..";
    const bool inside_new = !moved.empty() && *moved.begin() != "..";
    if (inside_old && (copy_all || (!inside_new && !graph.allow_outside_files))) {
      status = CopyDataFile(abs, fs::path(new_dir) / rel);
      v = rel.string();
      return;
    }
    v = moved.empty() ? abs.string() : moved.string();  // no relative path between them
  });
  return status;
}

Status GraphDocument::Save(const QString& path) {
  const std::string p = path.toStdString();
  const std::string new_dir = fs::absolute(fs::path(p)).parent_path().string();
  Graph to_save = graph_;
  // Relative names of a graph that has a folder name files there; "" is a new graph.
  const std::string old_dir =
      graph_.base_dir.empty() ? std::string() : fs::absolute(graph_.base_dir).string();
  RETURN_IF_ERROR(MoveGraphFiles(to_save, old_dir, new_dir, /*copy_all=*/detached_copy_));
  RETURN_IF_ERROR(SaveGraphFile(to_save, p, registry_));
  const bool rebased = SerializeGraph(to_save, registry_) != SerializeGraph(graph_, registry_);
  to_save.source_path = p;
  // Absolute: "g.json" has no parent path, and an empty base_dir would read as a new graph
  // (the next Save As would then not rebase the relative file names).
  to_save.base_dir = new_dir;
  detached_copy_ = false;
  if (rebased) {
    // The file names changed; history from the old folder would now point elsewhere.
    undo_stack_.clear();
  }
  graph_ = std::move(to_save);
  Reanalyze();
  undo_stack_.setClean();
  emit graphChanged(/*layout_only=*/true);  // same graph: run results stay valid
  emit fileStateChanged();
  return Status::OK();
}

void GraphDocument::DetachFromFile() {
  graph_.source_path.clear();
  detached_copy_ = true;
  emit fileStateChanged();
}

void GraphDocument::SetAllowOutsideFiles(bool allow) {
  graph_.allow_outside_files = allow;
  Reanalyze();
  emit graphChanged(false);
}

void GraphDocument::SetMemoryLimit(uint64_t bytes) {
  graph_.memory_limit = bytes;
  Reanalyze();
  emit graphChanged(false);
}

void GraphDocument::Reanalyze() { analysis_ = AnalyzeGraph(graph_, registry_); }

void GraphDocument::Replace(const Graph& graph, bool layout_only) {
  const std::string source = graph_.source_path, base = graph_.base_dir;
  const bool allow_outside_files = graph_.allow_outside_files;
  const uint64_t memory_limit = graph_.memory_limit;
  graph_ = graph;
  graph_.source_path = source;
  graph_.base_dir = base;
  graph_.allow_outside_files = allow_outside_files;
  graph_.memory_limit = memory_limit;
  if (!layout_only) Reanalyze();
  emit graphChanged(layout_only);
}

void GraphDocument::ApplyEdit(const QString& text, Graph after, bool layout_only) {
  if (!layout_only) DropOrphanedInlineConsts(graph_, after);
  undo_stack_.push(new SnapshotCommand(this, text, graph_, std::move(after), layout_only));
}

Node* GraphDocument::MutableNode(Graph& g, const std::string& id, Status* status) const {
  Node* node = g.FindNode(id);
  if (!node) *status = NotFound("no node '" + id + "' in the graph");
  return node;
}

Expected<std::string> GraphDocument::AddNode(const std::string& op, QPointF pos) {
  const OpSchema* schema = registry_.Find(op);
  if (!schema) return NotFound("unknown block '" + op + "'");
  Node node;
  node.id = graph_.UniqueId(IdBaseForOp(op));
  node.op = op;
  // A new block starts valid where a sensible choice exists: a required dtype becomes float32.
  for (const AttrDef& a : schema->attrs()) {
    if (a.required && a.type == AttrType::kDType) node.attrs[a.name] = "float32";
  }
  SetPosition(node, pos);
  Graph after = graph_;
  RETURN_IF_ERROR(after.AddNode(node));
  const std::string id = node.id;
  ApplyEdit(QString("Add %1").arg(QString::fromStdString(id)), std::move(after));
  return id;
}

Status GraphDocument::CheckConnection(const Endpoint& from, const std::string& consumer,
                                      const std::string& port) const {
  const Node* src = graph_.FindNode(from.node);
  const Node* dst = graph_.FindNode(consumer);
  if (!src) return NotFound("no node '" + from.node + "'");
  if (!dst) return NotFound("no node '" + consumer + "'");
  const OpSchema* schema = registry_.Find(dst->op);
  if (!schema) return NotFound("node '" + consumer + "' has unknown op '" + dst->op + "'");
  const int pi = schema->InputIndex(port);
  if (pi < 0)
    return NotFound("node '" + consumer + "' (" + dst->op + ") has no input '" + port + "'");
  const std::string target = "'" + consumer + "'." + port;
  if (from.node == consumer) {
    return InvalidArgument("refused: wiring '" + from.ToString() + "' into " + target +
                           " would create a cycle (a block cannot feed itself)");
  }
  if (WouldCreateCycle(graph_, from.node, consumer)) {
    return InvalidArgument("refused: wiring '" + from.ToString() + "' into " + target +
                           " would create a cycle ('" + consumer + "' already feeds '" + from.node +
                           "')");
  }
  // The producer's dtype: inferred when known, else the only dtype its schema allows.
  DType dtype = DType::kInvalid;
  if (const NodeInfo* info = InfoFor(from.node);
      info && from.index < static_cast<int>(info->outputs.size())) {
    dtype = info->outputs[static_cast<size_t>(from.index)].dtype;
  }
  if (dtype == DType::kInvalid) {
    if (const OpSchema* ps = registry_.Find(src->op); ps && !ps->outputs().empty()) {
      const size_t k = std::min(static_cast<size_t>(from.index), ps->outputs().size() - 1);
      if (ps->outputs()[k].dtypes.size() == 1) dtype = ps->outputs()[k].dtypes[0];
    }
  }
  const std::vector<DType>& allowed = schema->inputs()[static_cast<size_t>(pi)].dtypes;
  if (dtype != DType::kInvalid && !allowed.empty() &&
      std::find(allowed.begin(), allowed.end(), dtype) == allowed.end()) {
    std::string names;
    for (DType d : allowed) names += (names.empty() ? "" : ", ") + std::string(DTypeName(d));
    return InvalidArgument("refused: " + target + " (" + dst->op + ") accepts " + names + "; '" +
                           from.ToString() + "' gives " + std::string(DTypeName(dtype)));
  }
  return Status::OK();
}

Status GraphDocument::Connect(const Endpoint& from, const std::string& consumer,
                              const std::string& port) {
  RETURN_IF_ERROR(CheckConnection(from, consumer, port));
  Graph after = graph_;
  Node* dst = after.FindNode(consumer);
  const OpSchema* schema = registry_.Find(dst->op);
  const PortDef& def = schema->inputs()[static_cast<size_t>(schema->InputIndex(port))];
  std::vector<Endpoint>& eps = dst->inputs[port];
  if (def.is_list) {
    if (std::find(eps.begin(), eps.end(), from) != eps.end()) return Status::OK();
    eps.push_back(from);
  } else {
    if (eps.size() == 1 && eps[0] == from) return Status::OK();
    eps = {from};  // an input takes one wire: the new one replaces the old
  }
  ApplyEdit(QString("Connect %1 → %2.%3")
                .arg(QString::fromStdString(from.ToString()), QString::fromStdString(consumer),
                     QString::fromStdString(port)),
            std::move(after));
  return Status::OK();
}

static void RemoveWire(Graph& g, const WireRef& w) {
  Node* dst = g.FindNode(w.consumer);
  if (!dst) return;
  auto it = dst->inputs.find(w.port);
  if (it == dst->inputs.end()) return;
  auto& eps = it->second;
  eps.erase(std::remove(eps.begin(), eps.end(), w.producer), eps.end());
  if (eps.empty()) dst->inputs.erase(it);
}

void GraphDocument::Remove(const std::vector<std::string>& node_ids,
                           const std::vector<WireRef>& wires) {
  if (node_ids.empty() && wires.empty()) return;
  Graph after = graph_;
  for (const WireRef& w : wires) RemoveWire(after, w);
  for (const std::string& id : node_ids) after.RemoveNode(id);  // and every wire from it
  QString text = node_ids.empty() ? QString("Delete %1 wire(s)").arg(wires.size())
                                  : QString("Delete %1 node(s)").arg(node_ids.size());
  ApplyEdit(text, std::move(after));
}

Status GraphDocument::SetAttrs(const std::string& id, const nlohmann::json& patch) {
  Graph after = graph_;
  Status st;
  Node* node = MutableNode(after, id, &st);
  if (!node) return st;
  if (!node->attrs.is_object()) node->attrs = nlohmann::json::object();
  for (const auto& [key, value] : patch.items()) {
    if (value.is_null()) {
      node->attrs.erase(key);
    } else {
      node->attrs[key] = value;
    }
  }
  if (node->attrs == graph_.FindNode(id)->attrs) return Status::OK();
  QString names;
  for (const auto& [key, value] : patch.items())
    names += (names.isEmpty() ? "" : ", ") + QString::fromStdString(key);
  ApplyEdit(QString("Set %1.%2").arg(QString::fromStdString(id), names), std::move(after));
  return Status::OK();
}

Status GraphDocument::SetAttr(const std::string& id, const std::string& name,
                              const nlohmann::json& value) {
  nlohmann::json patch = nlohmann::json::object();
  patch[name] = value;
  return SetAttrs(id, patch);
}

Status GraphDocument::SetUiValue(const std::string& id, const std::string& key,
                                 const nlohmann::json& value) {
  Graph after = graph_;
  Status st;
  Node* node = MutableNode(after, id, &st);
  if (!node) return st;
  if (!node->ui.is_object()) node->ui = nlohmann::json::object();
  if (value.is_null()) {
    node->ui.erase(key);
  } else {
    node->ui[key] = value;
  }
  if (node->ui == graph_.FindNode(id)->ui) return Status::OK();
  ApplyEdit(QString("Set %1 %2").arg(QString::fromStdString(id), QString::fromStdString(key)),
            std::move(after));
  return Status::OK();
}

Status GraphDocument::RenameNode(const std::string& id, const std::string& new_id) {
  if (id == new_id) return Status::OK();
  if (!graph_.FindNode(id)) return NotFound("no node '" + id + "'");
  if (!IsValidNodeId(new_id)) {
    return InvalidArgument("invalid id '" + new_id + "': use letters, digits and _ . - /");
  }
  if (graph_.FindNode(new_id))
    return InvalidArgument("id '" + new_id + "' is already used by another node");
  Graph after = graph_;
  after.FindNode(id)->id = new_id;
  for (Node& n : after.nodes()) {
    for (auto& [port, eps] : n.inputs) {
      for (Endpoint& e : eps) {
        if (e.node == id) e.node = new_id;
      }
    }
  }
  ApplyEdit(
      QString("Rename %1 → %2").arg(QString::fromStdString(id), QString::fromStdString(new_id)),
      std::move(after));
  return Status::OK();
}

void GraphDocument::MoveNodes(const std::map<std::string, QPointF>& positions) {
  Graph after = graph_;
  bool changed = false;
  for (const auto& [id, p] : positions) {
    Node* node = after.FindNode(id);
    if (!node) continue;
    auto old = NodePosition(*node);
    SetPosition(*node, p);
    if (!old || NodePosition(*node) != old) changed = true;
  }
  if (!changed) return;
  ApplyEdit(positions.size() == 1
                ? QString("Move %1").arg(QString::fromStdString(positions.begin()->first))
                : QString("Move %1 nodes").arg(positions.size()),
            std::move(after), /*layout_only=*/true);
}

std::string GraphDocument::CopyNodes(const std::vector<std::string>& ids) const {
  const std::vector<std::string> with_values = WithInlineInputs(graph_, ids);
  std::set<std::string> chosen(with_values.begin(), with_values.end());
  Graph sub;
  for (const Node& n : graph_.nodes()) {
    if (!chosen.count(n.id)) continue;
    Node copy = n;
    for (auto it = copy.inputs.begin(); it != copy.inputs.end();) {
      auto& eps = it->second;
      eps.erase(std::remove_if(eps.begin(), eps.end(),
                               [&](const Endpoint& e) { return !chosen.count(e.node); }),
                eps.end());
      it = eps.empty() ? copy.inputs.erase(it) : std::next(it);
    }
    (void)sub.AddNode(std::move(copy));
  }
  return SerializeGraph(sub, registry_);
}

Expected<std::vector<std::string>> GraphDocument::Paste(const std::string& json_text,
                                                        QPointF offset,
                                                        const std::string& source_dir) {
  ASSIGN_OR_RETURN(Graph pasted, ParseGraphJson(json_text, "clipboard", graph_.base_dir));
  if (!source_dir.empty()) {
    const std::string from = fs::absolute(source_dir).string();
    if (graph_.base_dir.empty()) {
      // A new graph has no folder yet: absolute names stay right wherever it is saved.
      ForEachRelativeFile(pasted, [&](nlohmann::json& v, const fs::path& p) {
        v = (fs::path(from) / p).lexically_normal().string();
      });
    } else {
      RebaseRelativeFiles(pasted, from, fs::absolute(graph_.base_dir).string());
    }
  }
  Graph after = graph_;
  std::map<std::string, std::string> renamed;
  for (const Node& n : pasted.nodes()) {
    const std::string new_id = after.UniqueId(n.id);
    renamed[n.id] = new_id;
    Node placeholder;  // reserve the id so the next UniqueId call skips it
    placeholder.id = new_id;
    placeholder.op = n.op;
    RETURN_IF_ERROR(after.AddNode(placeholder));
  }
  std::vector<std::string> new_ids;
  for (const Node& n : pasted.nodes()) {
    Node* target = after.FindNode(renamed[n.id]);
    target->attrs = n.attrs;
    target->ui = n.ui;
    target->inputs.clear();
    for (const auto& [port, eps] : n.inputs) {
      for (const Endpoint& e : eps) {
        auto it = renamed.find(e.node);
        if (it != renamed.end()) target->inputs[port].push_back(Endpoint{it->second, e.index});
      }
    }
    const QPointF p = NodePosition(n).value_or(QPointF(0, 0)) + offset;
    SetPosition(*target, p);
    new_ids.push_back(target->id);
  }
  if (new_ids.empty()) return new_ids;
  ApplyEdit(QString("Paste %1 node(s)").arg(new_ids.size()), std::move(after));
  return new_ids;
}

}  // namespace blockflow::editor
