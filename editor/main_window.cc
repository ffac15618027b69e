#include "editor/main_window.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QCoreApplication>
#include <QCursor>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPainter>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QStatusBar>
#include <QStyle>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <QUndoStack>
#include <cstdio>

#include "editor/attribute_panel.h"
#include "editor/auto_layout.h"
#include "editor/autosave.h"
#include "editor/graph_document.h"
#include "editor/graph_scene.h"
#include "editor/graph_view.h"
#include "editor/minimap.h"
#include "editor/output_layout.h"
#include "editor/palette_widget.h"
#include "editor/paste_placement.h"
#include "editor/problems_panel.h"
#include "editor/result_panel.h"
#include "editor/run_controller.h"

namespace blockflow::editor {

namespace {
constexpr const char* kClipboardMime = "application/x-blockflow-graph";
// The folder of the graph the nodes were copied from (relative file names are relative to it).
constexpr const char* kClipboardDirMime = "application/x-blockflow-graph-dir";
constexpr int kMaxRecent = 8;

// Run (green triangle) and Cancel (red square) icons, drawn so they read well on a dark theme.
QIcon ShapeIcon(bool play) {
  QIcon icon;
  for (QIcon::Mode mode : {QIcon::Normal, QIcon::Disabled}) {
    QPixmap pm(32, 32);
    pm.fill(Qt::transparent);
    QPainter p(&pm);
    p.setRenderHint(QPainter::Antialiasing);
    p.setPen(Qt::NoPen);
    QColor c = play ? QColor(0x46, 0xc9, 0x74) : QColor(0xe5, 0x48, 0x4d);
    if (mode == QIcon::Disabled) c = QColor(0x5a, 0x5f, 0x66);
    p.setBrush(c);
    if (play) {
      p.drawPolygon(QPolygonF({QPointF(9, 6), QPointF(26, 16), QPointF(9, 26)}));
    } else {
      p.drawRoundedRect(QRectF(8, 8, 16, 16), 2, 2);
    }
    p.end();
    icon.addPixmap(pm, mode);
  }
  return icon;
}
}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  doc_ = new GraphDocument(this);
  scene_ = new GraphScene(doc_, this);
  runner_ = new RunController(this);
  autosaver_ = new Autosaver(doc_);
  autosaver_->setParent(this);
  BuildUi();
  BuildActions();
  connect(doc_, &GraphDocument::graphChanged, this, &MainWindow::OnGraphChanged);
  connect(doc_, &GraphDocument::fileStateChanged, this, &MainWindow::UpdateTitle);
  connect(scene_, &QGraphicsScene::selectionChanged, this, &MainWindow::OnSelectionChanged);
  connect(scene_, &GraphScene::statusMessage, this, &MainWindow::ShowStatus);
  connect(attributes_, &AttributePanel::statusMessage, this, &MainWindow::ShowStatus);
  connect(attributes_, &AttributePanel::nodeRenamed, this,
          [this](const QString& id) { SelectNode(id.toStdString()); });
  connect(scene_, &GraphScene::quickAddRequested, this, [this](QPointF pos) {
    OpenQuickAdd(pos, view_->viewport()->mapToGlobal(view_->mapFromScene(pos)));
  });
  connect(view_, &GraphView::quickAddRequested, this,
          [this](QPointF pos, QPoint global) { OpenQuickAdd(pos, global); });
  connect(scene_, &GraphScene::wireDroppedOnCanvas, this,
          [this](QPointF pos, const WireEnd& end, const WireFit& fit) {
            OpenQuickAdd(pos, view_->viewport()->mapToGlobal(view_->mapFromScene(pos)), end, fit);
          });
  connect(quick_add_, &QuickAddPopup::opChosen, this, [this](const QString& op) {
    const std::optional<WireEnd> wire = std::exchange(quick_add_wire_, std::nullopt);
    if (wire) {
      AddBlockAndWire(op, quick_add_pos_, *wire, quick_add_fit_);
    } else {
      AddBlockAt(op, quick_add_pos_);
    }
  });
  connect(quick_add_, &QuickAddPopup::dismissed, this, [this] { quick_add_wire_.reset(); });
  connect(palette_, &PaletteWidget::opActivated, this, [this](const QString& op) {
    AddBlockAt(op, view_->mapToScene(view_->viewport()->rect().center()));
  });

  connect(runner_, &RunController::started, this, [this](const QStringList& ids) {
    for (const QString& id : ids) scene_->SetRunState(id.toStdString(), RunState::kPending);
  });
  connect(runner_, &RunController::nodeStarted, this,
          [this](const QString& id) { scene_->SetRunState(id.toStdString(), RunState::kRunning); });
  connect(runner_, &RunController::nodeFinished, this,
          [this](const QString& id, double ms, bool ok, const QString& msg) {
            scene_->SetRunState(id.toStdString(), ok ? RunState::kDone : RunState::kFailed, ms,
                                msg);
          });
  connect(runner_, &RunController::progress, this, [this](int done, int total) {
    progress_->setMaximum(std::max(total, 1));
    progress_->setValue(done);
    progress_->setFormat(QString("%1 / %2 nodes").arg(done).arg(total));
  });
  connect(runner_, &RunController::finished, this, &MainWindow::OnRunFinished);
  UpdateTitle();
  UpdateSummary();
}

