#include "editor/feed_editor.h"

#include <QCheckBox>

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

QWidget* MakeFeedRandomEditor(const nlohmann::json& ui,
                              const std::function<void(bool)>& set_random) {
  auto* box = new QCheckBox("random values of its shape");
  box->setObjectName("feed_random");
  const bool on = ui.is_object() && ui.contains("feed_random") && ui["feed_random"].is_boolean() &&
                  ui["feed_random"].get<bool>();
  box->setChecked(on);
  box->setToolTip(
      "Runs in the editor feed random values of the Placeholder's dtype and shape (the same on "
      "every run) instead of the feed file; kept in the node's ui.feed_random. `blockflow run` "
      "still needs --feed.");
  QObject::connect(box, &QCheckBox::toggled, box,
                   [set_random](bool checked) { set_random(checked); });
  return box;
}

}  // namespace blockflow::editor
