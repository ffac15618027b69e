#include "editor/editor_main.h"

#include <QApplication>
#include <cstdio>
#include <cstdlib>

#include "blocks/register_blocks.h"
#include "core/limits.h"
#include "editor/graph_document.h"
#include "editor/main_window.h"
#include "editor/theme.h"

namespace blockflow::editor {

QString EditorUsage() {
  return "usage: blockflow-editor [GRAPH.json] [--arrange] [--run] [--screenshot FILE.png]\n"
         "                        [--memory-limit BYTES] [--recover]\n"
         "  GRAPH.json          open this graph\n"
         "  --arrange           lay the graph out once it is open (as View > Arrange)\n"
         "  --run               run the graph once it is shown (as the Run button)\n"
         "  --screenshot FILE   save a PNG of the window (after the run) and exit;\n"
         "                      exit code 1 if the run failed\n"
         "  --memory-limit BYTES  refuse graphs and feeds whose tensors need more than\n"
         "                      BYTES (suffixes K, M, G); default: half of this machine's memory\n"
         "  --recover           take back the graph an editor that crashed autosaved,\n"
         "                      without asking (otherwise a dialog offers it at start)\n"
         "Works headless with QT_QPA_PLATFORM=offscreen; --screenshot without a display\n"
         "(no DISPLAY or WAYLAND_DISPLAY) renders offscreen by itself.\n";
}

EditorOptions ParseEditorArgs(const QStringList& args) {
  EditorOptions o;
  for (int i = 1; i < args.size(); ++i) {
    const QString& a = args[i];
    if (a == "--run") {
      o.run = true;
    } else if (a == "--arrange") {
      o.arrange = true;
    } else if (a == "--screenshot") {
      if (i + 1 >= args.size()) {
        o.error = "--screenshot needs a file name";
        return o;
      }
      o.screenshot = args[++i];
    } else if (a.startsWith("--screenshot=")) {
      o.screenshot = a.mid(13);
    } else if (a == "--recover") {
      o.recover = true;
    } else if (a == "--memory-limit" || a.startsWith("--memory-limit=")) {
      QString value;
      if (a.startsWith("--memory-limit=")) {
        value = a.mid(15);
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        o.error = "--memory-limit needs a byte count";
        return o;
      }
      Expected<uint64_t> bytes = ParseByteSize(value.toStdString());
      if (!bytes.ok()) {
        o.error = QString::fromStdString("--memory-limit: " + bytes.status().message());
        return o;
      }
      o.memory_limit = *bytes;
    } else if (a == "--help" || a == "-h") {
      o.help = true;
    } else if (a.startsWith("-")) {
      o.error = "unknown option " + a;
      return o;
    } else if (o.graph.isEmpty()) {
      o.graph = a;
    } else {
      o.error = "more than one graph file given";
      return o;
    }
  }
  return o;
}

namespace {

// Whether the environment names a display or a Qt platform (an unset or empty variable names
// none).
bool HasDisplay() {
  for (const char* name : {"QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') return true;
  }
  return false;
}

// Qt 6's own command-line options, which QApplication takes out of its arguments(): those
// followed by a value, those that take theirs after '=' (the first two either way), and those
// that take none. Either may be given with one dash or two. (-geometry, -title, -icon and
// -display are the xcb platform's; set aside here on any platform, where Qt ignores them.)
const char* const kQtValueOptions[] = {
    "style",         "stylesheet", "platform",        "platformpluginpath",
    "platformtheme", "plugin",     "qwindowgeometry", "qwindowicon",
    "qwindowtitle",  "session",    "geometry",        "title",
    "icon",          "display"};
const char* const kQtAssignedOptions[] = {"style", "stylesheet", "qmljsdebugger"};
const char* const kQtFlags[] = {"reverse", "widgetcount", "nograb", "dograb"};

// The arguments without Qt's own options, as QApplication::arguments() will give them;
// `platform` is set when one names the Qt platform.
QStringList WithoutQtOptions(const QStringList& args, bool* platform) {
  QStringList kept;
  for (int i = 0; i < args.size(); ++i) {
    const QString& a = args[i];
    if (i == 0 || !a.startsWith('-') || a == "--" || a.startsWith("---")) {
      kept << a;
      continue;
    }
    const QString bare = a.mid(a.startsWith("--") ? 2 : 1);
    bool qt = false;
    for (const char* option : kQtValueOptions) {
      if (bare != QLatin1String(option)) continue;
      qt = true;
      if (i + 1 < args.size()) {
        ++i;  // its value
        if (bare == "platform") *platform = true;
      }
    }
    for (const char* option : kQtAssignedOptions) {
      qt = qt || bare.startsWith(QLatin1String(option) + '=');
    }
    for (const char* flag : kQtFlags) qt = qt || bare == QLatin1String(flag);
    if (!qt) kept << a;
  }
  return kept;
}

}  // namespace

int PrepareEditor(int argc, char** argv, EditorOptions* options) {
  QStringList args;
  for (int i = 0; i < argc; ++i) args << QString::fromLocal8Bit(argv[i]);
  bool platform = false;
  *options = ParseEditorArgs(WithoutQtOptions(args, &platform));
  const EditorOptions& o = *options;
  if (o.help) {
    std::fputs(EditorUsage().toUtf8().constData(), stdout);
    return 0;
  }
  if (!o.error.isEmpty()) {
    std::fprintf(stderr, "error: %s\n%s", o.error.toUtf8().constData(),
                 EditorUsage().toUtf8().constData());
    return 2;
  }
  if (platform || HasDisplay()) return -1;
  if (!o.screenshot.isEmpty()) {
    setenv("QT_QPA_PLATFORM", "offscreen", 1);
    return -1;
  }
  std::fputs(
      "error: no display to show the editor on (DISPLAY and WAYLAND_DISPLAY are unset).\n"
      "Run it on a desktop, or headless with --screenshot FILE.png (or with\n"
      "QT_QPA_PLATFORM=offscreen).\n",
      stderr);
  return 1;
}

int RunEditor(QApplication& app, const EditorOptions& o) {
  QCoreApplication::setOrganizationName("blockflow");
  QCoreApplication::setApplicationName("blockflow-editor");
  RegisterBuiltinBlocks();
  ApplyDarkTheme(app);
  MainWindow window;
  const bool scripted = !o.screenshot.isEmpty();
  window.SetScripted(scripted);
  window.document()->SetMemoryLimit(o.memory_limit);
  if (!o.graph.isEmpty() && !window.OpenFile(o.graph) && scripted) return 1;
  window.show();
  if (o.arrange) window.Arrange();
  if (o.recover) window.SetRecoveryPrompt([](const QString&) { return RecoveryChoice::kRecover; });
  window.OfferRecovery();
  if (scripted) {
    int code = 0;
    window.ScriptedScreenshot(o.screenshot, o.run, [&code, &app](int c) {
      code = c;
      app.exit(c);
    });
    app.exec();
    return code;
  }
  if (o.run) window.Run();
  return app.exec();
}

}  // namespace blockflow::editor
