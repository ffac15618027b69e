// Auto-layout (View > Arrange, and on open when positions are missing), Fit to View on large
// graphs, and the minimap.
#include <gtest/gtest.h>

#include <QApplication>
#include <QMouseEvent>
#include <QTemporaryDir>
#include <QUndoStack>
#include <set>

#include "editor/auto_layout.h"
#include "editor/editor_main.h"
#include "editor/graph_document.h"
#include "editor/graph_scene.h"
#include "editor/graph_view.h"
#include "editor/main_window.h"
#include "editor/minimap.h"
#include "test_util.h"

namespace blockflow::editor {
namespace {

using testing::GraphFromJson;
using testing::WriteText;

// Every drawn node's box, by id.
std::map<std::string, QRectF> NodeBoxes(GraphScene* scene) {
  std::map<std::string, QRectF> boxes;
  for (const Node& n : scene->document()->graph().nodes()) {
    if (NodeItem* item = scene->FindNode(n.id))
      boxes[n.id] = QRectF(item->pos(), item->body_size());
  }
  return boxes;
}

// Pairs of boxes that overlap (touching edges do not count), as "a / b" for messages.
std::vector<std::string> Overlaps(const std::map<std::string, QRectF>& boxes) {
  std::vector<std::pair<std::string, QRectF>> v(boxes.begin(), boxes.end());
  std::sort(v.begin(), v.end(),
            [](const auto& a, const auto& b) { return a.second.x() < b.second.x(); });
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    for (size_t j = i + 1; j < v.size() && v[j].second.left() < v[i].second.right(); ++j) {
      const QRectF common = v[i].second.intersected(v[j].second);
      if (common.width() > 0.5 && common.height() > 0.5)
        out.push_back(v[i].first + " / " + v[j].first);
    }
  }
  return out;
}

// Wires whose producer does not lie left of its consumer (both drawn).
std::vector<std::string> BackwardWires(GraphScene* scene) {
  const auto boxes = NodeBoxes(scene);
  std::vector<std::string> out;
  for (const Node& n : scene->document()->graph().nodes()) {
    for (const auto& [port, eps] : n.inputs) {
      for (const Endpoint& ep : eps) {
        auto a = boxes.find(ep.node), b = boxes.find(n.id);
        if (a == boxes.end() || b == boxes.end()) continue;
        if (!(a->second.right() < b->second.left())) out.push_back(ep.node + " → " + n.id);
      }
    }
  }
  return out;
}

QRectF Union(const std::map<std::string, QRectF>& boxes) {
  QRectF r;
  for (const auto& [id, b] : boxes) r |= b;
  return r;
}

// `pipelines` independent Placeholder → Mul ← Const chains, without positions.
std::string PipelinesJson(int pipelines) {
  std::string nodes;
  for (int k = 0; k < pipelines; ++k) {
    const std::string p = "p" + std::to_string(k);
    if (!nodes.empty()) nodes += ",\n";
    nodes += R"({"id": ")" + p +
             R"(/in", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [2]}},
      {"id": ")" +
             p + R"(/k", "op": "Const", "attrs": {"dtype": "float32", "shape": [2], "value": 2}},
      {"id": ")" +
             p + R"(/out", "op": "Mul", "inputs": {"x": ")" + p + R"(/in", "y": ")" + p +
             R"(/k"}})";
  }
  return R"({"format": "blockflow.graph", "version": 1, "nodes": [)" + nodes + "]}";
}

class LayoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    window_.SetScripted(true);
    window_.show();
    QApplication::processEvents();
  }
  GraphScene* scene() { return window_.scene(); }
  GraphDocument* doc() { return window_.document(); }
  MainWindow window_;
};

TEST_F(LayoutTest, ImportedGraphArrangesLeftToRightWithoutOverlapsAndFitsInView) {
  // tools/make_layout_graphs.py 200 --small, through `blockflow import-tf`: a training step of
  // 22 convolution layers and 6 independent pipelines, placed by the importer's grid.
  ASSERT_TRUE(window_.OpenFile(testing::DataPath("imported_train_step.json")));
  const size_t n = doc()->graph().nodes().size();
  ASSERT_EQ(n, 199u);
  ASSERT_TRUE(doc()->analysis().issues.empty());

  EXPECT_EQ(window_.Arrange(), static_cast<int>(n));
  const auto boxes = NodeBoxes(scene());
  ASSERT_EQ(boxes.size(), n);
  EXPECT_EQ(Overlaps(boxes), std::vector<std::string>());
  EXPECT_EQ(BackwardWires(scene()), std::vector<std::string>());
  EXPECT_TRUE(window_.StatusText().contains("Arranged 199 node(s)"))
      << window_.StatusText().toStdString();

  // Arrange fitted the view: every node is inside it, however far out that takes the zoom.
  QApplication::processEvents();
  const QRectF visible =
      window_.view()->mapToScene(window_.view()->viewport()->rect()).boundingRect();
  for (const auto& [id, box] : boxes) EXPECT_TRUE(visible.contains(box)) << id;
  // No zoom floor: this graph needs less than the wheel's usual 0.15.
  EXPECT_LT(window_.view()->zoom(), 0.15);
  EXPECT_LE(window_.view()->MinZoom(), window_.view()->zoom());
}

