// Nothing lost: the editor's autosave and crash recovery, runs that fail or are cancelled
// leaving the document alone, and the editor's memory limit.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <QDir>
#include <QFile>
#include <QLockFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "editor/autosave.h"
#include "editor/editor_main.h"
#include "editor/graph_document.h"
#include "editor/main_window.h"
#include "editor/run_controller.h"
#include "test_util.h"

namespace blockflow::editor {
namespace {

using testing::RunAndWait;

// Recovery files go to a folder of this test's own, as CTest runs the tests in parallel
// processes: the tests' QStandardPaths test mode puts data under $HOME/.qttest, so HOME moves.
class RecoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(data_home_.isValid());
    old_data_home_ = qgetenv("HOME");
    qputenv("HOME", data_home_.path().toUtf8());
    ASSERT_TRUE(RecoveryDir().startsWith(data_home_.path())) << RecoveryDir().toStdString();
    ASSERT_TRUE(dir_.isValid());
    graph_path_ = dir_.filePath("g.json");
    testing::WriteText(graph_path_, testing::kAddGraph);
  }
  void TearDown() override {
    if (old_data_home_.isNull()) {
      qunsetenv("HOME");
    } else {
      qputenv("HOME", old_data_home_);
    }
  }
  static QStringList RecoveryFiles() {
    return QDir(RecoveryDir()).entryList({"autosave-*.json"}, QDir::Files);
  }
  QTemporaryDir data_home_, dir_;
  QByteArray old_data_home_;
  QString graph_path_;
};

// Written only while there are unsaved edits that changed since the last autosave; removed on
// save and on a normal close; the timer does it on its own.
TEST_F(RecoveryTest, AutosavesOnlyChangedUnsavedGraphs) {
  auto* w = new MainWindow;
  w->SetScripted(true);
  ASSERT_TRUE(w->OpenFile(graph_path_));
  Autosaver* saver = w->autosaver();
  EXPECT_TRUE(saver->path().startsWith(RecoveryDir() + "/autosave-"))
      << saver->path().toStdString();
  EXPECT_TRUE(saver->Tick());
  EXPECT_EQ(saver->writes(), 0) << "an unmodified graph has nothing to recover";
  EXPECT_FALSE(QFile::exists(saver->path()));

  ASSERT_TRUE(w->document()->SetAttr("b", "value", {4, 5, 6}).ok());
  EXPECT_TRUE(saver->Tick()) << saver->last_error().toStdString();
  EXPECT_EQ(saver->writes(), 1);
  ASSERT_TRUE(QFile::exists(saver->path()));
  EXPECT_TRUE(saver->Tick());
  EXPECT_EQ(saver->writes(), 1) << "unchanged since the last autosave: not written again";
  ASSERT_TRUE(w->document()->SetAttr("b", "value", {7, 8, 9}).ok());
  EXPECT_TRUE(saver->Tick());
  EXPECT_EQ(saver->writes(), 2);

  // Beside the settings, never beside the graph.
  EXPECT_EQ(QDir(dir_.path()).entryList(QDir::Files), QStringList{"g.json"});

  ASSERT_TRUE(w->SaveTo(graph_path_));
  EXPECT_FALSE(QFile::exists(saver->path())) << "a save leaves nothing to recover";

  // The timer, at a short interval for the test.
  saver->SetInterval(20);
  ASSERT_TRUE(w->document()->SetAttr("b", "value", {1, 1, 1}).ok());
  QTRY_VERIFY_WITH_TIMEOUT(QFile::exists(saver->path()), 5000);
  EXPECT_EQ(saver->writes(), 3);

  const QString path = saver->path();
  w->close();  // scripted: closes without asking
  EXPECT_FALSE(QFile::exists(path)) << "a normal close leaves nothing to recover";
  delete w;
  EXPECT_TRUE(RecoveryFiles().isEmpty());
}

