// Regression tests for defects found in review: crashes, stale views, file handling,
// shortcuts and responsiveness.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>

#include <QApplication>
#include <QDir>
#include <QComboBox>
#include <QElapsedTimer>
#include <QFile>
#include <QLineEdit>
#include <QMouseEvent>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "core/npy.h"
#include "editor/attribute_panel.h"
#include "editor/graph_document.h"
#include "editor/graph_scene.h"
#include "editor/graph_view.h"
#include "editor/main_window.h"
#include "editor/palette_widget.h"
#include "editor/result_panel.h"
#include "editor/run_controller.h"
#include "editor/tensor_view.h"
#include "test_util.h"

namespace blockflow::editor {
namespace {

using testing::GraphFromJson;
using testing::kAddGraph;

using testing::RunAndWait;

void WriteText(const QString& path, const QByteArray& text) {
  QFile f(path);
  ASSERT_TRUE(f.open(QIODevice::WriteOnly));
  f.write(text);
}

// ---------------------------------------------------------------- heatmap colour scale

TEST(Review, HeatmapOfTinyValuesDoesNotProduceNaNColours) {
  // |max| is subnormal: 1/max overflows to inf and 0 * inf is NaN.
  const double tiny = 1e-310;
  Tensor t = Tensor::FromVector<double>({0.0, tiny, -tiny, std::numeric_limits<double>::quiet_NaN()},
                                        Shape{2, 2});
  const Slice2D s = MakeSlice(t.shape(), SliceLayout::kNHWC, 0, 0);
  double m = 0;
  const QImage img = HeatmapImage(t, s, &m);
  ASSERT_EQ(img.width(), 2);
  EXPECT_EQ(img.pixelColor(0, 0), DivergingColor(0));
  EXPECT_EQ(img.pixelColor(1, 0), DivergingColor(1));
  EXPECT_EQ(img.pixelColor(0, 1), DivergingColor(-1));
  EXPECT_EQ(img.pixelColor(1, 1), QColor(255, 0, 255));
}

TEST(Review, DivergingColorOfNaNIsDefined) {
  const QColor c = DivergingColor(std::numeric_limits<double>::quiet_NaN());
  EXPECT_TRUE(c.isValid());
  EXPECT_EQ(DivergingColor(std::numeric_limits<double>::infinity()), DivergingColor(1));
  EXPECT_EQ(DivergingColor(-std::numeric_limits<double>::infinity()), DivergingColor(-1));
}

// ---------------------------------------------------------------- big and empty outputs

TEST(Review, ResultPanelShowsHugeAndEmptyTensorsQuickly) {
  ResultPanel panel;
  panel.resize(500, 700);
  panel.show();
  Tensor big = *Tensor::Create(DType::kFloat32, Shape{1, 1024, 1024, 1});
  QElapsedTimer timer;
  timer.start();
  panel.ShowOutputs("big", {big}, {"output"}, "NHWC", "");
  QApplication::processEvents();
  EXPECT_LT(timer.elapsed(), 3000);
  EXPECT_FALSE(panel.heatmap().isNull());

  Tensor empty = *Tensor::Create(DType::kFloat32, Shape{0, 3});
  panel.ShowOutputs("empty", {empty}, {"output"}, "", "");
  QApplication::processEvents();
  EXPECT_EQ(panel.model()->rowCount(), 0);

  Tensor wide = *Tensor::Create(DType::kFloat32, Shape{4 * 1024 * 1024});
  timer.restart();
  panel.ShowOutputs("wide", {wide}, {"output"}, "", "");
  QApplication::processEvents();
  EXPECT_LT(timer.elapsed(), 3000);
}

// ---------------------------------------------------------------- saving

TEST(Review, SaveToABareFileNameThenSaveAsElsewhereRebasesFiles) {
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  struct RestoreCwd {
    QString path = QDir::currentPath();
    ~RestoreCwd() { QDir::setCurrent(path); }
  } restore;
  ASSERT_TRUE(QDir::setCurrent(dir.path()));
  ASSERT_TRUE(WriteNpy("w.npy", Tensor::FromVector<float>({1, 2})).ok());
  GraphDocument doc;
  doc.Reset(GraphFromJson(R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "w", "op": "Const", "attrs": {"dtype": "float32", "file": "w.npy"}}]})"));
  Status st = doc.Save("g.json");
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(QDir().mkdir("sub"));
  st = doc.Save("sub/g.json");
  ASSERT_TRUE(st.ok()) << st.message();
  const std::string file = doc.graph().FindNode("w")->attrs["file"].get<std::string>();
  EXPECT_EQ(file, "../w.npy");
  EXPECT_TRUE(QFile::exists(QString::fromStdString(ResolveGraphPath(doc.graph(), file))));
}

