// Editor round two, part B: the Problems panel, status messages that stay true, hover feedback
// at the cursor, detaching a wire by dragging it off an input, quick-add on a wire dropped on
// empty canvas, paste placement, stable port positions, HWIO from the port's layout role, the
// heatmap's scale, Save As's key, samples opened as copies, and tests kept off user settings.
#include <gtest/gtest.h>

#include <QAction>
#include <QCheckBox>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QLineEdit>
#include <QMouseEvent>
#include <QProcess>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeWidget>

#include "core/schema.h"
#include "editor/attr_editors.h"
#include "editor/attribute_panel.h"
#include "editor/graph_scene.h"
#include "editor/output_layout.h"
#include "editor/palette_widget.h"
#include "editor/paste_placement.h"
#include "editor/problems_panel.h"
#include "editor/result_panel.h"
#include "editor/tensor_view.h"
#include "test_util.h"

namespace blockflow::editor {
namespace {

using testing::DragOnCanvas;
using testing::EditorWindowTest;
using testing::FindAction;
using testing::GraphFromJson;
using testing::kAddGraph;
using testing::PortPos;
using testing::SendMouse;

// "id (Op): message" for every issue of the analysis, as the Problems panel should list them.
QStringList ExpectedRows(const GraphDocument& doc) {
  QStringList rows;
  for (const NodeIssue& i : doc.analysis().issues) {
    rows << (i.node_id.empty()
                 ? QString::fromStdString(i.message)
                 : QString::fromStdString(i.node_id + " (" + i.op + "): " + i.message));
  }
  return rows;
}

// ---------------------------------------------------------------- Problems panel

TEST_F(EditorWindowTest, ProblemsPanelListsEveryErrorAndAClickSelectsItsNode) {
  ProblemsPanel* panel = window_.problems();
  ASSERT_NE(panel, nullptr);
  EXPECT_TRUE(panel->Rows().isEmpty());
  EXPECT_EQ(window_.SummaryText(), "3 nodes · valid");

  // A missing input.
  doc()->Remove({}, {WireRef{Endpoint{"b", 0}, "s", "y"}});
  ASSERT_EQ(panel->Rows().size(), 1);
  EXPECT_TRUE(panel->Rows()[0].startsWith("s (Add): ")) << panel->Rows()[0].toStdString();
  EXPECT_TRUE(panel->Rows()[0].contains("'y'")) << panel->Rows()[0].toStdString();
  doc()->undo_stack()->undo();
  EXPECT_TRUE(panel->Rows().isEmpty());

  // A bad attribute value (shapes that do not broadcast).
  ASSERT_TRUE(doc()->SetAttr("a", "shape", nlohmann::json::array({4, 5})).ok());
  ASSERT_EQ(panel->Rows(), ExpectedRows(*doc()));
  EXPECT_TRUE(panel->Rows()[0].contains("broadcast"));
  doc()->undo_stack()->undo();

  // Required attributes missing, unwired inputs, an unknown op, a file that is not there, a
  // graph-level problem: every one listed, in the analysis's order.
  doc()->Reset(GraphFromJson(R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "c", "op": "Conv2D", "ui": {"x": 0, "y": 0}},
    {"id": "u", "op": "NoSuchBlock", "ui": {"x": 0, "y": 300}},
    {"id": "w", "op": "Const", "attrs": {"dtype": "float32", "file": "nowhere.npy"},
     "ui": {"x": 300, "y": 300}}]})"));
  const QStringList rows = panel->Rows();
  EXPECT_EQ(rows, ExpectedRows(*doc()));
  EXPECT_GE(rows.size(), 4);
  auto has = [&](const QString& node, const QString& text) {
    for (const QString& r : rows) {
      if (r.startsWith(node) && r.contains(text)) return true;
    }
    return false;
  };
  EXPECT_TRUE(has("c (Conv2D)", "'padding'")) << rows.join("\n").toStdString();
  EXPECT_TRUE(has("c (Conv2D)", "'strides'")) << rows.join("\n").toStdString();
  EXPECT_TRUE(has("u (NoSuchBlock)", "NoSuchBlock")) << rows.join("\n").toStdString();
  EXPECT_TRUE(has("w (Const)", "nowhere.npy")) << rows.join("\n").toStdString();
  // The summary counts the same problems; the status bar does not repeat any of them.
  EXPECT_TRUE(window_.SummaryText().contains(QString("%1 issues").arg(rows.size())))
      << window_.SummaryText().toStdString();
  EXPECT_FALSE(window_.StatusText().contains("padding"));

