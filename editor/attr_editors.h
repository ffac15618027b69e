// The editors of single attributes, chosen from the attribute's schema alone (type, length,
// allowed values, file kind), never from a block's or an attribute's name. The attribute panel
// puts one per row; an editor commits and reports through the panel's AttrEditorHost.
//
//   AttrEditorHost host{commit, commit_patch, report, choose_file};
//   QWidget* w = MakeAttrEditor(*schema->FindAttr("strides"), node.attrs["strides"], host);
#pragma once

#include <QString>
#include <QWidget>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "core/schema.h"

class QToolButton;

namespace blockflow::editor {

/// Parses "1, 8, 8, 2" (commas and/or spaces) into a JSON array of numbers; integers stay
/// integers. Returns null and an error message in `error` when a token is not a finite number.
nlohmann::json ParseNumberList(const QString& text, QString* error);
/// The inverse of ParseNumberList for display.
QString FormatNumberList(const nlohmann::json& values);
/// An attribute value as editable text: null is empty, a string bare, anything else JSON.
QString JsonText(const nlohmann::json& value);
/// The style sheet of a line edit that holds an entry it refused.
inline constexpr char kErrorStyle[] = "QLineEdit { border: 1px solid #e5484d; }";

/// Marks an editor (a field, or a widget holding fields) as holding a refused or invalid value:
/// a red frame, and the reason first in its tooltip. An empty reason clears the mark and gives
/// back the tooltip it had.
void MarkFieldError(QWidget* field, const QString& reason);
/// The reason MarkFieldError gave `field` ("" when it is not marked).
QString FieldError(const QWidget* field);

/// What the editors of one node need from the panel that shows them.
struct AttrEditorHost {
  /// Sets one attribute as an undoable edit (null removes it, so its default applies).
  std::function<void(const std::string& attr, const nlohmann::json& value)> commit;
  /// Sets several attributes as one undoable edit (null values remove).
  std::function<void(const nlohmann::json& patch)> commit_patch;
  /// Shows a message in the status bar.
  std::function<void(const QString& text, bool error)> report;
  /// Asks the user for a file of `kind`: its name relative to the graph, or "" when cancelled.
  std::function<QString(const QString& title, FileKind kind)> choose_file;
};

/// The tooltip of an attribute: name, type, doc, default or required, allowed values.
QString AttrTooltip(const AttrDef& def);
/// The editor of attribute `def` showing `current` (null: unset; the default is shown):
/// a combo box for enums and dtypes, a check box for bools, one field per value for lists
/// with a length, a file field for file names, a line edit otherwise.
QWidget* MakeAttrEditor(const AttrDef& def, const nlohmann::json& current,
                        const AttrEditorHost& host);
/// A file name field: what it shows and asks.
struct FileField {
  QString text;  // the current file name
  FileKind kind = FileKind::kNpy;
  QString object_name;  // of the line edit, for tests and scripts
  QString placeholder;
  QString title;  // of the file dialog
};
/// A line edit with a "…" button that picks a file; `commit` receives the trimmed text when
/// editing ends or a file is picked.
QWidget* MakeFileEditor(const FileField& field, const std::function<void(const QString&)>& commit,
                        const AttrEditorHost& host);
/// The file name suffix of `kind`, e.g. ".npy".
QString FileSuffix(FileKind kind);
/// The "…" button that opens a file dialog for a file of `kind`.
QToolButton* NewBrowseButton(FileKind kind);

}  // namespace blockflow::editor