MainWindow::~MainWindow() {
  runner_->Cancel();
  // A window that goes away normally leaves nothing to recover; the autosaver must also go
  // before the document it watches.
  delete autosaver_;
  // The document is destroyed before the other children; its undo stack's last signals
  // (cleanChanged when there were unsaved edits) must not reach a window being destroyed.
  disconnect(doc_, nullptr, this, nullptr);
  disconnect(scene_, nullptr, this, nullptr);
  disconnect(runner_, nullptr, this, nullptr);
}

void MainWindow::BuildUi() {
  setObjectName("blockflow_editor");
  view_ = new GraphView(scene_);
  setCentralWidget(view_);
  minimap_ = new Minimap(view_, scene_);

  palette_ = new PaletteWidget(doc_->registry());
  auto* palette_dock = new QDockWidget("Blocks", this);
  palette_dock->setObjectName("palette_dock");
  palette_dock->setWidget(palette_);
  addDockWidget(Qt::LeftDockWidgetArea, palette_dock);

  attributes_ = new AttributePanel(doc_);
  auto* attr_dock = new QDockWidget("Attributes", this);
  attr_dock->setObjectName("attributes_dock");
  attr_dock->setWidget(attributes_);
  addDockWidget(Qt::RightDockWidgetArea, attr_dock);

  results_ = new ResultPanel;
  auto* result_dock = new QDockWidget("Results", this);
  result_dock->setObjectName("results_dock");
  result_dock->setWidget(results_);
  addDockWidget(Qt::RightDockWidgetArea, result_dock);
  splitDockWidget(attr_dock, result_dock, Qt::Vertical);

  problems_ = new ProblemsPanel(doc_);
  auto* problems_dock = new QDockWidget("Problems", this);
  problems_dock->setObjectName("problems_dock");
  problems_dock->setWidget(problems_);
  addDockWidget(Qt::BottomDockWidgetArea, problems_dock);
  connect(problems_, &ProblemsPanel::nodeActivated, this, [this](const QString& id) {
    if (!id.isEmpty()) SelectNode(id.toStdString());
  });
  connect(problems_, &ProblemsPanel::countChanged, problems_dock, [problems_dock](int n) {
    problems_dock->setWindowTitle(n == 0 ? QString("Problems") : QString("Problems (%1)").arg(n));
  });

  quick_add_ = new QuickAddPopup(doc_->registry(), this);

  status_label_ = new QLabel;
  status_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  // A long message must not widen the window; the tooltip and the Problems panel have it all.
  status_label_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  status_timer_ = new QTimer(this);
  status_timer_->setSingleShot(true);
  connect(status_timer_, &QTimer::timeout, this, [this] { ShowStatus(QString(), false); });
  summary_label_ = new QLabel;
  summary_label_->setStyleSheet("color: #8a919a; padding-right: 8px;");
  progress_ = new QProgressBar;
  progress_->setMaximumWidth(220);
  progress_->setTextVisible(true);
  progress_->hide();
  cancel_button_ = new QToolButton;
  cancel_button_->setText("Cancel");
  cancel_button_->hide();
  connect(cancel_button_, &QToolButton::clicked, this, &MainWindow::CancelRun);
  statusBar()->addWidget(status_label_, 1);
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancel_button_);
  statusBar()->addPermanentWidget(summary_label_);
  resize(1600, 1000);
}

