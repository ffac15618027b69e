// Inline values typed on input ports (stored as Consts with ui.inline) and random feeds
// (ui.feed_random): the JSON stays canonical, and `blockflow run` computes the same.
#include "editor/inline_values.h"

#include <gtest/gtest.h>

#include <QApplication>
#include <QCheckBox>
#include <QDir>
#include <QFile>
#include <QLineEdit>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <QUndoStack>

#include "core/npy.h"
#include "editor/attribute_panel.h"
#include "editor/graph_document.h"
#include "editor/graph_scene.h"
#include "editor/graph_view.h"
#include "editor/main_window.h"
#include "editor/run_controller.h"
#include "test_util.h"

namespace blockflow::editor {
namespace {

using testing::GraphFromJson;
using testing::RunAndWait;
using testing::WriteText;

// A depthwise filter gradient whose filter_sizes input is not wired yet.
constexpr const char* kFilterGradGraph = R"({"format": "blockflow.graph", "version": 1, "nodes": [
  {"id": "input", "op": "Const", "attrs": {"dtype": "float32", "shape": [1, 4, 4, 2], "value": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32]}, "ui": {"x": 0, "y": 0}},
  {"id": "dy", "op": "Const", "attrs": {"dtype": "float32", "shape": [1, 4, 4, 2], "value": 0.5}, "ui": {"x": 0, "y": 300}},
  {"id": "sizes", "op": "Const", "attrs": {"dtype": "int32", "shape": [4], "value": [3, 3, 2, 1]}, "ui": {"x": 0, "y": 600}},
  {"id": "dw", "op": "DepthwiseConv2dNativeBackpropFilter", "inputs": {"input": "input", "out_backprop": "dy"}, "attrs": {"padding": "SAME", "strides": [1, 1, 1, 1]}, "ui": {"x": 400, "y": 100}}
]})";

// The line of node `id` in saved graph JSON.
std::string NodeLine(const QString& path, const std::string& id) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return "";
  for (const QByteArray& line : f.readAll().split('\n')) {
    if (!line.contains(QByteArray::fromStdString("{\"id\": \"" + id + "\""))) continue;
    QByteArray l = line.trimmed();
    if (l.endsWith(',')) l.chop(1);
    return l.toStdString();
  }
  return "";
}

// Runs `blockflow ARGS`; returns the exit code, stderr in `err`.
int RunCli(const QStringList& args, QString* err = nullptr) {
  QProcess p;
  p.start(BF_CLI_EXE, args);
  if (!p.waitForFinished(60000)) return -1;
  if (err) *err = QString::fromUtf8(p.readAllStandardError());
  return p.exitCode();
}

class InlineValueTest : public testing::EditorWindowTest {
 protected:
  void SetUp() override {
    EditorWindowTest::SetUp();
    doc()->Reset(GraphFromJson(kFilterGradGraph));
  }
  GraphScene* scene() { return window_.scene(); }
};

