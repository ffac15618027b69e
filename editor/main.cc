// blockflow-editor: the visual editor. Everything lives in blockflow_editor_lib.
#include <QApplication>

#include "editor/editor_main.h"

int main(int argc, char** argv) {
  blockflow::editor::EditorOptions options;
  if (const int code = blockflow::editor::PrepareEditor(argc, argv, &options); code >= 0) {
    return code;
  }
  QApplication app(argc, argv);
  return blockflow::editor::RunEditor(app, options);
}
