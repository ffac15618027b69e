#include "editor/problems_panel.h"

#include <QHeaderView>
#include <QLabel>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "editor/graph_document.h"
#include "editor/theme.h"

namespace blockflow::editor {

namespace {
constexpr int kNodeRole = Qt::UserRole + 1;
}

ProblemsPanel::ProblemsPanel(GraphDocument* doc, QWidget* parent) : QWidget(parent), doc_(doc) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  list_ = new QTreeWidget;
  list_->setObjectName("problems");
  list_->setColumnCount(2);
  list_->setHeaderLabels({"Node", "Problem"});
  list_->setRootIsDecorated(false);
  list_->setWordWrap(true);  // long messages wrap instead of being cut off
  list_->setUniformRowHeights(false);
  list_->setSelectionMode(QAbstractItemView::SingleSelection);
  list_->header()->setStretchLastSection(true);
  list_->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  empty_ = new QLabel("No problems: the graph is valid.");
  empty_->setStyleSheet("color: #5fd38d; padding: 4px;");
  layout->addWidget(empty_);
  layout->addWidget(list_, 1);
  auto activate = [this](QTreeWidgetItem* item) {
    if (item) emit nodeActivated(item->data(0, kNodeRole).toString());
  };
  connect(list_, &QTreeWidget::itemClicked, this, activate);
  connect(list_, &QTreeWidget::itemActivated, this, activate);
  connect(doc_, &GraphDocument::graphChanged, this, [this](bool) { Refresh(); });
  Refresh();
}

void ProblemsPanel::Refresh() {
  list_->clear();
  const auto& issues = doc_->analysis().issues;
  for (const NodeIssue& issue : issues) {
    const QString id = QString::fromStdString(issue.node_id);
    const QString node = id.isEmpty()
                             ? QString("(graph)")
                             : QString("%1 (%2)").arg(id, QString::fromStdString(issue.op));
    auto* item = new QTreeWidgetItem({node, QString::fromStdString(issue.message)});
    item->setData(0, kNodeRole, id);
    item->setToolTip(1, QString::fromStdString(issue.ToString()));
    item->setForeground(0, palette::kError.lighter(120));
    list_->addTopLevelItem(item);
  }
  empty_->setVisible(issues.empty());
  list_->setVisible(!issues.empty());
  const int n = static_cast<int>(issues.size());
  if (n != count_) {
    count_ = n;
    emit countChanged(n);
  }
}

QStringList ProblemsPanel::Rows() const {
  QStringList rows;
  for (int i = 0; i < list_->topLevelItemCount(); ++i) {
    const QTreeWidgetItem* item = list_->topLevelItem(i);
    rows << (item->data(0, kNodeRole).toString().isEmpty() ? item->text(1)
                                                           : item->text(0) + ": " + item->text(1));
  }
  return rows;
}

}  // namespace blockflow::editor