  // A click on a row selects its node.
  QTreeWidget* list = panel->list();
  for (int i = 0; i < list->topLevelItemCount(); ++i) {
    if (!list->topLevelItem(i)->text(0).startsWith("u ")) continue;
    emit list->itemClicked(list->topLevelItem(i), 0);
    break;
  }
  EXPECT_EQ(window_.scene()->SelectedNodeIds(), std::vector<std::string>{"u"});
}

// ---------------------------------------------------------------- status that stays true

TEST_F(EditorWindowTest, NoStaleStatusAfterUndoDeleteOrAFix) {
  // A new Conv2D lacks padding: the summary says so, the status bar does not keep repeating it.
  auto id = doc()->AddNode("Conv2D", QPointF(700, 400));
  ASSERT_TRUE(id.ok());
  window_.SelectNode(*id);
  EXPECT_FALSE(window_.StatusText().contains("padding")) << window_.StatusText().toStdString();
  doc()->undo_stack()->undo();
  EXPECT_EQ(window_.SummaryText(), "3 nodes · valid");
  EXPECT_TRUE(window_.StatusText().isEmpty()) << window_.StatusText().toStdString();

  // "Run failed" goes away when an undo brings back a valid graph.
  ASSERT_TRUE(doc()->SetAttr("a", "shape", nlohmann::json::array({4, 5})).ok());
  QList<QVariant> args;
  ASSERT_TRUE(testing::RunAndWait(window_, &args));
  EXPECT_FALSE(args[0].toBool());
  EXPECT_TRUE(window_.StatusText().startsWith("Run failed")) << window_.StatusText().toStdString();
  doc()->undo_stack()->undo();
  EXPECT_EQ(window_.SummaryText(), "3 nodes · valid");
  EXPECT_TRUE(window_.StatusText().isEmpty()) << window_.StatusText().toStdString();

  // "Pasted" does not outlive a delete.
  window_.scene()->SelectNodes({"a"});
  FindAction(&window_, "&Copy")->trigger();
  FindAction(&window_, "&Paste")->trigger();
  EXPECT_EQ(window_.StatusText(), "Pasted 1 node(s).");
  window_.scene()->DeleteSelection();
  EXPECT_FALSE(window_.StatusText().contains("Pasted")) << window_.StatusText().toStdString();
}

TEST_F(EditorWindowTest, StatusMessagesExpire) {
  window_.scene()->SelectNodes({"a"});
  FindAction(&window_, "&Copy")->trigger();
  EXPECT_EQ(window_.StatusText(), "Copied 1 node(s).");
  QTRY_VERIFY_WITH_TIMEOUT(window_.StatusText().isEmpty(), 12000);
}

TEST_F(EditorWindowTest, RefusalWhileHoveringIsShownAtTheCursorNotInTheStatusBar) {
  ASSERT_TRUE(doc()->AddNode("Reshape", QPointF(400, 330)).ok());
  ASSERT_TRUE(doc()->AddNode("Identity", QPointF(700, 100)).ok());
  QApplication::processEvents();
  GraphScene* scene = window_.scene();
  GraphView* view = window_.view();
  QWidget* vp = view->viewport();
  const QPoint from = view->mapFromScene(PortPos(scene, "a", true, "output"));
  const QPoint bad = view->mapFromScene(PortPos(scene, "reshape", false, "shape"));
  const QPoint good = view->mapFromScene(PortPos(scene, "identity", false, "input"));
  SendMouse(vp, QEvent::MouseButtonPress, from, Qt::LeftButton, Qt::LeftButton);
  SendMouse(vp, QEvent::MouseMove, (from + bad) / 2, Qt::NoButton, Qt::LeftButton);
  SendMouse(vp, QEvent::MouseMove, bad, Qt::NoButton, Qt::LeftButton);
  EXPECT_EQ(scene->hover_feedback(),
            "refused: 'reshape'.shape (Reshape) accepts int32, int64; 'a' gives float32");
  EXPECT_FALSE(window_.StatusText().contains("refused"));
  // Moving on to a port that takes the wire clears it.
  SendMouse(vp, QEvent::MouseMove, good, Qt::NoButton, Qt::LeftButton);
  EXPECT_TRUE(scene->hover_feedback().isEmpty());
  SendMouse(vp, QEvent::MouseButtonRelease, good, Qt::LeftButton, Qt::NoButton);
  EXPECT_EQ(doc()->graph().FindNode("identity")->inputs.at("input")[0].node, "a");
  EXPECT_FALSE(window_.StatusText().contains("refused"));
}

