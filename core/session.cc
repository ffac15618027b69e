#include "core/session.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

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

int DefaultNumThreads() { return std::max(1, omp_get_num_procs()); }

Session::Session(Graph graph, const OpRegistry& registry)
    : graph_(std::move(graph)), registry_(registry) {}

std::vector<std::string> Session::DefaultFetches() const {
  return SinkOutputs(graph_, AnalyzeGraph(graph_, registry_), registry_);
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

Status Session::Run(const std::map<std::string, Tensor>& feeds,
                    const std::vector<std::string>& fetch_names, std::vector<Tensor>* outputs,
                    const RunOptions& options) const {
  const auto& nodes = graph_.nodes();
  const std::unordered_map<std::string, int> index_of = BuildNodeIndex(graph_);
  auto index = [&](const std::string& id) {
    auto it = index_of.find(id);
    return it == index_of.end() ? -1 : it->second;
  };
  // Feeds go to Placeholders only.
  for (const auto& [id, tensor] : feeds) {
    const Node* node = graph_.FindNode(id);
    if (!node) return NotFound("cannot feed '" + id + "': there is no node '" + id + "'");
    if (node->op != "Placeholder") {
      return InvalidArgument(Who(*node) + "cannot be fed: only Placeholder nodes take feeds");
    }
  }
  const GraphAnalysis analysis = AnalyzeGraph(graph_, registry_, &feeds);
  // Fetches: "id" or "id:K".
  const std::vector<std::string> fetch_list =
      fetch_names.empty() ? SinkOutputs(graph_, analysis, registry_) : fetch_names;
  std::vector<Endpoint> fetches;
  for (const std::string& f : fetch_list) {
    auto ep = Endpoint::Parse(f);
    if (!ep) return InvalidArgument("cannot fetch '" + f + "': expected \"node\" or \"node:K\"");
    if (index(ep->node) < 0)
      return NotFound("cannot fetch '" + f + "': there is no node '" + ep->node + "'");
    fetches.push_back(*ep);
  }
  // The nodes the fetches need; without explicit fetches, the whole graph.
  std::vector<bool> needed(nodes.size(), fetch_names.empty());
  std::vector<std::string> stack;
  if (!fetch_names.empty()) {
    for (const Endpoint& e : fetches) stack.push_back(e.node);
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
  for (size_t i = 0; i < nodes.size(); ++i) {
    if ((needed[i] || feeds.count(nodes[i].id)) && !analysis.nodes[i].errors.empty()) {
      return InvalidArgument(Who(nodes[i]) + analysis.nodes[i].errors.front());
    }
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (needed[i] && nodes[i].op == "Placeholder" && !feeds.count(nodes[i].id)) {
      return InvalidArgument(Who(nodes[i]) +
                             "needs a value: it is needed by the fetched outputs but was not fed");
    }
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (needed[i] && !analysis.nodes[i].ok) {
      return InvalidArgument(Who(nodes[i]) + "cannot run: one of its inputs could not be inferred");
    }
  }
  for (size_t f = 0; f < fetches.size(); ++f) {
    const size_t i = static_cast<size_t>(index(fetches[f].node));
    if (fetches[f].index >= static_cast<int>(analysis.nodes[i].outputs.size())) {
      return InvalidArgument("cannot fetch '" + fetch_list[f] + "': node '" + nodes[i].id +
                             "' has " + std::to_string(analysis.nodes[i].outputs.size()) +
                             " output(s)");
    }
  }

  // Schedule: a node is ready when all its producers are done.
  std::vector<int> order;
  for (int i : analysis.topo_order) {
    if (needed[static_cast<size_t>(i)]) order.push_back(i);
  }
  std::vector<std::vector<int>> consumers(nodes.size());
  std::vector<int> pending(nodes.size(), 0);
  for (int i : order) {
    std::set<int> producers;
    for (const auto& [port, eps] : nodes[static_cast<size_t>(i)].inputs) {
      for (const Endpoint& e : eps) producers.insert(index(e.node));
    }
    for (int p : producers) {
      consumers[static_cast<size_t>(p)].push_back(i);
      ++pending[static_cast<size_t>(i)];
    }
  }
  if (options.observer) {
    std::vector<std::string> ids;
    for (int i : order) ids.push_back(nodes[static_cast<size_t>(i)].id);
    options.observer->OnRunBegin(ids);
  }

  std::vector<std::vector<Tensor>> values(nodes.size());
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

  auto execute = [&](int idx, int threads) -> Status {
    const size_t i = static_cast<size_t>(idx);
    const Node& node = nodes[i];
    const NodeInfo& info = analysis.nodes[i];
    const OpSchema* schema = registry_.Find(node.op);
    // Values known at analysis time (constants and what folds from them) need no kernel.
    const bool folded =
        !info.outputs.empty() && std::all_of(info.outputs.begin(), info.outputs.end(),
                                             [](const PortInfo& p) { return p.value != nullptr; });
    if (folded) {
      std::vector<Tensor> out;
      for (const PortInfo& p : info.outputs) out.push_back(*p.value);
      std::lock_guard<std::mutex> lock(mu);
      values[i] = std::move(out);
      return Status::OK();
    }
    std::vector<const Tensor*> inputs;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (const PortDef& p : schema->inputs()) {
        auto it = node.inputs.find(p.name);
        if (it == node.inputs.end()) continue;
        for (const Endpoint& e : it->second) {
          inputs.push_back(
              &values[static_cast<size_t>(index(e.node))][static_cast<size_t>(e.index)]);
        }
      }
    }
    std::vector<Tensor> out;
    RunOptions node_options = options;
    node_options.num_threads = threads;
    node_options.stop = &stop;
    Status s = RunNodeKernel(*schema, info, inputs, &out, node_options, graph_.base_dir);
    if (!s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu);
    values[i] = std::move(out);
    return Status::OK();
  };

  const int max_parallel =
      options.max_parallel_nodes > 0
          ? options.max_parallel_nodes
          : std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, 4);
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
      // Nodes running side by side share the cores.
      const int threads = std::max(1, total_threads / static_cast<int>(running));
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
      for (int c : consumers[static_cast<size_t>(idx)]) {
        if (--pending[static_cast<size_t>(c)] == 0) ready.push_back(c);
      }
      cv.notify_all();
    }
    cv.notify_all();
  };
  {
    std::vector<std::thread> threads;
    const int workers = std::max(1, std::min<int>(max_parallel, static_cast<int>(order.size())));
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
  for (const Endpoint& e : fetches) {
    outputs->push_back(values[static_cast<size_t>(index(e.node))][static_cast<size_t>(e.index)]);
  }
  return Status::OK();
}

}  // namespace blockflow