TEST_F(InlineValueTest, ATypedValueIsAnInlineConstDrawnInItsPort) {
  EXPECT_FALSE(doc()->IssuesFor("dw").empty());  // filter_sizes is not wired
  ASSERT_TRUE(SetInlineValue(doc(), "dw", "filter_sizes", "[3,3,2,1]").ok());
  const Node* k = doc()->graph().FindNode("dw/filter_sizes");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->op, "Const");
  EXPECT_EQ(k->attrs,
            nlohmann::json::parse(R"({"dtype": "int32", "shape": [4], "value": [3, 3, 2, 1]})"));
  EXPECT_EQ(k->ui, nlohmann::json::parse(R"({"inline": true})"));
  EXPECT_EQ(doc()->graph().FindNode("dw")->inputs.at("filter_sizes"),
            (std::vector<Endpoint>{{"dw/filter_sizes", 0}}));
  EXPECT_TRUE(doc()->analysis().issues.empty()) << doc()->analysis().issues[0].ToString();
  EXPECT_EQ(doc()->undo_stack()->undoText(), "Set dw.filter_sizes = [3,3,2,1]");
  // Drawn folded into the port: no node of its own, no wire.
  EXPECT_EQ(scene()->FindNode("dw/filter_sizes"), nullptr);
  EXPECT_EQ(scene()->edges().size(), 2u);
  EXPECT_EQ(InlineIndex(doc()->graph()).TextsOf(doc()->graph(), "dw").at("filter_sizes"),
            "[3, 3, 2, 1]");

  // Retyping the same value is no edit; another value edits the Const; empty text removes it.
  const int edits = doc()->undo_stack()->count();
  ASSERT_TRUE(SetInlineValue(doc(), "dw", "filter_sizes", "3 3 2 1").ok());
  EXPECT_EQ(doc()->undo_stack()->count(), edits);
  ASSERT_TRUE(SetInlineValue(doc(), "dw", "filter_sizes", "3, 3, 2, 2").ok());
  EXPECT_EQ(doc()->graph().FindNode("dw/filter_sizes")->attrs["value"],
            nlohmann::json({3, 3, 2, 2}));
  EXPECT_FALSE(doc()->IssuesFor("dw").empty());  // 2 is not the depth multiplier that fits
  ASSERT_TRUE(SetInlineValue(doc(), "dw", "filter_sizes", "").ok());
  EXPECT_EQ(doc()->graph().FindNode("dw/filter_sizes"), nullptr);
  EXPECT_FALSE(doc()->graph().FindNode("dw")->inputs.count("filter_sizes"));
  doc()->undo_stack()->undo();
  EXPECT_NE(doc()->graph().FindNode("dw/filter_sizes"), nullptr);
}

TEST_F(InlineValueTest, RoundTripStaysCanonicalAndRunsHeadlessWithTheSameResult) {
  ASSERT_TRUE(SetInlineValue(doc(), "dw", "filter_sizes", "[3,3,2,1]").ok());
  QTemporaryDir dir;
  const QString path = dir.filePath("inline.json");
  ASSERT_TRUE(window_.SaveTo(path));
  EXPECT_EQ(
      NodeLine(path, "dw/filter_sizes"),
      R"({"id": "dw/filter_sizes", "op": "Const", "attrs": {"dtype": "int32", "shape": [4], "value": [3, 3, 2, 1]}, "ui": {"inline": true}})");
  // Reopened: the same graph, still folded; saved again: the same bytes.
  ASSERT_TRUE(window_.OpenFile(path));
  EXPECT_EQ(scene()->FindNode("dw/filter_sizes"), nullptr);
  const QString again = dir.filePath("again.json");
  ASSERT_TRUE(window_.SaveTo(again));
  QFile a(path), b(again);
  ASSERT_TRUE(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
  EXPECT_EQ(a.readAll(), b.readAll());

  // The editor's run and `blockflow run` agree bit for bit; so does the same graph with an
  // ordinary Const (the flag changes nothing the runtime computes).
  QList<QVariant> args;
  ASSERT_TRUE(RunAndWait(window_, &args));
  ASSERT_TRUE(args[0].toBool()) << args[1].toString().toStdString();
  const Tensor& in_editor = window_.runner()->result().outputs.at("dw")[0];
  EXPECT_EQ(in_editor.shape().ToString(), "[3,3,2,1]");
  QString err;
  ASSERT_EQ(RunCli({"run", path, "--fetch", "dw", "--out", dir.filePath("out")}, &err), 0)
      << err.toStdString();
  Expected<Tensor> headless = ReadNpy(dir.filePath("out/dw.npy").toStdString());
  ASSERT_TRUE(headless.ok()) << headless.status().message();
  EXPECT_TRUE(headless->BitwiseEquals(in_editor));

  ASSERT_EQ(UnfoldInlineValue(doc(), "dw", "filter_sizes").ok(), true);
  EXPECT_NE(scene()->FindNode("dw/filter_sizes"), nullptr);
  const QString plain = dir.filePath("plain.json");
  ASSERT_TRUE(window_.SaveTo(plain));
  EXPECT_EQ(NodeLine(plain, "dw/filter_sizes").find("inline"), std::string::npos);
  ASSERT_EQ(RunCli({"run", plain, "--fetch", "dw", "--out", dir.filePath("plain_out")}, &err), 0)
      << err.toStdString();
  Expected<Tensor> unfolded = ReadNpy(dir.filePath("plain_out/dw.npy").toStdString());
  ASSERT_TRUE(unfolded.ok());
  EXPECT_TRUE(unfolded->BitwiseEquals(*headless));
}

TEST_F(InlineValueTest, UnfoldAndFoldBack) {
  ASSERT_TRUE(SetInlineValue(doc(), "dw", "filter_sizes", "3,3,2,1").ok());
  ASSERT_TRUE(UnfoldInlineValue(doc(), "dw", "filter_sizes").ok());
  NodeItem* item = scene()->FindNode("dw/filter_sizes");
  ASSERT_NE(item, nullptr);
  EXPECT_LT(item->pos().x() + item->body_size().width(), scene()->FindNode("dw")->pos().x());
  EXPECT_EQ(scene()->edges().size(), 3u);
  EXPECT_TRUE(CanFoldIntoPort(doc()->graph(), "dw/filter_sizes"));
  EXPECT_FALSE(CanFoldIntoPort(doc()->graph(), "dw"));  // not a Const
  ASSERT_TRUE(FoldIntoPort(doc(), "dw/filter_sizes").ok());
  EXPECT_EQ(scene()->FindNode("dw/filter_sizes"), nullptr);
  EXPECT_EQ(doc()->graph().FindNode("dw/filter_sizes")->ui,
            nlohmann::json::parse(R"({"inline": true})"));
  // A Const that feeds two inputs cannot be folded into one.
  ASSERT_TRUE(doc()->Connect(Endpoint{"dy", 0}, "dw", "input").ok());
  const Status st = FoldIntoPort(doc(), "dy");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("only a Const that feeds exactly one input"), std::string::npos)
      << st.message();
}

