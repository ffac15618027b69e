#include "editor/run_controller.h"

#include <QMetaObject>
#include <chrono>
#include <functional>
#include <memory>
#include <random>

#include "core/feeds.h"
#include "core/session.h"
#include "core/text.h"
#include "core/timing_observer.h"

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
    Post([id, ms, ok, message, done, total](RunController* c) {
      emit c->nodeFinished(id, ms, ok, message);
      emit c->progress(done, total);
    });
  }

 private:
  template <typename Fn>
  void Post(Fn fn) {
    RunController* c = target_;
    QMetaObject::invokeMethod(
        c, [c, fn] { fn(c); }, Qt::QueuedConnection);
  }

  RunController* target_;
  std::atomic<int> done_{0};
  std::atomic<int> total_{0};
};

}  // namespace

namespace {

bool FeedsRandom(const Node& node) {
  if (!node.ui.is_object()) return false;
  auto it = node.ui.find("feed_random");
  return it != node.ui.end() && it->is_boolean() && it->get<bool>();
}

Expected<Tensor> RandomFeed(const Node& node, const PortInfo& want) {
  const std::string who = "node '" + node.id + "' (" + node.op + "): ";
  for (int64_t d : want.shape.dims()) {
    if (d < 0) {
      return InvalidArgument(
          who + "random values need a full shape, and " + IntsToString(want.shape.dims()) +
          " has unknown (-1) sizes: give the Placeholder's shape, or a feed file");
    }
  }
  ASSIGN_OR_RETURN(Tensor t, Tensor::Create(want.dtype, want.shape));
  // The same values on every run (seeded by the node id), so that reruns compare.
  std::mt19937_64 rng(std::hash<std::string>{}(node.id) ^ 0x5eed5eedULL);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int> whole(0, 9);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    double v = 0;
    if (IsFloatingDType(want.dtype)) {
      v = real(rng);
    } else if (want.dtype == DType::kBool) {
      v = whole(rng) % 2;
    } else {
      v = whole(rng);
    }
    t.SetFromDouble(i, v);
  }
  return t;
}

}  // namespace

Expected<std::map<std::string, Tensor>> LoadFeeds(const Graph& graph,
                                                  const GraphAnalysis& analysis) {
  // Placeholders with ui.feed_random get values of their inferred dtype and shape here; the
  // rest read their ui.feed files. LoadFeeds reads every needed Placeholder, so it is given a
  // copy in which the random ones are not Placeholders (ids and order kept: `analysis` still
  // lines up with it).
  std::map<std::string, Tensor> random;
  std::vector<std::string> errors;
  Graph rest = graph;
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const Node& node = graph.nodes()[i];
    const OpSchema* schema = OpRegistry::Global().Find(node.op);
    if (!schema || !IsFedBlock(*schema) || !FeedsRandom(node)) continue;
    rest.nodes()[i].op = "(fed with random values)";
    if (i >= analysis.nodes.size() || analysis.nodes[i].outputs.empty()) {
      errors.push_back("node '" + node.id + "' (" + node.op + "): no inferred output to fill");
      continue;
    }
    Expected<Tensor> t = RandomFeed(node, analysis.nodes[i].outputs[0]);
    if (!t.ok()) {
      errors.push_back(t.status().message());
    } else {
      random.emplace(node.id, std::move(t).value());
    }
  }
  FeedSources sources;
  sources.use_ui_feed = true;
  sources.missing_message = [](const Graph&, const Node&) {
    return "no feed file: choose the .npy file to feed it in the attribute panel (\"feed\", "
           "stored in the node's ui.feed), or tick \"random values of its shape\" (ui.feed_random)";
  };
  Expected<std::map<std::string, Tensor>> feeds = blockflow::LoadFeeds(rest, analysis, {}, sources);
  if (!feeds.ok()) errors.push_back(feeds.status().message());
  if (!errors.empty()) return InvalidArgument(JoinLines(errors));
  for (auto& [id, t] : random) feeds->emplace(id, std::move(t));
  return feeds;
}

Expected<std::map<std::string, Tensor>> LoadFeeds(const Graph& graph) {
  return LoadFeeds(graph, AnalyzeGraph(graph, OpRegistry::Global()));
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

std::shared_ptr<const Session> RunController::SessionFor(const Graph& graph) {
  Graph bare = graph;
  for (Node& node : bare.nodes()) node.ui = nullptr;
  // The key holds what the session's analysis depends on and the graph file does not say.
  std::string key = (graph.allow_outside_files ? "outside files allowed\n" : "\n") +
                    std::to_string(graph.memory_limit) + '\n' + bare.base_dir + '\n' +
                    SerializeGraph(bare);
  if (!session_ || key != session_key_) {
    session_ = std::make_shared<const Session>(graph);
    session_key_ = std::move(key);
  }
  return session_;
}

void RunController::Start(const Graph& graph, int num_threads) {
  if (running_) return;
  if (thread_.joinable()) thread_.join();
  cancel_ = false;
  running_ = true;
  std::shared_ptr<const Session> session = SessionFor(graph);
  std::shared_ptr<TensorFileCache> file_cache = file_cache_;
  thread_ = std::thread([this, graph, num_threads, session, file_cache] {
    const auto t0 = std::chrono::steady_clock::now();
    RunResult r;
    QueuedObserver queued(this);
    TimingObserver timing;
    FanOutObserver observer({&queued, &timing});
    // An invalid graph runs no feeds: the session reports its first problem.
    const GraphAnalysis unfed = AnalyzeGraph(graph, OpRegistry::Global());
    Expected<std::map<std::string, Tensor>> feeds =
        unfed.ok() ? LoadFeeds(graph, unfed) : std::map<std::string, Tensor>();
    if (!feeds.ok()) {
      r.status = feeds.status();
    } else {
      RunOptions options;
      options.file_cache = file_cache.get();
      options.num_threads = num_threads;
      options.cancel = &cancel_;
      options.observer = &observer;
      options.all_outputs = &r.outputs;
      std::vector<Tensor> fetched;
      r.status = session->Run(*feeds, {}, &fetched, options);
      for (const auto& [id, outs] : r.outputs) r.executed.insert(id);
      for (const NodeTiming& t : timing.timings()) r.ms[t.id] = t.ms;
      // A run of the whole graph returns every node's values, folded constants included. A
      // failed run returns none: the constants still have values, which inference computes.
      if (!r.status.ok()) {
        const GraphAnalysis analysis = AnalyzeGraph(graph, OpRegistry::Global(), &*feeds);
        for (size_t i = 0; i < graph.nodes().size() && i < analysis.nodes.size(); ++i) {
          const NodeInfo& info = analysis.nodes[i];
          if (!info.IsFolded()) continue;
          std::vector<Tensor>& values = r.outputs[graph.nodes()[i].id];
          for (const PortInfo& p : info.outputs) values.push_back(*p.value);
        }
      }
    }
    r.total_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    auto shared = std::make_shared<RunResult>(std::move(r));
    QMetaObject::invokeMethod(
        this, [this, shared] { OnWorkerDone(std::move(*shared)); }, Qt::QueuedConnection);
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
