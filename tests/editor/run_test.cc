// Runs from the editor: same results as a Session, clear errors, and the scripted command line.
#include <gtest/gtest.h>

#include <QFile>
#include <QImage>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>

#include "core/npy.h"
#include "core/session.h"
#include "editor/editor_main.h"
#include "editor/graph_document.h"
#include "editor/graph_scene.h"
#include "editor/main_window.h"
#include "editor/result_panel.h"
#include "editor/run_controller.h"
#include "test_util.h"

namespace blockflow::editor {
namespace {

using testing::RunAndWait;

// Opens basic.json in `w` (scripted) and runs it; `args` receives runFinished's arguments.
void OpenBasicAndRun(MainWindow& w, QList<QVariant>* args) {
  w.SetScripted(true);
  ASSERT_TRUE(w.OpenFile(testing::DataPath("basic.json")));
  ASSERT_TRUE(RunAndWait(w, args));
  ASSERT_TRUE((*args)[0].toBool()) << (*args)[1].toString().toStdString();
}

TEST(EditorRun, ResultsAreBitwiseEqualToASessionRun) {
  MainWindow w;
  QList<QVariant> args;
  ASSERT_NO_FATAL_FAILURE(OpenBasicAndRun(w, &args));

  Expected<Graph> g = LoadGraphFile(testing::DataPath("basic.json").toStdString());
  ASSERT_TRUE(g.ok());
  Expected<std::map<std::string, Tensor>> feeds = LoadFeeds(*g);
  ASSERT_TRUE(feeds.ok()) << feeds.status().message();
  Session session(*g);
  std::vector<Tensor> expected;
  ASSERT_TRUE(session.Run(*feeds, {"y", "scaled"}, &expected).ok());

  const RunResult& r = w.runner()->result();
  ASSERT_EQ(r.outputs.count("y"), 1u);
  ASSERT_EQ(r.outputs.count("scaled"), 1u);
  EXPECT_TRUE(r.outputs.at("y")[0].BitwiseEquals(expected[0]));
  EXPECT_TRUE(r.outputs.at("scaled")[0].BitwiseEquals(expected[1]));
  EXPECT_EQ(w.scene()->FindNode("y")->run_state(), RunState::kDone);
  EXPECT_TRUE(r.ms.count("y"));

  // The result panel shows the selected node's output: stats, heatmap, table.
  w.SelectNode("y");
  const QImage& heat = w.results()->heatmap();
  ASSERT_FALSE(heat.isNull());
  EXPECT_EQ(heat.width(), 12);
  EXPECT_EQ(heat.height(), 12);
  EXPECT_EQ(w.results()->model()->rowCount(), 12);
  EXPECT_EQ(w.results()->model()->columnCount(), 12);
  EXPECT_TRUE(w.results()->StatsText().contains("[1,12,12,2]"));

  // An edit invalidates the results.
  ASSERT_TRUE(w.document()->SetAttr("scale", "value", nlohmann::json::array({1, 1})).ok());
  EXPECT_FALSE(w.runner()->has_result());
  EXPECT_EQ(w.scene()->FindNode("y")->run_state(), RunState::kIdle);
}

TEST(EditorRun, RerunsReuseThePreparedSessionUntilTheGraphChanges) {
  MainWindow w;
  QList<QVariant> args;
  ASSERT_NO_FATAL_FAILURE(OpenBasicAndRun(w, &args));
  const Session* first = w.runner()->session();
  ASSERT_NE(first, nullptr);
  const Tensor y = w.runner()->result().outputs.at("y")[0];
  // Moving a node changes only editor data: the same session, its plan reused.
  w.document()->MoveNodes({{"y", QPointF(500, 500)}});
  ASSERT_TRUE(RunAndWait(w, &args));
  EXPECT_EQ(w.runner()->session(), first);
  EXPECT_EQ(first->cache_stats().plans_made, 1u);
  EXPECT_EQ(first->cache_stats().plans_reused, 1u);
  EXPECT_TRUE(w.runner()->result().outputs.at("y")[0].BitwiseEquals(y));
  // An attribute edit is a new graph: a new session.
  ASSERT_TRUE(w.document()->SetAttr("scale", "value", nlohmann::json::array({1, 1})).ok());
  ASSERT_TRUE(RunAndWait(w, &args));
  EXPECT_NE(w.runner()->session(), first);
}

TEST(EditorRun, MissingFeedIsAClearError) {
  MainWindow w;
  w.SetScripted(true);
  w.document()->Reset(
      testing::GraphFromJson(R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "dy", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [2]}},
    {"id": "out", "op": "Identity", "inputs": {"input": "dy"}}]})"));
  QList<QVariant> args;
  ASSERT_TRUE(RunAndWait(w, &args));
  EXPECT_FALSE(args[0].toBool());
  const QString msg = args[1].toString();
  EXPECT_TRUE(msg.startsWith("node 'dy' (Placeholder): no feed file")) << msg.toStdString();
  EXPECT_TRUE(w.StatusText().contains(msg)) << w.StatusText().toStdString();
  EXPECT_FALSE(w.runner()->running());
}

