// ProblemsPanel: every issue of the document's analysis, one row each (node, op, message, the
// message wrapped in full). A click selects the node. It follows the document: after each
// change the list is the analysis of the graph as it is now.
#pragma once

#include <QWidget>
#include <string>

class QLabel;
class QTreeWidget;

namespace blockflow::editor {

class GraphDocument;

class ProblemsPanel : public QWidget {
  Q_OBJECT

 public:
  explicit ProblemsPanel(GraphDocument* doc, QWidget* parent = nullptr);
  /// Re-reads the analysis (called on every document change).
  void Refresh();
  QTreeWidget* list() const { return list_; }
  /// One line per row: "node (op): message", or the message for graph-level problems.
  QStringList Rows() const;

 signals:
  /// A row was clicked: select node `id` ("" for a graph-level problem).
  void nodeActivated(const QString& id);
  /// The number of problems changed (for the dock's title).
  void countChanged(int count);

 private:
  GraphDocument* doc_;
  QTreeWidget* list_;
  QLabel* empty_;
  int count_ = -1;
};

}  // namespace blockflow::editor
