// AttributePanel: the editor of the selected node, generated from its block schema: one row
// per attribute (attr_editors.h), a value editor for an attribute a file can give instead
// (const_value_editor.h) and a feed editor for a block fed at run time (feed_editor.h). Every
// change is committed to the document as one undoable edit and validated at once.
#pragma once

#include <QWidget>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "core/schema.h"
#include "editor/attr_editors.h"

class QFormLayout;
class QLabel;
class QLineEdit;

namespace blockflow {
struct Node;
}

namespace blockflow::editor {

class GraphDocument;

class AttributePanel : public QWidget {
  Q_OBJECT

 public:
  explicit AttributePanel(GraphDocument* doc, QWidget* parent = nullptr);
  /// Shows node `id` ("" shows nothing).
  void SetNode(const std::string& id);
  const std::string& node_id() const { return id_; }
  /// Re-reads the node after a document change (rebuilds only when the node changed).
  void Refresh();
  /// The editor widget of an attribute ("id" for the node id, "feed" for the feed editor; an
  /// attribute a file can give instead shares its value editor with the file attribute).
  QWidget* EditorFor(const std::string& name) const;
  /// Whether the row of an attribute is shown (an attribute with a visible_when follows it).
  bool IsRowVisible(const std::string& name) const;
  /// The validation text shown under the form.
  QString IssueText() const;

 signals:
  void statusMessage(const QString& text, bool error);
  void nodeRenamed(const QString& new_id);

 private:
  void Rebuild();
  void UpdateIssues();
  void MarkAttrFields();
  void UpdateVisibility();
  void Commit(const std::string& attr, const nlohmann::json& value);
  void CommitPatch(const nlohmann::json& patch);
  void AddAttrRows(const OpSchema& schema, const Node& node);
  AttrEditorHost Host();
  QString ChooseFile(const QString& title, FileKind kind);
  QString RelativeToGraph(const QString& path) const;
  std::string Key() const;

  GraphDocument* doc_;
  std::string id_;
  std::string shown_key_;
  QWidget* host_ = nullptr;
  QFormLayout* form_ = nullptr;
  QLabel* header_ = nullptr;
  QLabel* issues_ = nullptr;
  std::map<std::string, QWidget*> editors_;
  std::set<std::string> hidden_rows_;  // rows that a visible_when rule hides
};

}  // namespace blockflow::editor