// ---------------------------------------------------------------- window scenarios

class ReviewWindowTest : public testing::EditorWindowTest {};

TEST_F(ReviewWindowTest, DeletingTheNodeShownInThePanelsAfterARun) {
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

TEST_F(ReviewWindowTest, UndoAfterARunClearsResults) {
  ASSERT_TRUE(doc()->SetAttr("a", "shape", nlohmann::json::array({4, 3})).ok());
  ASSERT_TRUE(RunAndWait(window_));
  window_.SelectNode("s");
  doc()->undo_stack()->undo();
  QApplication::processEvents();
  EXPECT_FALSE(window_.runner()->has_result());
  EXPECT_TRUE(window_.results()->heatmap().isNull());
  EXPECT_EQ(window_.scene()->FindNode("s")->run_state(), RunState::kIdle);
}

TEST_F(ReviewWindowTest, ShortcutsOfTheDocsWork) {
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

TEST_F(ReviewWindowTest, TitleShowsFileNameAndModifiedMarker) {
  QTemporaryDir dir;
  const QString path = dir.filePath("mygraph.json");
  ASSERT_TRUE(window_.SaveTo(path));
  EXPECT_TRUE(window_.windowTitle().contains("mygraph.json"));
  EXPECT_FALSE(window_.isWindowModified());
  ASSERT_TRUE(doc()->AddNode("Identity", QPointF(0, 0)).ok());
  EXPECT_TRUE(window_.isWindowModified());
}

TEST_F(ReviewWindowTest, EditingDuringARunDiscardsItsResults) {
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

TEST_F(ReviewWindowTest, OpeningBadFilesKeepsTheGraph) {
  QTemporaryDir dir;
  const std::string before = SerializeGraph(doc()->graph());
  WriteText(dir.filePath("bad.json"), "{\"format\": \"blockflow.graph\", ");
  EXPECT_FALSE(window_.OpenFile(dir.filePath("bad.json")));
  EXPECT_FALSE(window_.OpenFile(dir.path()));  // a folder
  EXPECT_FALSE(window_.OpenFile(dir.filePath("missing.json")));
  EXPECT_EQ(SerializeGraph(doc()->graph()), before);
}

TEST_F(ReviewWindowTest, CyclesUnknownOpsAndMissingNpyAreShownAndRunFails) {
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

TEST_F(ReviewWindowTest, RenameToExistingOrInvalidIdInThePanel) {
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

TEST_F(ReviewWindowTest, PasteClashingIds) {
  const std::string clip = R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "a", "op": "Const", "attrs": {"dtype": "float32", "shape": [3], "value": 2}},
    {"id": "a_1", "op": "Identity", "inputs": {"input": "a"}},
    {"id": "s", "op": "Add", "inputs": {"x": "a", "y": "a_1"}}]})";
  auto ids = doc()->Paste(clip, QPointF(10, 10));
  ASSERT_TRUE(ids.ok()) << ids.status().message();
  ASSERT_EQ(ids->size(), 3u);
  const Node* s = doc()->graph().FindNode((*ids)[2]);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->inputs.at("x")[0].node, (*ids)[0]);
  EXPECT_EQ(s->inputs.at("y")[0].node, (*ids)[1]);
  EXPECT_EQ(doc()->graph().FindNode((*ids)[1])->inputs.at("input")[0].node, (*ids)[0]);
  EXPECT_TRUE(doc()->analysis().ok());
}

void SendMouse(QWidget* w, QEvent::Type type, QPoint pos, Qt::MouseButton button, Qt::MouseButtons buttons) {
  QMouseEvent ev(type, QPointF(pos), QPointF(w->mapToGlobal(pos)), button, buttons, Qt::NoModifier);
  QApplication::sendEvent(w, &ev);
}

QPointF PortPos(GraphScene* scene, const std::string& node, bool output, const std::string& port) {
  NodeItem* item = scene->FindNode(node);
  PortItem* p = item ? item->FindPort(output, port) : nullptr;
  EXPECT_NE(p, nullptr) << node << "." << port;
  return p ? p->scenePos() : QPointF();
}

