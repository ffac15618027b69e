// The main window as a whole: panels following selection, undo and runs, shortcuts, the title,
// opening bad files, and copy/paste between graphs in different folders.
#include "editor/main_window.h"

#include <gtest/gtest.h>

#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QLineEdit>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "core/npy.h"
#include "editor/attribute_panel.h"
#include "editor/graph_document.h"
#include "editor/graph_scene.h"
#include "editor/graph_view.h"
#include "editor/palette_widget.h"
#include "editor/result_panel.h"
#include "editor/run_controller.h"
#include "test_util.h"

namespace blockflow::editor {
namespace {

using testing::GraphFromJson;
using testing::kAddGraph;
using testing::RunAndWait;
using testing::WriteText;

class MainWindowTest : public testing::EditorWindowTest {};

TEST_F(MainWindowTest, DeletingTheNodeShownInThePanelsAfterARun) {
  ASSERT_TRUE(RunAndWait(window_));
  window_.SelectNode("s");
  EXPECT_EQ(window_.attributes()->node_id(), "s");
  EXPECT_FALSE(window_.results()->heatmap().isNull());
  window_.scene()->DeleteSelection();
  QApplication::processEvents();
  EXPECT_EQ(doc()->graph().FindNode("s"), nullptr);
  EXPECT_EQ(window_.attributes()->node_id(), "");
  EXPECT_TRUE(window_.results()->heatmap().isNull());
  doc()->undo_stack()->undo();
  QApplication::processEvents();
  ASSERT_NE(window_.scene()->FindNode("s"), nullptr);
  doc()->undo_stack()->redo();
  doc()->undo_stack()->undo();
  QApplication::processEvents();
}

TEST_F(MainWindowTest, UndoAfterARunClearsResults) {
  ASSERT_TRUE(doc()->SetAttr("a", "shape", nlohmann::json::array({4, 3})).ok());
  ASSERT_TRUE(RunAndWait(window_));
  window_.SelectNode("s");
  doc()->undo_stack()->undo();
  QApplication::processEvents();
  EXPECT_FALSE(window_.runner()->has_result());
  EXPECT_TRUE(window_.results()->heatmap().isNull());
  EXPECT_EQ(window_.scene()->FindNode("s")->run_state(), RunState::kIdle);
}

TEST_F(MainWindowTest, ShortcutsOfTheDocsWork) {
  window_.activateWindow();
  window_.view()->setFocus();
  QApplication::processEvents();
  window_.SelectNode("s");
  QTest::keyClick(window_.view(), Qt::Key_Delete);
  EXPECT_EQ(doc()->graph().FindNode("s"), nullptr);
  QTest::keyClick(window_.view(), Qt::Key_Z, Qt::ControlModifier);
  EXPECT_NE(doc()->graph().FindNode("s"), nullptr);
  QTest::keyClick(window_.view(), Qt::Key_Z, Qt::ControlModifier | Qt::ShiftModifier);
  EXPECT_EQ(doc()->graph().FindNode("s"), nullptr);
  QTest::keyClick(window_.view(), Qt::Key_Z, Qt::ControlModifier);
  EXPECT_NE(doc()->graph().FindNode("s"), nullptr);
  QTest::keyClick(window_.view(), Qt::Key_Y, Qt::ControlModifier);
  EXPECT_EQ(doc()->graph().FindNode("s"), nullptr);
  QTest::keyClick(window_.view(), Qt::Key_Z, Qt::ControlModifier);
  window_.SelectNode("b");
  QTest::keyClick(window_.view(), Qt::Key_Backspace);
  EXPECT_EQ(doc()->graph().FindNode("b"), nullptr);
  QTest::keyClick(window_.view(), Qt::Key_Z, Qt::ControlModifier);
  QTest::keyClick(window_.view(), Qt::Key_A, Qt::ControlModifier);
  EXPECT_EQ(window_.scene()->SelectedNodeIds().size(), 3u);
  QTest::keyClick(window_.view(), Qt::Key_D, Qt::ControlModifier);
  EXPECT_EQ(doc()->graph().nodes().size(), 6u);
}

TEST_F(MainWindowTest, TitleShowsFileNameAndModifiedMarker) {
  QTemporaryDir dir;
  const QString path = dir.filePath("mygraph.json");
  ASSERT_TRUE(window_.SaveTo(path));
  EXPECT_TRUE(window_.windowTitle().contains("mygraph.json"));
  EXPECT_FALSE(window_.isWindowModified());
  ASSERT_TRUE(doc()->AddNode("Identity", QPointF(0, 0)).ok());
  EXPECT_TRUE(window_.isWindowModified());
}

TEST_F(MainWindowTest, EditingDuringARunDiscardsItsResults) {
  QSignalSpy spy(&window_, &MainWindow::runFinished);
  window_.Run();
  ASSERT_TRUE(doc()->SetAttr("a", "shape", nlohmann::json::array({4, 3})).ok());
  doc()->Remove({"s"}, {});
  doc()->undo_stack()->undo();
  ASSERT_TRUE(spy.wait(30000));
  EXPECT_FALSE(window_.runner()->has_result());
  window_.SelectNode("s");
  EXPECT_TRUE(window_.results()->heatmap().isNull());
}

TEST_F(MainWindowTest, OpeningBadFilesKeepsTheGraph) {
  QTemporaryDir dir;
  const std::string before = SerializeGraph(doc()->graph());
  WriteText(dir.filePath("bad.json"), "{\"format\": \"blockflow.graph\", ");
  EXPECT_FALSE(window_.OpenFile(dir.filePath("bad.json")));
  EXPECT_FALSE(window_.OpenFile(dir.path()));  // a folder
  EXPECT_FALSE(window_.OpenFile(dir.filePath("missing.json")));
  EXPECT_EQ(SerializeGraph(doc()->graph()), before);
}

TEST_F(MainWindowTest, CyclesUnknownOpsAndMissingNpyAreShownAndRunFails) {
  QTemporaryDir dir;
  WriteText(dir.filePath("g.json"), R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "w", "op": "Const", "attrs": {"dtype": "float32", "file": "nowhere.npy"}},
    {"id": "i1", "op": "Identity", "inputs": {"input": "i2"}},
    {"id": "i2", "op": "Identity", "inputs": {"input": "i1"}},
    {"id": "u", "op": "FrobnicateV9", "inputs": {"x": "w", "q": "i1:3"}, "attrs": {"k": 1}}]})");
  ASSERT_TRUE(window_.OpenFile(dir.filePath("g.json")));
  EXPECT_FALSE(doc()->analysis().ok());
  for (const char* id : {"w", "i1", "i2", "u"}) {
    window_.SelectNode(id);
    ASSERT_NE(window_.scene()->FindNode(id), nullptr);
    EXPECT_TRUE(window_.scene()->FindNode(id)->has_issues()) << id;
  }
  QList<QVariant> args;
  ASSERT_TRUE(RunAndWait(window_, &args));
  EXPECT_FALSE(args[0].toBool());
  window_.SelectNode("u");
  ASSERT_TRUE(doc()->SetAttr("w", "file", "still_nowhere.npy").ok());
}

