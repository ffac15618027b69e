// The canvas: palette drops, wiring by mouse, node badges, deletion, dragging, copy/paste,
// and painting far from the origin.
#include <gtest/gtest.h>

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QFileInfo>
#include <QGraphicsSceneDragDropEvent>
#include <QLineEdit>
#include <QMimeData>
#include <QMouseEvent>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeWidget>

#include "editor/attribute_panel.h"
#include "editor/graph_document.h"
#include "editor/graph_scene.h"
#include "editor/graph_view.h"
#include "editor/main_window.h"
#include "editor/palette_widget.h"
#include "editor/problems_panel.h"
#include "test_util.h"

namespace blockflow::editor {
namespace {

using testing::DragOnCanvas;
using testing::GraphFromJson;
using testing::kAddGraph;
using testing::PortPos;
using testing::SendMouse;
using testing::WriteText;

// The MIME data the palette produces when block `op` is dragged.
QMimeData* PaletteMime(PaletteWidget* palette, const QString& op) {
  QAbstractItemModel* model = palette->tree()->model();
  for (int r = 0; r < model->rowCount(); ++r) {
    const QModelIndex cat = model->index(r, 0);
    for (int c = 0; c < model->rowCount(cat); ++c) {
      const QModelIndex item = model->index(c, 0, cat);
      if (item.data().toString() == op) return model->mimeData({item});
    }
  }
  return nullptr;
}

using testing::EditorWindowTest;
using testing::FindAction;

TEST_F(EditorWindowTest, DroppingAPaletteBlockAddsANode) {
  std::unique_ptr<QMimeData> mime(PaletteMime(window_.palette_widget(), "Mul"));
  ASSERT_NE(mime, nullptr);
  EXPECT_TRUE(mime->hasFormat(GraphScene::kOpMimeType));
  for (QEvent::Type type :
       {QEvent::GraphicsSceneDragEnter, QEvent::GraphicsSceneDragMove, QEvent::GraphicsSceneDrop}) {
    QGraphicsSceneDragDropEvent ev(type);
    ev.setMimeData(mime.get());
    ev.setScenePos(QPointF(620, 300));
    ev.setPossibleActions(Qt::CopyAction);
    ev.setProposedAction(Qt::CopyAction);
    QApplication::sendEvent(window_.scene(), &ev);
    EXPECT_TRUE(ev.isAccepted()) << type;
  }
  const Node* n = doc()->graph().FindNode("mul");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->op, "Mul");
  EXPECT_EQ(n->ui["x"], 600);
  EXPECT_EQ(n->ui["y"], 280);
  ASSERT_NE(window_.scene()->FindNode("mul"), nullptr);
  EXPECT_EQ(window_.scene()->SelectedNodeIds(), std::vector<std::string>{"mul"});
  EXPECT_EQ(window_.attributes()->node_id(), "mul");
  // Unwired inputs make it invalid, with a badge.
  EXPECT_TRUE(window_.scene()->FindNode("mul")->has_issues());
}

TEST_F(EditorWindowTest, QuickAddPopupAddsTheChosenBlock) {
  auto* popup = window_.findChild<QuickAddPopup*>();
  ASSERT_NE(popup, nullptr);
  emit window_.scene()->quickAddRequested(QPointF(100, 400));
  auto* search = popup->findChild<QLineEdit*>();
  ASSERT_NE(search, nullptr);
  QTest::keyClicks(search, "identity");
  QTest::keyClick(search, Qt::Key_Return);
  const Node* n = doc()->graph().FindNode("identity");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->op, "Identity");
  EXPECT_EQ(n->ui["x"], 100);
}

TEST_F(EditorWindowTest, WiringByDragReplacesRefusesAndReports) {
  ASSERT_TRUE(doc()->AddNode("Reshape", QPointF(400, 330)).ok());
  ASSERT_TRUE(doc()->AddNode("Identity", QPointF(700, 100)).ok());
  QApplication::processEvents();
  GraphScene* scene = window_.scene();
  GraphView* view = window_.view();

  // b.output → s.x replaces a → s.x.
  DragOnCanvas(view, PortPos(scene, "b", true, "output"), PortPos(scene, "s", false, "x"));
  ASSERT_EQ(doc()->graph().FindNode("s")->inputs.at("x").size(), 1u);
  EXPECT_EQ(doc()->graph().FindNode("s")->inputs.at("x")[0].node, "b");
  EXPECT_FALSE(window_.StatusText().contains("refused"));

  // float32 into Reshape.shape (int32/int64) is refused, with the reason in the status bar.
  const std::string before = SerializeGraph(doc()->graph());
  DragOnCanvas(view, PortPos(scene, "a", true, "output"),
               PortPos(scene, "reshape", false, "shape"));
  EXPECT_EQ(SerializeGraph(doc()->graph()), before);
  EXPECT_EQ(window_.StatusText(),
            "refused: 'reshape'.shape (Reshape) accepts int32, int64; 'a' gives float32");

  // Dragging from an input to an output works too: s → identity.input.
  DragOnCanvas(view, PortPos(scene, "identity", false, "input"), PortPos(scene, "s", true, "z"));
  ASSERT_EQ(doc()->graph().FindNode("identity")->inputs.count("input"), 1u);
  EXPECT_EQ(doc()->graph().FindNode("identity")->inputs.at("input")[0].node, "s");

  // identity → s.y would close a cycle.
  DragOnCanvas(view, PortPos(scene, "identity", true, "output"), PortPos(scene, "s", false, "y"));
  EXPECT_EQ(
      window_.StatusText(),
      "refused: wiring 'identity' into 's'.y would create a cycle ('s' already feeds 'identity')");
  EXPECT_EQ(doc()->graph().FindNode("s")->inputs.at("y")[0].node, "b");
  EXPECT_EQ(scene->edges().size(), 3u);
}

