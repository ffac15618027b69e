// Autosave and crash recovery. While a graph has unsaved edits, an Autosaver writes it every
// 30 s (only when it changed since the last autosave or save) to a recovery file beside the
// user's settings (QStandardPaths::AppDataLocation/recovery, never beside the graph), atomically.
// A normal save or close removes the file. A file left behind by an editor that crashed or was
// killed is found at the next start and offered back (MainWindow::OfferRecovery).
//
//   Autosaver saver(doc);                       // one per window; starts its timer
//   for (RecoveryFile& r : FindRecoveryFiles(RecoveryDir())) ...   // at start-up
#pragma once

#include <QLockFile>
#include <QObject>
#include <QString>
#include <QTimer>
#include <memory>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/status.h"

namespace blockflow::editor {

class GraphDocument;

/// The folder of recovery files: QStandardPaths::AppDataLocation + "/recovery".
QString RecoveryDir();

/// A recovery file left by an editor that is no longer running, claimed by this process (its
/// lock is held until Discard or destruction, so two editors never offer the same file).
struct RecoveryFile {
  QString path;
  std::string source_path;  // the graph's file when it was autosaved ("" for a new graph)
  std::string base_dir;     // the folder its relative file names resolve against
  std::string graph_json;   // graph JSON v1
  QString saved_at;         // ISO 8601, UTC
  std::shared_ptr<QLockFile> lock;

  /// The graph as autosaved; errors name the recovery file.
  Expected<Graph> Load() const;
  /// Removes the file (after it was recovered or declined for good).
  void Discard();
};

/// The recovery files in `dir` whose editor is gone (its lock is stale or absent); files that
/// cannot be read are skipped (and left alone).
std::vector<RecoveryFile> FindRecoveryFiles(const QString& dir);

class Autosaver : public QObject {
  Q_OBJECT

 public:
  /// Autosaves `doc` into `dir` (default: RecoveryDir()) every `interval_ms`.
  explicit Autosaver(GraphDocument* doc, QString dir = QString(), int interval_ms = 30000);
  ~Autosaver() override;

  /// The recovery file this editor writes: DIR/autosave-PID-N.json.
  QString path() const { return path_; }
  /// Changes the interval (tests use a short one).
  void SetInterval(int ms) { timer_.setInterval(ms); }
  /// What the timer does: writes the recovery file when the document has unsaved edits that
  /// changed since the last autosave; removes it when there are none. Returns false on a write
  /// error (also in last_error()).
  bool Tick();
  /// Removes the recovery file (after a normal save or close).
  void Discard();
  /// Stops autosaving and lets go of the recovery file as a crash would (tests).
  void Abandon();
  /// Recovery files written so far.
  int writes() const { return writes_; }
  QString last_error() const { return last_error_; }

 private:
  void RemoveFile();

  GraphDocument* doc_;
  QString dir_, path_;
  QTimer timer_;
  std::unique_ptr<QLockFile> lock_;
  bool changed_ = false;  // the graph changed since the last autosave
  bool abandoned_ = false;
  int writes_ = 0;
  QString last_error_;
};

}  // namespace blockflow::editor
