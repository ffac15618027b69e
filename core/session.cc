#include "core/session.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include "core/limits.h"
#include "core/paths.h"

namespace blockflow {
namespace {

std::string Who(const Node& node) { return "node '" + node.id + "' (" + node.op + "): "; }

}  // namespace

std::vector<std::string> SinkOutputs(const Graph& graph, const GraphAnalysis& analysis,
                                     const OpRegistry& registry) {
  std::set<Endpoint> consumed;
  for (const Node& node : graph.nodes()) {
    for (const auto& [port, eps] : node.inputs) consumed.insert(eps.begin(), eps.end());
  }
  std::vector<std::string> fetches;
  const auto& nodes = graph.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    size_t num_outputs = analysis.nodes[i].outputs.size();
    if (!analysis.nodes[i].ok) {
      const OpSchema* schema = registry.Find(nodes[i].op);
      num_outputs = schema ? schema->outputs().size() : 1;
    }
    for (size_t k = 0; k < num_outputs; ++k) {
      const Endpoint e{nodes[i].id, static_cast<int>(k)};
      if (!consumed.count(e)) fetches.push_back(e.ToString());
    }
  }
  return fetches;
}

std::optional<int> ParseOmpNumThreads(const char* text) {
  if (text == nullptr) return std::nullopt;
  char* end = nullptr;
  const long n = std::strtol(text, &end, 10);  // leading spaces skipped
  if (end == text) return std::nullopt;
  while (*end == ' ' || *end == '\t') ++end;
  if ((*end != '\0' && *end != ',') || n < 1 || n > (1 << 16)) return std::nullopt;
  return static_cast<int>(n);
}

int DefaultNumThreads() {
  // Read once, as the OpenMP runtime reads it (and never while another thread may set it).
  static const std::optional<int> env = ParseOmpNumThreads(std::getenv("OMP_NUM_THREADS"));
  return env ? *env : std::max(1, omp_get_num_procs());
}

Expected<std::shared_ptr<const void>> PrepareNode(const OpSchema& schema, const NodeInfo& info) {
  if (!schema.prepare()) return std::shared_ptr<const void>();
  PrepareContext pc;
  pc.attrs = &info.attrs;
  pc.inputs = &info.inputs;
  pc.outputs = &info.outputs;
  try {
    return schema.prepare()(pc);
  } catch (const std::exception& e) {
    return Internal(std::string("prepare threw: ") + e.what());
  }
}

Status RunNodeKernel(const OpSchema& schema, const NodeInfo& info,
                     const std::vector<const Tensor*>& inputs, std::vector<Tensor>* outputs,
                     const RunOptions& options, const std::string& base_dir, const void* state) {
  std::shared_ptr<const void> own_state;
  if (!state && schema.prepare()) {
    ASSIGN_OR_RETURN(own_state, PrepareNode(schema, info));
    state = own_state.get();
  }
  KernelContext ctx;
  ctx.state = state;
  ctx.attrs = &info.attrs;
  ctx.inputs = inputs;
  ctx.output_infos = info.outputs;
  ctx.num_threads = options.num_threads > 0 ? options.num_threads : DefaultNumThreads();
  ctx.cancel = options.cancel;
  ctx.stop = options.stop;
  ctx.base_dir = base_dir;
  ctx.file_cache = options.file_cache;
  for (size_t k = 0; k < info.outputs.size(); ++k) {
    const PortInfo& out = info.outputs[k];
    if (!out.shape.IsFullyDefined()) {
      return InvalidArgument(
          "the shape of output " + std::to_string(k) + " is still " + out.shape.ToString() +
          " at run time: the inputs that give its size must be constants, feeds, or computed "
          "from them by small blocks");
    }
    RETURN_IF_ERROR(CheckAllocatable(out.dtype, out.shape));
  }
  const KernelFn& kernel =
      options.force_reference_kernels ? schema.reference_kernel() : schema.kernel();
  if (!kernel) return Internal("op " + schema.name() + " has no kernel");
  Status s;
  try {
    s = kernel(ctx);
  } catch (const std::exception& e) {
    s = Internal(std::string("kernel threw: ") + e.what());
  }
  if (!s.ok()) return s;
  if (ctx.cancelled()) return Cancelled();
  if (ctx.outputs.size() != info.outputs.size()) {
    return Internal("kernel produced " + std::to_string(ctx.outputs.size()) +
                    " outputs, expected " + std::to_string(info.outputs.size()));
  }
  for (size_t k = 0; k < ctx.outputs.size(); ++k) {
    const Tensor& t = ctx.outputs[k];
    if (t.dtype() != info.outputs[k].dtype || t.shape() != info.outputs[k].shape) {
      return Internal("kernel output " + std::to_string(k) + " is " + t.DebugString() +
                      ", inference said " + std::string(DTypeName(info.outputs[k].dtype)) +
                      info.outputs[k].shape.ToString());
    }
  }
  *outputs = std::move(ctx.outputs);
  return Status::OK();
}