TEST_F(LayoutTest, TheSimpleLayeringAlsoPlacesWithoutOverlapsLeftToRight) {
  Expected<Graph> g = LoadGraphFile(testing::DataPath("imported_train_step.json").toStdString());
  ASSERT_TRUE(g.ok()) << g.status().message();
  LayoutOptions options;
  options.use_graphviz = false;
  // Sizes that differ per node, as drawn nodes do.
  auto size_of = [](const std::string& id) {
    return QSizeF(150 + 3.0 * (id.size() % 7), 90 + 35.0 * (id.size() % 3));
  };
  const auto pos = ComputeLayout(*g, {}, size_of, options);
  ASSERT_EQ(pos.size(), g->nodes().size());
  std::map<std::string, QRectF> boxes;
  for (const auto& [id, p] : pos) boxes[id] = QRectF(p, size_of(id));
  EXPECT_EQ(Overlaps(boxes), std::vector<std::string>());
  for (const Node& node : g->nodes()) {
    for (const auto& [port, eps] : node.inputs) {
      for (const Endpoint& ep : eps)
        EXPECT_LT(boxes[ep.node].right(), boxes[node.id].left()) << ep.node << " → " << node.id;
    }
  }
  EXPECT_EQ(Union(boxes).topLeft(), QPointF(0, 0));
}

TEST_F(LayoutTest, DisconnectedPartsArePackedSideBySide) {
  // 40 independent 3-node pipelines without positions: laid out on open.
  QTemporaryDir dir;
  const QString path = dir.filePath("pipelines.json");
  WriteText(path, QByteArray::fromStdString(PipelinesJson(40)));
  ASSERT_TRUE(window_.OpenFile(path));
  const auto boxes = NodeBoxes(scene());
  ASSERT_EQ(boxes.size(), 120u);
  EXPECT_EQ(Overlaps(boxes), std::vector<std::string>());
  EXPECT_EQ(BackwardWires(scene()), std::vector<std::string>());
  const QRectF all = Union(boxes);
  // Not one column 40 pipelines tall: a screen-shaped block, many pipelines per row.
  const double aspect = all.width() / all.height();
  EXPECT_GT(aspect, 0.8) << all.width() << " x " << all.height();
  EXPECT_LT(aspect, 4.0) << all.width() << " x " << all.height();
  std::set<int> rows;
  for (const auto& [id, b] : boxes) {
    if (id.ends_with("/out")) rows.insert(static_cast<int>(b.top()));
  }
  EXPECT_LT(rows.size(), 15u);
  // Laying out on open is not an edit: nothing to undo, nothing unsaved.
  EXPECT_EQ(doc()->undo_stack()->count(), 0);
  EXPECT_FALSE(doc()->IsModified());
  for (const Node& node : doc()->graph().nodes()) EXPECT_TRUE(NodePosition(node)) << node.id;

  // The fallback packs the same way.
  LayoutOptions options;
  options.use_graphviz = false;
  const auto pos = ComputeLayout(
      doc()->graph(), {}, [](const std::string&) { return QSizeF(180, 120); }, options);
  QRectF fallback;
  for (const auto& [id, p] : pos) fallback |= QRectF(p, QSizeF(180, 120));
  EXPECT_GT(fallback.width() / fallback.height(), 0.8);
  EXPECT_LT(fallback.width() / fallback.height(), 4.0);
}

TEST_F(LayoutTest, OpeningAGraphWithSomePositionsLaysOutOnlyTheOthers) {
  QTemporaryDir dir;
  const QString path = dir.filePath("partial.json");
  WriteText(path, R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "a", "op": "Const", "attrs": {"dtype": "float32", "shape": [2], "value": 1}, "ui": {"x": 500, "y": 40}},
    {"id": "b", "op": "Const", "attrs": {"dtype": "float32", "shape": [2], "value": 2}},
    {"id": "s", "op": "Add", "inputs": {"x": "a", "y": "b"}}]})");
  ASSERT_TRUE(window_.OpenFile(path));
  EXPECT_EQ(NodePosition(*doc()->graph().FindNode("a")), QPointF(500, 40));
  const auto boxes = NodeBoxes(scene());
  EXPECT_EQ(Overlaps(boxes), std::vector<std::string>());
  EXPECT_LT(boxes.at("b").right(), boxes.at("s").left());
  EXPECT_FALSE(doc()->IsModified());
}

