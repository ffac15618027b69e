// The value editor of an attribute that a file can give instead (AttrDef::alternative_to; in
// the builtin blocks, Const's `value` and `file`): one row with a mode (a list of values, one
// number that fills the shape, or a file), the text, and a file chooser in file mode.
#pragma once

#include <QWidget>
#include <nlohmann/json.hpp>

#include "core/schema.h"
#include "editor/attr_editors.h"

namespace blockflow::editor {

/// The editor of the pair `value_def` / `file_def` (whose alternative_to names `value_def`)
/// for a node with `attrs`. A commit sets one of the two and removes the other, as one edit.
/// Children: a QComboBox "value_mode" and a QLineEdit "value_text".
QWidget* MakeConstValueEditor(const AttrDef& value_def, const AttrDef& file_def,
                              const nlohmann::json& attrs, const AttrEditorHost& host);

}  // namespace blockflow::editor
