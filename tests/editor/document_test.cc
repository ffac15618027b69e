// GraphDocument: wiring rules, undoable edits, copy/paste, save and load.
#include <gtest/gtest.h>

#include <QDir>
#include <QFile>
#include <QTemporaryDir>

#include "core/npy.h"
#include "editor/graph_document.h"
#include "test_util.h"

namespace blockflow::editor {
namespace {

using testing::GraphFromJson;
using testing::kAddGraph;

std::string Text(const GraphDocument& doc) { return SerializeGraph(doc.graph()); }

QByteArray ReadAll(const QString& path) {
  QFile f(path);
  EXPECT_TRUE(f.open(QIODevice::ReadOnly)) << path.toStdString();
  return f.readAll();
}

TEST(IdBaseForOp, SnakeCasesOpNames) {
  EXPECT_EQ(IdBaseForOp("DepthwiseConv2dNativeBackpropInput"),
            "depthwise_conv2d_native_backprop_input");
  EXPECT_EQ(IdBaseForOp("Conv2DBackpropFilter"), "conv2d_backprop_filter");
  EXPECT_EQ(IdBaseForOp("Add"), "add");
  EXPECT_EQ(IdBaseForOp("ZerosLike"), "zeros_like");
}

TEST(GraphDocument, AddNodeGivesUniqueIdsAndPositions) {
  GraphDocument doc;
  auto a = doc.AddNode("Add", QPointF(10.4, 20.6));
  auto b = doc.AddNode("Add", QPointF(0, 0));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, "add");
  EXPECT_EQ(*b, "add_1");
  const Node* n = doc.graph().FindNode("add");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->ui["x"], 10);
  EXPECT_EQ(n->ui["y"], 21);
  auto bad = doc.AddNode("NoSuchBlock", QPointF());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown block 'NoSuchBlock'"), std::string::npos);
}

TEST(GraphDocument, RefusesWireOfIncompatibleDType) {
  GraphDocument doc;
  doc.Reset(GraphFromJson(kAddGraph));
  ASSERT_TRUE(doc.AddNode("Reshape", QPointF(600, 0)).ok());
  const std::string before = Text(doc);
  const int undo_count = doc.undo_stack()->count();
  const Status st = doc.Connect(Endpoint{"a", 0}, "reshape", "shape");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(),
            "refused: 'reshape'.shape (Reshape) accepts int32, int64; 'a' gives float32");
  EXPECT_EQ(Text(doc), before);
  EXPECT_EQ(doc.undo_stack()->count(), undo_count);
  // The float tensor is fine on the `tensor` port.
  EXPECT_TRUE(doc.Connect(Endpoint{"a", 0}, "reshape", "tensor").ok());
  EXPECT_EQ(doc.graph().FindNode("reshape")->inputs.at("tensor")[0].node, "a");
}

TEST(GraphDocument, RefusesWireThatClosesACycle) {
  GraphDocument doc;
  doc.Reset(GraphFromJson(R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "a", "op": "Const", "attrs": {"dtype": "float32", "shape": [2], "value": [1, 2]}},
    {"id": "i1", "op": "Identity", "inputs": {"input": "a"}},
    {"id": "i2", "op": "Identity", "inputs": {"input": "i1"}}]})"));
  const std::string before = Text(doc);
  Status st = doc.Connect(Endpoint{"i2", 0}, "i1", "input");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(),
            "refused: wiring 'i2' into 'i1'.input would create a cycle ('i1' already feeds 'i2')");
  st = doc.Connect(Endpoint{"i1", 0}, "i1", "input");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("would create a cycle (a block cannot feed itself)"),
            std::string::npos);
  EXPECT_EQ(Text(doc), before);
}

TEST(GraphDocument, NewWireReplacesTheOldOne) {
  GraphDocument doc;
  doc.Reset(GraphFromJson(kAddGraph));
  ASSERT_TRUE(doc.Connect(Endpoint{"b", 0}, "s", "x").ok());
  const auto& x = doc.graph().FindNode("s")->inputs.at("x");
  ASSERT_EQ(x.size(), 1u);
  EXPECT_EQ(x[0].node, "b");
  // s = b + b: [3]
  const NodeInfo* info = doc.InfoFor("s");
  ASSERT_NE(info, nullptr);
  ASSERT_TRUE(info->ok);
  EXPECT_EQ(info->outputs[0].shape, Shape({3}));
}

TEST(GraphDocument, AttributeEditUpdatesShapesAndIssues) {
  GraphDocument doc;
  doc.Reset(GraphFromJson(kAddGraph));
  EXPECT_EQ(doc.InfoFor("s")->outputs[0].shape, Shape({2, 3}));
  ASSERT_TRUE(doc.SetAttr("a", "shape", nlohmann::json::array({4, 3})).ok());
  EXPECT_EQ(doc.InfoFor("s")->outputs[0].shape, Shape({4, 3}));
  EXPECT_TRUE(doc.IssuesFor("s").empty());
  ASSERT_TRUE(doc.SetAttr("a", "shape", nlohmann::json::array({4, 5})).ok());
  const auto issues = doc.IssuesFor("s");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].rfind("node 's' (Add): ", 0), 0u) << issues[0];
}

