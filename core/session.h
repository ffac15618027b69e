// Session: runs a Graph. Only the nodes the fetches need run, in dependency
// order, independent nodes in parallel; kernels run teams of threads inside (core/team.h).
//
//   Session session(graph);
//   std::vector<Tensor> out;
//   RETURN_IF_ERROR(session.Run({{"dy", dy}}, {"dx"}, &out));
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/file_cache.h"
#include "core/graph.h"

namespace blockflow {

/// Sees every node start and end. Called from worker threads; implementations synchronise.
class ExecutionObserver {
 public:
  virtual ~ExecutionObserver() = default;
  /// Before the first node; `node_ids` are the nodes that will run, in a valid order.
  virtual void OnRunBegin(const std::vector<std::string>& node_ids) { (void)node_ids; }
  virtual void OnNodeBegin(const Node& node) { (void)node; }
  /// After a node; `ms` is its kernel's wall time.
  virtual void OnNodeEnd(const Node& node, double ms, const Status& status) {
    (void)node;
    (void)ms;
    (void)status;
  }
  virtual void OnRunEnd(const Status& status) { (void)status; }
};

/// How to run.
struct RunOptions {
  int num_threads = 0;                        // threads per kernel; 0 = DefaultNumThreads()
  int max_parallel_nodes = 0;                 // nodes running at once; 0 = automatic (one)
  bool force_reference_kernels = false;       // diff whole graphs against the reference path
  const std::atomic<bool>* cancel = nullptr;  // set to true to stop between and inside nodes
  const std::atomic<bool>* stop = nullptr;    // internal: set by the session after a node failed
  ExecutionObserver* observer = nullptr;
  /// When set, receives every executed node's outputs (id → outputs), which then all stay alive
  /// until the run ends; otherwise each intermediate is freed once its last consumer finished.
  std::map<std::string, std::vector<Tensor>>* all_outputs = nullptr;
  /// File-backed tensors (Const `file`) are read through this cache; null: the session's own.
  TensorFileCache* file_cache = nullptr;
};

/// Executes graphs. Holds a copy of the graph; never modifies it.
///
/// The first Run for a given feed signature (each feed's id, dtype and shape, and the values of
/// small integer feeds, which shape functions may read) and fetch list analyses the graph and
/// keeps the result as a prepared plan: the schedule, each tensor's last use, and every node's
/// prepared kernel state, as TensorFlow's MakeCallable does. Later Runs with the same signature
/// skip all of that. A plan is made again when a file its analysis read (a Const `file`)
/// changes. Run may be called from several threads at once; copies of a Session share plans.
class Session {
 public:
  explicit Session(Graph graph, const OpRegistry& registry = OpRegistry::Global());
  ~Session();

  /// Runs the graph. `fetches` are "id" or "id:K"; empty means DefaultFetches().
  /// `outputs` receives one tensor per fetch. Errors name the node and op.
  Status Run(const std::map<std::string, Tensor>& feeds, const std::vector<std::string>& fetches,
             std::vector<Tensor>* outputs, const RunOptions& options = {}) const;
  /// Every output of every node whose outputs feed nothing, in node order.
  std::vector<std::string> DefaultFetches() const;
  const Graph& graph() const { return graph_; }

  /// What the session's caches have done.
  struct CacheStats {
    uint64_t plans_made = 0;    // runs that analysed the graph
    uint64_t plans_reused = 0;  // runs that used a prepared plan
    size_t plans = 0;           // plans held now
  };
  CacheStats cache_stats() const;
  /// The session's cache of file-backed tensors (used unless RunOptions::file_cache is set).
  TensorFileCache& file_cache() const;

 private:
  struct Plan;
  struct Caches;
  // The prepared plan for this signature, made (and kept) when missing or out of date.
  Expected<std::shared_ptr<const Plan>> GetPlan(const std::map<std::string, Tensor>& feeds,
                                                const std::vector<std::string>& fetches) const;
  int IndexOf(const std::string& id) const;
  // An error naming the node at which the plan's estimated peak passes the memory limit;
  // `keep_all`: every output stays alive to the end (RunOptions::all_outputs).
  Status CheckPeakFits(const Plan& plan, bool keep_all) const;
  Expected<std::shared_ptr<const Plan>> MakePlan(const std::map<std::string, Tensor>& feeds,
                                                 const std::vector<std::string>& fetches) const;

  Graph graph_;
  const OpRegistry& registry_;
  std::shared_ptr<Caches> caches_;
};

/// Runs the schema's prepare function for one analysed node (null state when it has none).
/// Prepare once and pass the state to every RunNodeKernel of that node.
Expected<std::shared_ptr<const void>> PrepareNode(const OpSchema& schema, const NodeInfo& info);

/// Runs one node's kernel on ready inputs (benchmarks and tests). `info` is the node's
/// analysis (attrs and output shapes) for these inputs; `state` is what PrepareNode made for
/// it (null: prepared on the spot when the schema has a prepare function).
Status RunNodeKernel(const OpSchema& schema, const NodeInfo& info,
                     const std::vector<const Tensor*>& inputs, std::vector<Tensor>* outputs,
                     const RunOptions& options, const std::string& base_dir = "",
                     const void* state = nullptr);

/// Every output of `graph` that feeds nothing, in node order ("id" or "id:K"), using an
/// analysis the caller already has (Session::DefaultFetches analyses the graph itself).
std::vector<std::string> SinkOutputs(const Graph& graph, const GraphAnalysis& analysis,
                                     const OpRegistry& registry = OpRegistry::Global());

/// The number of threads `RunOptions::num_threads == 0` means: OMP_NUM_THREADS's first number
/// when it is set to one (read once, at the first call), else every core this process may run
/// on.
int DefaultNumThreads();
/// The threads an OMP_NUM_THREADS value gives: its first number ("4", "4,2", spaces around it),
/// or nullopt where it gives none (unset, empty, not a number from 1 to 65536).
std::optional<int> ParseOmpNumThreads(const char* text);

}  // namespace blockflow
