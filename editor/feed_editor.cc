#include "editor/feed_editor.h"

namespace blockflow::editor {

QWidget* MakeFeedEditor(const nlohmann::json& ui, FileKind kind,
                        const std::function<void(const QString&)>& set_feed,
                        const AttrEditorHost& host) {
  FileField field;
  field.kind = kind;
  field.object_name = "feed_text";
  field.placeholder = FileSuffix(kind) + " file fed when run from the editor";
  field.title = "Feed";
  if (ui.is_object() && ui.contains("feed")) field.text = JsonText(ui["feed"]);
  QWidget* w = MakeFileEditor(field, set_feed, host);
  w->setToolTip(
      "The file fed to this node when the graph runs in the editor (kept in the node's ui.feed, "
      "relative to the graph file).");
  return w;
}

}  // namespace blockflow::editor