TEST(GraphDocument, UndoRedoRestoresTheGraphExactly) {
  GraphDocument doc;
  doc.Reset(GraphFromJson(kAddGraph));
  std::vector<std::string> states = {Text(doc)};
  auto step = [&](bool ok) {
    ASSERT_TRUE(ok);
    states.push_back(Text(doc));
  };
  step(doc.AddNode("Mul", QPointF(700, 50)).ok());
  step(doc.Connect(Endpoint{"s", 0}, "mul", "x").ok());
  step(doc.Connect(Endpoint{"b", 0}, "mul", "y").ok());
  step(doc.SetAttr("b", "value", nlohmann::json::array({4, 5, 6})).ok());
  step(doc.RenameNode("mul", "product").ok());
  doc.MoveNodes({{"product", QPointF(800, 90)}});
  step(true);
  doc.Remove({}, {WireRef{Endpoint{"b", 0}, "product", "y"}});
  step(true);
  step(doc.Paste(doc.CopyNodes({"a", "s"}), QPointF(30, 30)).ok());
  doc.Remove({"a"}, {});
  step(true);
  ASSERT_EQ(doc.undo_stack()->count(), static_cast<int>(states.size()) - 1);
  for (size_t i = states.size() - 1; i > 0; --i) {
    doc.undo_stack()->undo();
    EXPECT_EQ(Text(doc), states[i - 1]) << "after undoing step " << i;
  }
  for (size_t i = 1; i < states.size(); ++i) {
    doc.undo_stack()->redo();
    EXPECT_EQ(Text(doc), states[i]) << "after redoing step " << i;
  }
  EXPECT_TRUE(doc.IsModified());
}

TEST(GraphDocument, RenameChecksIdsAndRewires) {
  GraphDocument doc;
  doc.Reset(GraphFromJson(kAddGraph));
  Status st = doc.RenameNode("a", "b");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "id 'b' is already used by another node");
  st = doc.RenameNode("a", "bad id");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "invalid id 'bad id': use letters, digits and _ . - /");
  ASSERT_TRUE(doc.RenameNode("a", "grad/ones").ok());
  EXPECT_EQ(doc.graph().FindNode("s")->inputs.at("x")[0].node, "grad/ones");
  EXPECT_TRUE(doc.analysis().ok());
}

TEST(GraphDocument, PasteMakesIdsUniqueAndKeepsInternalWires) {
  GraphDocument doc;
  doc.Reset(GraphFromJson(kAddGraph));
  auto ids = doc.Paste(doc.CopyNodes({"a", "s"}), QPointF(50, 50));
  ASSERT_TRUE(ids.ok());
  ASSERT_EQ(*ids, (std::vector<std::string>{"a_1", "s_1"}));
  const Node* s1 = doc.graph().FindNode("s_1");
  ASSERT_NE(s1, nullptr);
  EXPECT_EQ(s1->inputs.at("x")[0].node, "a_1");
  EXPECT_EQ(s1->inputs.count("y"), 0u);  // b was not copied
  EXPECT_EQ(s1->ui["x"], 450);
  EXPECT_EQ(s1->ui["y"], 150);
  // One undo removes the whole paste.
  doc.undo_stack()->undo();
  EXPECT_EQ(doc.graph().nodes().size(), 3u);
}

TEST(GraphDocument, SaveThenLoadGivesTheSameFile) {
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  GraphDocument doc;
  ASSERT_TRUE(doc.Open(testing::DataPath("basic.json")).ok());
  ASSERT_TRUE(doc.AddNode("Identity", QPointF(1100, 120)).ok());
  ASSERT_TRUE(doc.Connect(Endpoint{"y", 0}, "identity", "input").ok());
  const QString first = dir.filePath("first.json"), second = dir.filePath("second.json");
  ASSERT_TRUE(doc.Save(first).ok());
  EXPECT_FALSE(doc.IsModified());
  GraphDocument again;
  ASSERT_TRUE(again.Open(first).ok());
  EXPECT_EQ(Text(again), Text(doc));
  ASSERT_TRUE(again.Save(second).ok());
  EXPECT_EQ(ReadAll(first), ReadAll(second));
  // The feed file was copied beside the new file (a graph's files lie in its folder).
  const Node* x = again.graph().FindNode("x");
  const std::string feed = x->ui["feed"].get<std::string>();
  EXPECT_TRUE(QFile::exists(QString::fromStdString(ResolveGraphPath(again.graph(), feed)))) << feed;
  EXPECT_EQ(x->ui["x"], 0);
}

TEST(GraphDocument, OpenReportsErrors) {
  GraphDocument doc;
  const Status st = doc.Open(testing::DataPath("does_not_exist.json"));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("does_not_exist.json"), std::string::npos);
}