TEST_F(InlineValueTest, TheValueGoesWithItsNodeAndItsPort) {
  ASSERT_TRUE(SetInlineValue(doc(), "dw", "filter_sizes", "3,3,2,1").ok());
  // Copying the node takes its value along.
  EXPECT_NE(doc()->CopyNodes({"dw"}).find("dw/filter_sizes"), std::string::npos);
  // Deleting the node deletes its value (one edit; undo brings both back).
  scene()->SelectNodes({"dw"});
  scene()->DeleteSelection();
  EXPECT_EQ(doc()->graph().FindNode("dw/filter_sizes"), nullptr);
  doc()->undo_stack()->undo();
  EXPECT_NE(doc()->graph().FindNode("dw/filter_sizes"), nullptr);
  EXPECT_NE(doc()->graph().FindNode("dw"), nullptr);
  // Wiring the port replaces the value.
  ASSERT_TRUE(doc()->Connect(Endpoint{"sizes", 0}, "dw", "filter_sizes").ok());
  EXPECT_EQ(doc()->graph().FindNode("dw/filter_sizes"), nullptr);
  // A port wired to an ordinary node refuses a typed value, saying why.
  const Status st = SetInlineValue(doc(), "dw", "out_backprop", "1");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(),
            "'dw'.out_backprop: is wired to 'dy'; delete that wire to type a value instead");
}

