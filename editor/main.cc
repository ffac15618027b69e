// blockflow-editor: the visual editor. Everything lives in blockflow_editor_lib.
#include <QApplication>

#include "editor/editor_main.h"

int main(int argc, char** argv) {
  if (const int code = blockflow::editor::PrepareEditor(argc, argv); code >= 0) return code;
  QApplication app(argc, argv);
  return blockflow::editor::RunEditor(app);
}
