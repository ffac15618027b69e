#include "editor/run_controller.h"

#include <chrono>
#include <memory>
#include <mutex>

#include <QMetaObject>

#include "core/npy.h"
#include "core/session.h"
#include "editor/graph_document.h"

namespace blockflow::editor {

namespace {

// Forwards the session's callbacks (worker threads) to the controller's thread as queued calls.
class QueuedObserver : public ExecutionObserver {
 public:
  explicit QueuedObserver(RunController* target) : target_(target) {}
  void OnRunBegin(const std::vector<std::string>& node_ids) override {
    QStringList ids;
    for (const auto& id : node_ids) ids << QString::fromStdString(id);
    total_ = static_cast<int>(node_ids.size());
    Post([ids](RunController* c) { emit c->started(ids); });
    const int total = total_;
    Post([total](RunController* c) { emit c->progress(0, total); });
  }
  void OnNodeBegin(const Node& node) override {
    const QString id = QString::fromStdString(node.id);
    Post([id](RunController* c) { emit c->nodeStarted(id); });
  }
  void OnNodeEnd(const Node& node, double ms, const Status& status) override {
    const QString id = QString::fromStdString(node.id);
    const bool ok = status.ok();
    const QString message = QString::fromStdString(status.message());
    const int done = ++done_;
    const int total = total_;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ms_[node.id] = ms;
    }
    Post([id, ms, ok, message, done, total](RunController* c) {
      emit c->nodeFinished(id, ms, ok, message);
      emit c->progress(done, total);
    });
  }
  /// Kernel times by node id (called after the run).
  std::map<std::string, double> TakeTimes() {
    std::lock_guard<std::mutex> lock(mu_);
    return ms_;
  }

 private:
  template <typename Fn>
  void Post(Fn fn) {
    RunController* c = target_;
    QMetaObject::invokeMethod(c, [c, fn] { fn(c); }, Qt::QueuedConnection);
  }

  RunController* target_;
  std::mutex mu_;
  std::map<std::string, double> ms_;
  std::atomic<int> done_{0};
  std::atomic<int> total_{0};
};

}  // namespace

Expected<std::map<std::string, Tensor>> LoadFeeds(const Graph& graph) {
  std::map<std::string, Tensor> feeds;
  for (const Node& node : graph.nodes()) {
    if (node.op != "Placeholder") continue;
    const std::string where = "node '" + node.id + "' (Placeholder): ";
    std::string file;
    if (node.ui.is_object() && node.ui.contains("feed") && node.ui["feed"].is_string()) {
      file = node.ui["feed"].get<std::string>();
    }
    if (file.empty()) {
      return NotFound(where + "no feed file: choose the .npy file to feed it in the attribute panel "
                              "(\"feed\", stored in the node's ui.feed)");
    }
    DType dtype = DType::kInvalid;
    if (node.attrs.is_object() && node.attrs.contains("dtype") && node.attrs["dtype"].is_string()) {
      dtype = ParseDType(node.attrs["dtype"].get<std::string>()).value_or(DType::kInvalid);
    }
    Expected<Tensor> t = ReadNpy(ResolveGraphPath(graph, file), dtype);
    if (!t.ok()) return t.status().WithPrefix(where + "feed: ");
    feeds[node.id] = std::move(t).value();
  }
  return feeds;
}

RunController::RunController(QObject* parent) : QObject(parent) {}

RunController::~RunController() {
  cancel_ = true;
  if (thread_.joinable()) thread_.join();
}

void RunController::ClearResult() {
  result_ = RunResult();
  has_result_ = false;
}

void RunController::Cancel() { cancel_ = true; }

void RunController::Start(const Graph& graph, int num_threads) {
  if (running_) return;
  if (thread_.joinable()) thread_.join();
  cancel_ = false;
  running_ = true;
  thread_ = std::thread([this, graph, num_threads] {
    const auto t0 = std::chrono::steady_clock::now();
    RunResult r;
    QueuedObserver observer(this);
    Expected<std::map<std::string, Tensor>> feeds = LoadFeeds(graph);
    if (!feeds.ok()) {
      r.status = feeds.status();
    } else {
      Session session(graph);
      RunOptions options;
      options.num_threads = num_threads;
      options.cancel = &cancel_;
      options.observer = &observer;
      options.all_outputs = &r.outputs;
      std::vector<Tensor> fetched;
      r.status = session.Run(*feeds, {}, &fetched, options);
      for (const auto& [id, outs] : r.outputs) r.executed.insert(id);
      r.ms = observer.TakeTimes();
      // Nodes that did not run (constants) still have values: inference computed them.
      const GraphAnalysis analysis = AnalyzeGraph(graph, OpRegistry::Global(), &*feeds);
      for (size_t i = 0; i < graph.nodes().size() && i < analysis.nodes.size(); ++i) {
        const std::string& id = graph.nodes()[i].id;
        if (r.outputs.count(id)) continue;
        std::vector<Tensor> values;
        for (const PortInfo& p : analysis.nodes[i].outputs) {
          if (!p.value) break;
          values.push_back(*p.value);
        }
        if (!values.empty() && values.size() == analysis.nodes[i].outputs.size()) r.outputs[id] = std::move(values);
      }
    }
    r.total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    auto shared = std::make_shared<RunResult>(std::move(r));
    QMetaObject::invokeMethod(this, [this, shared] { OnWorkerDone(std::move(*shared)); }, Qt::QueuedConnection);
  });
}

void RunController::OnWorkerDone(RunResult result) {
  if (thread_.joinable()) thread_.join();
  running_ = false;
  result_ = std::move(result);
  has_result_ = true;
  emit finished(result_.status.ok(), QString::fromStdString(result_.status.message()));
}

}  // namespace blockflow::editor