// The recovery test: an editor autosaves, then dies without closing; a new editor offers the
// graph at start, the offer is accepted, and the graph comes back, unsaved, with undo to the
// graph as last saved.
TEST_F(RecoveryTest, NewEditorOffersTheAutosaveAndGetsTheGraphBack) {
  std::string expected;
  {
    MainWindow crashed;
    crashed.SetScripted(true);
    ASSERT_TRUE(crashed.OpenFile(graph_path_));
    ASSERT_TRUE(crashed.document()->SetAttr("b", "value", {4, 5, 6}).ok());
    ASSERT_TRUE(crashed.document()->RenameNode("s", "sum").ok());
    ASSERT_TRUE(crashed.autosaver()->Tick());
    expected = SerializeGraph(crashed.document()->graph());
    // While this editor runs, its autosave is not offered to another.
    MainWindow other;
    other.SetScripted(true);
    int asked = 0;
    other.SetRecoveryPrompt([&asked](const QString&) {
      ++asked;
      return RecoveryChoice::kRecover;
    });
    EXPECT_FALSE(other.OfferRecovery());
    EXPECT_EQ(asked, 0);
    crashed.autosaver()->Abandon();  // as if killed: the file stays, its owner is gone
    // ... and as a killed editor leaves it, the lock file stays too, naming a dead process.
    const QString lock = crashed.autosaver()->path() + ".lock";
    const pid_t child = fork();
    if (child == 0) {
      QLockFile held(lock);
      _exit(held.tryLock(0) ? 0 : 1);  // exits holding it: never unlocked
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ASSERT_TRUE(QFile::exists(lock));
  }
  ASSERT_EQ(RecoveryFiles().size(), 1);

  MainWindow w;
  w.SetScripted(true);
  QStringList offers;
  w.SetRecoveryPrompt([&offers](const QString& text) {
    offers << text;
    return RecoveryChoice::kRecover;
  });
  w.show();
  ASSERT_TRUE(w.OfferRecovery());
  ASSERT_EQ(offers.size(), 1);
  EXPECT_TRUE(offers[0].contains("did not close normally")) << offers[0].toStdString();
  EXPECT_TRUE(offers[0].contains("g.json")) << offers[0].toStdString();
  EXPECT_EQ(SerializeGraph(w.document()->graph()), expected);
  EXPECT_TRUE(w.document()->IsModified()) << "recovered edits are not saved yet";
  EXPECT_EQ(QFileInfo(w.document()->file_path()).canonicalFilePath(),
            QFileInfo(graph_path_).canonicalFilePath());
  EXPECT_TRUE(w.document()->analysis().ok());
  EXPECT_TRUE(RecoveryFiles().isEmpty()) << "the old recovery file is gone once recovered";
  // Undo goes back to the graph as saved.
  w.document()->undo_stack()->undo();
  EXPECT_NE(w.document()->graph().FindNode("s"), nullptr);
  EXPECT_FALSE(w.document()->IsModified());
  // Nothing more to offer.
  offers.clear();
  MainWindow next;
  next.SetRecoveryPrompt([&offers](const QString& text) {
    offers << text;
    return RecoveryChoice::kRecover;
  });
  EXPECT_FALSE(next.OfferRecovery());
  EXPECT_TRUE(offers.isEmpty());
}

// "Later" keeps the file for the next start; "Discard" deletes it; a graph never saved comes
// back as a new graph.
TEST_F(RecoveryTest, LaterKeepsAndDiscardDeletes) {
  {
    MainWindow crashed;
    crashed.SetScripted(true);
    ASSERT_TRUE(crashed.document()->AddNode("Const", QPointF(0, 0)).ok());  // a new graph
    ASSERT_TRUE(crashed.autosaver()->Tick());
    crashed.autosaver()->Abandon();
  }
  MainWindow w;
  w.SetScripted(true);
  QStringList offers;
  RecoveryChoice answer = RecoveryChoice::kLater;
  w.SetRecoveryPrompt([&](const QString& text) {
    offers << text;
    return answer;
  });
  EXPECT_FALSE(w.OfferRecovery());
  EXPECT_EQ(RecoveryFiles().size(), 1);
  EXPECT_EQ(offers.size(), 1);
  EXPECT_TRUE(offers.value(0).contains("a new graph")) << offers.value(0).toStdString();
  EXPECT_EQ(w.document()->graph().nodes().size(), 0u);
  answer = RecoveryChoice::kDiscard;
  EXPECT_FALSE(w.OfferRecovery());
  EXPECT_TRUE(RecoveryFiles().isEmpty());
  EXPECT_EQ(offers.size(), 2);
}

// A new graph (never saved) comes back as a new graph, modified, with no file.
TEST_F(RecoveryTest, ANewGraphComesBackAsANewGraph) {
  std::string expected;
  {
    MainWindow crashed;
    crashed.SetScripted(true);
    ASSERT_TRUE(crashed.document()->AddNode("Const", QPointF(10, 20)).ok());
    ASSERT_TRUE(crashed.autosaver()->Tick());
    expected = SerializeGraph(crashed.document()->graph());
    crashed.autosaver()->Abandon();
  }
  MainWindow w;
  w.SetScripted(true);
  w.SetRecoveryPrompt([](const QString&) { return RecoveryChoice::kRecover; });
  ASSERT_TRUE(w.OfferRecovery());
  EXPECT_EQ(SerializeGraph(w.document()->graph()), expected);
  EXPECT_TRUE(w.document()->file_path().isEmpty());
  EXPECT_TRUE(w.document()->IsModified());
}

// The run controller works on a copy: a failing run, a cancelled run and a run whose kernel
// fails leave the document's JSON and its modified flag as they were.
TEST(EditorRunNothingLost, FailingAndCancelledRunsLeaveTheDocumentUnchanged) {
  MainWindow w;
  w.SetScripted(true);
  auto check = [&w](const std::string& json, bool edit_first, const char* why) {
    w.document()->Reset(testing::GraphFromJson(json));
    if (edit_first) w.document()->MoveNodes({{w.document()->graph().nodes()[0].id, {5, 7}}});
    const std::string before = SerializeGraph(w.document()->graph());
    const bool modified = w.document()->IsModified();
    const int undo_count = w.document()->undo_stack()->count();
    QList<QVariant> args;
    ASSERT_TRUE(RunAndWait(w, &args)) << why;
    EXPECT_FALSE(args[0].toBool()) << why;
    EXPECT_EQ(SerializeGraph(w.document()->graph()), before) << why;
    EXPECT_EQ(w.document()->IsModified(), modified) << why;
    EXPECT_EQ(w.document()->undo_stack()->count(), undo_count) << why;
  };
  // Fails before running: a Placeholder with no feed.
  const std::string unfed = R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [2]}},
    {"id": "y", "op": "Add", "inputs": {"x": "x", "y": "x"}}]})";
  check(unfed, false, "unfed, unmodified");
  check(unfed, true, "unfed, modified");
  // Refused when the run starts: [6] and [2] do not broadcast.
  const std::string kernel_fails = R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "shape", "op": "Const", "attrs": {"dtype": "int32", "shape": [1], "value": [6]}},
    {"id": "r", "op": "RandomUniform", "inputs": {"shape": "shape"}},
    {"id": "big", "op": "Const", "attrs": {"dtype": "float32", "shape": [2], "value": [1, 2]}},
    {"id": "s", "op": "Add", "inputs": {"x": "r", "y": "big"}}]})";
  check(kernel_fails, true, "invalid graph");
  // Cancelled as soon as it starts.
  const std::string chain = testing::ConvChainJson();
  QObject::connect(w.runner(), &RunController::nodeStarted, &w, [&w](const QString& id) {
    if (id == "c1") w.CancelRun();
  });
  check(chain, false, "cancelled, unmodified");
  check(chain, true, "cancelled, modified");
  EXPECT_EQ(w.runner()->result().status.code(), StatusCode::kCancelled);
}