TEST(EditorRun, FeedOfTheWrongDTypeNamesTheFile) {
  QTemporaryDir dir;
  ASSERT_TRUE(
      WriteNpy(dir.filePath("dy.npy").toStdString(), Tensor::FromVector<double>({1.0, 2.0})).ok());
  Graph g = testing::GraphFromJson(R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "dy", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [2]}, "ui": {"feed": "dy.npy"}}]})");
  g.base_dir = dir.path().toStdString();
  Expected<std::map<std::string, Tensor>> feeds = LoadFeeds(g);
  ASSERT_FALSE(feeds.ok());
  EXPECT_EQ(feeds.status().message().rfind("node 'dy' (Placeholder): feed: ", 0), 0u)
      << feeds.status().message();
  EXPECT_NE(feeds.status().message().find("dy.npy"), std::string::npos);
}

TEST(EditorRun, CancelStopsTheRunAndKeepsTheUiUsable) {
  MainWindow w;
  w.SetScripted(true);
  const std::string json = testing::ConvChainJson();
  w.document()->Reset(testing::GraphFromJson(json));
  ASSERT_TRUE(w.document()->analysis().ok()) << w.document()->analysis().issues[0].ToString();
  QObject::connect(w.runner(), &RunController::nodeStarted, &w, [&w](const QString& id) {
    if (id == "c1") w.CancelRun();
  });
  QList<QVariant> args;
  ASSERT_TRUE(RunAndWait(w, &args));
  EXPECT_FALSE(args[0].toBool());
  EXPECT_TRUE(args[1].toString().contains("cancelled")) << args[1].toString().toStdString();
  EXPECT_TRUE(w.StatusText().startsWith("Run cancelled")) << w.StatusText().toStdString();
  EXPECT_FALSE(w.runner()->running());
  EXPECT_EQ(w.runner()->result().status.code(), StatusCode::kCancelled);
  EXPECT_EQ(w.runner()->result().executed.count("c10"), 0u);
}

TEST(EditorCommandLine, ParsesTheContract) {
  EditorOptions o =
      ParseEditorArgs({"blockflow-editor", "g.json", "--run", "--screenshot", "s.png"});
  EXPECT_TRUE(o.error.isEmpty());
  EXPECT_EQ(o.graph, "g.json");
  EXPECT_TRUE(o.run);
  EXPECT_EQ(o.screenshot, "s.png");
  EXPECT_EQ(ParseEditorArgs({"blockflow-editor", "--screenshot"}).error,
            "--screenshot needs a file name");
  EXPECT_EQ(ParseEditorArgs({"blockflow-editor", "--frobnicate"}).error,
            "unknown option --frobnicate");
  EXPECT_EQ(ParseEditorArgs({"blockflow-editor", "a.json", "b.json"}).error,
            "more than one graph file given");
}

