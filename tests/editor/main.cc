// The editor tests' main: headless Qt (offscreen) before the one QApplication.
#include <gtest/gtest.h>

#include <QApplication>
#include <QStandardPaths>

#include "blocks/register_blocks.h"

int main(int argc, char** argv) {
  qputenv("QT_QPA_PLATFORM", "offscreen");
  // Settings (Open Recent, ...) go to a test location, never the user's: before anything
  // creates a QSettings, which fixes its folder once.
  QStandardPaths::setTestModeEnabled(true);
  QApplication app(argc, argv);
  QCoreApplication::setOrganizationName("blockflow-tests");
  QCoreApplication::setApplicationName("bf_editor_tests");
  blockflow::RegisterBuiltinBlocks();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