TEST_F(LayoutTest, ArrangeIsOneUndoableEdit) {
  doc()->Reset(GraphFromJson(testing::kAddGraph));
  // Put the consumer left of its producers, on top of one of them.
  doc()->MoveNodes({{"s", QPointF(0, 0)}});
  const auto before = NodeBoxes(scene());
  const int edits = doc()->undo_stack()->count();
  ASSERT_FALSE(Overlaps(before).empty());

  window_.Arrange();
  EXPECT_EQ(doc()->undo_stack()->count(), edits + 1);
  EXPECT_EQ(doc()->undo_stack()->undoText(), "Arrange");
  const auto arranged = NodeBoxes(scene());
  EXPECT_EQ(Overlaps(arranged), std::vector<std::string>());
  EXPECT_EQ(BackwardWires(scene()), std::vector<std::string>());

  doc()->undo_stack()->undo();
  EXPECT_EQ(NodeBoxes(scene()), before);
  doc()->undo_stack()->redo();
  EXPECT_EQ(NodeBoxes(scene()), arranged);

  // Arranging an arranged graph changes nothing and adds no edit.
  window_.Arrange();
  EXPECT_EQ(doc()->undo_stack()->count(), edits + 1);
}

TEST_F(LayoutTest, ArrangeSelectionMovesOnlyTheSelectedNodes) {
  doc()->Reset(GraphFromJson(testing::kAddGraph));
  doc()->MoveNodes({{"s", QPointF(-600, 900)}});
  const auto before = NodeBoxes(scene());
  window_.Arrange({"b", "s"});
  EXPECT_EQ(doc()->undo_stack()->undoText(), "Arrange 2 nodes");
  const auto after = NodeBoxes(scene());
  EXPECT_EQ(after.at("a"), before.at("a"));
  EXPECT_LT(after.at("b").right(), after.at("s").left());
  // The selection's layout starts at the top-left of its old box.
  const QRectF old_box = before.at("b") | before.at("s");
  EXPECT_EQ((after.at("b") | after.at("s")).topLeft(), old_box.topLeft());
}

TEST_F(LayoutTest, FitToViewShowsAWideGraphWhole) {
  // 150 nodes in one row 60000 units wide: far below the wheel's usual minimum zoom.
  Graph g;
  for (int i = 0; i < 150; ++i) {
    Node n;
    n.id = "c" + std::to_string(i);
    n.op = "Const";
    n.attrs = {{"dtype", "float32"}, {"shape", {1}}, {"value", 1}};
    n.ui = {{"x", 400 * i}, {"y", 0}};
    ASSERT_TRUE(g.AddNode(n).ok());
  }
  doc()->Reset(g);
  window_.view()->FitToGraph();
  const QRectF visible =
      window_.view()->mapToScene(window_.view()->viewport()->rect()).boundingRect();
  for (const auto& [id, box] : NodeBoxes(scene())) EXPECT_TRUE(visible.contains(box)) << id;
  EXPECT_LT(window_.view()->zoom(), 0.05);
  // The wheel zooms out no further than needed, but from there it does not jump to 0.15.
  const double z = window_.view()->zoom();
  window_.view()->ZoomBy(1.15);
  EXPECT_NEAR(window_.view()->zoom(), z * 1.15, 1e-9);
}

TEST_F(LayoutTest, MinimapShowsTheGraphAndMovesTheView) {
  ASSERT_TRUE(window_.OpenFile(testing::DataPath("imported_train_step.json")));
  window_.Arrange();
  QApplication::processEvents();  // the fit that opening queued
  window_.view()->ResetZoom();
  Minimap* map = window_.minimap();
  ASSERT_NE(map, nullptr);
  EXPECT_TRUE(map->isVisible());
  // Every node lies inside the minimap's box.
  for (const auto& [id, box] : NodeBoxes(scene())) EXPECT_TRUE(map->SceneBox().contains(box)) << id;
  // In the canvas's bottom-right corner.
  const QRect vp = window_.view()->viewport()->rect();
  EXPECT_TRUE(vp.contains(map->geometry()));
  EXPECT_GT(map->geometry().left(), vp.width() / 2);

  // A click centres the view on that point of the graph.
  const QRectF target = NodeBoxes(scene()).at("tower0/layer10/conv");
  const QPointF at = map->FromScene(target.center());
  QMouseEvent press(QEvent::MouseButtonPress, at, map->mapToGlobal(at), Qt::LeftButton,
                    Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(map, &press);
  const QPointF centre = window_.view()->mapToScene(window_.view()->viewport()->rect().center());
  // Within a minimap pixel of the target.
  const double pixel = map->SceneBox().width() / map->width();
  EXPECT_NEAR(centre.x(), target.center().x(), 2 * pixel);
  EXPECT_NEAR(centre.y(), target.center().y(), 2 * pixel);
}

TEST(EditorArgs, ArrangeOption) {
  EXPECT_TRUE(ParseEditorArgs({"blockflow-editor", "g.json", "--arrange"}).arrange);
  EXPECT_FALSE(ParseEditorArgs({"blockflow-editor", "g.json"}).arrange);
  EXPECT_TRUE(EditorUsage().contains("--arrange"));
}

}  // namespace
}  // namespace blockflow::editor