TEST_F(ReviewWindowTest, RunStateChangeDuringAWireDragKeepsNoDeletedPort) {
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

TEST_F(ReviewWindowTest, PasteFromAnotherFolderKeepsFileNamesRight) {
  QTemporaryDir dir;
  ASSERT_TRUE(QDir(dir.path()).mkpath("one/data") && QDir(dir.path()).mkpath("two"));
  ASSERT_TRUE(WriteNpy(dir.filePath("one/data/w.npy").toStdString(), Tensor::FromVector<float>({1, 2})).ok());
  WriteText(dir.filePath("one/g.json"), R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "w", "op": "Const", "attrs": {"dtype": "float32", "file": "data/w.npy"}}]})");
  WriteText(dir.filePath("two/h.json"), R"({"format": "blockflow.graph", "version": 1, "nodes": []})");
  ASSERT_TRUE(window_.OpenFile(dir.filePath("one/g.json")));
  window_.SelectNode("w");
  QTest::keyClick(window_.view(), Qt::Key_C, Qt::ControlModifier);
  ASSERT_TRUE(window_.OpenFile(dir.filePath("two/h.json")));
  QTest::keyClick(window_.view(), Qt::Key_V, Qt::ControlModifier);
  const Node* w = doc()->graph().FindNode("w");
  ASSERT_NE(w, nullptr) << window_.StatusText().toStdString();
  EXPECT_EQ(w->attrs["file"], "../one/data/w.npy");
  EXPECT_TRUE(doc()->analysis().ok());
  // Into a new graph (no folder yet) the name becomes absolute.
  window_.document()->NewGraph();
  QTest::keyClick(window_.view(), Qt::Key_V, Qt::ControlModifier);
  w = doc()->graph().FindNode("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->attrs["file"], QDir(dir.path()).absoluteFilePath("one/data/w.npy").toStdString());
  EXPECT_TRUE(doc()->analysis().ok());
}

TEST_F(ReviewWindowTest, TabAndF5Work) {
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


TEST(Review, NumberListsRefuseNaNAndInf) {
  // A NaN in a node's JSON is saved as null: the file would no longer load.
  for (const char* text : {"1, nan", "inf", "2 -inf"}) {
    QString err;
    EXPECT_TRUE(ParseNumberList(text, &err).is_null()) << text;
    EXPECT_TRUE(err.contains("not a finite number")) << err.toStdString();
  }
}


TEST(Review, NodeFarAwayDoesNotHangTheCanvas) {
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


TEST(Review, EmptyTensorWithAHugeDimensionInTheResultPanel) {
  // [0, 3e9] holds nothing, but its column count does not fit an int.
  ResultPanel panel;
  panel.show();
  Tensor t = *Tensor::Create(DType::kFloat32, Shape{0, 3000000000});
  panel.ShowOutputs("e", {t}, {"output"}, "", "");
  QApplication::processEvents();
  EXPECT_GE(panel.model()->rowCount(), 0);
  EXPECT_GE(panel.model()->columnCount(), 0);
  Tensor u = *Tensor::Create(DType::kFloat32, Shape{3000000000, 0});
  panel.ShowOutputs("u", {u}, {"output"}, "", "");
  QApplication::processEvents();
  EXPECT_GE(panel.model()->rowCount(), 0);
}


TEST_F(ReviewWindowTest, MovingANodeKeepsTheChosenResultChannel) {
  ASSERT_TRUE(doc()->SetAttr("a", "shape", nlohmann::json::array({1, 2, 2, 3})).ok());
  ASSERT_TRUE(RunAndWait(window_));
  window_.SelectNode("s");
  ASSERT_FALSE(window_.results()->heatmap().isNull());
  window_.results()->SetChannel(2);
  ASSERT_EQ(window_.results()->channel(), 2);
  doc()->MoveNodes({{"b", QPointF(-50, 260)}});  // a layout-only edit: results stay valid
  ASSERT_TRUE(window_.runner()->has_result());
  EXPECT_EQ(window_.results()->channel(), 2);
  // Another node, then back: a fresh view starts at channel 0.
  window_.SelectNode("a");
  window_.SelectNode("s");
  EXPECT_EQ(window_.results()->channel(), 0);
}


TEST(Review, ClosingTheWindowWithAnEditInProgress) {
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


TEST_F(ReviewWindowTest, UndoRefreshesPanelPortsAndBadges) {
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

}  // namespace
}  // namespace blockflow::editor
