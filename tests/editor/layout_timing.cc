// Times the editor on large graphs: open (read, analyse, draw), View > Arrange, and Fit to View
// with one full repaint, and open of the same graph without positions (laid out on open).
// Not a test: it prints figures (docs/editor.md quotes them). Rounds interleave the graphs.
//
//   QT_QPA_PLATFORM=offscreen taskset -c 1 build/bin/bf_editor_layout_timing 5 g200.json g1000.json
#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "blocks/register_blocks.h"
#include "core/graph.h"
#include "editor/auto_layout.h"
#include "editor/graph_document.h"
#include "editor/graph_scene.h"
#include "editor/graph_view.h"
#include "editor/main_window.h"

namespace {

using blockflow::editor::MainWindow;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The graph of `path` without positions, written beside it as NAME.unplaced.json (so that
// relative Const files still resolve).
QString WithoutPositions(const QString& path) {
  blockflow::Expected<blockflow::Graph> g = blockflow::LoadGraphFile(path.toStdString());
  if (!g.ok()) return {};
  for (blockflow::Node& n : g->nodes()) {
    if (n.ui.is_object()) {
      n.ui.erase("x");
      n.ui.erase("y");
      if (n.ui.empty()) n.ui = nullptr;
    }
  }
  QString out =
      QFileInfo(path).absolutePath() + "/" + QFileInfo(path).completeBaseName() + ".unplaced.json";
  if (!blockflow::SaveGraphFile(*g, out.toStdString()).ok()) return {};
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  QCoreApplication::setOrganizationName("blockflow-tests");
  QCoreApplication::setApplicationName("bf_editor_layout_timing");
  blockflow::RegisterBuiltinBlocks();
  if (argc < 3) {
    std::fprintf(stderr, "usage: bf_editor_layout_timing ROUNDS GRAPH.json...\n");
    return 2;
  }
  const int rounds = std::max(1, std::atoi(argv[1]));
  std::vector<QString> files;
  for (int i = 2; i < argc; ++i) files.push_back(QString::fromLocal8Bit(argv[i]));
  std::map<QString, QString> unplaced;
  for (const QString& f : files) unplaced[f] = WithoutPositions(f);
  std::map<QString, std::map<std::string, std::vector<double>>> ms;
  std::map<QString, size_t> nodes;
  for (int r = 0; r < rounds; ++r) {
    for (const QString& f : files) {
      QElapsedTimer t;
      {
        MainWindow w;
        w.SetScripted(true);
        w.resize(1600, 1000);
        w.show();
        QApplication::processEvents();
        t.start();
        if (!w.OpenFile(f)) return 1;
        QApplication::processEvents();
        ms[f]["open"].push_back(t.nsecsElapsed() / 1e6);
        nodes[f] = w.document()->graph().nodes().size();
        // The layout alone, with dot and with the simple layering (no scene update).
        auto size_of = [&w](const std::string& id) {
          auto* item = w.scene()->FindNode(id);
          return item ? item->body_size() : QSizeF(180, 80);
        };
        for (bool dot : {true, false}) {
          blockflow::editor::LayoutOptions options;
          options.use_graphviz = dot;
          t.restart();
          const auto pos =
              blockflow::editor::ComputeLayout(w.document()->graph(), {}, size_of, options);
          ms[f][dot ? "layout dot" : "layout simple"].push_back(t.nsecsElapsed() / 1e6);
          if (pos.empty()) return 1;
        }
        t.restart();
        blockflow::editor::ArrangeNodes(w.scene(), {}, /*undoable=*/true);
        ms[f]["arrange"].push_back(t.nsecsElapsed() / 1e6);
        t.restart();
        w.view()->FitToGraph();
        w.view()->viewport()->repaint();
        ms[f]["fit+paint"].push_back(t.nsecsElapsed() / 1e6);
      }
      {
        MainWindow w;
        w.SetScripted(true);
        w.resize(1600, 1000);
        w.show();
        QApplication::processEvents();
        t.restart();
        if (!w.OpenFile(unplaced[f])) return 1;
        QApplication::processEvents();
        ms[f]["open unplaced (+layout)"].push_back(t.nsecsElapsed() / 1e6);
      }
    }
  }
  std::printf("layout engine: %s; %d rounds, medians in ms\n",
              blockflow::editor::LayoutEngineName().toUtf8().constData(), rounds);
  for (const QString& f : files) {
    std::printf("%-24s %5zu nodes", QFileInfo(f).fileName().toUtf8().constData(), nodes[f]);
    for (const char* k :
         {"open", "layout dot", "layout simple", "arrange", "fit+paint", "open unplaced (+layout)"})
      std::printf("  %s %.0f", k, Median(ms[f][k]));
    std::printf("\n");
  }
  for (const auto& [f, u] : unplaced) QFile::remove(u);
  return 0;
}
