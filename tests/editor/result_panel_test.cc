// The result panel: statistics, heatmap and table of a node's outputs, huge and empty tensors,
// the layout each output is shown in first, and the kept selectors across layout-only edits.
#include "editor/result_panel.h"

#include <gtest/gtest.h>

#include <QApplication>
#include <QComboBox>
#include <QElapsedTimer>
#include <utility>

#include "editor/graph_document.h"
#include "editor/main_window.h"
#include "editor/run_controller.h"
#include "test_util.h"

namespace blockflow::editor {
namespace {

using testing::RunAndWait;

class ResultPanelWindowTest : public testing::EditorWindowTest {};

TEST(ResultPanel, ResultPanelShowsHugeAndEmptyTensorsQuickly) {
  ResultPanel panel;
  panel.resize(500, 700);
  panel.show();
  Tensor big = *Tensor::Create(DType::kFloat32, Shape{1, 1024, 1024, 1});
  QElapsedTimer timer;
  timer.start();
  panel.ShowOutputs("big", {big}, {"output"}, {"NHWC"}, "");
  QApplication::processEvents();
  EXPECT_LT(timer.elapsed(), 3000);
  EXPECT_FALSE(panel.heatmap().isNull());

  Tensor empty = *Tensor::Create(DType::kFloat32, Shape{0, 3});
  panel.ShowOutputs("empty", {empty}, {"output"}, {}, "");
  QApplication::processEvents();
  EXPECT_EQ(panel.model()->rowCount(), 0);

  Tensor wide = *Tensor::Create(DType::kFloat32, Shape{4 * 1024 * 1024});
  timer.restart();
  panel.ShowOutputs("wide", {wide}, {"output"}, {}, "");
  QApplication::processEvents();
  EXPECT_LT(timer.elapsed(), 3000);
}

TEST(ResultPanel, EmptyTensorWithAHugeDimensionInTheResultPanel) {
  // [0, 3e9] holds nothing, but its column count does not fit an int.
  ResultPanel panel;
  panel.show();
  Tensor t = *Tensor::Create(DType::kFloat32, Shape{0, 3000000000});
  panel.ShowOutputs("e", {t}, {"output"}, {}, "");
  QApplication::processEvents();
  EXPECT_GE(panel.model()->rowCount(), 0);
  EXPECT_GE(panel.model()->columnCount(), 0);
  Tensor u = *Tensor::Create(DType::kFloat32, Shape{3000000000, 0});
  panel.ShowOutputs("u", {u}, {"output"}, {}, "");
  QApplication::processEvents();
  EXPECT_GE(panel.model()->rowCount(), 0);
}

TEST_F(ResultPanelWindowTest, MovingANodeKeepsTheChosenResultChannel) {
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

TEST_F(ResultPanelWindowTest, EachOutputIsShownFirstInItsPortsLayout) {
  doc()->Reset(testing::GraphFromJson(R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "x", "op": "Const", "attrs": {"dtype": "float32", "shape": [1, 4, 4, 1], "value": 1}},
    {"id": "sizes", "op": "Const", "attrs": {"dtype": "int32", "shape": [4], "value": [3, 3, 1, 2]}},
    {"id": "dy", "op": "Const", "attrs": {"dtype": "float32", "shape": [1, 4, 4, 2], "value": 1}},
    {"id": "dw", "op": "Conv2DBackpropFilter",
     "inputs": {"input": "x", "filter_sizes": "sizes", "out_backprop": "dy"},
     "attrs": {"strides": [1, 1, 1, 1], "padding": "SAME"}},
    {"id": "xc", "op": "Const", "attrs": {"dtype": "float32", "shape": [1, 1, 4, 4], "value": 1}},
    {"id": "y", "op": "Conv2D", "inputs": {"input": "xc", "filter": "dw"},
     "attrs": {"strides": [1, 1, 1, 1], "padding": "SAME", "data_format": "NCHW"}}]})"));
  ASSERT_TRUE(RunAndWait(window_));
  const std::pair<const char*, const char*> expected[] = {
      {"dw", "HWIO"}, {"y", "NCHW"}, {"dy", "NHWC"}};  // a filter, NCHW activations, no layout
  for (const auto& [id, layout] : expected) {
    window_.SelectNode(id);
    ASSERT_FALSE(window_.results()->heatmap().isNull()) << id;
    EXPECT_EQ(window_.results()->LayoutText(), layout) << id;
  }
}

}  // namespace
}  // namespace blockflow::editor