TEST_F(EditorWindowTest, BadAttributeFieldsGetARedFrameAndTheReason) {
  auto id = doc()->AddNode("Conv2D", QPointF(700, 400));
  ASSERT_TRUE(id.ok());
  window_.SelectNode(*id);
  AttributePanel* panel = window_.attributes();
  QWidget* padding = panel->EditorFor("padding");
  QWidget* strides = panel->EditorFor("strides");
  QWidget* format = panel->EditorFor("data_format");
  ASSERT_TRUE(padding && strides && format);
  EXPECT_TRUE(FieldError(padding).contains("padding")) << FieldError(padding).toStdString();
  EXPECT_TRUE(padding->toolTip().contains(FieldError(padding).toHtmlEscaped()));
  EXPECT_TRUE(padding->styleSheet().contains("#e5484d"));
  EXPECT_TRUE(FieldError(strides).contains("strides")) << FieldError(strides).toStdString();
  EXPECT_TRUE(FieldError(format).isEmpty());
  // Fixed: the mark goes, the attribute's own tooltip comes back.
  ASSERT_TRUE(doc()->SetAttrs(*id, {{"padding", "SAME"}, {"strides", {1, 1, 1, 1}}}).ok());
  padding = panel->EditorFor("padding");
  EXPECT_TRUE(FieldError(padding).isEmpty());
  EXPECT_FALSE(padding->toolTip().contains("#ff6b6f")) << padding->toolTip().toStdString();
  EXPECT_FALSE(padding->toolTip().isEmpty());  // the attribute's doc
  EXPECT_TRUE(padding->styleSheet().isEmpty());

  // A value the field itself refuses: marked, with the reason, and nothing committed.
  window_.SelectNode("a");
  auto* shape = qobject_cast<QLineEdit*>(panel->EditorFor("shape"));
  ASSERT_NE(shape, nullptr);
  shape->setText("2, x");
  emit shape->editingFinished();
  EXPECT_FALSE(FieldError(shape).isEmpty());
  EXPECT_TRUE(shape->toolTip().contains("x")) << shape->toolTip().toStdString();
  EXPECT_EQ(doc()->graph().FindNode("a")->attrs["shape"], nlohmann::json::array({2, 3}));
  shape->setText("2, 3");
  emit shape->editingFinished();
  EXPECT_TRUE(FieldError(shape).isEmpty());
}

// ---------------------------------------------------------------- wires