TEST_F(EditorWindowTest, DeleteRemovesSelectedWiresAndNodes) {
  GraphScene* scene = window_.scene();
  ASSERT_EQ(scene->edges().size(), 2u);
  for (EdgeItem* e : scene->edges()) e->setSelected(e->wire().port == "y");
  scene->DeleteSelection();
  EXPECT_EQ(doc()->graph().FindNode("s")->inputs.count("y"), 0u);
  EXPECT_EQ(scene->edges().size(), 1u);
  EXPECT_TRUE(scene->FindNode("s")->has_issues());
  window_.SelectNode("a");
  scene->DeleteSelection();
  EXPECT_EQ(doc()->graph().FindNode("a"), nullptr);
  EXPECT_EQ(doc()->graph().FindNode("s")->inputs.count("x"), 0u);
  doc()->undo_stack()->undo();
  doc()->undo_stack()->undo();
  EXPECT_EQ(SerializeGraph(doc()->graph()), SerializeGraph(GraphFromJson(kAddGraph)));
  EXPECT_EQ(scene->edges().size(), 2u);
}

TEST_F(EditorWindowTest, AttributeEditUpdatesShapesAndBadges) {
  window_.SelectNode("a");
  AttributePanel* panel = window_.attributes();
  ASSERT_EQ(panel->node_id(), "a");
  auto* shape = qobject_cast<QLineEdit*>(panel->EditorFor("shape"));
  ASSERT_NE(shape, nullptr);
  EXPECT_EQ(shape->text(), "2, 3");

  shape->setText("4, 3");
  emit shape->editingFinished();
  EXPECT_EQ(doc()->graph().FindNode("a")->attrs["shape"], nlohmann::json::array({4, 3}));
  EXPECT_EQ(doc()->InfoFor("s")->outputs[0].shape, Shape({4, 3}));
  EXPECT_FALSE(window_.scene()->FindNode("s")->has_issues());

  // Broadcasting [4,5] with [3] fails: badge, tooltip and the Problems panel give the validate
  // message (the status bar reports actions, not the graph's state).
  shape = qobject_cast<QLineEdit*>(panel->EditorFor("shape"));
  ASSERT_NE(shape, nullptr);
  shape->setText("4 5");
  emit shape->editingFinished();
  NodeItem* s = window_.scene()->FindNode("s");
  ASSERT_TRUE(s->has_issues());
  const auto issues = doc()->IssuesFor("s");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(s->toolTip().toStdString(), issues[0]);
  window_.SelectNode("s");
  EXPECT_EQ(window_.problems()->Rows(),
            QStringList{"s (Add): " + QString::fromStdString(issues[0]).section("): ", 1)});
  EXPECT_FALSE(window_.StatusText().contains("broadcast")) << window_.StatusText().toStdString();
  EXPECT_TRUE(window_.attributes()->IssueText().contains(
      QString::fromStdString(issues[0]).toHtmlEscaped()));

  // Two undos bring back the original graph and a clean node.
  doc()->undo_stack()->undo();
  doc()->undo_stack()->undo();
  EXPECT_EQ(SerializeGraph(doc()->graph()), SerializeGraph(GraphFromJson(kAddGraph)));
  EXPECT_FALSE(window_.scene()->FindNode("s")->has_issues());
}

