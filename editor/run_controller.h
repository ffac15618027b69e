// RunController: runs a graph through blockflow::Session on a worker thread, reporting node
// states and progress through queued signals (so the UI never blocks), with cancellation.
//
//   RunController run;
//   connect(&run, &RunController::finished, ...);
//   run.Start(doc.graph());   // feeds come from the Placeholders' ui.feed files
#pragma once

#include <QObject>
#include <QStringList>
#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/file_cache.h"
#include "core/graph.h"
#include "core/session.h"
#include "core/tensor.h"

namespace blockflow::editor {

/// What one run produced.
struct RunResult {
  Status status;
  /// Outputs of every node whose values are known after the run: executed nodes, and
  /// constant nodes whose values inference computed.
  std::map<std::string, std::vector<Tensor>> outputs;
  std::map<std::string, double> ms;  // kernel time of each executed node
  std::set<std::string> executed;    // nodes whose kernels ran
  double total_ms = 0;
};

/// The feeds of a graph's Placeholders: each reads its `ui.feed` .npy file (relative to the
/// graph file), checked against the Placeholder's dtype and shape in `analysis` (the graph's,
/// without feeds); one with `"ui": {"feed_random": true}` gets random values of its dtype and
/// shape instead (uniform in [-1, 1) for floats, 0..9 for integers; the same on every run). A
/// Placeholder with neither is an error.
Expected<std::map<std::string, Tensor>> LoadFeeds(const Graph& graph,
                                                  const GraphAnalysis& analysis);
/// The same, analysing the graph first.
Expected<std::map<std::string, Tensor>> LoadFeeds(const Graph& graph);

class RunController : public QObject {
  Q_OBJECT

 public:
  explicit RunController(QObject* parent = nullptr);
  ~RunController() override;

  bool running() const { return running_; }
  /// Starts running a copy of `graph`; ignored while a run is in progress.
  void Start(const Graph& graph, int num_threads = 0);
  /// Asks the run to stop (between nodes and inside kernels).
  void Cancel();
  /// The last finished run.
  const RunResult& result() const { return result_; }
  bool has_result() const { return has_result_; }
  /// The session of the last run (null before the first): reruns of an unchanged graph reuse it.
  const Session* session() const { return session_.get(); }
  void ClearResult();

 signals:
  void started(const QStringList& node_ids);
  void nodeStarted(const QString& id);
  void nodeFinished(const QString& id, double ms, bool ok, const QString& message);
  void progress(int done, int total);
  /// The run ended; `message` is the error when !ok (NodeIssue-style text).
  void finished(bool ok, const QString& message);

 private:
  void OnWorkerDone(RunResult result);
  // The session for `graph`: the last one while the graph is unchanged apart from editor-only
  // data, so a rerun reuses its prepared plan.
  std::shared_ptr<const Session> SessionFor(const Graph& graph);

  std::thread thread_;
  std::atomic<bool> cancel_{false};
  bool running_ = false;
  bool has_result_ = false;
  RunResult result_;
  std::shared_ptr<const Session> session_;
  std::string session_key_;  // the graph the session runs, serialised without ui data
  // Const files are read once for every run of this editor, re-read when they change.
  std::shared_ptr<TensorFileCache> file_cache_ = std::make_shared<TensorFileCache>();
};

}  // namespace blockflow::editor