// ---------------------------------------------------------------------------------------------
// Prepared plans.
// ---------------------------------------------------------------------------------------------

// Everything a run needs that depends only on the graph, the feed signature and the fetches.
// Immutable once made, so concurrent runs share it.
struct Session::Plan {
  GraphAnalysis analysis;                   // feed values stripped (they change between runs)
  std::vector<Endpoint> fetches;            // resolved fetch list
  std::vector<int> order;                   // needed nodes, producers first
  std::vector<std::vector<int>> consumers;  // node → nodes that wait for it
  std::vector<int> pending;                 // node → producers it waits for
  // node → its flattened inputs as (producer, output), in schema port order.
  std::vector<std::vector<std::pair<int, int>>> inputs;
  // node → output → consumer input slots plus fetches: the reads before the tensor is dead.
  std::vector<std::vector<int>> uses;
  std::vector<char> fed;                                 // a Placeholder that takes its run's feed
  std::vector<char> folded;                              // outputs known from analysis
  std::vector<std::shared_ptr<const void>> states;       // PrepareNode per node
  std::vector<std::pair<std::string, FileStamp>> files;  // files analysis read, as they were
  int width = 1;  // the most kernel nodes that can run at once (nodes on one dependency level)
  std::vector<int> level_size;  // node → kernel nodes on its level (it shares the cores with them)
};

// Plans are few per session (one per feed signature and fetch list); past this many the
// session starts over rather than grow without bound.
constexpr size_t kMaxPlans = 16;

struct Session::Caches {
  std::unordered_map<std::string, int> index;  // node id → index; fixed with the graph
  std::mutex mu;
  std::map<std::string, std::shared_ptr<const Plan>> plans;
  CacheStats stats;
  TensorFileCache files;
};

namespace {

// Small integer feeds may be read by shape functions (a fed Reshape shape); their values are
// part of the signature. Any other feed contributes its dtype and shape only.
constexpr int64_t kMaxKeyedFeedElements = 4096;

std::string PlanKey(const std::map<std::string, Tensor>& feeds,
                    const std::vector<std::string>& fetches) {
  std::string key;
  for (const std::string& f : fetches) key += f + '\n';
  key += '\x01';
  for (const auto& [id, t] : feeds) {
    key += id + '\n' + std::string(DTypeName(t.dtype())) + t.shape().ToString() + '\n';
    if (!IsFloatingDType(t.dtype()) && t.num_elements() <= kMaxKeyedFeedElements) {
      key.append(static_cast<const char*>(t.raw()), t.num_bytes());
      key += '\n';
    }
  }
  return key;
}

// The files a node's attrs name (attrs whose schema gives a file kind, such as a Const's
// `file`), resolved against the graph's folder.
std::vector<std::string> FilesOf(const Node& node, const OpSchema* schema,
                                 const std::string& base_dir) {
  std::vector<std::string> files;
  if (!schema) return files;
  for (const AttrDef& def : schema->attrs()) {
    if (def.file_kind == FileKind::kNone) continue;
    auto it = node.attrs.find(def.name);
    if (it == node.attrs.end() || !it->is_string()) continue;
    files.push_back(ResolveGraphPath(base_dir, it->get<std::string>()));
  }
  return files;
}

// Drops values that came from this run's feeds: a plan outlives the run.
void StripFeedValues(std::vector<PortInfo>* ports) {
  for (PortInfo& p : *ports) {
    if (p.from_feed) p.value.reset();
  }
}

}  // namespace

