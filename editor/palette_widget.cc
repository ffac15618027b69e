#include "editor/palette_widget.h"

#include <QHeaderView>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMimeData>
#include <QTreeWidgetItemIterator>
#include <QVBoxLayout>
#include <map>

#include "core/schema.h"
#include "editor/graph_scene.h"
#include "editor/theme.h"

namespace blockflow::editor {

namespace {
constexpr int kOpRole = Qt::UserRole + 1;

QString OpTooltip(const OpSchema& s) {
  QString tip = "<b>" + QString::fromStdString(s.name()) + "</b>";
  if (!s.doc().empty()) tip += "<br>" + QString::fromStdString(s.doc()).toHtmlEscaped();
  QStringList in, out;
  for (const PortDef& p : s.inputs()) in << QString::fromStdString(p.name);
  for (const OutputDef& p : s.outputs()) out << QString::fromStdString(p.name);
  tip += "<br><i>inputs:</i> " + (in.isEmpty() ? QString("none") : in.join(", "));
  tip += "<br><i>outputs:</i> " + out.join(", ");
  return tip;
}
}  // namespace

PaletteTree::PaletteTree(QWidget* parent) : QTreeWidget(parent) {
  setHeaderHidden(true);
  setDragEnabled(true);
  setDragDropMode(QAbstractItemView::DragOnly);
  setRootIsDecorated(true);
  setIndentation(14);
  setUniformRowHeights(true);
}

QStringList PaletteTree::mimeTypes() const { return {GraphScene::kOpMimeType}; }

QMimeData* PaletteTree::mimeData(const QList<QTreeWidgetItem*>& items) const {
  for (QTreeWidgetItem* item : items) {
    const QString op = item->data(0, kOpRole).toString();
    if (op.isEmpty()) continue;
    auto* mime = new QMimeData;
    mime->setData(GraphScene::kOpMimeType, op.toUtf8());
    mime->setText(op);
    return mime;
  }
  return nullptr;
}

PaletteWidget::PaletteWidget(const OpRegistry& registry, QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->setSpacing(6);
  search_ = new QLineEdit;
  search_->setPlaceholderText("Search blocks…");
  search_->setClearButtonEnabled(true);
  tree_ = new PaletteTree;
  layout->addWidget(search_);
  layout->addWidget(tree_, 1);
  auto* hint = new QLabel("Drag a block onto the canvas,\nor press Tab on the canvas.");
  hint->setStyleSheet("color: #8a919a; font-size: 8pt;");
  layout->addWidget(hint);

  no_matches_ = new QLabel;
  no_matches_->setObjectName("no_matches");
  no_matches_->setStyleSheet("color: #8a919a; font-style: italic;");
  no_matches_->setWordWrap(true);
  no_matches_->hide();
  layout->insertWidget(1, no_matches_);

  entries_ = SearchEntries(registry);
  Fill(QString());
  connect(search_, &QLineEdit::textChanged, this, &PaletteWidget::SetFilter);
  connect(tree_, &QTreeWidget::itemActivated, this, [this](QTreeWidgetItem* item) {
    const QString op = item->data(0, kOpRole).toString();
    if (!op.isEmpty()) emit opActivated(op);
  });
  // Enter in the search box adds the best match.
  connect(search_, &QLineEdit::returnPressed, this, [this] {
    const QStringList ops = ShownOps();
    if (!search_->text().trimmed().isEmpty() && !ops.isEmpty()) emit opActivated(ops[0]);
  });
}

namespace {
QTreeWidgetItem* OpItem(const OpSearchEntry& e) {
  auto* item = new QTreeWidgetItem({e.name});
  item->setData(0, kOpRole, e.name);
  if (e.schema) item->setToolTip(0, OpTooltip(*e.schema));
  item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsDragEnabled);
  return item;
}
}  // namespace

void PaletteWidget::Fill(const QString& text) {
  tree_->clear();
  const std::vector<int> ranked = RankOps(entries_, text);
  if (text.trimmed().isEmpty()) {
    std::map<QString, QTreeWidgetItem*> categories;
    for (const OpSearchEntry& e : entries_) {
      QTreeWidgetItem*& cat = categories[e.category];
      if (!cat) {
        cat = new QTreeWidgetItem({e.category});
        cat->setFlags(Qt::ItemIsEnabled);
        QFont f = cat->font(0);
        f.setBold(true);
        cat->setFont(0, f);
        cat->setForeground(0, CategoryColor(e.category).lighter(170));
      }
      cat->addChild(OpItem(e));
    }
    for (auto& [name, cat] : categories) tree_->addTopLevelItem(cat);
    tree_->setRootIsDecorated(true);
    tree_->expandAll();
  } else {
    // Best first, in one list: a category tree would hide the ranking.
    for (int i : ranked) {
      QTreeWidgetItem* item = OpItem(entries_[static_cast<size_t>(i)]);
      item->setText(0, entries_[static_cast<size_t>(i)].name + "   ·  " +
                           entries_[static_cast<size_t>(i)].category);
      tree_->addTopLevelItem(item);
    }
    tree_->setRootIsDecorated(false);
    if (tree_->topLevelItemCount() > 0) tree_->setCurrentItem(tree_->topLevelItem(0));
  }
  no_matches_->setText(QString("No blocks match '%1'.").arg(text.trimmed()));
  no_matches_->setVisible(ranked.empty() && !text.trimmed().isEmpty());
}