QProcessEnvironment Headless() {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("QT_QPA_PLATFORM", "offscreen");
  return env;
}

TEST(EditorCommandLine, ScreenshotProducesAPng) {
  QTemporaryDir dir;
  const QString png = dir.filePath("shot.png");
  QProcess p;
  p.setProcessEnvironment(Headless());
  p.start(BF_EDITOR_EXE, {testing::DataPath("basic.json"), "--run", "--screenshot", png});
  ASSERT_TRUE(p.waitForFinished(60000));
  EXPECT_EQ(p.exitStatus(), QProcess::NormalExit);
  EXPECT_EQ(p.exitCode(), 0) << p.readAllStandardError().toStdString();
  QImage img(png);
  ASSERT_FALSE(img.isNull());
  EXPECT_GE(img.width(), 800);
  EXPECT_GE(img.height(), 500);
  QFile f(png);
  ASSERT_TRUE(f.open(QIODevice::ReadOnly));
  EXPECT_EQ(f.read(8), QByteArray("\x89PNG\r\n\x1a\n", 8));
}

// The environment of a machine without a display: no Qt platform named either.
QProcessEnvironment NoDisplay() {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  for (const char* name : {"QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY"}) env.remove(name);
  return env;
}

// Runs the editor with `args` in `env`; false if it did not finish within a minute.
struct EditorProcess {
  int code = -1;
  QString out, err;
};
bool RunEditorProcess(const QProcessEnvironment& env, const QStringList& args, EditorProcess* r) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(BF_EDITOR_EXE, args);
  if (!p.waitForFinished(60000)) return false;
  r->code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r->out = QString::fromUtf8(p.readAllStandardOutput());
  r->err = QString::fromUtf8(p.readAllStandardError());
  return true;
}

// --help and a wrong command line need no display: answered before Qt looks for one (Qt's
// platform plugin had aborted the process, exit 134).
TEST(EditorCommandLine, HelpAndMistakesNeedNoDisplay) {
  EditorProcess r;
  ASSERT_TRUE(RunEditorProcess(NoDisplay(), {"--help"}, &r));
  EXPECT_EQ(r.code, 0) << r.err.toStdString();
  EXPECT_TRUE(r.out.startsWith("usage: blockflow-editor")) << r.out.toStdString();
  ASSERT_TRUE(RunEditorProcess(NoDisplay(), {"--frobnicate"}, &r));
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.err.startsWith("error: unknown option --frobnicate\nusage: blockflow-editor"))
      << r.err.toStdString();
}

// Without a display a scripted screenshot renders offscreen by itself, and an interactive
// start says why it cannot show the editor (exit 1) instead of aborting.
TEST(EditorCommandLine, WithoutADisplayScreenshotsRenderOffscreen) {
  QTemporaryDir dir;
  const QString png = dir.filePath("shot.png");
  EditorProcess r;
  ASSERT_TRUE(
      RunEditorProcess(NoDisplay(), {testing::DataPath("basic.json"), "--screenshot", png}, &r));
  EXPECT_EQ(r.code, 0) << r.err.toStdString();
  EXPECT_FALSE(QImage(png).isNull());
  ASSERT_TRUE(RunEditorProcess(NoDisplay(), {testing::DataPath("basic.json")}, &r));
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(r.err.startsWith("error: no display to show the editor on")) << r.err.toStdString();
}

