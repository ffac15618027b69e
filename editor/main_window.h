// MainWindow: the editor's window: canvas in the middle, block palette on the left,
// attributes and results on the right; menus, toolbar, status bar, file handling and runs.
#pragma once

#include <QMainWindow>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "editor/graph_scene.h"

class QAction;
class QLabel;
class QMenu;
class QProgressBar;
class QTimer;
class QToolButton;

namespace blockflow::editor {

class AttributePanel;
class Autosaver;
class GraphDocument;
class GraphScene;
class GraphView;
class Minimap;
class PaletteWidget;
class ProblemsPanel;
class QuickAddPopup;
class ResultPanel;
class RunController;

/// What to do with a graph autosaved by an editor that did not close normally.
enum class RecoveryChoice { kRecover, kDiscard, kLater };

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  /// Asks about one recovery offer, whose description is `text`.
  using RecoveryPrompt = std::function<RecoveryChoice(const QString& text)>;

  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  GraphDocument* document() const { return doc_; }
  GraphScene* scene() const { return scene_; }
  GraphView* view() const { return view_; }
  AttributePanel* attributes() const { return attributes_; }
  ResultPanel* results() const { return results_; }
  RunController* runner() const { return runner_; }
  PaletteWidget* palette_widget() const { return palette_; }
  ProblemsPanel* problems() const { return problems_; }
  QuickAddPopup* quick_add() const { return quick_add_; }
  Autosaver* autosaver() const { return autosaver_; }
  /// The text currently shown in the status bar (in full; the bar may cut it off).
  QString StatusText() const;
  /// The graph summary at the right of the status bar ("3 nodes · valid").
  QString SummaryText() const;

  /// Opens a graph file; errors go to the status bar (and a dialog unless scripted).
  bool OpenFile(const QString& path);
  /// Opens a graph as an untitled copy (File > Samples): Save asks where, the original stays.
  bool OpenCopy(const QString& path);
  /// Saves to `path` (atomic); errors are reported.
  bool SaveTo(const QString& path);
  /// View > Arrange: lays out nodes `ids` (empty: the whole graph, then fits it in view) as one
  /// undoable edit. Returns the number of nodes placed.
  int Arrange(const std::vector<std::string>& ids = {});
  Minimap* minimap() const { return minimap_; }
  /// Runs the graph on a worker thread (as the Run button).
  void Run();
  void CancelRun();
  /// Selects one node (and shows it in the panels).
  void SelectNode(const std::string& id);
  /// No dialogs; errors also go to stderr.
  void SetScripted(bool scripted) { scripted_ = scripted; }
  /// Run > Allow Files Outside the Graph's Folder: asks for confirmation first (`confirm` is
  /// the answer when scripted). Returns whether graphs may now name such files.
  bool SetAllowOutsideFiles(bool allow, bool confirm = false);
  /// At start-up: offers back, one at a time, the graphs autosaved by editors that crashed or
  /// were killed, newest first, until one is recovered (undo then goes back to the graph as
  /// last saved). Asks with a dialog, or the prompt set with SetRecoveryPrompt; scripted
  /// windows without a prompt keep the files for a later start. True when a graph came back.
  bool OfferRecovery();
  /// Replaces the recovery dialog (tests and scripted use).
  void SetRecoveryPrompt(RecoveryPrompt prompt) { recovery_prompt_ = std::move(prompt); }
  /// Scripted use: optionally run, select the last node, save a screenshot, then call `done`
  /// with the exit code (1 when the run or the save failed).
  void ScriptedScreenshot(const QString& path, bool run, const std::function<void(int)>& done);

  /// The samples folder: $BLOCKFLOW_SAMPLES; else <exe>/../../samples, the source tree's
  /// samples when the build folder is a subfolder of the source tree (build/bin/); else
  /// <exe>/../share/blockflow/samples, where a package may put them (`cmake --install` does not
  /// install the samples).
  static QString FindSamplesDir();

 signals:
  /// A run ended (after the panels were updated).
  void runFinished(bool ok, const QString& message);

 protected:
  void closeEvent(QCloseEvent* event) override;
  void showEvent(QShowEvent* event) override;

 private:
  void BuildUi();
  void BuildActions();
  bool MaybeSave();
  void NewGraph();
  void OpenDialog();
  bool Save();
  bool SaveAs();
  void AddRecent(const QString& path);
  void FillRecentMenu();
  void FillSamplesMenu();
  void UpdateTitle();
  void UpdateSummary();
  void ShowStatus(const QString& text, bool error);
  void OnSelectionChanged();
  void OnGraphChanged(bool layout_only);
  void ShowResultsFor(const std::string& id);
  void OnRunFinished(bool ok, const QString& message);
  void Copy();
  void Cut();
  void Paste();
  void Duplicate();
  void AddBlockAt(const QString& op, QPointF scene_pos);
  /// Opens quick-add at `scene_pos`; with `wire`, for a wire dropped there (only the blocks
  /// that `fit`, and the chosen one is wired).
  void OpenQuickAdd(QPointF scene_pos, QPoint global_pos,
                    const std::optional<WireEnd>& wire = std::nullopt, const WireFit& fit = {});
  void AddBlockAndWire(const QString& op, QPointF scene_pos, const WireEnd& wire,
                       const WireFit& fit);
  /// The top-left of the saved positions of clipboard JSON's nodes, and the scene rectangle
  /// they cover (their drawn size when they are the nodes on the canvas, else an estimate).
  std::pair<QPointF, QRectF> ClipboardBounds(const std::string& json) const;

  GraphDocument* doc_;
  GraphScene* scene_;
  GraphView* view_;
  Minimap* minimap_;
  PaletteWidget* palette_;
  AttributePanel* attributes_;
  ResultPanel* results_;
  RunController* runner_;
  ProblemsPanel* problems_;
  Autosaver* autosaver_;
  RecoveryPrompt recovery_prompt_;
  QuickAddPopup* quick_add_;
  QPointF quick_add_pos_;
  std::optional<WireEnd> quick_add_wire_;
  WireFit quick_add_fit_;
  QTimer* status_timer_;
  QString status_text_;
  QLabel* status_label_;
  QLabel* summary_label_;
  QProgressBar* progress_;
  QToolButton* cancel_button_;
  QMenu* recent_menu_ = nullptr;
  QMenu* samples_menu_ = nullptr;
  QAction* run_action_ = nullptr;
  QAction* cancel_action_ = nullptr;
  QAction* outside_files_action_ = nullptr;
  bool scripted_ = false;
  bool fitted_once_ = false;
  bool edited_during_run_ = false;
  int paste_count_ = 0;
};

}  // namespace blockflow::editor