TEST_F(EditorWindowTest, DraggingAWireOffAConnectedInputDetachesOrMovesIt) {
  GraphScene* scene = window_.scene();
  GraphView* view = window_.view();
  ASSERT_EQ(scene->edges().size(), 2u);
  // Off s.x onto empty canvas: detached, one undoable step.
  const QPointF x = PortPos(scene, "s", false, "x");
  DragOnCanvas(view, x, x + QPointF(-150, 260));
  EXPECT_EQ(doc()->graph().FindNode("s")->inputs.count("x"), 0u);
  EXPECT_EQ(scene->edges().size(), 1u);
  EXPECT_TRUE(window_.StatusText().startsWith("Detached a from s.x"))
      << window_.StatusText().toStdString();
  EXPECT_FALSE(window_.quick_add()->isVisible());  // detaching offers no new block
  doc()->undo_stack()->undo();
  EXPECT_EQ(doc()->graph().FindNode("s")->inputs.at("x")[0].node, "a");
  EXPECT_EQ(scene->edges().size(), 2u);

  // Off s.y onto another input: moved there (b now feeds identity), undone in one step.
  ASSERT_TRUE(doc()->AddNode("Identity", QPointF(700, 300)).ok());
  QApplication::processEvents();
  DragOnCanvas(view, PortPos(scene, "s", false, "y"), PortPos(scene, "identity", false, "input"));
  EXPECT_EQ(doc()->graph().FindNode("s")->inputs.count("y"), 0u);
  EXPECT_EQ(doc()->graph().FindNode("identity")->inputs.at("input")[0].node, "b");
  doc()->undo_stack()->undo();
  EXPECT_EQ(doc()->graph().FindNode("s")->inputs.at("y")[0].node, "b");
  EXPECT_EQ(doc()->graph().FindNode("identity")->inputs.count("input"), 0u);

  // Picked up and put back on the same input: nothing changes.
  const std::string before = SerializeGraph(doc()->graph());
  const QPointF y = PortPos(scene, "s", false, "y");
  DragOnCanvas(view, y, y);
  EXPECT_EQ(SerializeGraph(doc()->graph()), before);
  EXPECT_EQ(scene->edges().size(), 2u);
  for (EdgeItem* e : scene->edges()) EXPECT_TRUE(e->isVisible());
}

TEST_F(EditorWindowTest, AWireDroppedOnEmptyCanvasOffersFittingBlocksAndWiresTheChoice) {
  GraphScene* scene = window_.scene();
  QuickAddPopup* popup = window_.quick_add();
  const QPointF from = PortPos(scene, "s", true, "z");
  const QPointF drop = from + QPointF(200, 150);
  DragOnCanvas(window_.view(), from, drop);
  ASSERT_TRUE(popup->isVisible());
  const QStringList shown = popup->ShownOps();
  EXPECT_TRUE(shown.contains("Identity"));
  EXPECT_TRUE(shown.contains("Conv2D"));
  EXPECT_FALSE(shown.contains("Const"));        // no input at all
  EXPECT_FALSE(shown.contains("Placeholder"));  // no input at all
  auto* search = popup->findChild<QLineEdit*>();
  ASSERT_NE(search, nullptr);
  QTest::keyClicks(search, "ident");
  QTest::keyClick(search, Qt::Key_Return);
  const Node* n = doc()->graph().FindNode("identity");
  ASSERT_NE(n, nullptr);
  ASSERT_EQ(n->inputs.count("input"), 1u);
  EXPECT_EQ(n->inputs.at("input")[0], (Endpoint{"s", 0}));
  EXPECT_TRUE(doc()->analysis().ok());
  // One undo removes the block and its wire.
  doc()->undo_stack()->undo();
  EXPECT_EQ(SerializeGraph(doc()->graph()), SerializeGraph(GraphFromJson(kAddGraph)));

  // From an input (after detaching it): only blocks with an output the input takes.
  ASSERT_TRUE(doc()->AddNode("Reshape", QPointF(800, 400)).ok());
  QApplication::processEvents();
  const QPointF shape = PortPos(scene, "reshape", false, "shape");
  DragOnCanvas(window_.view(), shape, shape - QPointF(250, -120));
  ASSERT_TRUE(popup->isVisible());
  EXPECT_TRUE(popup->ShownOps().contains("Shape"));
  EXPECT_FALSE(popup->ShownOps().contains("Conv2D"));  // float outputs only
  QTest::keyClicks(search, "shape");
  QTest::keyClick(search, Qt::Key_Return);
  ASSERT_NE(doc()->graph().FindNode("shape"), nullptr);
  EXPECT_EQ(doc()->graph().FindNode("reshape")->inputs.at("shape")[0], (Endpoint{"shape", 0}));

  // Escape: nothing added, and a later Tab popup adds an unwired block.
  const size_t count = doc()->graph().nodes().size();
  DragOnCanvas(window_.view(), from, drop + QPointF(400, 0));
  ASSERT_TRUE(popup->isVisible());
  QTest::keyClick(search, Qt::Key_Escape);
  EXPECT_EQ(doc()->graph().nodes().size(), count);
  emit scene->quickAddRequested(QPointF(100, 700));
  QTest::keyClicks(search, "identity");
  QTest::keyClick(search, Qt::Key_Return);
  ASSERT_EQ(doc()->graph().nodes().size(), count + 1);
  EXPECT_TRUE(doc()->graph().nodes().back().inputs.empty());
}

