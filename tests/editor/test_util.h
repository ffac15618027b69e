// Helpers shared by the editor tests.
#pragma once

#include <gtest/gtest.h>

#include <QAction>
#include <QApplication>
#include <QFile>
#include <QList>
#include <QMouseEvent>
#include <QSignalSpy>
#include <QString>
#include <QVariant>
#include <string>

#include "core/graph.h"
#include "editor/graph_document.h"
#include "editor/graph_scene.h"
#include "editor/graph_view.h"
#include "editor/main_window.h"
#include "editor/node_item.h"

namespace blockflow::editor::testing {

/// A file of tests/editor/data.
inline QString DataPath(const QString& name) { return QString(BF_EDITOR_TEST_DATA) + "/" + name; }

/// Writes `text` to the file `path` (replacing it).
inline void WriteText(const QString& path, const QByteArray& text) {
  QFile f(path);
  ASSERT_TRUE(f.open(QIODevice::WriteOnly)) << path.toStdString();
  f.write(text);
}

/// Parses graph JSON written in a test (CHECKs that it parses).
inline Graph GraphFromJson(const std::string& text) {
  Expected<Graph> g = ParseGraphJson(text, "test", "");
  BF_CHECK(g.ok(), g.status().message());
  return std::move(g).value();
}

/// Two Consts (float32 [2,3] filled with 1, float32 [3] = 1,2,3) added: "s" = a + b.
inline const char* kAddGraph = R"({"format": "blockflow.graph", "version": 1, "nodes": [
  {"id": "a", "op": "Const", "attrs": {"dtype": "float32", "shape": [2, 3], "value": 1}, "ui": {"x": 0, "y": 0}},
  {"id": "b", "op": "Const", "attrs": {"dtype": "float32", "shape": [3], "value": [1, 2, 3]}, "ui": {"x": 0, "y": 200}},
  {"id": "s", "op": "Add", "inputs": {"x": "a", "y": "b"}, "ui": {"x": 400, "y": 100}}
]})";

/// Runs the window's graph as the Run button does and waits (30 s at most) for the end;
/// `args` receives the runFinished signal's arguments.
inline bool RunAndWait(MainWindow& w, QList<QVariant>* args = nullptr) {
  QSignalSpy spy(&w, &MainWindow::runFinished);
  w.Run();
  if (!spy.wait(30000)) return false;
  if (args) *args = spy.takeFirst();
  return true;
}

/// A shown main window holding kAddGraph at zoom 1, as a user would see it.
class EditorWindowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    window_.SetScripted(true);
    window_.show();
    window_.document()->Reset(GraphFromJson(kAddGraph));
    window_.view()->ResetZoom();
    window_.view()->centerOn(300, 150);
    QApplication::processEvents();
  }
  GraphDocument* doc() { return window_.document(); }
  MainWindow window_;
};

/// Sends one mouse event to `w` at widget position `pos`.
inline void SendMouse(QWidget* w, QEvent::Type type, QPoint pos, Qt::MouseButton button,
                      Qt::MouseButtons buttons) {
  QMouseEvent ev(type, QPointF(pos), QPointF(w->mapToGlobal(pos)), button, buttons, Qt::NoModifier);
  QApplication::sendEvent(w, &ev);
}

/// Drags with the left button on the canvas from one scene point to another.
inline void DragOnCanvas(GraphView* view, QPointF from, QPointF to) {
  QWidget* vp = view->viewport();
  const QPoint a = view->mapFromScene(from), b = view->mapFromScene(to);
  SendMouse(vp, QEvent::MouseButtonPress, a, Qt::LeftButton, Qt::LeftButton);
  SendMouse(vp, QEvent::MouseMove, (a + b) / 2, Qt::NoButton, Qt::LeftButton);
  SendMouse(vp, QEvent::MouseMove, b, Qt::NoButton, Qt::LeftButton);
  SendMouse(vp, QEvent::MouseButtonRelease, b, Qt::LeftButton, Qt::NoButton);
}

/// The scene position of a node's port (a failed expectation when there is none).
inline QPointF PortPos(GraphScene* scene, const std::string& node, bool output,
                       const std::string& port) {
  NodeItem* item = scene->FindNode(node);
  EXPECT_NE(item, nullptr) << node;
  PortItem* p = item ? item->FindPort(output, port) : nullptr;
  EXPECT_NE(p, nullptr) << node << "." << port;
  return p ? p->scenePos() : QPointF();
}

/// The action of `w` (or of a widget inside it) whose text is `text`, or nullptr.
inline QAction* FindAction(QWidget* w, const QString& text) {
  for (QAction* a : w->findChildren<QAction*>()) {
    if (a->text() == text) return a;
  }
  return nullptr;
}

/// A chain of ten 3x3 convolutions on a 160x160x48 random input: long enough that a Cancel
/// requested when the first one starts lands well before the end.
inline std::string ConvChainJson() {
  std::string json = R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "xs", "op": "Const", "attrs": {"dtype": "int32", "shape": [4], "value": [1, 160, 160, 48]}},
    {"id": "ws", "op": "Const", "attrs": {"dtype": "int32", "shape": [4], "value": [3, 3, 48, 48]}},
    {"id": "c0", "op": "RandomUniform", "inputs": {"shape": "xs"}},
    {"id": "w", "op": "RandomUniform", "inputs": {"shape": "ws"}, "attrs": {"seed": 1}})";
  for (int i = 1; i <= 10; ++i) {
    json +=
        ",\n{\"id\": \"c" + std::to_string(i) +
        "\", \"op\": \"Conv2D\", \"inputs\": {\"input\": \"c" + std::to_string(i - 1) +
        "\", \"filter\": \"w\"}, \"attrs\": {\"strides\": [1, 1, 1, 1], \"padding\": \"SAME\"}}";
  }
  return json + "]}";
}

}  // namespace blockflow::editor::testing
