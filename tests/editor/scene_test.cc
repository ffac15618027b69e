// The canvas and the panels: palette drops, wiring by mouse, attribute edits, deletion.
#include <gtest/gtest.h>

#include <QApplication>
#include <QAction>
#include <QComboBox>
#include <QFileInfo>
#include <QGraphicsSceneDragDropEvent>
#include <QLineEdit>
#include <QMimeData>
#include <QMouseEvent>
#include <QTest>
#include <QTreeWidget>

#include "editor/attribute_panel.h"
#include "editor/graph_document.h"
#include "editor/graph_scene.h"
#include "editor/graph_view.h"
#include "editor/main_window.h"
#include "editor/palette_widget.h"
#include "test_util.h"

namespace blockflow::editor {
namespace {

using testing::GraphFromJson;
using testing::kAddGraph;

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

void SendMouse(QWidget* w, QEvent::Type type, QPoint pos, Qt::MouseButton button, Qt::MouseButtons buttons) {
  QMouseEvent ev(type, QPointF(pos), QPointF(w->mapToGlobal(pos)), button, buttons, Qt::NoModifier);
  QApplication::sendEvent(w, &ev);
}

// Drags with the left button on the canvas from one scene point to another.
void DragOnCanvas(GraphView* view, QPointF from, QPointF to) {
  QWidget* vp = view->viewport();
  const QPoint a = view->mapFromScene(from), b = view->mapFromScene(to);
  SendMouse(vp, QEvent::MouseButtonPress, a, Qt::LeftButton, Qt::LeftButton);
  SendMouse(vp, QEvent::MouseMove, (a + b) / 2, Qt::NoButton, Qt::LeftButton);
  SendMouse(vp, QEvent::MouseMove, b, Qt::NoButton, Qt::LeftButton);
  SendMouse(vp, QEvent::MouseButtonRelease, b, Qt::LeftButton, Qt::NoButton);
}

QPointF PortPos(GraphScene* scene, const std::string& node, bool output, const std::string& port) {
  NodeItem* item = scene->FindNode(node);
  EXPECT_NE(item, nullptr) << node;
  PortItem* p = item ? item->FindPort(output, port) : nullptr;
  EXPECT_NE(p, nullptr) << node << "." << port;
  return p ? p->scenePos() : QPointF();
}

using testing::EditorWindowTest;

TEST_F(EditorWindowTest, DroppingAPaletteBlockAddsANode) {
  std::unique_ptr<QMimeData> mime(PaletteMime(window_.palette_widget(), "Mul"));
  ASSERT_NE(mime, nullptr);
  EXPECT_TRUE(mime->hasFormat(GraphScene::kOpMimeType));
  for (QEvent::Type type : {QEvent::GraphicsSceneDragEnter, QEvent::GraphicsSceneDragMove, QEvent::GraphicsSceneDrop}) {
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
  DragOnCanvas(view, PortPos(scene, "a", true, "output"), PortPos(scene, "reshape", false, "shape"));
  EXPECT_EQ(SerializeGraph(doc()->graph()), before);
  EXPECT_EQ(window_.StatusText(), "refused: 'reshape'.shape (Reshape) accepts int32, int64; 'a' gives float32");

  // Dragging from an input to an output works too: s → identity.input.
  DragOnCanvas(view, PortPos(scene, "identity", false, "input"), PortPos(scene, "s", true, "z"));
  ASSERT_EQ(doc()->graph().FindNode("identity")->inputs.count("input"), 1u);
  EXPECT_EQ(doc()->graph().FindNode("identity")->inputs.at("input")[0].node, "s");

  // identity → s.y would close a cycle.
  DragOnCanvas(view, PortPos(scene, "identity", true, "output"), PortPos(scene, "s", false, "y"));
  EXPECT_EQ(window_.StatusText(), "refused: wiring 'identity' into 's'.y would create a cycle ('s' already feeds 'identity')");
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

  // Broadcasting [4,5] with [3] fails: badge, tooltip and status bar give the validate message.
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
  EXPECT_EQ(window_.StatusText().toStdString(), issues[0]);
  EXPECT_TRUE(window_.attributes()->IssueText().contains(QString::fromStdString(issues[0]).toHtmlEscaped()));

  // Two undos bring back the original graph and a clean node.
  doc()->undo_stack()->undo();
  doc()->undo_stack()->undo();
  EXPECT_EQ(SerializeGraph(doc()->graph()), SerializeGraph(GraphFromJson(kAddGraph)));
  EXPECT_FALSE(window_.scene()->FindNode("s")->has_issues());
}

TEST_F(EditorWindowTest, ConvAttributesUseSchemaEditors) {
  auto id = doc()->AddNode("DepthwiseConv2dNativeBackpropInput", QPointF(700, 0));
  ASSERT_TRUE(id.ok());
  window_.SelectNode(*id);
  AttributePanel* panel = window_.attributes();
  ASSERT_NE(panel->EditorFor("strides"), nullptr);
  EXPECT_EQ(panel->EditorFor("strides")->findChildren<QLineEdit*>().size(), 4);
  EXPECT_EQ(panel->EditorFor("dilations")->findChildren<QLineEdit*>().size(), 4);
  auto* padding = qobject_cast<QComboBox*>(panel->EditorFor("padding"));
  ASSERT_NE(padding, nullptr);
  auto* format = qobject_cast<QComboBox*>(panel->EditorFor("data_format"));
  ASSERT_NE(format, nullptr);
  EXPECT_EQ(format->currentText(), "NHWC");
  EXPECT_FALSE(panel->IsRowVisible("explicit_paddings"));

  padding->setCurrentText("EXPLICIT");
  emit padding->activated(padding->currentIndex());
  EXPECT_EQ(doc()->graph().FindNode(*id)->attrs["padding"], "EXPLICIT");
  EXPECT_TRUE(panel->IsRowVisible("explicit_paddings"));

  // Strides: typing four values commits one list.
  auto fields = panel->EditorFor("strides")->findChildren<QLineEdit*>();
  const char* values[] = {"1", "2", "2", "1"};
  for (int i = 0; i < 4; ++i) fields[i]->setText(values[i]);
  emit fields[3]->editingFinished();
  EXPECT_EQ(doc()->graph().FindNode(*id)->attrs["strides"], nlohmann::json::array({1, 2, 2, 1}));
}

TEST_F(EditorWindowTest, NodeIdIsEditableAndChecked) {
  window_.SelectNode("a");
  auto* id_edit = qobject_cast<QLineEdit*>(window_.attributes()->EditorFor("id"));
  ASSERT_NE(id_edit, nullptr);
  id_edit->setText("b");
  emit id_edit->editingFinished();
  EXPECT_NE(doc()->graph().FindNode("a"), nullptr);
  EXPECT_EQ(window_.StatusText(), "id 'b' is already used by another node");
  id_edit = qobject_cast<QLineEdit*>(window_.attributes()->EditorFor("id"));
  id_edit->setText("ones");
  emit id_edit->editingFinished();
  EXPECT_EQ(doc()->graph().FindNode("a"), nullptr);
  EXPECT_NE(doc()->graph().FindNode("ones"), nullptr);
  EXPECT_EQ(window_.scene()->SelectedNodeIds(), std::vector<std::string>{"ones"});
  EXPECT_EQ(window_.attributes()->node_id(), "ones");
}

TEST_F(EditorWindowTest, ConstValueEditorWritesValuesFillOrFile) {
  window_.SelectNode("b");
  QWidget* editor = window_.attributes()->EditorFor("value");
  ASSERT_NE(editor, nullptr);
  auto* mode = editor->findChild<QComboBox*>("value_mode");
  auto* text = editor->findChild<QLineEdit*>("value_text");
  ASSERT_TRUE(mode && text);
  EXPECT_EQ(text->text(), "1, 2, 3");
  text->setText("7, 8.5, -1");
  emit text->editingFinished();
  EXPECT_EQ(doc()->graph().FindNode("b")->attrs["value"], nlohmann::json::parse("[7, 8.5, -1]"));
  editor = window_.attributes()->EditorFor("value");
  mode = editor->findChild<QComboBox*>("value_mode");
  text = editor->findChild<QLineEdit*>("value_text");
  mode->setCurrentIndex(2);
  text->setText("b.npy");
  emit text->editingFinished();
  const Node* b = doc()->graph().FindNode("b");
  EXPECT_EQ(b->attrs["file"], "b.npy");
  EXPECT_FALSE(b->attrs.contains("value"));
}

TEST_F(EditorWindowTest, DraggingANodeMovesItUndoably) {
  NodeItem* s = window_.scene()->FindNode("s");
  ASSERT_NE(s, nullptr);
  const QPointF title = s->scenePos() + QPointF(40, 12);
  DragOnCanvas(window_.view(), title, title + QPointF(100, 60));
  const Node* n = doc()->graph().FindNode("s");
  EXPECT_EQ(n->ui["x"], 500);
  EXPECT_EQ(n->ui["y"], 160);
  // The wires follow the node.
  for (EdgeItem* e : window_.scene()->edges()) {
    EXPECT_NEAR(e->path().pointAtPercent(1).x(), 500, 1e-6);
  }
  doc()->undo_stack()->undo();
  EXPECT_EQ(doc()->graph().FindNode("s")->ui["x"], 400);
  EXPECT_EQ(window_.scene()->FindNode("s")->pos(), QPointF(400, 100));
}

QAction* FindAction(QWidget* w, const QString& text) {
  for (QAction* a : w->findChildren<QAction*>()) {
    if (a->text() == text) return a;
  }
  return nullptr;
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

TEST(SamplesDir, FollowsTheEnvironmentVariable) {
  qputenv("BLOCKFLOW_SAMPLES", testing::DataPath("").toUtf8());
  const QString dir = MainWindow::FindSamplesDir();
  qunsetenv("BLOCKFLOW_SAMPLES");
  EXPECT_TRUE(QFileInfo(dir + "/basic.json").exists()) << dir.toStdString();
}

}  // namespace
}  // namespace blockflow::editor