void MainWindow::BuildActions() {
  QStyle* st = style();
  auto* file = menuBar()->addMenu("&File");
  auto* edit = menuBar()->addMenu("&Edit");
  auto* view = menuBar()->addMenu("&View");
  auto* run = menuBar()->addMenu("&Run");
  auto* help = menuBar()->addMenu("&Help");
  auto* tb = addToolBar("Main");
  tb->setObjectName("main_toolbar");
  tb->setMovable(false);
  tb->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);

  QAction* a_new =
      file->addAction(st->standardIcon(QStyle::SP_FileIcon), "&New", this, &MainWindow::NewGraph);
  a_new->setShortcut(QKeySequence::New);
  QAction* a_open = file->addAction(st->standardIcon(QStyle::SP_DialogOpenButton), "&Open…", this,
                                    &MainWindow::OpenDialog);
  a_open->setShortcut(QKeySequence::Open);
  recent_menu_ = file->addMenu("Open &Recent");
  connect(recent_menu_, &QMenu::aboutToShow, this, &MainWindow::FillRecentMenu);
  samples_menu_ = file->addMenu("&Samples");
  connect(samples_menu_, &QMenu::aboutToShow, this, &MainWindow::FillSamplesMenu);
  file->addSeparator();
  QAction* a_save = file->addAction(st->standardIcon(QStyle::SP_DialogSaveButton), "&Save", this,
                                    [this] { Save(); });
  a_save->setShortcut(QKeySequence::Save);
  QAction* a_save_as = file->addAction("Save &As…", this, [this] { SaveAs(); });
  // Spelled out: QKeySequence::SaveAs is empty on plain X11 sessions.
  a_save_as->setShortcut(QKeySequence("Ctrl+Shift+S"));
  file->addSeparator();
  QAction* a_quit = file->addAction("&Quit", this, &QWidget::close);
  a_quit->setShortcut(QKeySequence::Quit);

  QAction* a_undo = doc_->undo_stack()->createUndoAction(this, "&Undo");
  a_undo->setShortcut(QKeySequence::Undo);
  a_undo->setIcon(st->standardIcon(QStyle::SP_ArrowBack));
  QAction* a_redo = doc_->undo_stack()->createRedoAction(this, "&Redo");
  // Not QKeySequence::Redo: as one sequence that is only its first binding (Ctrl+Y on Linux),
  // and listing Ctrl+Y twice makes the shortcut ambiguous, so neither key would work.
  a_redo->setShortcuts({QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")});
  a_redo->setIcon(st->standardIcon(QStyle::SP_ArrowForward));
  edit->addAction(a_undo);
  edit->addAction(a_redo);
  edit->addSeparator();
  edit->addAction("Cu&t", QKeySequence::Cut, this, &MainWindow::Cut);
  edit->addAction("&Copy", QKeySequence::Copy, this, &MainWindow::Copy);
  edit->addAction("&Paste", QKeySequence::Paste, this, &MainWindow::Paste);
  edit->addAction("&Duplicate", QKeySequence("Ctrl+D"), this, &MainWindow::Duplicate);
  QAction* a_delete = edit->addAction("De&lete", this, [this] { scene_->DeleteSelection(); });
  a_delete->setShortcuts({QKeySequence::Delete, QKeySequence(Qt::Key_Backspace)});
  edit->addSeparator();
  edit->addAction("Select &All", QKeySequence::SelectAll, this, [this] {
    for (QGraphicsItem* item : scene_->items()) {
      if (item->type() == NodeItem::Type) item->setSelected(true);
    }
  });
  edit->addAction("Add &Block…", QKeySequence("Ctrl+Shift+A"), this, [this] {
    const QPoint c = view_->viewport()->rect().center();
    OpenQuickAdd(view_->mapToScene(c), view_->viewport()->mapToGlobal(c));
  });

  QAction* a_fit = view->addAction("&Fit to View", this, [this] { view_->FitToGraph(); });
  a_fit->setShortcuts({QKeySequence("F"), QKeySequence("Ctrl+0")});
  a_fit->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  view_->addAction(a_fit);
  view->addAction("Zoom &In", QKeySequence::ZoomIn, this, [this] { view_->ZoomBy(1.25); });
  view->addAction("Zoom &Out", QKeySequence::ZoomOut, this, [this] { view_->ZoomBy(0.8); });
  view->addAction("&Actual Size", QKeySequence("Ctrl+1"), this, [this] { view_->ResetZoom(); });
  view->addSeparator();
  // Arrange: the selection when two or more nodes are selected, else the whole graph.
  QAction* a_arrange = view->addAction("A&rrange", QKeySequence("Ctrl+L"), this, [this] {
    const auto ids = scene_->SelectedNodeIds();
    Arrange(ids.size() >= 2 ? ids : std::vector<std::string>());
  });
  a_arrange->setToolTip("Lay the graph (or the selected nodes) out left to right (" +
                        LayoutEngineName() + ")");
  QAction* a_minimap = view->addAction("&Minimap");
  a_minimap->setCheckable(true);
  a_minimap->setChecked(true);
  connect(a_minimap, &QAction::toggled, minimap_, &QWidget::setVisible);
  view->addSeparator();
  for (QDockWidget* dock : findChildren<QDockWidget*>()) view->addAction(dock->toggleViewAction());

  run_action_ = run->addAction(ShapeIcon(true), "&Run", this, &MainWindow::Run);
  run_action_->setShortcut(QKeySequence(Qt::Key_F5));
  run_action_->setToolTip("Run the graph (F5)");
  cancel_action_ = run->addAction(ShapeIcon(false), "&Cancel", this, &MainWindow::CancelRun);
  cancel_action_->setShortcut(QKeySequence("Shift+F5"));
  cancel_action_->setEnabled(false);
  run->addSeparator();
  outside_files_action_ = run->addAction("Allow Files &Outside the Graph's Folder…");
  outside_files_action_->setCheckable(true);
  outside_files_action_->setToolTip(
      "Let graphs name files outside their own folder (absolute paths, '..', links out)");
  connect(outside_files_action_, &QAction::triggered, this,
          [this](bool checked) { SetAllowOutsideFiles(checked); });

  help->addAction("&Shortcuts", this, [this] {
    QMessageBox::information(
        this, "Shortcuts",
        "F5 run · Shift+F5 cancel\nTab or double-click on the canvas: add a block\n"
        "Drag from a port to a port: wire · Delete: remove selection\n"
        "Ctrl+Z / Ctrl+Shift+Z: undo / redo · Ctrl+C / Ctrl+V / Ctrl+D: copy / paste / duplicate\n"
        "Wheel: zoom · middle drag or Space+drag: pan · F: fit to view");
  });

  tb->addAction(a_new);
  tb->addAction(a_open);
  tb->addAction(a_save);
  tb->addSeparator();
  tb->addAction(a_undo);
  tb->addAction(a_redo);
  tb->addSeparator();
  tb->addAction(run_action_);
  tb->addAction(cancel_action_);
  tb->addSeparator();
  tb->addAction(a_fit);
}

QString MainWindow::StatusText() const { return status_text_; }
QString MainWindow::SummaryText() const { return summary_label_->text(); }

void MainWindow::ShowStatus(const QString& text, bool error) {
  // A message reports what just happened: it expires, and the next change of the graph
  // replaces it (the summary and the Problems panel hold what stays true).
  status_text_ = text;
  status_label_->setStyleSheet(error ? "color: #ff6b6f;" : "color: #d5d9de;");
  status_label_->setText(text);
  status_label_->setToolTip(text);
  if (text.isEmpty()) {
    status_timer_->stop();
  } else {
    status_timer_->start(error ? 20000 : 8000);
  }
}

void MainWindow::UpdateTitle() {
  const QString path = doc_->file_path();
  const QString name = path.isEmpty() ? QString("untitled.json") : QFileInfo(path).fileName();
  setWindowTitle(QString("%1[*] — blockflow editor").arg(name));
  setWindowModified(doc_->IsModified());
}

void MainWindow::UpdateSummary() {
  const auto& a = doc_->analysis();
  const int n = static_cast<int>(doc_->graph().nodes().size());
  if (a.issues.empty()) {
    summary_label_->setText(QString("%1 nodes · valid").arg(n));
    summary_label_->setStyleSheet("color: #5fd38d; padding-right: 8px;");
  } else {
    summary_label_->setText(QString("%1 nodes · %2 issue%3")
                                .arg(n)
                                .arg(a.issues.size())
                                .arg(a.issues.size() == 1 ? "" : "s"));
    summary_label_->setStyleSheet("color: #ff6b6f; padding-right: 8px;");
  }
}

void MainWindow::OnGraphChanged(bool layout_only) {
  if (!layout_only && runner_->running()) edited_during_run_ = true;
  // The graph is another one now: what the status bar said about the old one is history.
  if (!layout_only) ShowStatus(QString(), false);
  if (!layout_only && runner_->has_result()) {
    runner_->ClearResult();
    scene_->ClearRunStates();
  }
  UpdateSummary();
  attributes_->Refresh();
  OnSelectionChanged();
}

void MainWindow::OnSelectionChanged() {
  const auto ids = scene_->SelectedNodeIds();
  if (ids.size() != 1) {
    attributes_->SetNode("");
    results_->ShowMessage(ids.empty()
                              ? (runner_->has_result()
                                     ? "Select a node to see its outputs."
                                     : "Run the graph (F5), then select a node to see its outputs.")
                              : QString("%1 nodes selected.").arg(ids.size()));
    return;
  }
  attributes_->SetNode(ids[0]);
  ShowResultsFor(ids[0]);
}

void MainWindow::ShowResultsFor(const std::string& id) {
  if (runner_->running()) {
    results_->ShowMessage("Running…");
    return;
  }
  if (!runner_->has_result()) {
    results_->ShowMessage("Run the graph (F5) to see the outputs of '" +
                          QString::fromStdString(id) + "'.");
    return;
  }
  const RunResult& r = runner_->result();
  auto it = r.outputs.find(id);
  if (it == r.outputs.end()) {
    results_->ShowMessage(
        QString("'%1' has no outputs from the last run%2.")
            .arg(QString::fromStdString(id), r.status.ok() ? "" : " (the run failed)"));
    return;
  }
  const Node* node = doc_->graph().FindNode(id);
  const OpSchema* schema = node ? doc_->registry().Find(node->op) : nullptr;
  QStringList names, layouts;
  if (schema) {
    for (const OutputDef& o : schema->outputs()) names << QString::fromStdString(o.name);
    // Per output actually produced (variadic outputs differ in what they feed).
    const int n = std::max(static_cast<int>(it->second.size()), 1);
    for (int k = 0; k < n; ++k) {
      layouts << QString::fromStdString(OutputLayoutFor(doc_->graph(), doc_->registry(), id, k));
    }
  }
  QString note;
  if (auto t = r.ms.find(id); t != r.ms.end()) {
    note = QString("%1 ms").arg(t->second, 0, 'f', 3);
  } else if (!r.executed.count(id)) {
    note = "constant";
  }
  results_->ShowOutputs(QString::fromStdString(id), it->second, names, layouts, note);
}

void MainWindow::SelectNode(const std::string& id) {
  scene_->SelectNodes({id});
  if (NodeItem* item = scene_->FindNode(id)) view_->ensureVisible(item, 40, 40);
}

void MainWindow::Run() {
  if (runner_->running()) return;
  scene_->ClearRunStates();
  runner_->ClearResult();
  edited_during_run_ = false;
  progress_->setValue(0);
  progress_->setFormat("starting…");
  progress_->show();
  cancel_button_->show();
  run_action_->setEnabled(false);
  cancel_action_->setEnabled(true);
  ShowStatus("Running…", false);
  OnSelectionChanged();
  runner_->Start(doc_->graph());
}

void MainWindow::CancelRun() {
  if (!runner_->running()) return;
  runner_->Cancel();
  ShowStatus("Cancelling…", false);
}

void MainWindow::OnRunFinished(bool ok, const QString& message) {
  progress_->hide();
  cancel_button_->hide();
  run_action_->setEnabled(true);
  cancel_action_->setEnabled(false);
  if (edited_during_run_) {
    // The results belong to a graph that no longer exists.
    edited_during_run_ = false;
    runner_->ClearResult();
    scene_->ClearRunStates();
    ShowStatus("The graph changed during the run; its results were discarded. Run again (F5).",
               false);
    OnSelectionChanged();
    emit runFinished(ok, message);
    return;
  }
  const RunResult& r = runner_->result();
  for (const auto& [id, outs] : r.outputs) {
    if (!r.executed.count(id)) scene_->SetRunState(id, RunState::kConstant);
  }
  // Nodes that never started (after a failure or a cancel) go back to idle.
  for (const Node& n : doc_->graph().nodes()) {
    NodeItem* item = scene_->FindNode(n.id);
    if (item &&
        (item->run_state() == RunState::kPending || item->run_state() == RunState::kRunning)) {
      scene_->SetRunState(n.id, RunState::kIdle);
    }
  }
  if (ok) {
    ShowStatus(QString("Run finished: %1 nodes executed in %2 ms.")
                   .arg(r.executed.size())
                   .arg(r.total_ms, 0, 'f', 1),
               false);
  } else {
    const QString where =
        doc_->file_path().isEmpty() ? QString() : QFileInfo(doc_->file_path()).fileName() + ": ";
    ShowStatus((r.status.code() == StatusCode::kCancelled ? "Run cancelled: " : "Run failed: ") +
                   where + message,
               true);
    if (scripted_)
      std::fprintf(stderr, "error: %s%s\n", where.toUtf8().constData(),
                   message.toUtf8().constData());
  }
  OnSelectionChanged();
  emit runFinished(ok, message);
}

bool MainWindow::SetAllowOutsideFiles(bool allow, bool confirm) {
  if (allow && !scripted_) {
    confirm = QMessageBox::warning(
                  this, "Allow files outside the graph's folder",
                  "Graphs will be able to read any file this account can read: absolute paths, "
                  "'..' out of the graph's folder, links that point out of it.\n\nAllow this "
                  "only for graphs you trust. It lasts until you turn it off or quit.",
                  QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel) == QMessageBox::Yes;
  }
  if (allow && !confirm) allow = false;
  outside_files_action_->setChecked(allow);
  if (allow != doc_->allow_outside_files()) doc_->SetAllowOutsideFiles(allow);
  ShowStatus(allow ? "Graphs may name files outside their folder (Run menu to turn off)."
                   : "Graphs name only files inside their folder.",
             false);
  return allow;
}

bool MainWindow::MaybeSave() {
  if (!doc_->IsModified() || scripted_) return true;
  const auto answer =
      QMessageBox::warning(this, "Unsaved changes", "The graph has unsaved changes. Save them?",
                           QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel);
  if (answer == QMessageBox::Save) return Save();
  return answer == QMessageBox::Discard;
}

void MainWindow::NewGraph() {
  if (!MaybeSave()) return;
  runner_->ClearResult();
  scene_->ClearRunStates();
  doc_->NewGraph();
  ShowStatus("New graph. Drag blocks from the palette, or press Tab on the canvas.", false);
}

void MainWindow::OpenDialog() {
  if (!MaybeSave()) return;
  const QString dir =
      doc_->file_path().isEmpty() ? FindSamplesDir() : QFileInfo(doc_->file_path()).absolutePath();
  const QString path =
      QFileDialog::getOpenFileName(this, "Open graph", dir, "blockflow graphs (*.json)");
  if (!path.isEmpty()) OpenFile(path);
}

bool MainWindow::OpenFile(const QString& path) {
  const Status st = doc_->Open(path);
  if (!st.ok()) {
    const QString msg = QString::fromStdString(st.message());
    ShowStatus("Cannot open " + path + ": " + msg, true);
    if (scripted_) std::fprintf(stderr, "error: %s\n", msg.toUtf8().constData());
    if (!scripted_) QMessageBox::critical(this, "Cannot open graph", msg);
    return false;
  }
  runner_->ClearResult();
  scene_->ClearRunStates();
  if (!scripted_) AddRecent(QFileInfo(path).absoluteFilePath());  // scripted runs leave no trace
  const size_t problems = doc_->analysis().issues.size();
  ShowStatus(QString("Opened %1 (%2 nodes%3).")
                 .arg(QFileInfo(path).fileName())
                 .arg(doc_->graph().nodes().size())
                 .arg(problems == 0 ? QString()
                                    : QString("; %1 problem%2, see Problems")
                                          .arg(problems)
                                          .arg(problems == 1 ? "" : "s")),
             problems != 0);
  if (!doc_->unplaced_on_load().empty()) {
    // Positions missing: lay out the whole graph, or only the nodes without one.
    const bool all = doc_->unplaced_on_load().size() == doc_->graph().nodes().size();
    ArrangeNodes(scene_, all ? std::vector<std::string>() : doc_->unplaced_on_load(),
                 /*undoable=*/false);
  }
  QTimer::singleShot(0, this, [this] { view_->FitToGraph(); });
  return true;
}

bool MainWindow::OpenCopy(const QString& path) {
  if (!OpenFile(path)) return false;
  doc_->DetachFromFile();
  ShowStatus(QString("Opened a copy of %1: Save asks where to put it (the original stays as it "
                     "is).")
                 .arg(QFileInfo(path).fileName()),
             false);
  return true;
}

bool MainWindow::SaveTo(const QString& path) {
  const Status st = doc_->Save(path);
  if (!st.ok()) {
    const QString msg = QString::fromStdString(st.message());
    ShowStatus("Cannot save: " + msg, true);
    if (!scripted_) QMessageBox::critical(this, "Cannot save graph", msg);
    return false;
  }
  if (!scripted_) AddRecent(QFileInfo(path).absoluteFilePath());
  ShowStatus("Saved " + path, false);
  return true;
}

bool MainWindow::Save() {
  if (doc_->file_path().isEmpty()) return SaveAs();
  return SaveTo(doc_->file_path());
}

bool MainWindow::SaveAs() {
  QString path = QFileDialog::getSaveFileName(
      this, "Save graph as", doc_->file_path().isEmpty() ? QDir::currentPath() : doc_->file_path(),
      "blockflow graphs (*.json)");
  if (path.isEmpty()) return false;
  if (!path.endsWith(".json", Qt::CaseInsensitive)) path += ".json";
  return SaveTo(path);
}

void MainWindow::AddRecent(const QString& path) {
  QSettings settings;
  QStringList recent = settings.value("recentFiles").toStringList();
  recent.removeAll(path);
  recent.prepend(path);
  while (recent.size() > kMaxRecent) recent.removeLast();
  settings.setValue("recentFiles", recent);
}

void MainWindow::FillRecentMenu() {
  recent_menu_->clear();
  const QStringList recent = QSettings().value("recentFiles").toStringList();
  for (const QString& path : recent) {
    recent_menu_->addAction(QFileInfo(path).fileName() + "   " + QFileInfo(path).absolutePath(),
                            this, [this, path] {
                              if (MaybeSave()) OpenFile(path);
                            });
  }
  if (recent.isEmpty()) recent_menu_->addAction("(none)")->setEnabled(false);
}

QString MainWindow::FindSamplesDir() {
  const QString env = qEnvironmentVariable("BLOCKFLOW_SAMPLES");
  if (!env.isEmpty() && QFileInfo(env).isDir()) return QFileInfo(env).absoluteFilePath();
  const QString exe = QCoreApplication::applicationDirPath();
  for (const QString& rel : {QString("../../samples"), QString("../share/blockflow/samples")}) {
    const QString p = QDir(exe).absoluteFilePath(rel);
    if (QFileInfo(p).isDir()) return QDir(p).canonicalPath();
  }
  return {};
}

void MainWindow::FillSamplesMenu() {
  samples_menu_->clear();
  const QString dir = FindSamplesDir();
  const QStringList files =
      dir.isEmpty() ? QStringList() : QDir(dir).entryList({"*.json"}, QDir::Files, QDir::Name);
  for (const QString& f : files) {
    const QString path = QDir(dir).absoluteFilePath(f);
    samples_menu_->addAction(QFileInfo(f).completeBaseName(), this, [this, path] {
      if (MaybeSave()) OpenCopy(path);
    });
  }
  if (files.isEmpty()) {
    samples_menu_
        ->addAction(dir.isEmpty() ? "(no samples folder; set BLOCKFLOW_SAMPLES)" : "(no samples)")
        ->setEnabled(false);
  }
}

int MainWindow::Arrange(const std::vector<std::string>& ids) {
  const int n = ArrangeNodes(scene_, ids, /*undoable=*/true);
  if (ids.empty()) view_->FitToGraph();
  ShowStatus(QString("Arranged %1 node(s) with %2.").arg(n).arg(LayoutEngineName()), false);
  return n;
}

void MainWindow::Copy() {
  const auto ids = scene_->SelectedNodeIds();
  if (ids.empty()) return;
  auto* mime = new QMimeData;
  const QByteArray json = QByteArray::fromStdString(doc_->CopyNodes(ids));
  mime->setData(kClipboardMime, json);
  if (!doc_->graph().base_dir.empty()) {
    mime->setData(
        kClipboardDirMime,
        QFileInfo(QString::fromStdString(doc_->graph().base_dir)).absoluteFilePath().toUtf8());
  }
  mime->setText(QString::fromUtf8(json));
  QApplication::clipboard()->setMimeData(mime);
  paste_count_ = 0;
  ShowStatus(QString("Copied %1 node(s).").arg(ids.size()), false);
}

void MainWindow::Cut() {
  Copy();
  scene_->DeleteSelection();
}

void MainWindow::Paste() {
  const QMimeData* mime = QApplication::clipboard()->mimeData();
  if (!mime) return;
  QByteArray json = mime->data(kClipboardMime);
  if (json.isEmpty()) json = mime->text().toUtf8();
  if (json.isEmpty()) return;
  ++paste_count_;
  // At the cursor when it is over the canvas; else beside the copied nodes, clear of them.
  std::optional<QPointF> cursor;
  const QPoint at = view_->viewport()->mapFromGlobal(QCursor::pos());
  if (view_->viewport()->underMouse() && view_->viewport()->rect().contains(at))
    cursor = view_->mapToScene(at);
  const auto [top_left, original] = ClipboardBounds(json.toStdString());
  auto ids = doc_->Paste(json.toStdString(), PasteOffset(top_left, cursor, original, paste_count_),
                         mime->data(kClipboardDirMime).toStdString());
  if (!ids.ok()) {
    ShowStatus("Cannot paste: " + QString::fromStdString(ids.status().message()), true);
    return;
  }
  scene_->SelectNodes(*ids);
  ShowStatus(QString("Pasted %1 node(s).").arg(ids->size()), false);
}

void MainWindow::Duplicate() {
  const auto ids = scene_->SelectedNodeIds();
  if (ids.empty()) return;
  const std::string json = doc_->CopyNodes(ids);
  const auto [top_left, original] = ClipboardBounds(json);
  auto pasted = doc_->Paste(json, PasteOffset(top_left, std::nullopt, original, 1));
  if (pasted.ok()) scene_->SelectNodes(*pasted);
}

void MainWindow::AddBlockAt(const QString& op, QPointF scene_pos) {
  auto id = doc_->AddNode(op.toStdString(), scene_pos);
  if (!id.ok()) {
    ShowStatus(QString::fromStdString(id.status().message()), true);
    return;
  }
  SelectNode(*id);
  ShowStatus(QString("Added %1 (%2).").arg(QString::fromStdString(*id), op), false);
}

void MainWindow::OpenQuickAdd(QPointF scene_pos, QPoint global_pos,
                              const std::optional<WireEnd>& wire, const WireFit& fit) {
  quick_add_pos_ = scene_pos;
  quick_add_->Popup(global_pos, wire ? std::optional<WireFit>(fit) : std::nullopt);
  quick_add_wire_ = wire;  // after Popup: showing it again dismisses the previous one
  quick_add_fit_ = fit;
}

void MainWindow::AddBlockAndWire(const QString& op, QPointF scene_pos, const WireEnd& wire,
                                 const WireFit& fit) {
  const OpSchema* schema = doc_->registry().Find(op.toStdString());
  const int port = schema ? FittingPort(*schema, fit) : -1;
  if (port < 0) {
    AddBlockAt(op, scene_pos);
    return;
  }
  // The new block sits on the far side of the drop point from the wire's fixed end.
  const QPointF at = scene_pos - (wire.is_output ? QPointF(0, 60) : QPointF(240, 60));
  doc_->undo_stack()->beginMacro(QString("Add %1 and wire it").arg(op));
  auto id = doc_->AddNode(op.toStdString(), at);
  Status st = id.status();
  if (id.ok()) {
    st = wire.is_output ? doc_->Connect(Endpoint{wire.node_id, wire.index}, *id,
                                        schema->inputs()[static_cast<size_t>(port)].name)
                        : doc_->Connect(Endpoint{*id, port}, wire.node_id, wire.port);
  }
  doc_->undo_stack()->endMacro();
  if (!id.ok()) {
    ShowStatus(QString::fromStdString(id.status().message()), true);
    return;
  }
  SelectNode(*id);
  if (!st.ok()) {
    ShowStatus(QString::fromStdString(st.message()), true);
  } else {
    ShowStatus(QString("Added %1 (%2), wired.").arg(QString::fromStdString(*id), op), false);
  }
}

std::pair<QPointF, QRectF> MainWindow::ClipboardBounds(const std::string& json) const {
  Expected<Graph> g = ParseGraphJson(json, "clipboard", "");
  if (!g.ok() || g->nodes().empty()) return {QPointF(), QRectF()};
  QRectF positions, drawn;
  bool first = true;
  for (const Node& n : g->nodes()) {
    const QPointF p = NodePosition(n).value_or(QPointF());
    positions = first ? QRectF(p, QSizeF(0, 0)) : positions.united(QRectF(p, QSizeF(0, 0)));
    first = false;
    // The node on the canvas, if it is the one copied (same id, same place): its drawn size.
    const NodeItem* item = scene_->FindNode(n.id);
    const QRectF r = item && item->pos() == p ? item->sceneBoundingRect()
                                              : QRectF(p, QSizeF(260, 160));  // a typical node
    drawn = drawn.isNull() ? r : drawn.united(r);
  }
  return {positions.topLeft(), drawn};
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (!MaybeSave()) {
    event->ignore();
    return;
  }
  runner_->Cancel();
  autosaver_->Discard();
  event->accept();
}

void MainWindow::showEvent(QShowEvent* event) {
  QMainWindow::showEvent(event);
  if (!fitted_once_) {
    fitted_once_ = true;
    auto* palette_dock = findChild<QDockWidget*>("palette_dock");
    auto* attr_dock = findChild<QDockWidget*>("attributes_dock");
    auto* result_dock = findChild<QDockWidget*>("results_dock");
    resizeDocks({palette_dock}, {310}, Qt::Horizontal);
    resizeDocks({attr_dock}, {430}, Qt::Horizontal);
    resizeDocks({attr_dock, result_dock}, {330, 640}, Qt::Vertical);
    resizeDocks({findChild<QDockWidget*>("problems_dock")}, {130}, Qt::Vertical);
    QTimer::singleShot(0, this, [this] { view_->FitToGraph(); });
  }
}

void MainWindow::ScriptedScreenshot(const QString& path, bool run,
                                    const std::function<void(int)>& done) {
  auto shoot = [this, path, done](bool run_ok) {
    // The last drawn node (an inline value is drawn in its port, not as a node).
    const auto& nodes = doc_->graph().nodes();
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      if (!scene_->FindNode(it->id)) continue;
      SelectNode(it->id);
      break;
    }
    // Let the layout settle (footers appear after a run) before fitting and grabbing.
    QTimer::singleShot(100, this, [this, path, done, run_ok] {
      view_->FitToGraph();
      QApplication::processEvents();
      const QPixmap shot = grab();
      const bool saved = shot.save(path, "PNG");
      if (!saved)
        std::fprintf(stderr, "error: cannot write screenshot %s\n", path.toUtf8().constData());
      done(run_ok && saved ? 0 : 1);
    });
  };
  if (!run) {
    QTimer::singleShot(50, this, [shoot] { shoot(true); });
    return;
  }
  auto conn = std::make_shared<QMetaObject::Connection>();
  *conn = connect(this, &MainWindow::runFinished, this, [conn, shoot](bool ok, const QString&) {
    QObject::disconnect(*conn);
    shoot(ok);
  });
  QTimer::singleShot(50, this, [this] { Run(); });
}

