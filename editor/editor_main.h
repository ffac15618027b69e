// The editor's command line:
// `blockflow-editor [GRAPH.json] [--arrange] [--run] [--screenshot FILE.png]`.
#pragma once

#include <QString>
#include <QStringList>
#include <cstdint>

class QApplication;

namespace blockflow::editor {

struct EditorOptions {
  QString graph;              // graph file to open ("" for a new graph)
  bool arrange = false;       // View > Arrange once the graph is open
  bool run = false;           // run once the graph is shown
  QString screenshot;         // save a PNG of the window and exit
  bool recover = false;       // take back an autosaved graph without asking
  uint64_t memory_limit = 0;  // --memory-limit in bytes (0: half of memory)
  bool help = false;
  QString error;  // non-empty when the command line is wrong
};

/// Parses the arguments (args[0] is the program).
EditorOptions ParseEditorArgs(const QStringList& args);
/// The usage text.
QString EditorUsage();
/// What the editor does before it makes its QApplication: reads the command line into `options`
/// (Qt's own options set aside, as QApplication takes them; --help and mistakes need no
/// display), and where Qt shows nothing (no QT_QPA_PLATFORM, DISPLAY or WAYLAND_DISPLAY), a
/// scripted screenshot renders offscreen and an interactive start stops with a message instead
/// of Qt's abort. Returns the exit code, or -1 to go on and make the application (having set
/// QT_QPA_PLATFORM=offscreen where a screenshot needs it).
int PrepareEditor(int argc, char** argv, EditorOptions* options);
/// Runs the editor in `app` with the options PrepareEditor read (theme, window, scripted
/// options); returns the exit code.
int RunEditor(QApplication& app, const EditorOptions& options);

}  // namespace blockflow::editor