// ---------------------------------------------------------------- paste and ports

TEST_F(EditorWindowTest, PasteLandsClearOfTheOriginal) {
  GraphScene* scene = window_.scene();
  scene->SelectNodes({"a", "s"});
  FindAction(&window_, "&Copy")->trigger();
  FindAction(&window_, "&Paste")->trigger();
  FindAction(&window_, "&Paste")->trigger();
  QApplication::processEvents();
  const std::vector<std::string> ids = {"a", "s", "a_1", "s_1", "a_2", "s_2"};
  for (const std::string& id : ids) ASSERT_NE(scene->FindNode(id), nullptr) << id;
  // No pasted node overlaps a node of another copy.
  for (size_t i = 0; i < ids.size(); ++i) {
    for (size_t j = i + 1; j < ids.size(); ++j) {
      if (i / 2 == j / 2) continue;  // the same copy
      const QRectF ri = scene->FindNode(ids[i])->sceneBoundingRect();
      const QRectF rj = scene->FindNode(ids[j])->sceneBoundingRect();
      EXPECT_FALSE(ri.intersects(rj)) << ids[i] << " overlaps " << ids[j];
    }
  }
  // Duplicate too.
  window_.SelectNode("b");
  FindAction(&window_, "&Duplicate")->trigger();
  ASSERT_NE(scene->FindNode("b_1"), nullptr);
  EXPECT_FALSE(scene->FindNode("b")->sceneBoundingRect().intersects(
      scene->FindNode("b_1")->sceneBoundingRect()));
  // At the cursor, when it is on the canvas.
  EXPECT_EQ(PasteOffset(QPointF(10, 20), QPointF(500, 600), QRectF(0, 0, 100, 100), 3),
            QPointF(490, 580));
}

TEST_F(EditorWindowTest, WiringANodeKeepsItsPortsInPlace) {
  auto id = doc()->AddNode("Conv2DBackpropFilter", QPointF(800, 0));
  ASSERT_TRUE(id.ok());
  NodeItem* before = window_.scene()->FindNode(*id);
  ASSERT_NE(before, nullptr);
  const QPointF out = before->OutputAnchor(0) - before->pos();
  const double width = before->boundingRect().width();
  // Wire a long-shaped input: the node does not grow, its output port does not move.
  doc()->Reset(GraphFromJson(R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "x", "op": "Const", "attrs": {"dtype": "float32", "shape": [1000, 1000, 1000, 3],
     "value": 0}, "ui": {"x": 0, "y": 0}},
    {"id": "conv2d_backprop_filter", "op": "Conv2DBackpropFilter", "inputs": {"input": "x"},
     "ui": {"x": 800, "y": 0}}]})"));
  NodeItem* after = window_.scene()->FindNode(*id);
  ASSERT_NE(after, nullptr);
  EXPECT_EQ(after->OutputAnchor(0) - after->pos(), out);
  EXPECT_EQ(after->boundingRect().width(), width);
  // The full detail is in the port's tooltip.
  EXPECT_TRUE(after->FindPort(false, "input")->toolTip().contains("[1000,1000,1000,3]"));
}

// ---------------------------------------------------------------- results

TEST(OutputLayout, FromThePortRoleOrTheInputItFeeds) {
  const Graph g = GraphFromJson(R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "x", "op": "Const", "attrs": {"dtype": "float32", "shape": [1, 3, 5, 5], "value": 1}},
    {"id": "w", "op": "Const", "attrs": {"dtype": "float32", "shape": [3, 3, 3, 1], "value": 1}},
    {"id": "lone", "op": "Const", "attrs": {"dtype": "float32", "shape": [3, 3, 3, 1], "value": 1}},
    {"id": "c", "op": "DepthwiseConv2dNative", "inputs": {"input": "x", "filter": "w"},
     "attrs": {"strides": [1, 1, 1, 1], "padding": "SAME", "data_format": "NCHW"}},
    {"id": "g", "op": "DepthwiseConv2dNativeBackpropFilter",
     "inputs": {"input": "x", "filter_sizes": "w", "out_backprop": "c"},
     "attrs": {"strides": [1, 1, 1, 1], "padding": "SAME", "data_format": "NCHW"}}]})");
  const OpRegistry& r = OpRegistry::Global();
  EXPECT_EQ(OutputLayoutFor(g, r, "w", 0), "HWIO");  // feeds a filter port
  EXPECT_EQ(OutputLayoutFor(g, r, "x", 0), "NCHW");  // feeds activations of an NCHW node
  EXPECT_EQ(OutputLayoutFor(g, r, "lone", 0), "");   // feeds nothing: no layout
  EXPECT_EQ(OutputLayoutFor(g, r, "c", 0), "NCHW");  // its own port's role
  EXPECT_EQ(OutputLayoutFor(g, r, "g", 0), "HWIO");
  EXPECT_EQ(OutputLayoutFor(g, r, "nope", 0), "");
}

