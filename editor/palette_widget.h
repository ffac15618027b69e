// The block palette (by category, with search; drag a block onto the canvas) and the
// quick-add popup (type to filter, Enter to add at the cursor). Both list the registry and rank
// a search with the one ranking of editor/search.h.
#pragma once

#include <QFrame>
#include <QTreeWidget>
#include <QWidget>
#include <optional>
#include <vector>

#include "editor/search.h"

class QLabel;
class QLineEdit;
class QListWidget;

namespace blockflow {
class OpRegistry;
}

namespace blockflow::editor {

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
  /// Empty `text`: every block, by category. Else the blocks that match, best first, in one
  /// flat list (or a "no matches" line).
  void SetFilter(const QString& text);
  QTreeWidget* tree() const { return tree_; }
  QLineEdit* search() const { return search_; }
  /// The ops listed, top to bottom (categories skipped).
  QStringList ShownOps() const;
  /// The "no matches" line (hidden while something matches).
  QLabel* no_matches() const { return no_matches_; }

 signals:
  /// A block was double-clicked (or Enter pressed) in the palette.
  void opActivated(const QString& op);

 private:
  void Fill(const QString& text);

  std::vector<OpSearchEntry> entries_;
  QLineEdit* search_;
  PaletteTree* tree_;
  QLabel* no_matches_;
};

class QuickAddPopup : public QFrame {
  Q_OBJECT

 public:
  explicit QuickAddPopup(const OpRegistry& registry, QWidget* parent = nullptr);
  /// Shows the popup at `global_pos` with an empty search; with `fit`, only the blocks with a
  /// port that a dropped wire fits.
  void Popup(QPoint global_pos, const std::optional<WireFit>& fit = std::nullopt);
  void SetFilter(const QString& text);
  QListWidget* list() const { return list_; }
  /// The ops listed, best first.
  QStringList ShownOps() const;
  QLabel* no_matches() const { return no_matches_; }

 signals:
  void opChosen(const QString& op);
  /// The popup closed without a choice.
  void dismissed();

 protected:
  void hideEvent(QHideEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void Choose();

  std::vector<OpSearchEntry> entries_;
  std::optional<WireFit> fit_;
  bool chosen_ = false;
  QLineEdit* search_;
  QListWidget* list_;
  QLabel* no_matches_;
};

}  // namespace blockflow::editor
