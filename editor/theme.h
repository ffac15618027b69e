// Colours and the application theme of the editor.
#pragma once

#include <QColor>
#include <QString>

#include "core/dtype.h"

class QApplication;

namespace blockflow::editor {

/// Canvas and node colours of the dark theme.
namespace palette {
inline const QColor kCanvas(0x1d, 0x1f, 0x23);
inline const QColor kGridMinor(0x25, 0x28, 0x2d);
inline const QColor kGridMajor(0x2e, 0x32, 0x38);
inline const QColor kNodeBody(0x2b, 0x2e, 0x34);
inline const QColor kNodeBorder(0x44, 0x49, 0x52);
inline const QColor kSelection(0xf0, 0xb4, 0x29);
inline const QColor kText(0xe6, 0xe8, 0xeb);
inline const QColor kTextDim(0x98, 0x9f, 0xa8);
inline const QColor kError(0xe5, 0x48, 0x4d);
inline const QColor kOk(0x46, 0xb9, 0x6e);
inline const QColor kRunning(0xf2, 0xc0, 0x3c);
inline const QColor kPending(0x7a, 0x82, 0x8c);
}  // namespace palette

/// The colour of a port or wire carrying `dtype` (grey when unknown).
QColor DTypeColor(DType dtype);
/// A stable title-bar colour for a block category (hashed, so new categories get one too).
QColor CategoryColor(const QString& category);
/// Fusion style, a dark palette and a readable default font.
void ApplyDarkTheme(QApplication& app);

}  // namespace blockflow::editor