TEST(ResultPanelWindow, AFilterShapedConstOpensAsHWIO) {
  MainWindow w;
  w.SetScripted(true);
  w.document()->Reset(GraphFromJson(R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "x", "op": "Const", "attrs": {"dtype": "float32", "shape": [1, 5, 5, 3], "value": 1}},
    {"id": "w", "op": "Const", "attrs": {"dtype": "float32", "shape": [3, 3, 3, 1], "value": 2}},
    {"id": "c", "op": "DepthwiseConv2dNative", "inputs": {"input": "x", "filter": "w"},
     "attrs": {"strides": [1, 1, 1, 1], "padding": "SAME"}}]})"));
  QList<QVariant> args;
  ASSERT_TRUE(testing::RunAndWait(w, &args));
  ASSERT_TRUE(args[0].toBool()) << args[1].toString().toStdString();
  w.SelectNode("w");
  EXPECT_EQ(w.results()->LayoutText(), "HWIO");
  w.SelectNode("x");
  EXPECT_EQ(w.results()->LayoutText(), "NHWC");
}

TEST(ResultPanel, HeatmapScaleCoversTheWholeTensorUnlessPerSlice) {
  // [1, 1, 2, 2] NHWC: channel 0 holds ±1, channel 1 holds ±100.
  Tensor t(DType::kFloat32, Shape({1, 1, 2, 2}));
  const float v[] = {1, 100, -1, -100};
  for (int i = 0; i < 4; ++i) t.SetFromDouble(i, v[i]);
  EXPECT_EQ(FiniteAbsMax(t), 100);
  double used = 0;
  const QImage whole = HeatmapImage(t, MakeSlice(t.shape(), SliceLayout::kNHWC, 0, 0), &used, 100);
  EXPECT_EQ(used, 100);
  const QImage slice = HeatmapImage(t, MakeSlice(t.shape(), SliceLayout::kNHWC, 0, 0), &used);
  EXPECT_EQ(used, 1);
  // ±1 of ±100 is nearly grey; of ±1 it is full colour.
  EXPECT_NE(whole.pixel(0, 0), slice.pixel(0, 0));
  EXPECT_EQ(slice.pixel(0, 0), DivergingColor(1).rgb());
  EXPECT_EQ(whole.pixel(0, 0), DivergingColor(0.01).rgb());

  ResultPanel panel;
  panel.ShowOutputs("t", {t}, {"output"}, {"NHWC"}, "");
  panel.SetChannel(0);
  EXPECT_FALSE(panel.per_slice_scale()->isChecked());
  EXPECT_EQ(panel.ScaleAbsMax(), 100);
  panel.per_slice_scale()->setChecked(true);
  EXPECT_EQ(panel.ScaleAbsMax(), 1);
  panel.SetChannel(1);
  EXPECT_EQ(panel.ScaleAbsMax(), 100);
}

// ---------------------------------------------------------------- files and settings

TEST(MainWindowFiles, SaveAsHasAnExplicitKey) {
  MainWindow w;
  QAction* save_as = FindAction(&w, "Save &As…");
  ASSERT_NE(save_as, nullptr);
  EXPECT_EQ(save_as->shortcut(), QKeySequence("Ctrl+Shift+S"));
}