Session::Session(Graph graph, const OpRegistry& registry)
    : graph_(std::move(graph)), registry_(registry), caches_(std::make_shared<Caches>()) {
  caches_->index = BuildNodeIndex(graph_);
}

int Session::IndexOf(const std::string& id) const {
  auto it = caches_->index.find(id);
  return it == caches_->index.end() ? -1 : it->second;
}

Session::~Session() = default;

// The run's peak, estimated before anything is allocated: the tensors alive at once when the
// nodes run one at a time in the plan's order. Feeds live from the start; each output from its
// node until its last reader has run (fetched ones to the end), or, with `keep_all`
// (RunOptions::all_outputs, as the editor runs), to the end. Not counted: folded constants
// (small, and held by the analysis already) and kernels' scratch.
Status Session::CheckPeakFits(const Plan& plan, bool keep_all) const {
  const auto& nodes = graph_.nodes();
  const long double limit = static_cast<long double>(EffectiveMemoryLimit(graph_.memory_limit));
  auto bytes = [&](size_t u, size_t k) {
    const PortInfo& out = plan.analysis.nodes[u].outputs[k];
    return std::max<long double>(0, TensorBytes(out.dtype, out.shape));
  };
  std::vector<std::vector<int>> left = plan.uses;
  long double live = 0;
  for (int i : plan.order) {
    const size_t u = static_cast<size_t>(i);
    if (!plan.fed[u]) continue;
    for (size_t k = 0; k < plan.uses[u].size(); ++k) live += bytes(u, k);
  }
  for (int i : plan.order) {
    const size_t u = static_cast<size_t>(i);
    if (plan.fed[u] || plan.folded[u]) continue;
    for (size_t k = 0; k < plan.uses[u].size(); ++k) live += bytes(u, k);
    if (live > limit) {
      return InvalidArgument(Who(nodes[u]) + "the run would hold " + FormatBytes(live) +
                             " of tensors at once while this node runs (" +
                             (keep_all ? "every output so far, as all are kept"
                                       : "its inputs and outputs, and every tensor still to be "
                                         "read or fetched") +
                             "), more than " + MemoryLimitText(graph_.memory_limit));
    }
    if (keep_all) continue;
    for (const auto& [p, k] : plan.inputs[u]) {
      const size_t pu = static_cast<size_t>(p);
      if (--left[pu][static_cast<size_t>(k)] == 0 && !plan.folded[pu])
        live -= bytes(pu, static_cast<size_t>(k));
    }
    for (size_t k = 0; k < plan.uses[u].size(); ++k) {
      if (plan.uses[u][k] == 0) live -= bytes(u, k);  // read by no one: freed at once
    }
  }
  return Status::OK();
}

std::vector<std::string> Session::DefaultFetches() const {
  return SinkOutputs(graph_, AnalyzeGraph(graph_, registry_), registry_);
}

Session::CacheStats Session::cache_stats() const {
  std::lock_guard<std::mutex> lock(caches_->mu);
  CacheStats s = caches_->stats;
  s.plans = caches_->plans.size();
  return s;
}

TensorFileCache& Session::file_cache() const { return caches_->files; }

