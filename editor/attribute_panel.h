// AttributePanel: the editor of the selected node, generated from its block schema.
// Every change is committed to the document as one undoable edit and validated at once.
#pragma once

#include <map>
#include <string>

#include <QWidget>
#include <nlohmann/json.hpp>

#include "core/schema.h"

class QFormLayout;
class QLabel;
class QLineEdit;

namespace blockflow::editor {

class GraphDocument;

/// Parses "1, 8, 8, 2" (commas and/or spaces) into a JSON array of numbers; integers stay
/// integers. Returns an error message in `error` when a token is not a number.
nlohmann::json ParseNumberList(const QString& text, QString* error);
/// The inverse of ParseNumberList for display.
QString FormatNumberList(const nlohmann::json& values);

class AttributePanel : public QWidget {
  Q_OBJECT

 public:
  explicit AttributePanel(GraphDocument* doc, QWidget* parent = nullptr);
  /// Shows node `id` ("" shows nothing).
  void SetNode(const std::string& id);
  const std::string& node_id() const { return id_; }
  /// Re-reads the node after a document change (rebuilds only when the node changed).
  void Refresh();
  /// The editor widget of an attribute ("id", "feed", "value" for the Const value editor).
  QWidget* EditorFor(const std::string& name) const;
  /// Whether the row of an attribute is shown (explicit_paddings follows padding).
  bool IsRowVisible(const std::string& name) const;
  /// The validation text shown under the form.
  QString IssueText() const;

 signals:
  void statusMessage(const QString& text, bool error);
  void nodeRenamed(const QString& new_id);

 private:
  void Rebuild();
  void UpdateIssues();
  void UpdateVisibility();
  void Commit(const std::string& attr, const nlohmann::json& value);
  void CommitPatch(const nlohmann::json& patch);
  QWidget* MakeEditor(const AttrDef& def, const nlohmann::json& current);
  QWidget* MakeConstValueEditor();
  QWidget* MakeFeedEditor();
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
};

}  // namespace blockflow::editor
