// The block palette (by category, with search; drag a block onto the canvas) and the
// quick-add popup (type to filter, Enter to add at the cursor). Both list the registry.
#pragma once

#include <QFrame>
#include <QTreeWidget>
#include <QWidget>

class QLineEdit;
class QListWidget;

namespace blockflow {
class OpRegistry;
}

namespace blockflow::editor {

/// True when `op` (or its category or doc) matches the search text (case-insensitive).
bool OpMatches(const QString& op, const QString& category, const QString& doc, const QString& text);

/// A tree whose drags carry GraphScene::kOpMimeType.
class PaletteTree : public QTreeWidget {
  Q_OBJECT

 public:
  explicit PaletteTree(QWidget* parent = nullptr);

 protected:
  QStringList mimeTypes() const override;
  QMimeData* mimeData(const QList<QTreeWidgetItem*>& items) const override;
};

class PaletteWidget : public QWidget {
  Q_OBJECT

 public:
  explicit PaletteWidget(const OpRegistry& registry, QWidget* parent = nullptr);
  /// Shows only the blocks that match `text`.
  void SetFilter(const QString& text);
  QTreeWidget* tree() const { return tree_; }
  QLineEdit* search() const { return search_; }

 signals:
  /// A block was double-clicked (or Enter pressed) in the palette.
  void opActivated(const QString& op);

 private:
  QLineEdit* search_;
  PaletteTree* tree_;
};

class QuickAddPopup : public QFrame {
  Q_OBJECT

 public:
  explicit QuickAddPopup(const OpRegistry& registry, QWidget* parent = nullptr);
  /// Shows the popup at `global_pos` with an empty search.
  void Popup(QPoint global_pos);
  void SetFilter(const QString& text);
  QListWidget* list() const { return list_; }

 signals:
  void opChosen(const QString& op);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void Choose();

  QLineEdit* search_;
  QListWidget* list_;
};

}  // namespace blockflow::editor
