// blockflow-editor: the visual editor. Everything lives in blockflow_editor_lib.
#include <QApplication>

#include "editor/editor_main.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  return blockflow::editor::RunEditor(app);
}
