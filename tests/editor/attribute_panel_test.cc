// The attribute panel: editors generated from the schema facts alone (a block registered
// only here, MaxPool, gets them with no editor code naming it), visibility rules, the node id,
// the value and feed editors, and refreshes after undo.
#include "editor/attribute_panel.h"

#include <gtest/gtest.h>

#include <QApplication>
#include <QComboBox>
#include <QLineEdit>
#include <QTest>

#include "editor/graph_document.h"
#include "editor/graph_scene.h"
#include "editor/graph_view.h"
#include "editor/main_window.h"
#include "test_util.h"
#include "tests/test_blocks.h"

namespace blockflow::editor {
namespace {

using testing::GraphFromJson;
using testing::kAddGraph;

class AttributePanelTest : public testing::EditorWindowTest {};

TEST_F(AttributePanelTest, ConvAttributesUseSchemaEditors) {
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

TEST_F(AttributePanelTest, NodeIdIsEditableAndChecked) {
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

TEST_F(AttributePanelTest, ConstValueEditorWritesValuesFillOrFile) {
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

TEST_F(AttributePanelTest, RenameToExistingOrInvalidIdInThePanel) {
  window_.SelectNode("a");
  for (const char* bad : {"b", "", "bad id", "x:1"}) {
    auto* id_edit = qobject_cast<QLineEdit*>(window_.attributes()->EditorFor("id"));
    ASSERT_NE(id_edit, nullptr);
    id_edit->setText(bad);
    emit id_edit->editingFinished();
    EXPECT_NE(doc()->graph().FindNode("a"), nullptr) << bad;
    EXPECT_EQ(window_.attributes()->node_id(), "a");
  }
}

TEST_F(AttributePanelTest, UndoRefreshesPanelPortsAndBadges) {
  window_.SelectNode("b");
  ASSERT_TRUE(doc()->SetAttr("b", "dtype", "int32").ok());
  EXPECT_TRUE(window_.scene()->FindNode("s")->has_issues());
  EXPECT_EQ(window_.scene()->FindNode("b")->OutputDType(0), DType::kInt32);
  auto* dtype = qobject_cast<QComboBox*>(window_.attributes()->EditorFor("dtype"));
  ASSERT_NE(dtype, nullptr);
  EXPECT_EQ(dtype->currentText(), "int32");
  QTest::keyClick(window_.view(), Qt::Key_Z, Qt::ControlModifier);
  EXPECT_FALSE(window_.scene()->FindNode("s")->has_issues());
  EXPECT_EQ(window_.scene()->FindNode("b")->OutputDType(0), DType::kFloat32);
  dtype = qobject_cast<QComboBox*>(window_.attributes()->EditorFor("dtype"));
  ASSERT_NE(dtype, nullptr);
  EXPECT_EQ(dtype->currentText(), "float32");
  EXPECT_EQ(window_.attributes()->node_id(), "b");
}

// MaxPool is registered by this test alone: nothing in the editor names it or its attributes.
void RegisterMaxPoolOnce() {
  static const bool registered = [] {
    OpRegistry::Global().Register(blockflow::testing::MaxPoolSchema());
    return true;
  }();
  ASSERT_TRUE(registered);
}

TEST_F(AttributePanelTest, ABlockRegisteredOnlyInATestGetsEditorsFromItsFacts) {
  RegisterMaxPoolOnce();
  auto id = doc()->AddNode("MaxPool", QPointF(700, 0));
  ASSERT_TRUE(id.ok()) << id.status().message();
  window_.SelectNode(*id);
  AttributePanel* panel = window_.attributes();
  for (const char* name : {"ksize", "strides"}) {
    ASSERT_NE(panel->EditorFor(name), nullptr) << name;
    EXPECT_EQ(panel->EditorFor(name)->findChildren<QLineEdit*>().size(), 4) << name;
    EXPECT_TRUE(panel->IsRowVisible(name)) << name;
  }
  auto* padding = qobject_cast<QComboBox*>(panel->EditorFor("padding"));
  ASSERT_NE(padding, nullptr);
  EXPECT_EQ(padding->count(), 3);  // "" (required, unset), SAME, VALID
  EXPECT_EQ(panel->EditorFor("value"), nullptr);
  EXPECT_EQ(panel->EditorFor("feed"), nullptr);

  // Typing four values commits one list; three are refused with the schema's count.
  auto fields = panel->EditorFor("ksize")->findChildren<QLineEdit*>();
  for (int i = 0; i < 3; ++i) fields[i]->setText(i == 0 ? "1" : "2");
  emit fields[2]->editingFinished();
  EXPECT_EQ(window_.StatusText(), "ksize needs 4 integers");
  EXPECT_FALSE(doc()->graph().FindNode(*id)->attrs.contains("ksize"));
  fields[3]->setText("1");
  emit fields[3]->editingFinished();
  EXPECT_EQ(doc()->graph().FindNode(*id)->attrs["ksize"], nlohmann::json::array({1, 2, 2, 1}));
}

TEST_F(AttributePanelTest, ExplicitPaddingsFollowPaddingWithOneFieldPerValue) {
  auto id = doc()->AddNode("Conv2D", QPointF(700, 0));
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(doc()->SetAttr(*id, "padding", "VALID").ok());
  window_.SelectNode(*id);
  AttributePanel* panel = window_.attributes();
  ASSERT_NE(panel->EditorFor("explicit_paddings"), nullptr);
  EXPECT_EQ(panel->EditorFor("explicit_paddings")->findChildren<QLineEdit*>().size(), 8);
  EXPECT_FALSE(panel->IsRowVisible("explicit_paddings"));
  ASSERT_TRUE(doc()->SetAttr(*id, "padding", "EXPLICIT").ok());
  EXPECT_TRUE(window_.attributes()->IsRowVisible("explicit_paddings"));
  doc()->undo_stack()->undo();
  EXPECT_FALSE(window_.attributes()->IsRowVisible("explicit_paddings"));
}

TEST_F(AttributePanelTest, AFedBlockHasAFeedEditorThatSetsUiFeed) {
  auto id = doc()->AddNode("Placeholder", QPointF(700, 0));
  ASSERT_TRUE(id.ok());
  window_.SelectNode(*id);
  QWidget* feed = window_.attributes()->EditorFor("feed");
  ASSERT_NE(feed, nullptr);
  auto* text = feed->findChild<QLineEdit*>("feed_text");
  ASSERT_NE(text, nullptr);
  text->setText("x.npy");
  emit text->editingFinished();
  EXPECT_EQ(doc()->graph().FindNode(*id)->ui["feed"], "x.npy");
  // Blocks that are not fed have no feed row.
  window_.SelectNode("a");
  EXPECT_EQ(window_.attributes()->EditorFor("feed"), nullptr);
  EXPECT_NE(window_.attributes()->EditorFor("value"), nullptr);
  EXPECT_EQ(window_.attributes()->EditorFor("value"), window_.attributes()->EditorFor("file"));
}

}  // namespace
}  // namespace blockflow::editor