TEST_F(EditorWindowTest, DraggingANodeMovesItUndoably) {
  NodeItem* s = window_.scene()->FindNode("s");
  ASSERT_NE(s, nullptr);
  const QPointF title = s->scenePos() + QPointF(40, 12);
  // The node moves by what the mouse moved: whole pixels, which at the view's zoom (the first
  // Fit to View may have changed it) are about, not exactly, 100 x 60 in the scene.
  GraphView* view = window_.view();
  const QPointF moved = view->mapToScene(view->mapFromScene(title + QPointF(100, 60))) -
                        view->mapToScene(view->mapFromScene(title));
  DragOnCanvas(view, title, title + QPointF(100, 60));
  const Node* n = doc()->graph().FindNode("s");
  EXPECT_NEAR(n->ui["x"].get<double>(), 400 + moved.x(), 1);
  EXPECT_NEAR(n->ui["y"].get<double>(), 100 + moved.y(), 1);
  EXPECT_NEAR(moved.x(), 100, 2);
  EXPECT_NEAR(moved.y(), 60, 2);
  // The wires follow the node.
  for (EdgeItem* e : window_.scene()->edges()) {
    EXPECT_NEAR(e->path().pointAtPercent(1).x(), n->ui["x"].get<double>(), 1e-6);
  }
  doc()->undo_stack()->undo();
  EXPECT_EQ(doc()->graph().FindNode("s")->ui["x"], 400);
  EXPECT_EQ(window_.scene()->FindNode("s")->pos(), QPointF(400, 100));
}

TEST_F(EditorWindowTest, CopyPasteAndDuplicate) {
  window_.scene()->SelectNodes({"a", "s"});
  QAction* copy = FindAction(&window_, "&Copy");
  QAction* paste = FindAction(&window_, "&Paste");
  QAction* duplicate = FindAction(&window_, "&Duplicate");
  ASSERT_TRUE(copy && paste && duplicate);
  copy->trigger();
  paste->trigger();
  EXPECT_NE(doc()->graph().FindNode("a_1"), nullptr);
  EXPECT_NE(doc()->graph().FindNode("s_1"), nullptr);
  EXPECT_EQ(window_.scene()->SelectedNodeIds(), (std::vector<std::string>{"a_1", "s_1"}));
  window_.SelectNode("b");
  duplicate->trigger();
  EXPECT_NE(doc()->graph().FindNode("b_1"), nullptr);
  EXPECT_EQ(doc()->graph().nodes().size(), 6u);
}

TEST_F(EditorWindowTest, RunStateChangeDuringAWireDragKeepsNoDeletedPort) {
  GraphScene* scene = window_.scene();
  GraphView* view = window_.view();
  QWidget* vp = view->viewport();
  const QPoint from = view->mapFromScene(PortPos(scene, "a", true, "output"));
  const QPoint to = view->mapFromScene(PortPos(scene, "s", false, "y"));
  SendMouse(vp, QEvent::MouseButtonPress, from, Qt::LeftButton, Qt::LeftButton);
  SendMouse(vp, QEvent::MouseMove, to, Qt::NoButton, Qt::LeftButton);  // s.y is the drop target
  // A run starts meanwhile (F5): 's' gets its run footer, so its ports are rebuilt.
  scene->SetRunState("s", RunState::kPending);
  scene->SetRunState("s", RunState::kIdle);
  SendMouse(vp, QEvent::MouseMove, (from + to) / 2, Qt::NoButton, Qt::LeftButton);
  SendMouse(vp, QEvent::MouseMove, to, Qt::NoButton, Qt::LeftButton);
  SendMouse(vp, QEvent::MouseButtonRelease, to, Qt::LeftButton, Qt::NoButton);
  EXPECT_EQ(doc()->graph().FindNode("s")->inputs.at("y")[0].node, "a");
}

TEST(Canvas, NodeFarAwayDoesNotHangTheCanvas) {
  // Drawing the grid stepped x += 24 from x = 1e18, where that addition changes nothing: the
  // editor hung (and grew without bound) when the canvas was painted.
  QTemporaryDir dir;
  const QString graph = dir.filePath("far.json");
  WriteText(graph, R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "a", "op": "Const", "attrs": {"dtype": "float32", "shape": [2], "value": 1},
     "ui": {"x": 1e18, "y": 1e18}}]})");
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("QT_QPA_PLATFORM", "offscreen");
  p.setProcessEnvironment(env);
  p.start(BF_EDITOR_EXE, {graph, "--screenshot", dir.filePath("far.png")});
  const bool finished = p.waitForFinished(20000);
  if (!finished) {
    p.kill();
    p.waitForFinished();
  }
  ASSERT_TRUE(finished);
  EXPECT_EQ(p.exitCode(), 0) << p.readAllStandardError().toStdString();
}

TEST(SamplesDir, FollowsTheEnvironmentVariable) {
  qputenv("BLOCKFLOW_SAMPLES", testing::DataPath("").toUtf8());
  const QString dir = MainWindow::FindSamplesDir();
  qunsetenv("BLOCKFLOW_SAMPLES");
  EXPECT_TRUE(QFileInfo(dir + "/basic.json").exists()) << dir.toStdString();
}

}  // namespace
}  // namespace blockflow::editor
