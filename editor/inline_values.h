// Inline values: a value typed on an unwired input port (`[3,3,3,1]` for `filter_sizes`). The
// graph stays canonical: the value is an ordinary Const node with `"ui": {"inline": true}`
// wired into the port, which the canvas draws folded into the port instead of as a node of its
// own. `blockflow run` sees a Const like any other. Unfolding drops the flag (the Const becomes
// a normal node); folding sets it on a Const that feeds exactly one input.
//
//   Status s = SetInlineValue(doc, "dw", "filter_sizes", "3,3,3,1");  // one undoable edit
//   InlineIndex inl(doc->graph());    // which Consts are drawn inline, and where
//   UnfoldInlineValue(doc, "dw", "filter_sizes");
#pragma once

#include <QPoint>
#include <QString>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/schema.h"
#include "core/status.h"
#include "editor/graph_document.h"

class QFormLayout;
class QWidget;

namespace blockflow::editor {

/// The Consts of a graph drawn inline: `"ui": {"inline": true}`, and exactly one wire out of
/// them, into an input that is not a list. Any other Const with the flag is drawn as a node.
class InlineIndex {
 public:
  explicit InlineIndex(const Graph& graph);
  /// Whether node `id` is drawn folded into the port it feeds.
  bool IsInline(const std::string& id) const { return target_.count(id) > 0; }
  /// The wire out of inline Const `id` (null if `id` is not one).
  const WireRef* TargetOf(const std::string& id) const;
  /// Input port → inline Const id, of node `consumer`.
  std::map<std::string, std::string> InputsOf(const std::string& consumer) const;
  /// What a node shows for each inline input of `consumer`: port → value text.
  std::map<std::string, QString> TextsOf(const Graph& graph, const std::string& consumer) const;

 private:
  std::map<std::string, WireRef> target_;
  std::map<std::string, std::map<std::string, std::string>> by_consumer_;
};

/// The text of a Const's value as it is typed: "[3, 3, 3, 1]", "0.5", "[[1, 2], [3, 4]]", the
/// file name of a `file`, "[4] filled with 3" for a fill.
QString InlineValueText(const Node& konst);

/// Parses typed text into a Const's attrs {"dtype", "shape", "value"}: one number (a scalar),
/// numbers separated by commas or spaces (a vector), or nested JSON lists (their shape). The
/// dtype: `keep` when the values fit it and the port takes it; else the dtype the node's other
/// inputs of the same kind have (`peer`); else int32 for whole numbers where the port takes it,
/// else float32, else the port's first dtype.
Expected<nlohmann::json> ParseInlineValue(const QString& text, const PortDef& port,
                                          DType keep = DType::kInvalid,
                                          DType peer = DType::kInvalid);

/// Sets the inline value of input `port` of node `consumer` from typed text (empty text removes
/// it), as one undoable edit. Refused, with the reason, on a port wired to an ordinary node.
Status SetInlineValue(GraphDocument* doc, const std::string& consumer, const std::string& port,
                      const QString& text);
/// The inline Const of `consumer`.`port` becomes an ordinary node, placed left of its consumer.
Status UnfoldInlineValue(GraphDocument* doc, const std::string& consumer, const std::string& port);
/// Const `id`, which feeds exactly one input, is drawn folded into it from now on.
Status FoldIntoPort(GraphDocument* doc, const std::string& id);
/// Whether FoldIntoPort(doc, id) would be accepted.
bool CanFoldIntoPort(const Graph& graph, const std::string& id);

/// `ids` and the inline Consts that feed them (copying or deleting a node takes them along).
std::vector<std::string> WithInlineInputs(const Graph& graph, const std::vector<std::string>& ids);
/// Removes the Consts that were inline in `before` and feed nothing in `after` (their node was
/// deleted or their port re-wired): a value typed on a port lives and dies with the port.
void DropOrphanedInlineConsts(const Graph& before, Graph& after);

/// The attribute panel's rows for the inputs of `node` that are unwired or inline: one text
/// field each ("inline_PORT") and an Unfold button for an inline one. `report` shows errors.
void AddInlineInputRows(QFormLayout* form, GraphDocument* doc, const Node& node,
                        const std::function<void(const QString&, bool)>& report,
                        std::map<std::string, QWidget*>* editors);
/// A key that changes whenever the inline inputs of `id` do (the attribute panel rebuilds then).
nlohmann::json InlineInputsKey(const Graph& graph, const std::string& id);

/// A small popup line editor at `global_pos` for the inline value of `consumer`.`port`;
/// Enter commits, Escape cancels.
void OpenInlineValueEditor(QWidget* parent, QPoint global_pos, GraphDocument* doc,
                           const std::string& consumer, const std::string& port,
                           const std::function<void(const QString&, bool)>& report);

}  // namespace blockflow::editor
