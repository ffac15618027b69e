// Whole-graph validation and dtype/shape inference (AnalyzeGraph).
#include <algorithm>
#include <exception>
#include <queue>
#include <set>

#include "core/graph.h"
#include "core/limits.h"
#include "core/paths.h"
#include "core/session.h"
#include "core/text.h"

namespace blockflow {
namespace {

std::string DTypeList(const std::vector<DType>& dtypes) {
  std::vector<std::string> names;
  names.reserve(dtypes.size());
  for (DType d : dtypes) names.emplace_back(DTypeName(d));
  return JoinNames(names);
}

// Small integer nodes whose inputs are all known constants are computed now (constant
// folding), so that sizes built by arithmetic are known to the shape functions downstream.
// Only index arithmetic folds: data (floating) computations always run their real kernels.
constexpr int64_t kMaxFoldElements = 4096;

void FoldConstants(const OpSchema& schema, const std::string& base_dir, NodeInfo* info) {
  if (schema.is_stateful() || info->inputs.empty() || info->outputs.empty()) return;
  int64_t total = 0;
  for (const PortInfo& in : info->inputs) {
    if (!in.value || in.from_feed || IsFloatingDType(in.dtype))
      return;  // feeds are data, not constants
    total += in.value->num_elements();
    if (total > kMaxFoldElements) return;
  }
  total = 0;
  for (const PortInfo& out : info->outputs) {
    if (out.value || IsFloatingDType(out.dtype)) return;  // known already, or data
    if (!out.shape.IsFullyDefined()) return;
    total += out.shape.num_elements();
    if (total > kMaxFoldElements) return;
  }
  std::vector<const Tensor*> inputs;
  for (const PortInfo& in : info->inputs) inputs.push_back(in.value.get());
  std::vector<Tensor> outputs;
  RunOptions options;
  options.num_threads = 1;
  options.force_reference_kernels = true;
  // A kernel error here is reported when the node runs; folding just does not happen.
  if (!RunNodeKernel(schema, *info, inputs, &outputs, options, base_dir).ok()) return;
  for (size_t k = 0; k < outputs.size(); ++k) {
    info->outputs[k].value = std::make_shared<const Tensor>(std::move(outputs[k]));
  }
}

}  // namespace

bool NodeInfo::IsFolded() const {
  return !outputs.empty() && std::all_of(outputs.begin(), outputs.end(), [](const PortInfo& o) {
    return o.value != nullptr && !o.from_feed;
  });
}

GraphAnalysis AnalyzeGraph(const Graph& graph, const OpRegistry& registry,
                           const std::map<std::string, Tensor>* feeds) {
  const auto& nodes = graph.nodes();
  const size_t n = nodes.size();
  const std::unordered_map<std::string, int> index_of = BuildNodeIndex(graph);
  auto index = [&](const std::string& id) {
    auto it = index_of.find(id);
    return it == index_of.end() ? -1 : it->second;
  };
  GraphAnalysis result;
  result.nodes.resize(n);
  std::vector<std::vector<std::string>> errors(n);
  std::vector<bool> structural_ok(n, true);
  std::vector<const OpSchema*> schemas(n, nullptr);
  auto error = [&](size_t i, std::string msg) {
    errors[i].push_back(std::move(msg));
    structural_ok[i] = false;
  };

  std::vector<std::string> op_names;
  for (const OpSchema* s : registry.All()) op_names.push_back(s->name());

  // 1. Per node: op, ports and wires, attrs.
  for (size_t i = 0; i < n; ++i) {
    const Node& node = nodes[i];
    NodeInfo& info = result.nodes[i];
    const OpSchema* schema = registry.Find(node.op);
    schemas[i] = schema;
    if (!schema) {
      error(i, "unknown op '" + node.op + "'" + DidYouMean(node.op, op_names) +
                   "; `blockflow ops` lists the blocks");
      continue;
    }
    std::vector<std::string> port_names;
    for (const PortDef& p : schema->inputs()) port_names.push_back(p.name);
    for (const auto& [port, eps] : node.inputs) {
      const int pi = schema->InputIndex(port);
      if (pi < 0) {
        error(i, "unknown input port '" + port + "'" + DidYouMean(port, port_names) + "; " +
                     node.op + " has inputs: " + JoinNames(port_names));
        continue;
      }
      if (!schema->inputs()[static_cast<size_t>(pi)].is_list && eps.size() != 1) {
        error(i, "input '" + port + "' takes exactly one wire, got " + std::to_string(eps.size()));
      }
      for (const Endpoint& e : eps) {
        if (e.node == node.id) {
          error(i, "input '" + port + "' reads the node's own output '" + e.ToString() +
                       "' (a cycle)");
        } else if (index(e.node) < 0) {
          error(i, "input '" + port + "' reads '" + e.ToString() + "', but there is no node '" +
                       e.node + "'");
        }
      }
    }
    for (const PortDef& p : schema->inputs()) {
      if (!p.is_list && !node.inputs.count(p.name))
        error(i, "input '" + p.name + "' is not connected");
    }
    // Attributes: known, well typed, required ones present; defaults merged.
    nlohmann::json attrs = nlohmann::json::object();
    if (!node.attrs.is_object()) {
      error(i, "'attrs' must be an object");
    } else {
      std::vector<std::string> attr_names;
      for (const AttrDef& a : schema->attrs()) attr_names.push_back(a.name);
      for (const auto& [name, value] : node.attrs.items()) {
        const AttrDef* def = schema->FindAttr(name);
        if (!def) {
          error(i, "unknown attr '" + name + "'" + DidYouMean(name, attr_names) + "; " + node.op +
                       " has attrs: " + JoinNames(attr_names));
          continue;
        }
        Status s = CheckAttrValue(*def, value);
        if (!s.ok()) {
          error(i, s.message());
          continue;
        }
        if (def->file_kind != FileKind::kNone && value.is_string() && !graph.allow_outside_files) {
          s = CheckInsideGraphFolder(graph.base_dir, value.get<std::string>());
          if (!s.ok()) {
            error(i, "attr '" + name + "': " + s.message());
            continue;
          }
        }
        attrs[name] = value;
      }
    }
    if (std::optional<std::string> feed = UiFeedFile(node); feed && !graph.allow_outside_files) {
      if (Status s = CheckInsideGraphFolder(graph.base_dir, *feed); !s.ok()) {
        error(i, "ui.feed: " + s.message());
      }
    }
    for (const AttrDef& a : schema->attrs()) {
      if (attrs.contains(a.name)) continue;
      if (a.required) {
        if (!node.attrs.is_object() || !node.attrs.contains(a.name))
          error(i, "attr '" + a.name + "' is required");
      } else if (!a.default_value.is_null()) {
        attrs[a.name] = a.default_value;
      }
    }
    info.attrs = AttrMap(std::move(attrs));
  }

  // 2. Topological order (Kahn); nodes left over are on or behind a cycle.
  std::vector<std::vector<size_t>> consumers(n);
  std::vector<int> indegree(n, 0);
  for (size_t i = 0; i < n; ++i) {
    std::set<int> producers;
    for (const auto& [port, eps] : nodes[i].inputs) {
      for (const Endpoint& e : eps) {
        const int p = index(e.node);
        if (p >= 0 && static_cast<size_t>(p) != i) producers.insert(p);
      }
    }
    for (int p : producers) {
      consumers[static_cast<size_t>(p)].push_back(i);
      ++indegree[i];
    }
  }
  std::queue<size_t> ready;
  for (size_t i = 0; i < n; ++i) {
    if (indegree[i] == 0) ready.push(i);
  }
  std::vector<bool> ordered(n, false);
  while (!ready.empty()) {
    const size_t i = ready.front();
    ready.pop();
    ordered[i] = true;
    result.topo_order.push_back(static_cast<int>(i));
    for (size_t c : consumers[i]) {
      if (--indegree[c] == 0) ready.push(c);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (ordered[i]) continue;
    // Report the nodes really on a cycle; the ones merely downstream just stay unresolved.
    for (const auto& [port, eps] : nodes[i].inputs) {
      bool reported = false;
      for (const Endpoint& e : eps) {
        if (e.node != nodes[i].id && index(e.node) >= 0 &&
            WouldCreateCycle(graph, e.node, nodes[i].id)) {
          error(i, "input '" + port + "' from '" + e.node +
                       "' closes a cycle; a graph must be acyclic");
          reported = true;
          break;
        }
      }
      if (reported) break;
    }
    structural_ok[i] = false;
  }

  // 3. Inference in topological order.
  for (int idx : result.topo_order) {
    const size_t i = static_cast<size_t>(idx);
    const Node& node = nodes[i];
    NodeInfo& info = result.nodes[i];
    const OpSchema* schema = schemas[i];
    if (!structural_ok[i] || !schema) continue;
    bool inputs_known = true;
    std::vector<PortInfo> inputs;
    std::vector<int> port_starts;
    std::map<std::string, DType> port_dtype;
    for (const PortDef& p : schema->inputs()) {
      port_starts.push_back(static_cast<int>(inputs.size()));
      auto it = node.inputs.find(p.name);
      if (it == node.inputs.end()) continue;
      for (const Endpoint& e : it->second) {
        const size_t producer = static_cast<size_t>(index(e.node));
        const NodeInfo& pinfo = result.nodes[producer];
        if (!pinfo.ok) {
          inputs_known = false;  // the producer reports its own problem
          continue;
        }
        if (e.index < 0 || e.index >= static_cast<int>(pinfo.outputs.size())) {
          error(i, "input '" + p.name + "' reads output " + std::to_string(e.index) + " of '" +
                       e.node + "', which has " + std::to_string(pinfo.outputs.size()) +
                       " output(s)");
          inputs_known = false;
          continue;
        }
        const PortInfo& in = pinfo.outputs[static_cast<size_t>(e.index)];
        if (std::find(p.dtypes.begin(), p.dtypes.end(), in.dtype) == p.dtypes.end()) {
          error(i, "input '" + p.name + "' must be " + DTypeList(p.dtypes) + ", but '" +
                       e.ToString() + "' is " + std::string(DTypeName(in.dtype)));
          inputs_known = false;
        }
        auto [it_dtype, fresh] = port_dtype.emplace(p.name, in.dtype);
        if (!fresh && it_dtype->second != in.dtype) {
          error(i, "the wires of list input '" + p.name + "' must share one dtype, but '" +
                       e.ToString() + "' is " + std::string(DTypeName(in.dtype)) +
                       " and an earlier one is " + std::string(DTypeName(it_dtype->second)));
          inputs_known = false;
        }
        inputs.push_back(in);
      }
    }
    if (!inputs_known || !structural_ok[i]) continue;
    // TensorFlow's `T`: the listed ports share one dtype.
    bool same_ok = true;
    std::string first_port;
    for (const std::string& port : schema->same_dtype()) {
      auto it = port_dtype.find(port);
      if (it == port_dtype.end()) continue;
      if (first_port.empty()) {
        first_port = port;
      } else if (it->second != port_dtype[first_port]) {
        error(i, "inputs '" + first_port + "' (" + std::string(DTypeName(port_dtype[first_port])) +
                     ") and '" + port + "' (" + std::string(DTypeName(it->second)) +
                     ") must have the same dtype");
        same_ok = false;
      }
    }
    if (!same_ok) continue;
    const Tensor* feed = nullptr;
    if (feeds) {
      auto it = feeds->find(node.id);
      if (it != feeds->end()) feed = &it->second;
    }
    InferContext ctx(node.id, node.op, info.attrs, inputs, port_starts, graph.base_dir, feed);
    Status s;
    try {
      s = schema->shape_fn()(ctx);
    } catch (const std::exception& e) {
      s = Internal(std::string("shape function failed: ") + e.what());
    }
    if (!s.ok()) {
      error(i, s.message());
      continue;
    }
    if (!schema->variadic_outputs() && ctx.outputs().size() != schema->outputs().size()) {
      error(i, "internal: shape function set " + std::to_string(ctx.outputs().size()) +
                   " outputs, schema declares " + std::to_string(schema->outputs().size()));
      continue;
    }
    // Every tensor the graph would make is held to the memory limit before anything runs.
    bool fits = true;
    for (size_t k = 0; k < ctx.outputs().size(); ++k) {
      const PortInfo& out = ctx.outputs()[k];
      const std::string port =
          "output " + std::to_string(k) +
          (k < schema->outputs().size() ? " ('" + schema->outputs()[k].name + "')" : "");
      if (Status fit = CheckTensorFits(port, out.dtype, out.shape, graph.memory_limit); !fit.ok()) {
        error(i, fit.message());
        fits = false;
      }
    }
    if (!fits) continue;
    info.inputs = std::move(inputs);
    info.port_starts = std::move(port_starts);
    info.outputs = ctx.outputs();
    info.ok = true;
    FoldConstants(*schema, graph.base_dir, &info);
  }

  for (size_t i = 0; i < n; ++i) {
    result.nodes[i].errors = errors[i];
    for (const std::string& msg : errors[i])
      result.issues.push_back(NodeIssue{nodes[i].id, nodes[i].op, msg});
  }
  return result;
}

}  // namespace blockflow
