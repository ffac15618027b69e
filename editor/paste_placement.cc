#include "editor/paste_placement.h"

#include <algorithm>

namespace blockflow::editor {

QPointF PasteOffset(QPointF pasted_top_left, const std::optional<QPointF>& cursor,
                    const QRectF& original, int repeat) {
  if (cursor) return *cursor - pasted_top_left;
  // To the right of the original by its own width and a gap, once per repeat.
  constexpr double kGap = 40;
  return QPointF((original.width() + kGap) * std::max(repeat, 1), 0);
}

}  // namespace blockflow::editor