TEST(InlineValueParse, ShapesAndDTypesFollowTheTextAndThePort) {
  PortDef ints{"shape", {DType::kInt32, DType::kInt64}, "", false, LayoutRole::kNone};
  PortDef floats{
      "x", {DType::kFloat16, DType::kFloat32, DType::kFloat64}, "", false, LayoutRole::kNone};
  Expected<nlohmann::json> v = ParseInlineValue("[[1, 2], [3, 4.5]]", floats);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, nlohmann::json::parse(
                    R"({"dtype": "float32", "shape": [2, 2], "value": [1, 2, 3, 4.5]})"));
  v = ParseInlineValue("0.25", floats, DType::kInvalid, DType::kFloat64);  // the peer's dtype
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, nlohmann::json::parse(R"({"dtype": "float64", "shape": [], "value": 0.25})"));
  v = ParseInlineValue("2 3", ints, DType::kInt64);  // the dtype it had
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, nlohmann::json::parse(R"({"dtype": "int64", "shape": [2], "value": [2, 3]})"));
  v = ParseInlineValue("0.5", ints);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().message(), "input 'shape' takes whole numbers only; '0.5' is not");
  v = ParseInlineValue("[[1, 2], [3]]", floats);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("nested lists must all have the same length"),
            std::string::npos);
  v = ParseInlineValue("two", floats);
  ASSERT_FALSE(v.ok());
  Node k;
  k.op = "Const";
  k.attrs =
      nlohmann::json::parse(R"({"dtype": "float32", "shape": [2, 2], "value": [1, 2, 3, 4.5]})");
  EXPECT_EQ(InlineValueText(k), "[[1, 2], [3, 4.5]]");
  k.attrs = nlohmann::json::parse(R"({"dtype": "float32", "shape": [4], "value": 3})");
  EXPECT_EQ(InlineValueText(k), "[4] filled with 3");
}

TEST_F(InlineValueTest, TypedInTheAttributePanelAndOnTheCanvas) {
  window_.SelectNode("dw");
  auto* field = qobject_cast<QLineEdit*>(window_.attributes()->EditorFor("inline_filter_sizes"));
  ASSERT_NE(field, nullptr);
  // Wired inputs have no field.
  EXPECT_EQ(window_.attributes()->EditorFor("inline_input"), nullptr);
  field->setText("3, 3, 2, 1");
  emit field->editingFinished();
  ASSERT_NE(doc()->graph().FindNode("dw/filter_sizes"), nullptr);
  EXPECT_TRUE(doc()->IssuesFor("dw").empty());
  // The rebuilt panel shows the value, with an Unfold button.
  field = qobject_cast<QLineEdit*>(window_.attributes()->EditorFor("inline_filter_sizes"));
  ASSERT_NE(field, nullptr);
  EXPECT_EQ(field->text(), "[3, 3, 2, 1]");
  // A bad value is refused with the reason on the field.
  field->setText("3, x");
  emit field->editingFinished();
  EXPECT_EQ(doc()->graph().FindNode("dw/filter_sizes")->attrs["value"],
            nlohmann::json({3, 3, 2, 1}));
  EXPECT_FALSE(field->toolTip().isEmpty());

  // On the canvas: double-click the port's row, type, Enter.
  ASSERT_TRUE(SetInlineValue(doc(), "dw", "filter_sizes", "").ok());
  NodeItem* item = scene()->FindNode("dw");
  PortItem* port = item->FindPort(false, "filter_sizes");
  ASSERT_NE(port, nullptr);
  const QPointF row = port->scenePos() + QPointF(40, 8);
  EXPECT_EQ(item->InputPortAt(row), "filter_sizes");
  ASSERT_TRUE(scene()->EditInlineValueAt(row));
  auto* popup = qobject_cast<QLineEdit*>(QApplication::activePopupWidget());
  ASSERT_NE(popup, nullptr);
  EXPECT_EQ(popup->objectName(), "inline_popup");
  QTest::keyClicks(popup, "3,3,2,1");
  QTest::keyClick(popup, Qt::Key_Return);
  EXPECT_EQ(doc()->graph().FindNode("dw/filter_sizes")->attrs["value"],
            nlohmann::json({3, 3, 2, 1}));
  // A wired input's row offers no editor.
  EXPECT_FALSE(
      scene()->EditInlineValueAt(item->FindPort(false, "input")->scenePos() + QPointF(40, 8)));
}

