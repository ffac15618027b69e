// GraphDocument: the one owner of the edited blockflow::Graph. Scene items and panels are
// views of it; every edit goes through an undoable command that stores the graph before and
// after, and is followed by a fresh AnalyzeGraph so the views show inferred dtypes, shapes
// and issues.
//
//   GraphDocument doc;
//   auto id = doc.AddNode("Add", QPointF(0, 0));
//   Status s = doc.Connect(Endpoint{"a", 0}, *id, "x");  // refused with a reason, or OK
//   doc.undo_stack()->undo();
#pragma once

#include <QObject>
#include <QPointF>
#include <QString>
#include <QUndoStack>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/layout.h"
#include "core/paths.h"
#include "core/schema.h"
#include "core/status.h"

namespace blockflow::editor {

/// One wire: `producer` feeds port `port` of node `consumer`.
struct WireRef {
  Endpoint producer;
  std::string consumer;
  std::string port;
  bool operator==(const WireRef& o) const {
    return producer == o.producer && consumer == o.consumer && port == o.port;
  }
};

/// The position stored in a node's `ui` ({"x","y"}), if any.
std::optional<QPointF> NodePosition(const Node& node);
/// A node id derived from an op name: "DepthwiseConv2dNative" → "depthwise_conv2d_native".
std::string IdBaseForOp(const std::string& op);

class GraphDocument : public QObject {
  Q_OBJECT

 public:
  explicit GraphDocument(QObject* parent = nullptr);

  const Graph& graph() const { return graph_; }
  const GraphAnalysis& analysis() const { return analysis_; }
  const OpRegistry& registry() const { return registry_; }
  /// Inference result of node `id`, or null.
  const NodeInfo* InfoFor(const std::string& id) const;
  /// Issues (NodeIssue::ToString()) of node `id`.
  std::vector<std::string> IssuesFor(const std::string& id) const;
  QUndoStack* undo_stack() { return &undo_stack_; }
  /// The file of the graph ("" for a new graph).
  QString file_path() const { return QString::fromStdString(graph_.source_path); }
  /// True when there are unsaved edits.
  bool IsModified() const { return !undo_stack_.isClean(); }

  /// Starts an empty graph (clears undo history).
  void NewGraph();
  /// Loads a graph file (clears undo history). Nodes without a position get one.
  Status Open(const QString& path);
  /// Forgets the file the graph came from (it stays in its folder for relative file names):
  /// the next Save asks where, and never overwrites the original. The first Save then copies
  /// the data files the graph names inside its folder (a Const's `file`, a `ui.feed`) to the
  /// same relative places beside the new file, so that the copy stays whole and self-contained.
  void DetachFromFile();
  /// True for a graph opened by DetachFromFile and not saved since.
  bool is_detached_copy() const { return detached_copy_; }
  /// Replaces the graph without undo history (e.g. a graph built in code).
  void Reset(Graph graph);
  /// The nodes that had no position when the graph was opened (or Reset); the editor lays
  /// them out (auto_layout.h).
  const std::vector<std::string>& unplaced_on_load() const { return unplaced_on_load_; }
  /// Saves atomically to `path`; relative file names are rebased when the folder changes.
  Status Save(const QString& path);
  /// Lets graphs name files outside their folder (Graph::allow_outside_files), for this and
  /// every graph opened later in this editor; off at start. Analyses again.
  void SetAllowOutsideFiles(bool allow);
  bool allow_outside_files() const { return graph_.allow_outside_files; }
  /// The memory limit (Graph::memory_limit; 0: half of memory) that analysis and runs hold
  /// this and every graph opened later to. Analyses again.
  void SetMemoryLimit(uint64_t bytes);
  uint64_t memory_limit() const { return graph_.memory_limit; }

  // Edits. Each one is one undoable command and emits graphChanged().
  /// Adds a block of `op` at `pos`; returns the new node's id.
  Expected<std::string> AddNode(const std::string& op, QPointF pos);
  /// OK when `from` may be wired into `port` of `consumer`; else the reason.
  Status CheckConnection(const Endpoint& from, const std::string& consumer,
                         const std::string& port) const;
  /// Wires `from` into `port` of `consumer` (replacing the wire of an ordinary port).
  Status Connect(const Endpoint& from, const std::string& consumer, const std::string& port);
  /// Removes nodes (and every wire touching them) and wires, as one command.
  void Remove(const std::vector<std::string>& node_ids, const std::vector<WireRef>& wires);
  /// Sets attribute `name` of node `id`; a null value removes it (its default applies).
  Status SetAttr(const std::string& id, const std::string& name, const nlohmann::json& value);
  /// Sets several attributes at once (null values remove), as one command.
  Status SetAttrs(const std::string& id, const nlohmann::json& patch);
  /// Sets `ui[key]` of node `id` (null removes).
  Status SetUiValue(const std::string& id, const std::string& key, const nlohmann::json& value);
  /// Renames a node and every wire that reads it.
  Status RenameNode(const std::string& id, const std::string& new_id);
  /// Moves nodes (positions stored in `ui`).
  void MoveNodes(const std::map<std::string, QPointF>& positions);
  /// Graph JSON of the given nodes and the wires among them (for the clipboard).
  std::string CopyNodes(const std::vector<std::string>& ids) const;
  /// Adds the nodes of clipboard JSON, ids made unique, shifted by `offset`; returns new ids.
  /// `source_dir`: the folder of the graph copied from; relative `file` / `ui.feed` names are
  /// rebased from it so that they keep naming the same files ("": taken as they are).
  Expected<std::vector<std::string>> Paste(const std::string& json_text, QPointF offset,
                                           const std::string& source_dir = "");

  /// Applies an arbitrary edit as one undoable command (`layout_only`: results stay valid).
  void ApplyEdit(const QString& text, Graph after, bool layout_only = false);

 signals:
  /// After every change of the graph (edit, undo, redo, load). `layout_only`: only positions.
  void graphChanged(bool layout_only);
  /// The file path or the modified state changed.
  void fileStateChanged();

 private:
  friend class SnapshotCommand;
  void Replace(const Graph& graph, bool layout_only);
  void Reanalyze();
  Node* MutableNode(Graph& g, const std::string& id, Status* status) const;

  const OpRegistry& registry_;
  Graph graph_;
  GraphAnalysis analysis_;
  QUndoStack undo_stack_;
  std::vector<std::string> unplaced_on_load_;
  bool detached_copy_ = false;
};

}  // namespace blockflow::editor
