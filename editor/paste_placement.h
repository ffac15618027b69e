// Where pasted nodes land: at the cursor when it is on the canvas, else beside the copied nodes,
// clear of them (never on top of the original).
#pragma once

#include <QPointF>
#include <QRectF>
#include <optional>

namespace blockflow::editor {

/// The offset to add to the pasted nodes' saved positions. `pasted_top_left`: the top-left of
/// their saved positions; `cursor`: the cursor on the canvas (scene coordinates), if it is
/// there; `original`: the scene rectangle the copied nodes cover (drawn size included);
/// `repeat`: 1 for the first paste of a copy, 2 for the second, ... (each lands clear of the
/// one before).
QPointF PasteOffset(QPointF pasted_top_left, const std::optional<QPointF>& cursor,
                    const QRectF& original, int repeat);

}  // namespace blockflow::editor
