#include "editor/autosave.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QStandardPaths>
#include <atomic>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/npy.h"
#include "editor/graph_document.h"

namespace blockflow::editor {
namespace {

constexpr const char* kFormat = "blockflow.recovery";

QString LockPath(const QString& path) { return path + ".lock"; }

}  // namespace

QString RecoveryDir() {
  return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + "/recovery";
}

Expected<Graph> RecoveryFile::Load() const {
  const std::string origin = source_path.empty() ? path.toStdString() : source_path;
  ASSIGN_OR_RETURN(Graph g, ParseGraphJson(graph_json, origin, base_dir));
  g.source_path = source_path;
  return g;
}

void RecoveryFile::Discard() {
  QFile::remove(path);
  if (lock) lock->unlock();
}

std::vector<RecoveryFile> FindRecoveryFiles(const QString& dir) {
  std::vector<RecoveryFile> found;
  const QDir folder(dir);
  // Newest first: the one a user most likely wants back.
  for (const QFileInfo& info : folder.entryInfoList({"autosave-*.json"}, QDir::Files, QDir::Time)) {
    RecoveryFile r;
    r.path = info.absoluteFilePath();
    r.lock = std::make_shared<QLockFile>(LockPath(r.path));
    // Stale only when its process is gone: a long-running editor's lock is never too old.
    r.lock->setStaleLockTime(0);
    if (!r.lock->tryLock(0)) continue;  // an editor that is still running owns it
    Expected<std::string> text = ReadFile(r.path.toStdString());
    if (!text.ok()) continue;
    try {
      const nlohmann::json j = nlohmann::json::parse(*text);
      if (j.value("format", "") != kFormat || !j.contains("graph") || !j["graph"].is_string())
        continue;
      r.source_path = j.value("source_path", "");
      r.base_dir = j.value("base_dir", "");
      r.saved_at = QString::fromStdString(j.value("saved_at", ""));
      r.graph_json = j["graph"].get<std::string>();
    } catch (const std::exception&) {
      continue;  // not ours, or damaged: left alone
    }
    found.push_back(std::move(r));
  }
  return found;
}

Autosaver::Autosaver(GraphDocument* doc, QString dir, int interval_ms)
    : doc_(doc), dir_(dir.isEmpty() ? RecoveryDir() : std::move(dir)) {
  static std::atomic<int> count{0};
  path_ = dir_ + QString("/autosave-%1-%2.json")
                     .arg(QCoreApplication::applicationPid())
                     .arg(count.fetch_add(1));
  connect(doc_, &GraphDocument::graphChanged, this, [this] { changed_ = true; });
  // Saved (or back to the saved state): nothing to recover any more.
  connect(doc_, &GraphDocument::fileStateChanged, this, [this] {
    if (!doc_->IsModified()) Discard();
  });
  connect(&timer_, &QTimer::timeout, this, &Autosaver::Tick);
  timer_.start(interval_ms);
}

Autosaver::~Autosaver() {
  if (!abandoned_) RemoveFile();  // the document may be gone already: not touched here
}

bool Autosaver::Tick() {
  if (abandoned_) return true;
  if (!doc_->IsModified()) {
    Discard();
    return true;
  }
  if (!changed_) return true;
  if (!lock_) {
    QDir().mkpath(dir_);
    lock_ = std::make_unique<QLockFile>(LockPath(path_));
    lock_->setStaleLockTime(0);
    if (!lock_->tryLock(0)) {
      last_error_ = "cannot lock the recovery file '" + LockPath(path_) + "'";
      lock_.reset();
      return false;
    }
  }
  const Graph& g = doc_->graph();
  std::error_code ec;
  const std::string base_dir =
      g.base_dir.empty() ? std::string() : std::filesystem::absolute(g.base_dir, ec).string();
  const nlohmann::json j = {
      {"format", kFormat},
      {"version", 1},
      {"source_path", g.source_path.empty()
                          ? std::string()
                          : std::filesystem::absolute(g.source_path, ec).string()},
      {"base_dir", base_dir},
      {"saved_at", QDateTime::currentDateTimeUtc().toString(Qt::ISODate).toStdString()},
      {"graph", SerializeGraph(g, doc_->registry())}};
  // Atomic (a temporary beside it, flushed, renamed): a crash mid-write keeps the last one.
  const Status s = WriteFileAtomic(path_.toStdString(), j.dump(1));
  if (!s.ok()) {
    last_error_ = QString::fromStdString(s.message());
    return false;
  }
  changed_ = false;
  ++writes_;
  return true;
}

void Autosaver::RemoveFile() {
  QFile::remove(path_);
  if (lock_) {
    lock_->unlock();
    lock_.reset();
  }
}

void Autosaver::Discard() {
  RemoveFile();
  changed_ = doc_->IsModified();  // edits made since still need an autosave
}

void Autosaver::Abandon() {
  timer_.stop();
  abandoned_ = true;
  if (lock_) {
    lock_->unlock();
    lock_.reset();
  }
}

}  // namespace blockflow::editor
