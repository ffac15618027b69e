#include "editor/palette_widget.h"

#include <QHeaderView>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMimeData>
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

bool OpMatches(const QString& op, const QString& category, const QString& doc,
               const QString& text) {
  const QString t = text.trimmed();
  if (t.isEmpty()) return true;
  return op.contains(t, Qt::CaseInsensitive) || category.contains(t, Qt::CaseInsensitive) ||
         doc.contains(t, Qt::CaseInsensitive);
}

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

  std::map<std::string, std::vector<const OpSchema*>> by_category;
  for (const OpSchema* s : registry.All()) by_category[s->category()].push_back(s);
  for (const auto& [category, ops] : by_category) {
    auto* cat = new QTreeWidgetItem(tree_, {QString::fromStdString(category)});
    cat->setFlags(Qt::ItemIsEnabled);
    QFont f = cat->font(0);
    f.setBold(true);
    cat->setFont(0, f);
    cat->setForeground(0, CategoryColor(QString::fromStdString(category)).lighter(170));
    for (const OpSchema* s : ops) {
      auto* item = new QTreeWidgetItem(cat, {QString::fromStdString(s->name())});
      item->setData(0, kOpRole, QString::fromStdString(s->name()));
      item->setData(0, Qt::UserRole + 2, QString::fromStdString(s->doc()));
      item->setToolTip(0, OpTooltip(*s));
      item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsDragEnabled);
    }
  }
  tree_->expandAll();
  connect(search_, &QLineEdit::textChanged, this, &PaletteWidget::SetFilter);
  connect(tree_, &QTreeWidget::itemActivated, this, [this](QTreeWidgetItem* item) {
    const QString op = item->data(0, kOpRole).toString();
    if (!op.isEmpty()) emit opActivated(op);
  });
}

void PaletteWidget::SetFilter(const QString& text) {
  for (int c = 0; c < tree_->topLevelItemCount(); ++c) {
    QTreeWidgetItem* cat = tree_->topLevelItem(c);
    int visible = 0;
    for (int i = 0; i < cat->childCount(); ++i) {
      QTreeWidgetItem* item = cat->child(i);
      const bool show =
          OpMatches(item->text(0), cat->text(0), item->data(0, Qt::UserRole + 2).toString(), text);
      item->setHidden(!show);
      visible += show;
    }
    cat->setHidden(visible == 0);
  }
}

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
  for (const OpSchema* s : registry.All()) {
    auto* item = new QListWidgetItem(
        QString("%1    ·  %2")
            .arg(QString::fromStdString(s->name()), QString::fromStdString(s->category())));
    item->setData(kOpRole, QString::fromStdString(s->name()));
    item->setData(Qt::UserRole + 2, QString::fromStdString(s->category()));
    item->setData(Qt::UserRole + 3, QString::fromStdString(s->doc()));
    item->setToolTip(OpTooltip(*s));
    list_->addItem(item);
  }
  search_->installEventFilter(this);
  connect(search_, &QLineEdit::textChanged, this, &QuickAddPopup::SetFilter);
  connect(list_, &QListWidget::itemActivated, this, [this](QListWidgetItem*) { Choose(); });
}

void QuickAddPopup::Popup(QPoint global_pos) {
  search_->clear();
  SetFilter(QString());
  move(global_pos);
  show();
  search_->setFocus();
}

void QuickAddPopup::SetFilter(const QString& text) {
  int first = -1;
  for (int i = 0; i < list_->count(); ++i) {
    QListWidgetItem* item = list_->item(i);
    const bool show =
        OpMatches(item->data(kOpRole).toString(), item->data(Qt::UserRole + 2).toString(),
                  item->data(Qt::UserRole + 3).toString(), text);
    item->setHidden(!show);
    if (show && first < 0) first = i;
  }
  list_->setCurrentRow(first);
}

void QuickAddPopup::Choose() {
  QListWidgetItem* item = list_->currentItem();
  if (!item || item->isHidden()) return;
  const QString op = item->data(kOpRole).toString();
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
