// Colours and the application theme of the editor.
#pragma once

#include <QColor>
#include <QString>

#include "core/dtype.h"

class QApplication;

namespace blockflow::editor {

/// Canvas and node colours of the dark theme.
namespace palette {
// The canvas and its grid.
inline const QColor kCanvas(0x1d1f23), kGridMinor(0x25282d), kGridMajor(0x2e3238);
// Blocks: body, border and the selection outline.
inline const QColor kNodeBody(0x2b2e34), kNodeBorder(0x444952), kSelection(0xf0b429);
// Text, normal and secondary.
inline const QColor kText(0xe6e8eb), kTextDim(0x989fa8);
// A node's run state.
inline const QColor kError(0xe5484d), kOk(0x46b96e), kRunning(0xf2c03c), kPending(0x7a828c);
}  // namespace palette

/// The colour of a port or wire carrying `dtype` (grey when unknown).
QColor DTypeColor(DType dtype);
/// A stable title-bar colour for a block category (hashed, so new categories get one too).
QColor CategoryColor(const QString& category);
/// Fusion style, a dark palette and a readable default font.
void ApplyDarkTheme(QApplication& app);

}  // namespace blockflow::editor
