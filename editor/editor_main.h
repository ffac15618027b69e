// The editor's command line:
// `blockflow-editor [GRAPH.json] [--arrange] [--run] [--screenshot FILE.png]`.
#pragma once

#include <QString>
#include <QStringList>

class QApplication;

namespace blockflow::editor {

struct EditorOptions {
  QString graph;         // graph file to open ("" for a new graph)
  bool arrange = false;  // View > Arrange once the graph is open
  bool run = false;      // run once the graph is shown
  QString screenshot;    // save a PNG of the window and exit
  bool help = false;
  QString error;  // non-empty when the command line is wrong
};

/// Parses the arguments (args[0] is the program).
EditorOptions ParseEditorArgs(const QStringList& args);
/// The usage text.
QString EditorUsage();
/// Runs the editor in `app` (theme, window, scripted options); returns the exit code.
int RunEditor(QApplication& app);

}  // namespace blockflow::editor
