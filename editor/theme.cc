#include "editor/theme.h"

#include <QApplication>
#include <QFont>
#include <QFontDatabase>
#include <QPalette>
#include <QStyleFactory>

namespace blockflow::editor {

QColor DTypeColor(DType dtype) {
  struct Entry {
    DType dtype;
    QRgb rgb;
  };
  static constexpr Entry kColors[] = {{DType::kFloat16, 0x4fc3c9}, {DType::kBFloat16, 0x6ccf8f},
                                      {DType::kFloat32, 0x5b9cf5}, {DType::kFloat64, 0xa67df0},
                                      {DType::kInt32, 0xf09a3e},   {DType::kInt64, 0xe06c3c},
                                      {DType::kBool, 0xe86fb0}};
  for (const Entry& e : kColors) {
    if (e.dtype == dtype) return QColor(e.rgb);
  }
  return QColor(0x8a9099);
}

QColor CategoryColor(const QString& category) {
  // Hash to one of a few muted hues; red stays reserved for errors and failed nodes.
  static const int kHues[] = {260, 300, 275, 100, 145, 210, 178, 60, 230, 40, 320, 22};
  // FNV-1a: stable across runs (qHash is seeded per process).
  uint32_t h = 2166136261u;
  for (QChar c : category) h = (h ^ c.unicode()) * 16777619u;
  return QColor::fromHsv(kHues[h % (sizeof kHues / sizeof kHues[0])], 105, 125);
}

void ApplyDarkTheme(QApplication& app) {
  app.setStyle(QStyleFactory::create("Fusion"));
  QPalette p;
  const QColor window(0x26, 0x29, 0x2e), base(0x1e, 0x20, 0x24), text(0xe6, 0xe8, 0xeb);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, QColor(0x2a, 0x2d, 0x32));
  p.setColor(QPalette::ToolTipBase, QColor(0x30, 0x33, 0x39));
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::PlaceholderText, QColor(0x80, 0x86, 0x8f));
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, QColor(0x33, 0x36, 0x3c));
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, Qt::white);
  p.setColor(QPalette::Highlight, QColor(0x3d, 0x7e, 0xd6));
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::Link, QColor(0x6a, 0xa8, 0xf7));
  p.setColor(QPalette::Disabled, QPalette::Text, QColor(0x70, 0x75, 0x7c));
  p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(0x70, 0x75, 0x7c));
  p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(0x70, 0x75, 0x7c));
  app.setPalette(p);
  // A known sans font gives the same layout headless and on a desktop.
  if (QFontDatabase::families().contains("DejaVu Sans")) {
    QFont f("DejaVu Sans");
    f.setPointSizeF(9.5);
    app.setFont(f);
  }
  app.setStyleSheet(
      "QToolTip { color: #e6e8eb; background: #30333a; border: 1px solid #4a4f58; padding: 4px; }"
      "QDockWidget::title { background: #2e3137; padding: 5px 8px; }"
      "QDockWidget { font-weight: bold; }"
      "QDockWidget > QWidget { font-weight: normal; }"
      "QStatusBar { background: #202226; }"
      "QToolBar { spacing: 4px; border: none; }");
}

}  // namespace blockflow::editor