Expected<std::shared_ptr<const Session::Plan>> Session::GetPlan(
    const std::map<std::string, Tensor>& feeds, const std::vector<std::string>& fetches) const {
  const std::string key = PlanKey(feeds, fetches);
  std::shared_ptr<const Plan> plan;
  {
    std::lock_guard<std::mutex> lock(caches_->mu);
    auto it = caches_->plans.find(key);
    if (it != caches_->plans.end()) plan = it->second;
  }
  if (plan) {
    bool current = true;
    for (const auto& [path, stamp] : plan->files) {
      Expected<FileStamp> now = StampFile(path);
      if (!now.ok() || *now != stamp) {
        current = false;
        break;
      }
    }
    if (current) {
      std::lock_guard<std::mutex> lock(caches_->mu);
      ++caches_->stats.plans_reused;
      return plan;
    }
  }
  ASSIGN_OR_RETURN(plan, MakePlan(feeds, fetches));
  std::lock_guard<std::mutex> lock(caches_->mu);
  ++caches_->stats.plans_made;
  if (caches_->plans.size() >= kMaxPlans && !caches_->plans.count(key)) caches_->plans.clear();
  caches_->plans[key] = plan;
  return plan;
}

Expected<std::shared_ptr<const Session::Plan>> Session::MakePlan(
    const std::map<std::string, Tensor>& feeds, const std::vector<std::string>& fetch_names) const {
  const auto& nodes = graph_.nodes();
  const size_t n = nodes.size();
  auto index = [&](const std::string& id) { return IndexOf(id); };
  // Feeds go to Placeholders only.
  for (const auto& [id, tensor] : feeds) {
    const int i = index(id);
    if (i < 0) return NotFound("cannot feed '" + id + "': there is no node '" + id + "'");
    const Node& node = nodes[static_cast<size_t>(i)];
    const OpSchema* schema = registry_.Find(node.op);
    if (!schema || !IsFedBlock(*schema)) {
      return InvalidArgument(Who(node) + "cannot be fed: only Placeholder nodes take feeds");
    }
  }
  // Stamps first: a file that changes while it is analysed then makes the plan stale, never a
  // plan that looks current but holds old values.
  std::vector<std::pair<size_t, std::pair<std::string, FileStamp>>> files;  // node → file
  for (size_t i = 0; i < n; ++i) {
    const Node& node = nodes[i];
    for (const std::string& path : FilesOf(node, registry_.Find(node.op), graph_.base_dir)) {
      Expected<FileStamp> stamp = StampFile(path);
      if (stamp.ok()) files.push_back({i, {path, *stamp}});
    }
  }
  auto plan = std::make_shared<Plan>();
  plan->analysis = AnalyzeGraph(graph_, registry_, &feeds);
  const GraphAnalysis& analysis = plan->analysis;
  // Fetches: "id" or "id:K".
  const std::vector<std::string> fetch_list =
      fetch_names.empty() ? SinkOutputs(graph_, analysis, registry_) : fetch_names;
  for (const std::string& f : fetch_list) {
    auto ep = Endpoint::Parse(f);
    if (!ep) return InvalidArgument("cannot fetch '" + f + "': expected \"node\" or \"node:K\"");
    if (index(ep->node) < 0)
      return NotFound("cannot fetch '" + f + "': there is no node '" + ep->node + "'");
    plan->fetches.push_back(*ep);
  }
  // The nodes the fetches need; without explicit fetches, the whole graph.
  std::vector<bool> needed(n, fetch_names.empty());
  std::vector<std::string> stack;
  if (!fetch_names.empty()) {
    for (const Endpoint& e : plan->fetches) stack.push_back(e.node);
  }
  while (!stack.empty()) {
    const int i = index(stack.back());
    stack.pop_back();
    if (i < 0 || needed[static_cast<size_t>(i)]) continue;
    needed[static_cast<size_t>(i)] = true;
    for (const auto& [port, eps] : nodes[static_cast<size_t>(i)].inputs) {
      for (const Endpoint& e : eps) stack.push_back(e.node);
    }
  }
  // Problems in needed nodes (and in fed ones) stop the run; others do not concern it.
  // The first pass finds the cause; consumers of a broken node merely cannot run.
  for (size_t i = 0; i < n; ++i) {
    if ((needed[i] || feeds.count(nodes[i].id)) && !analysis.nodes[i].errors.empty()) {
      return InvalidArgument(Who(nodes[i]) + analysis.nodes[i].errors.front());
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const OpSchema* schema = registry_.Find(nodes[i].op);
    if (needed[i] && schema && IsFedBlock(*schema) && !feeds.count(nodes[i].id)) {
      return InvalidArgument(Who(nodes[i]) +
                             "needs a value: it is needed by the fetched outputs but was not fed");
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (needed[i] && !analysis.nodes[i].ok) {
      return InvalidArgument(Who(nodes[i]) + "cannot run: one of its inputs could not be inferred");
    }
  }
  for (size_t f = 0; f < plan->fetches.size(); ++f) {
    const size_t i = static_cast<size_t>(index(plan->fetches[f].node));
    if (plan->fetches[f].index >= static_cast<int>(analysis.nodes[i].outputs.size())) {
      return InvalidArgument("cannot fetch '" + fetch_list[f] + "': node '" + nodes[i].id +
                             "' has " + std::to_string(analysis.nodes[i].outputs.size()) +
                             " output(s)");
    }
  }

  // Schedule, wiring and lifetimes: a node is ready when all its producers are done; a tensor
  // is dead when every input slot that reads it has run and no fetch names it.
  plan->consumers.resize(n);
  plan->pending.assign(n, 0);
  plan->inputs.resize(n);
  plan->uses.resize(n);
  plan->fed.assign(n, 0);
  plan->folded.assign(n, 0);
  plan->states.resize(n);
  for (int i : analysis.topo_order) {
    if (needed[static_cast<size_t>(i)]) plan->order.push_back(i);
  }
  for (int i : plan->order) {
    plan->uses[static_cast<size_t>(i)].assign(analysis.nodes[static_cast<size_t>(i)].outputs.size(),
                                              0);
  }
  for (int i : plan->order) {
    const size_t u = static_cast<size_t>(i);
    const Node& node = nodes[u];
    const OpSchema* schema = registry_.Find(node.op);
    plan->fed[u] = feeds.count(node.id) ? 1 : 0;
    plan->folded[u] = !plan->fed[u] && analysis.nodes[u].IsFolded();
    if (plan->fed[u] || plan->folded[u]) continue;  // runs no kernel: reads no input
    std::set<int> producers;
    for (const PortDef& port : schema->inputs()) {
      auto it = node.inputs.find(port.name);
      if (it == node.inputs.end()) continue;
      for (const Endpoint& e : it->second) {
        const int p = index(e.node);
        plan->inputs[u].emplace_back(p, e.index);
        ++plan->uses[static_cast<size_t>(p)][static_cast<size_t>(e.index)];
        producers.insert(p);
      }
    }
    for (int p : producers) {
      plan->consumers[static_cast<size_t>(p)].push_back(i);
      ++plan->pending[u];
    }
    ASSIGN_OR_RETURN(plan->states[u], PrepareNode(*schema, analysis.nodes[u]));
  }
  for (const Endpoint& e : plan->fetches) {
    ++plan->uses[static_cast<size_t>(index(e.node))][static_cast<size_t>(e.index)];
  }
  RETURN_IF_ERROR(CheckPeakFits(*plan, /*keep_all=*/false));
  // Nodes on one level (longest path from a source) never depend on each other; the widest
  // level bounds how many workers a run can use. Fed and folded nodes take no time: level 0.
  std::vector<int> level(n, 0);
  std::map<int, int> per_level;
  for (int i : plan->order) {
    const size_t u = static_cast<size_t>(i);
    if (plan->fed[u] || plan->folded[u]) continue;
    for (const auto& [p, k] : plan->inputs[u]) {
      level[u] = std::max(level[u], level[static_cast<size_t>(p)] + 1);
    }
    plan->width = std::max(plan->width, ++per_level[level[u]]);
  }
  plan->level_size.assign(n, 1);
  for (int i : plan->order) {
    const size_t u = static_cast<size_t>(i);
    if (!plan->fed[u] && !plan->folded[u]) plan->level_size[u] = per_level[level[u]];
  }
  for (NodeInfo& info : plan->analysis.nodes) {
    StripFeedValues(&info.inputs);
    StripFeedValues(&info.outputs);
  }
  // Only the files of nodes this plan runs are checked again before each run.
  for (auto& [i, file] : files) {
    if (needed[i]) plan->files.push_back(std::move(file));
  }
  return std::shared_ptr<const Plan>(std::move(plan));
}

// ---------------------------------------------------------------------------------------------
// Running a plan.
// ---------------------------------------------------------------------------------------------

Status Session::Run(const std::map<std::string, Tensor>& feeds,
                    const std::vector<std::string>& fetch_names, std::vector<Tensor>* outputs,
                    const RunOptions& options) const {
  // The caller's previous outputs go back to the pool before this run allocates its own.
  outputs->clear();
  ASSIGN_OR_RETURN(std::shared_ptr<const Plan> plan_ptr, GetPlan(feeds, fetch_names));
  const Plan& plan = *plan_ptr;
  // Keeping every output holds more at once than the plan's schedule does.
  if (options.all_outputs) RETURN_IF_ERROR(CheckPeakFits(plan, /*keep_all=*/true));
  const auto& nodes = graph_.nodes();
  const std::vector<int>& order = plan.order;
  if (options.observer) {
    std::vector<std::string> ids;
    ids.reserve(order.size());
    for (int i : order) ids.push_back(nodes[static_cast<size_t>(i)].id);
    options.observer->OnRunBegin(ids);
  }

  std::vector<std::vector<Tensor>> values(nodes.size());
  std::vector<std::vector<int>> remaining = plan.uses;
  std::vector<int> pending = plan.pending;
  const bool keep_all = options.all_outputs != nullptr;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int> ready;
  for (int i : order) {
    if (pending[static_cast<size_t>(i)] == 0) ready.push_back(i);
  }
  size_t finished = 0, running = 0;
  Status first_error;
  // Set with the first error, so that kernels still running stop early too.
  std::atomic<bool> stop{false};
  auto cancelled = [&] { return options.cancel && options.cancel->load(); };
  const int total_threads = options.num_threads > 0 ? options.num_threads : DefaultNumThreads();
  TensorFileCache* file_cache = options.file_cache ? options.file_cache : &caches_->files;

  // Stores a node's outputs, then frees what no one will read any more: the inputs whose last
  // reader this node was, and outputs that nothing reads. Caller holds `mu`.
  auto finish = [&](size_t i, std::vector<Tensor> out) {
    values[i] = std::move(out);
    if (keep_all) return;
    for (const auto& [p, k] : plan.inputs[i]) {
      if (--remaining[static_cast<size_t>(p)][static_cast<size_t>(k)] == 0) {
        values[static_cast<size_t>(p)][static_cast<size_t>(k)] = Tensor();
      }
    }
    for (size_t k = 0; k < values[i].size() && k < plan.uses[i].size(); ++k) {
      if (plan.uses[i][k] == 0) values[i][k] = Tensor();
    }
  };

  auto execute = [&](int idx, int threads) -> Status {
    const size_t i = static_cast<size_t>(idx);
    const Node& node = nodes[i];
    const NodeInfo& info = plan.analysis.nodes[i];
    if (plan.fed[i]) {
      std::lock_guard<std::mutex> lock(mu);
      finish(i, {feeds.at(node.id)});
      return Status::OK();
    }
    // Values known at analysis time (constants and what folds from them) need no kernel.
    if (plan.folded[i]) {
      std::vector<Tensor> out;
      for (const PortInfo& p : info.outputs) out.push_back(*p.value);
      std::lock_guard<std::mutex> lock(mu);
      finish(i, std::move(out));
      return Status::OK();
    }
    std::vector<const Tensor*> inputs;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (const auto& [p, k] : plan.inputs[i]) {
        inputs.push_back(&values[static_cast<size_t>(p)][static_cast<size_t>(k)]);
      }
    }
    std::vector<Tensor> out;
    RunOptions node_options = options;
    node_options.num_threads = threads;
    node_options.stop = &stop;
    node_options.file_cache = file_cache;
    const OpSchema* schema = registry_.Find(node.op);
    Status s = RunNodeKernel(*schema, info, inputs, &out, node_options, graph_.base_dir,
                             plan.states[i].get());
    if (!s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu);
    finish(i, std::move(out));
    return Status::OK();
  };

  // Automatic: one node at a time on the calling thread, each kernel with every thread. The
  // kernels parallelise inside; running nodes side by side would halve each one's threads and
  // start worker threads (with OpenMP teams of their own) on every run.
  const int max_parallel = options.max_parallel_nodes > 0 ? options.max_parallel_nodes : 1;
  const int workers = std::max(1, std::min(max_parallel, plan.width));
  auto worker = [&] {
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      cv.wait(lock, [&] {
        return !ready.empty() || finished == order.size() || !first_error.ok() ||
               (running == 0 && ready.empty());
      });
      if (finished == order.size() || !first_error.ok() || ready.empty()) break;
      if (cancelled()) {
        if (first_error.ok()) first_error = Cancelled("run cancelled");
        cv.notify_all();
        break;
      }
      const int idx = ready.back();
      ready.pop_back();
      ++running;
      // Nodes that can run side by side share the cores. The share is fixed by the plan, not by
      // what happens to run at this moment, so a kernel whose summation order depends on its
      // thread count (per-thread partial sums) gives the same bits on every run.
      const int threads =
          std::max(1, total_threads / std::min(workers, plan.level_size[static_cast<size_t>(idx)]));
      lock.unlock();
      const Node& node = nodes[static_cast<size_t>(idx)];
      Status s;
      try {
        if (options.observer) options.observer->OnNodeBegin(node);
        const auto t0 = std::chrono::steady_clock::now();
        s = execute(idx, threads);
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        if (!s.ok() && s.code() != StatusCode::kCancelled) s = s.WithPrefix(Who(node));
        if (options.observer) options.observer->OnNodeEnd(node, ms, s);
      } catch (const std::exception& e) {
        s = Internal(Who(node) + "failed: " + e.what());
      }
      lock.lock();
      --running;
      ++finished;
      if (!s.ok() && first_error.ok()) {
        first_error = s;
        stop.store(true);
      }
      for (int c : plan.consumers[static_cast<size_t>(idx)]) {
        if (--pending[static_cast<size_t>(c)] == 0) ready.push_back(c);
      }
      cv.notify_all();
    }
    cv.notify_all();
  };
  {
    std::vector<std::thread> threads;
    for (int t = 1; t < workers; ++t) threads.emplace_back(worker);
    worker();
    for (auto& t : threads) t.join();
  }
  if (first_error.ok() && cancelled()) first_error = Cancelled("run cancelled");
  if (first_error.ok() && finished != order.size())
    first_error = Internal("scheduler stopped before every node ran");
  if (options.observer) options.observer->OnRunEnd(first_error);
  if (!first_error.ok()) return first_error;

  if (options.all_outputs) {
    for (int i : order)
      (*options.all_outputs)[nodes[static_cast<size_t>(i)].id] = values[static_cast<size_t>(i)];
  }
  outputs->clear();
  for (const Endpoint& e : plan.fetches) {
    outputs->push_back(values[static_cast<size_t>(IndexOf(e.node))][static_cast<size_t>(e.index)]);
  }
  return Status::OK();
}

}  // namespace blockflow