// Qt's own options still reach Qt: taken out before the editor's options are checked, and a
// platform named by one counts as a display.
TEST(EditorCommandLine, QtOptionsStillWork) {
  QTemporaryDir dir;
  const QString png = dir.filePath("shot.png");
  EditorProcess r;
  ASSERT_TRUE(RunEditorProcess(NoDisplay(),
                               {"-platform", "offscreen", "-style=fusion", "-reverse",
                                testing::DataPath("basic.json"), "--screenshot", png},
                               &r));
  EXPECT_EQ(r.code, 0) << r.err.toStdString();
  EXPECT_FALSE(QImage(png).isNull());
  // An interactive start on the platform named keeps running (it does not stop for want of a
  // display).
  QProcess p;
  p.setProcessEnvironment(NoDisplay());
  p.start(BF_EDITOR_EXE, {"-platform", "offscreen", testing::DataPath("basic.json")});
  ASSERT_TRUE(p.waitForStarted(10000));
  EXPECT_FALSE(p.waitForFinished(1500)) << p.readAllStandardError().toStdString();
  p.kill();
  p.waitForFinished(10000);
  ASSERT_TRUE(RunEditorProcess(NoDisplay(), {"--platform", "offscreen", "--frobnicate"}, &r));
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.err.startsWith("error: unknown option --frobnicate")) << r.err.toStdString();
  // Qt takes the platform only as a separate argument: "-platform=..." is nobody's option.
  ASSERT_TRUE(RunEditorProcess(NoDisplay(), {"-platform=offscreen", "--screenshot", png}, &r));
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.err.startsWith("error: unknown option -platform=offscreen")) << r.err.toStdString();
}

TEST(EditorCommandLine, FailedRunExitsWithOne) {
  QTemporaryDir dir;
  const QString graph = dir.filePath("nofeed.json");
  QFile f(graph);
  ASSERT_TRUE(f.open(QIODevice::WriteOnly));
  f.write(R"({"format": "blockflow.graph", "version": 1, "nodes": [
    {"id": "dy", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [2]}}]})");
  f.close();
  QProcess p;
  p.setProcessEnvironment(Headless());
  p.start(BF_EDITOR_EXE, {graph, "--run", "--screenshot", dir.filePath("shot.png")});
  ASSERT_TRUE(p.waitForFinished(60000));
  EXPECT_EQ(p.exitCode(), 1);
  const QString err = QString::fromUtf8(p.readAllStandardError());
  EXPECT_TRUE(err.contains("error: nofeed.json: node 'dy' (Placeholder): no feed file"))
      << err.toStdString();
  EXPECT_TRUE(QFile::exists(dir.filePath("shot.png")));
}

// Run > Allow Files Outside the Graph's Folder takes effect on the next run, either way (the
// prepared session is not reused across the setting).
TEST(EditorRun, AllowingFilesOutsideTheFolderTakesEffectOnTheNextRun) {
  QTemporaryDir dir;
  ASSERT_TRUE(QDir(dir.path()).mkpath("g"));
  ASSERT_TRUE(
      WriteNpy(dir.filePath("w.npy").toStdString(), Tensor::FromVector<float>({1, 2})).ok());
  testing::WriteText(dir.filePath("g/g.json"), R"({"format": "blockflow.graph", "version": 1,
    "nodes": [{"id": "w", "op": "Const", "attrs": {"dtype": "float32", "file": "../w.npy"}},
              {"id": "y", "op": "Identity", "inputs": {"input": "w"}}]})");
  MainWindow w;
  w.SetScripted(true);
  ASSERT_TRUE(w.OpenFile(dir.filePath("g/g.json")));
  QList<QVariant> args;
  ASSERT_TRUE(RunAndWait(w, &args));
  EXPECT_FALSE(args[0].toBool());
  ASSERT_TRUE(w.SetAllowOutsideFiles(true, /*confirm=*/true));
  ASSERT_TRUE(RunAndWait(w, &args));
  EXPECT_TRUE(args[0].toBool()) << args[1].toString().toStdString();
  EXPECT_FALSE(w.SetAllowOutsideFiles(false));
  ASSERT_TRUE(RunAndWait(w, &args));
  EXPECT_FALSE(args[0].toBool());
  EXPECT_TRUE(args[1].toString().contains("outside the graph's folder"))
      << args[1].toString().toStdString();
}

}  // namespace
}  // namespace blockflow::editor