QStringList PaletteWidget::ShownOps() const {
  QStringList ops;
  for (QTreeWidgetItemIterator it(tree_); *it; ++it) {
    const QString op = (*it)->data(0, kOpRole).toString();
    if (!op.isEmpty() && !(*it)->isHidden()) ops << op;
  }
  return ops;
}

void PaletteWidget::SetFilter(const QString& text) { Fill(text); }

QuickAddPopup::QuickAddPopup(const OpRegistry& registry, QWidget* parent)
    : QFrame(parent, Qt::Popup) {
  setFrameShape(QFrame::StyledPanel);
  setMinimumWidth(340);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  search_ = new QLineEdit;
  search_->setPlaceholderText("Add block…");
  list_ = new QListWidget;
  list_->setMinimumHeight(260);
  layout->addWidget(search_);
  layout->addWidget(list_);
  no_matches_ = new QLabel;
  no_matches_->setObjectName("no_matches");
  no_matches_->setStyleSheet("color: #8a919a; font-style: italic;");
  no_matches_->hide();
  layout->insertWidget(1, no_matches_);
  entries_ = SearchEntries(registry);
  search_->installEventFilter(this);
  connect(search_, &QLineEdit::textChanged, this, &QuickAddPopup::SetFilter);
  connect(list_, &QListWidget::itemActivated, this, [this](QListWidgetItem*) { Choose(); });
}

void QuickAddPopup::Popup(QPoint global_pos, const std::optional<WireFit>& fit) {
  fit_ = fit;
  chosen_ = false;
  search_->setPlaceholderText(fit ? "Add a block for this wire…" : "Add block…");
  {
    const QSignalBlocker block(search_);
    search_->clear();
  }
  SetFilter(QString());
  move(global_pos);
  show();
  search_->setFocus();
}

void QuickAddPopup::SetFilter(const QString& text) {
  list_->clear();
  int shown = 0;
  for (int i : RankOps(entries_, text)) {
    const OpSearchEntry& e = entries_[static_cast<size_t>(i)];
    if (fit_ && (!e.schema || FittingPort(*e.schema, *fit_) < 0)) continue;
    auto* item = new QListWidgetItem(QString("%1    ·  %2").arg(e.name, e.category));
    item->setData(kOpRole, e.name);
    if (e.schema) item->setToolTip(OpTooltip(*e.schema));
    list_->addItem(item);
    ++shown;
  }
  if (shown > 0) list_->setCurrentRow(0);
  no_matches_->setText(fit_ && text.trimmed().isEmpty()
                           ? QString("No block has a port for this wire.")
                           : QString("No blocks match '%1'%2.")
                                 .arg(text.trimmed(), fit_ ? " with a port for this wire" : ""));
  no_matches_->setVisible(shown == 0);
}

QStringList QuickAddPopup::ShownOps() const {
  QStringList ops;
  for (int i = 0; i < list_->count(); ++i) ops << list_->item(i)->data(kOpRole).toString();
  return ops;
}

void QuickAddPopup::hideEvent(QHideEvent* event) {
  QFrame::hideEvent(event);
  if (!chosen_) emit dismissed();
  chosen_ = false;
}

void QuickAddPopup::Choose() {
  QListWidgetItem* item = list_->currentItem();
  if (!item || item->isHidden()) return;
  const QString op = item->data(kOpRole).toString();
  chosen_ = true;
  hide();
  emit opChosen(op);
}

bool QuickAddPopup::eventFilter(QObject* watched, QEvent* event) {
  if (watched == search_ && event->type() == QEvent::KeyPress) {
    auto* key = static_cast<QKeyEvent*>(event);
    if (key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) {
      Choose();
      return true;
    }
    if (key->key() == Qt::Key_Down || key->key() == Qt::Key_Up) {
      int row = list_->currentRow();
      const int step = key->key() == Qt::Key_Down ? 1 : -1;
      for (int r = row + step; r >= 0 && r < list_->count(); r += step) {
        if (!list_->item(r)->isHidden()) {
          list_->setCurrentRow(r);
          break;
        }
      }
      return true;
    }
    if (key->key() == Qt::Key_Escape) {
      hide();
      return true;
    }
  }
  return QFrame::eventFilter(watched, event);
}

}  // namespace blockflow::editor