// A Placeholder fed with random values in the editor; `blockflow run` still needs --feed.
constexpr const char* kRandomGraph = R"({"format": "blockflow.graph", "version": 1, "nodes": [
  {"id": "p", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [2, 3]}, "ui": {"x": 0, "y": 0, "feed_random": true}},
  {"id": "b", "op": "Const", "attrs": {"dtype": "float32", "shape": [3], "value": [10, 20, 30]}, "ui": {"x": 0, "y": 200}},
  {"id": "s", "op": "Add", "inputs": {"x": "p", "y": "b"}, "ui": {"x": 400, "y": 100}}
]})";

TEST(FeedRandom, TheEditorFillsThePlaceholderAndTheCommandLineStillNeedsAFeed) {
  MainWindow w;
  w.SetScripted(true);
  QTemporaryDir dir;
  const QString path = dir.filePath("random.json");
  WriteText(path, kRandomGraph);
  ASSERT_TRUE(w.OpenFile(path));
  QList<QVariant> args;
  ASSERT_TRUE(RunAndWait(w, &args));
  ASSERT_TRUE(args[0].toBool()) << args[1].toString().toStdString();
  const Tensor p = w.runner()->result().outputs.at("p")[0];
  const Tensor s = w.runner()->result().outputs.at("s")[0];
  ASSERT_EQ(p.shape().ToString(), "[2,3]");
  std::set<double> distinct;
  for (int64_t i = 0; i < 6; ++i) {
    const double v = p.GetAsDouble(i);
    EXPECT_GE(v, -1.0);
    EXPECT_LT(v, 1.0);
    distinct.insert(v);
    EXPECT_FLOAT_EQ(static_cast<float>(s.GetAsDouble(i)),
                    static_cast<float>(v + 10.0 * (1 + i % 3)));
  }
  EXPECT_EQ(distinct.size(), 6u);
  // The same values on the next run.
  ASSERT_TRUE(RunAndWait(w, &args));
  EXPECT_TRUE(w.runner()->result().outputs.at("p")[0].BitwiseEquals(p));

  // Headless: the flag is editor-only; without --feed the run fails, naming the Placeholder.
  QString err;
  EXPECT_EQ(RunCli({"run", path}, &err), 1);
  EXPECT_TRUE(err.contains("node 'p' (Placeholder)")) << err.toStdString();
  ASSERT_TRUE(WriteNpy(dir.filePath("p.npy").toStdString(), p).ok());
  ASSERT_EQ(
      RunCli({"run", path, "--feed", "p=" + dir.filePath("p.npy"), "--out", dir.filePath("out")},
             &err),
      0)
      << err.toStdString();
  Expected<Tensor> headless = ReadNpy(dir.filePath("out/s.npy").toStdString());
  ASSERT_TRUE(headless.ok());
  EXPECT_TRUE(headless->BitwiseEquals(s));

  // The attribute panel's check box sets and clears the flag.
  w.SelectNode("p");
  auto* box = qobject_cast<QCheckBox*>(w.attributes()->EditorFor("feed_random"));
  ASSERT_NE(box, nullptr);
  EXPECT_TRUE(box->isChecked());
  box->setChecked(false);
  EXPECT_FALSE(w.document()->graph().FindNode("p")->ui.contains("feed_random"));
  ASSERT_TRUE(RunAndWait(w, &args));
  EXPECT_FALSE(args[0].toBool());
  EXPECT_TRUE(args[1].toString().contains("random values of its shape"))
      << args[1].toString().toStdString();
}

TEST(FeedRandom, AnUnknownSizeIsReported) {
  Graph g = GraphFromJson(R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "p", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [-1, 3]}, "ui": {"feed_random": true}}]})");
  Expected<std::map<std::string, Tensor>> feeds = LoadFeeds(g);
  ASSERT_FALSE(feeds.ok());
  EXPECT_EQ(feeds.status().message(),
            "node 'p' (Placeholder): random values need a full shape, and [-1,3] has unknown (-1) "
            "sizes: give the Placeholder's shape, or a feed file");
}

}  // namespace
}  // namespace blockflow::editor