TEST_F(MainWindowTest, PasteFromAnotherFolderKeepsFileNamesRight) {
  QTemporaryDir dir;
  ASSERT_TRUE(QDir(dir.path()).mkpath("one/data") && QDir(dir.path()).mkpath("two"));
  ASSERT_TRUE(
      WriteNpy(dir.filePath("one/data/w.npy").toStdString(), Tensor::FromVector<float>({1, 2}))
          .ok());
  WriteText(dir.filePath("one/g.json"), R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "w", "op": "Const", "attrs": {"dtype": "float32", "file": "data/w.npy"}}]})");
  WriteText(dir.filePath("two/h.json"),
            R"({"format": "blockflow.graph", "version": 1, "nodes": []})");
  ASSERT_TRUE(window_.OpenFile(dir.filePath("one/g.json")));
  window_.SelectNode("w");
  QTest::keyClick(window_.view(), Qt::Key_C, Qt::ControlModifier);
  ASSERT_TRUE(window_.OpenFile(dir.filePath("two/h.json")));
  QTest::keyClick(window_.view(), Qt::Key_V, Qt::ControlModifier);
  const Node* w = doc()->graph().FindNode("w");
  ASSERT_NE(w, nullptr) << window_.StatusText().toStdString();
  EXPECT_EQ(w->attrs["file"], "../one/data/w.npy");
  // The file is now outside the graph's folder, which a graph from a file may not name.
  ASSERT_FALSE(doc()->analysis().ok());
  EXPECT_NE(doc()->analysis().issues[0].message.find("outside the graph's folder"),
            std::string::npos);
  // Run > Allow Files Outside the Graph's Folder: refused when not confirmed; once confirmed,
  // the graph is valid, and stays so through edits and for graphs opened later.
  EXPECT_FALSE(window_.SetAllowOutsideFiles(true, /*confirm=*/false));
  EXPECT_FALSE(doc()->analysis().ok());
  EXPECT_TRUE(window_.SetAllowOutsideFiles(true, /*confirm=*/true));
  EXPECT_TRUE(doc()->analysis().ok());
  ASSERT_TRUE(doc()->SetAttr("w", "file", "../one/./data/w.npy").ok());
  EXPECT_TRUE(doc()->analysis().ok());
  // Into a new graph (no folder yet) the name becomes absolute.
  window_.document()->NewGraph();
  QTest::keyClick(window_.view(), Qt::Key_V, Qt::ControlModifier);
  w = doc()->graph().FindNode("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->attrs["file"], QDir(dir.path()).absoluteFilePath("one/data/w.npy").toStdString());
  EXPECT_TRUE(doc()->analysis().ok());
  ASSERT_TRUE(window_.OpenFile(dir.filePath("two/h.json")));
  EXPECT_FALSE(window_.SetAllowOutsideFiles(false));
  EXPECT_TRUE(doc()->analysis().ok());  // h.json names no file
}

TEST_F(MainWindowTest, TabAndF5Work) {
  window_.activateWindow();
  window_.view()->setFocus();
  auto* popup = window_.findChild<QuickAddPopup*>();
  ASSERT_NE(popup, nullptr);
  QTest::keyClick(window_.view(), Qt::Key_Tab);
  EXPECT_TRUE(popup->isVisible());
  popup->hide();
  QSignalSpy spy(&window_, &MainWindow::runFinished);
  QTest::keyClick(window_.view(), Qt::Key_F5);
  EXPECT_TRUE(spy.count() == 1 || spy.wait(30000));
}

TEST(MainWindow, ClosingTheWindowWithAnEditInProgress) {
  auto* w = new MainWindow;
  w->SetScripted(true);
  w->show();
  w->document()->Reset(GraphFromJson(kAddGraph));
  w->SelectNode("b");
  QApplication::processEvents();
  w->activateWindow();
  QWidget* editor = w->attributes()->EditorFor("value");
  ASSERT_NE(editor, nullptr);
  auto* text = editor->findChild<QLineEdit*>("value_text");
  text->setFocus();
  QApplication::processEvents();
  text->setText("4, 5, 6");
  delete w;
}

}  // namespace
}  // namespace blockflow::editor