TEST(MainWindowFiles, ASampleOpensAsAnUntitledCopy) {
  MainWindow w;
  w.SetScripted(true);
  ASSERT_TRUE(w.OpenCopy(testing::DataPath("basic.json")));
  EXPECT_TRUE(w.document()->file_path().isEmpty());  // Save asks where
  EXPECT_TRUE(w.windowTitle().startsWith("untitled.json"));
  EXPECT_TRUE(w.document()->analysis().ok());  // its feed file is still found
  QList<QVariant> args;
  ASSERT_TRUE(testing::RunAndWait(w, &args));
  EXPECT_TRUE(args[0].toBool()) << args[1].toString().toStdString();
}

TEST(MainWindowFiles, SavingASampleCopyTakesItsDataAlongAndLeavesTheSample) {
  QTemporaryDir dir;
  const QString sample = testing::DataPath("basic.json");
  QFile original(sample);
  ASSERT_TRUE(original.open(QIODevice::ReadOnly));
  const QByteArray before = original.readAll();
  MainWindow w;
  w.SetScripted(true);
  ASSERT_TRUE(w.OpenCopy(sample));
  EXPECT_TRUE(w.document()->is_detached_copy());
  ASSERT_TRUE(w.SaveTo(dir.filePath("mine/copy.json")));
  EXPECT_FALSE(w.document()->is_detached_copy());
  // The feed file came along, under the same name; the saved graph names it as before.
  EXPECT_TRUE(QFileInfo::exists(dir.filePath("mine/basic/x.npy")));
  const Node* x = w.document()->graph().FindNode("x");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->ui["feed"], "basic/x.npy");
  EXPECT_TRUE(w.document()->analysis().ok());
  // The copy runs on its own, and the sample is untouched.
  ASSERT_TRUE(w.OpenFile(dir.filePath("mine/copy.json")));
  QList<QVariant> args;
  ASSERT_TRUE(testing::RunAndWait(w, &args));
  EXPECT_TRUE(args[0].toBool()) << args[1].toString().toStdString();
  QFile again(sample);
  ASSERT_TRUE(again.open(QIODevice::ReadOnly));
  EXPECT_EQ(again.readAll(), before);
}

TEST(Settings, TestsUseTheTestLocationOnly) {
  EXPECT_TRUE(QStandardPaths::isTestModeEnabled());
  const QString test_config =
      QStandardPaths::writableLocation(QStandardPaths::GenericConfigLocation);
  EXPECT_TRUE(test_config.contains("qttest")) << test_config.toStdString();
  EXPECT_TRUE(QSettings().fileName().startsWith(test_config))
      << QSettings().fileName().toStdString();
  // A scripted window (as --screenshot runs) adds nothing to Open Recent.
  QSettings().remove("recentFiles");
  {
    MainWindow w;
    w.SetScripted(true);
    ASSERT_TRUE(w.OpenFile(testing::DataPath("basic.json")));
  }
  EXPECT_FALSE(QSettings().contains("recentFiles"));
  // An interactive one records it, in the test location.
  {
    MainWindow w;
    ASSERT_TRUE(w.OpenFile(testing::DataPath("basic.json")));
  }
  EXPECT_EQ(QSettings().value("recentFiles").toStringList(),
            QStringList{QFileInfo(testing::DataPath("basic.json")).absoluteFilePath()});
  QSettings().remove("recentFiles");
}

TEST(Settings, TheEditorProgramWritesNoSettingsWhenScripted) {
  QTemporaryDir home, out;
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("QT_QPA_PLATFORM", "offscreen");
  env.insert("HOME", home.path());
  env.insert("XDG_CONFIG_HOME", home.filePath("config"));
  p.setProcessEnvironment(env);
  p.start(BF_EDITOR_EXE,
          {testing::DataPath("basic.json"), "--run", "--screenshot", out.filePath("shot.png")});
  ASSERT_TRUE(p.waitForFinished(30000));
  EXPECT_EQ(p.exitCode(), 0) << p.readAllStandardError().toStdString();
  EXPECT_TRUE(QFileInfo::exists(out.filePath("shot.png")));
  QStringList written;
  for (QDirIterator it(home.path(), QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
       it.hasNext();) {
    written << it.next();
  }
  EXPECT_TRUE(written.isEmpty()) << written.join(", ").toStdString();
}

}  // namespace
}  // namespace blockflow::editor
