// The feed editor of a block whose output is fed at run time (OutputDef::feed_file; in the
// builtin blocks, Placeholder): the file the editor feeds when it runs the graph, kept in the
// node's `ui.feed` relative to the graph file.
#pragma once

#include <QWidget>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/schema.h"
#include "editor/attr_editors.h"

namespace blockflow::editor {

/// The editor of `ui.feed` of a node with `ui`, for a file of `kind`; `set_feed` receives the
/// new name ("" removes it). The line edit is named "feed_text".
QWidget* MakeFeedEditor(const nlohmann::json& ui, FileKind kind,
                        const std::function<void(const QString&)>& set_feed,
                        const AttrEditorHost& host);

/// The "random values of its shape" check box ("feed_random") of a node with `ui`: checked when
/// `ui.feed_random` is true; `set_random` receives the new state. The editor then feeds random
/// values instead of the file (run_controller.h); `blockflow run` still needs --feed.
QWidget* MakeFeedRandomEditor(const nlohmann::json& ui,
                              const std::function<void(bool)>& set_random);

}  // namespace blockflow::editor