bool MainWindow::OfferRecovery() {
  for (RecoveryFile& file : FindRecoveryFiles(RecoveryDir())) {
    const QString name = file.source_path.empty()
                             ? QString("a new graph")
                             : QFileInfo(QString::fromStdString(file.source_path)).fileName();
    const QString text =
        "blockflow-editor did not close normally. It had autosaved unsaved changes to " + name +
        (file.saved_at.isEmpty() ? QString() : " at " + file.saved_at) +
        ".\n\nRecover them? (Discard deletes them; Later keeps them for the next start.)";
    RecoveryChoice choice = RecoveryChoice::kLater;
    if (recovery_prompt_) {
      choice = recovery_prompt_(text);
    } else if (!scripted_) {
      QMessageBox box(QMessageBox::Question, "Recover unsaved changes", text, QMessageBox::NoButton,
                      this);
      QPushButton* recover = box.addButton("Recover", QMessageBox::AcceptRole);
      QPushButton* discard = box.addButton("Discard", QMessageBox::DestructiveRole);
      box.addButton("Later", QMessageBox::RejectRole);
      box.setDefaultButton(recover);
      box.exec();
      choice = box.clickedButton() == recover   ? RecoveryChoice::kRecover
               : box.clickedButton() == discard ? RecoveryChoice::kDiscard
                                                : RecoveryChoice::kLater;
    }
    if (choice == RecoveryChoice::kDiscard) file.Discard();
    if (choice != RecoveryChoice::kRecover) continue;
    Expected<Graph> recovered = file.Load();
    if (!recovered.ok()) {
      ShowStatus(QString::fromStdString("cannot recover: " + recovered.status().message()), true);
      continue;
    }
    // The graph as last saved first, so that undo goes back to it; a file that is gone (or a
    // graph never saved) starts from an empty graph in the same place.
    const QString source = QString::fromStdString(file.source_path);
    if (source.isEmpty() || !doc_->Open(source).ok()) {
      Graph base;
      base.source_path = file.source_path;
      base.base_dir = file.base_dir;
      doc_->Reset(std::move(base));
    }
    runner_->ClearResult();
    scene_->ClearRunStates();
    doc_->ApplyEdit("Recover Unsaved Changes", std::move(recovered).value());
    file.Discard();  // this editor's own autosave holds it from now on
    ShowStatus("Recovered the unsaved changes to " + name + " (autosaved " + file.saved_at +
                   "); save them to keep them.",
               false);
    return true;
  }
  return false;
}

}  // namespace blockflow::editor