// The editor's memory limit: analysis shows the refusal at the node, and a run fails with it.
TEST(EditorMemoryLimit, RefusesTensorsAboveTheLimit) {
  const EditorOptions o =
      ParseEditorArgs({"blockflow-editor", "--memory-limit", "1M", "--recover", "g.json"});
  EXPECT_TRUE(o.error.isEmpty()) << o.error.toStdString();
  EXPECT_EQ(o.memory_limit, 1u << 20);
  EXPECT_TRUE(o.recover);
  EXPECT_EQ(o.graph, "g.json");
  EXPECT_TRUE(ParseEditorArgs({"blockflow-editor", "--memory-limit=2G"}).error.isEmpty());
  EXPECT_EQ(ParseEditorArgs({"blockflow-editor", "--memory-limit", "12Q"}).error.toStdString(),
            "--memory-limit: '12Q' is not a byte count: unknown suffix 'Q' (give bytes, or a "
            "number with K, M or G, such as 512M or 2G)");

  MainWindow w;
  w.SetScripted(true);
  w.document()->SetMemoryLimit(o.memory_limit);
  w.document()->Reset(testing::GraphFromJson(R"({"format": "blockflow.graph", "version": 1,
    "nodes": [
    {"id": "shape", "op": "Const", "attrs": {"dtype": "int32", "shape": [2], "value": [1024, 1024]}},
    {"id": "r", "op": "RandomUniform", "inputs": {"shape": "shape"}}]})"));
  EXPECT_EQ(w.document()->memory_limit(), 1u << 20) << "the setting outlives the graph";
  const std::vector<std::string> issues = w.document()->IssuesFor("r");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_NE(issues[0].find("float32[1024,1024] (4.0 MiB), more than the memory limit of 1.0 MiB"),
            std::string::npos)
      << issues[0];
  QList<QVariant> args;
  ASSERT_TRUE(RunAndWait(w, &args));
  EXPECT_FALSE(args[0].toBool());
  EXPECT_TRUE(args[1].toString().contains("more than the memory limit"))
      << args[1].toString().toStdString();
  w.document()->SetMemoryLimit(4 << 20);
  EXPECT_TRUE(w.document()->analysis().ok());
  ASSERT_TRUE(RunAndWait(w, &args));
  EXPECT_TRUE(args[0].toBool()) << args[1].toString().toStdString();
}

}  // namespace
}  // namespace blockflow::editor