TEST(GraphDocument, MissingPositionsAreLaidOutInLayers) {
  Graph g = GraphFromJson(R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "a", "op": "Const", "attrs": {"dtype": "float32", "shape": [2], "value": [1, 2]}},
    {"id": "i1", "op": "Identity", "inputs": {"input": "a"}},
    {"id": "i2", "op": "Identity", "inputs": {"input": "i1"}}]})");
  AssignMissingPositions(g);
  auto pa = NodePosition(*g.FindNode("a")), p1 = NodePosition(*g.FindNode("i1")),
       p2 = NodePosition(*g.FindNode("i2"));
  ASSERT_TRUE(pa && p1 && p2);
  EXPECT_LT(pa->x(), p1->x());
  EXPECT_LT(p1->x(), p2->x());
}

// Save As into another folder keeps the graph's files inside its folder: a file the new
// folder does not contain is copied along under the same name, a file it contains is renamed.
struct SaveAsFolder {
  QTemporaryDir dir;
  struct RestoreCwd {
    QString path = QDir::currentPath();
    ~RestoreCwd() { QDir::setCurrent(path); }
  } restore;
  GraphDocument doc;
  SaveAsFolder() {
    EXPECT_TRUE(dir.isValid());
    EXPECT_TRUE(QDir::setCurrent(dir.path()));
    EXPECT_TRUE(QDir().mkpath("a/data"));
    EXPECT_TRUE(QDir().mkpath("b"));
    EXPECT_TRUE(WriteNpy("a/data/w.npy", Tensor::FromVector<float>({1, 2})).ok());
    doc.Reset(GraphFromJson(R"({"format": "blockflow.graph", "version": 1, "nodes": [
      {"id": "w", "op": "Const", "attrs": {"dtype": "float32", "file": "data/w.npy"}}]})"));
    const Status st = doc.Save("a/g.json");
    EXPECT_TRUE(st.ok()) << st.message();
  }
  std::string File() const { return doc.graph().FindNode("w")->attrs["file"].get<std::string>(); }
};

TEST(GraphDocument, SaveAsIntoAnotherFolderCopiesTheFilesAlong) {
  SaveAsFolder f;
  const Status st = f.doc.Save("b/g.json");
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(f.File(), "data/w.npy");
  Expected<Tensor> copied = ReadNpy("b/data/w.npy");
  ASSERT_TRUE(copied.ok()) << copied.status().message();
  EXPECT_TRUE(copied->BitwiseEquals(Tensor::FromVector<float>({1, 2})));
  EXPECT_TRUE(f.doc.analysis().ok());
  // A second Save As to the same place finds the same bytes there: no error, no change.
  EXPECT_TRUE(f.doc.Save("b/g2.json").ok());
}

TEST(GraphDocument, SaveAsIntoAParentFolderRenamesInsteadOfCopying) {
  SaveAsFolder f;
  const Status st = f.doc.Save("g.json");
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(f.File(), "a/data/w.npy");
  EXPECT_FALSE(QFile::exists("data/w.npy"));
  EXPECT_TRUE(f.doc.analysis().ok());
}

TEST(GraphDocument, SaveAsWithOutsideFilesAllowedPointsBackInstead) {
  SaveAsFolder f;
  f.doc.SetAllowOutsideFiles(true);
  const Status st = f.doc.Save("b/g.json");
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(f.File(), "../a/data/w.npy");
  EXPECT_FALSE(QFile::exists("b/data/w.npy"));
}

TEST(GraphDocument, SaveAsNeverOverwritesADifferentFile) {
  SaveAsFolder f;
  ASSERT_TRUE(QDir().mkpath("b/data"));
  ASSERT_TRUE(WriteNpy("b/data/w.npy", Tensor::FromVector<float>({7})).ok());
  const Status st = f.doc.Save("b/g.json");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("exists and is a different file (not overwritten)"),
            std::string::npos)
      << st.message();
  EXPECT_FALSE(QFile::exists("b/g.json"));  // nothing saved
  Expected<Tensor> kept = ReadNpy("b/data/w.npy");
  ASSERT_TRUE(kept.ok());
  EXPECT_TRUE(kept->BitwiseEquals(Tensor::FromVector<float>({7})));
  EXPECT_EQ(f.doc.file_path(), "a/g.json");  // still the old file
}

TEST(GraphDocument, PasteClashingIds) {
  GraphDocument doc;
  doc.Reset(GraphFromJson(kAddGraph));
  const std::string clip = R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "a", "op": "Const", "attrs": {"dtype": "float32", "shape": [3], "value": 2}},
    {"id": "a_1", "op": "Identity", "inputs": {"input": "a"}},
    {"id": "s", "op": "Add", "inputs": {"x": "a", "y": "a_1"}}]})";
  auto ids = doc.Paste(clip, QPointF(10, 10));
  ASSERT_TRUE(ids.ok()) << ids.status().message();
  ASSERT_EQ(ids->size(), 3u);
  const Node* s = doc.graph().FindNode((*ids)[2]);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->inputs.at("x")[0].node, (*ids)[0]);
  EXPECT_EQ(s->inputs.at("y")[0].node, (*ids)[1]);
  EXPECT_EQ(doc.graph().FindNode((*ids)[1])->inputs.at("input")[0].node, (*ids)[0]);
  EXPECT_TRUE(doc.analysis().ok());
}

}  // namespace
}  // namespace blockflow::editor
