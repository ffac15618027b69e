#include "core/batch.h"

#include <algorithm>

#include "core/graph.h"
#include "core/schema.h"
#include "core/text.h"

namespace blockflow {
namespace {

bool IsSplit(const BatchValue& v) {
  return v.kind == BatchKind::kCarries || v.kind == BatchKind::kSums;
}

// The first undecided input, if any: undecided values pass on unchanged, so that the error
// names the node where the batch was lost, not every node after it.
const BatchValue* FirstUndecided(const std::vector<BatchValue>& values) {
  for (const BatchValue& v : values) {
    if (v.kind == BatchKind::kUndecided) return &v;
  }
  return nullptr;
}

BatchValue Undeclared(const BatchContext& c) {
  if (const BatchValue* u = FirstUndecided(c.batch)) return *u;
  for (const BatchValue& v : c.batch) {
    if (v.kind != BatchKind::kFree) {
      return c.Undecided(c.schema.name() +
                         " does not declare how its output depends on a split batch, and input " +
                         "values here depend on it");
    }
  }
  return BatchValue::Free();
}

BatchValue Elementwise(Linearity linearity, const BatchContext& c) {
  if (const BatchValue* u = FirstUndecided(c.batch)) return *u;
  const int out_rank = c.outputs[static_cast<size_t>(c.output)].shape.rank();
  int carry_axis = -1;
  int sums = 0, frees = 0;
  for (size_t i = 0; i < c.batch.size(); ++i) {
    const BatchValue& v = c.batch[i];
    if (v.kind == BatchKind::kBatchShape) {
      return c.Undecided("computes with a shape that holds each process's own batch size");
    }
    if (v.kind == BatchKind::kSums) ++sums;
    if (v.kind == BatchKind::kFree) ++frees;
    if (v.kind != BatchKind::kCarries) continue;
    const int axis = v.axis + out_rank - c.inputs[i].shape.rank();  // broadcasting aligns right
    if (carry_axis >= 0 && axis != carry_axis) {
      return c.Undecided("combines tensors split along different axes");
    }
    carry_axis = axis;
  }
  if (carry_axis >= 0 && sums > 0) {
    return c.Undecided("combines a tensor split along the batch with a sum over the batch");
  }
  if (carry_axis >= 0) {
    // A batch-free operand may broadcast along the split axis, but not hold values along it.
    for (size_t i = 0; i < c.batch.size(); ++i) {
      if (c.batch[i].kind != BatchKind::kFree) continue;
      const Shape& s = c.inputs[i].shape;
      const int d = carry_axis - (out_rank - s.rank());
      if (d >= 0 && s.dim(d) != 1) {
        return c.Undecided("input " + std::to_string(i) + " is batch-free but has size " +
                           std::to_string(s.dim(d)) + " along the split axis " +
                           std::to_string(carry_axis));
      }
    }
    return BatchValue::Carries(carry_axis);
  }
  if (sums == 0) return BatchValue::Free();
  switch (linearity) {
    case Linearity::kLinear:
      if (frees > 0) {
        return c.Undecided(
            "adds a batch-free value to a sum over the batch: each process would add it once, "
            "P times in all");
      }
      return BatchValue::Sums();
    case Linearity::kBilinear:
      if (sums > 1) return c.Undecided("multiplies two sums over the batch (not linear)");
      return BatchValue::Sums();
    case Linearity::kNone:
      break;
  }
  return c.Undecided(c.schema.name() + " is not linear, so a sum over the batch cannot pass it");
}

BatchValue Batched(const BatchRule& rule, const BatchContext& c) {
  if (const BatchValue* u = FirstUndecided(c.batch)) return *u;
  std::vector<int> batch_inputs;
  for (const std::string& p : rule.ports) {
    const int i = c.Input(p);
    if (i >= 0) batch_inputs.push_back(i);
  }
  const int weight = rule.weight.empty() ? -1 : c.Input(rule.weight);
  const int sizes = rule.sizes.empty() ? -1 : c.Input(rule.sizes);
  int carries = 0, sums = 0;
  for (int i : batch_inputs) {
    const BatchValue& v = c.batch[static_cast<size_t>(i)];
    if (v.kind == BatchKind::kBatchShape)
      return c.Undecided("input " + std::to_string(i) + " is a shape");
    if (v.kind == BatchKind::kCarries) {
      if (v.axis != 0) {
        return c.Undecided("its input '" + c.schema.inputs()[static_cast<size_t>(i)].name +
                           "' is split along axis " + std::to_string(v.axis) + ", but " +
                           c.schema.name() + " mixes values along every axis but the batch (0)");
      }
      ++carries;
    }
    if (v.kind == BatchKind::kSums) ++sums;
  }
  const BatchValue wv = weight >= 0 ? c.batch[static_cast<size_t>(weight)] : BatchValue::Free();
  const BatchValue sv = sizes >= 0 ? c.batch[static_cast<size_t>(sizes)] : BatchValue::Free();
  if (wv.kind == BatchKind::kBatchShape) return c.Undecided("'" + rule.weight + "' is a shape");
  if (wv.kind == BatchKind::kCarries) {
    return c.Undecided("its input '" + rule.weight + "' is split along the batch");
  }
  if (IsSplit(sv)) return c.Undecided("its sizes input '" + rule.sizes + "' depends on the batch");
  const int weight_sums = wv.kind == BatchKind::kSums ? 1 : 0;
  if (carries == 0) {
    if (sums + weight_sums == 0) {
      if (sv.kind == BatchKind::kBatchShape) {
        return c.Undecided("its sizes input '" + rule.sizes +
                           "' is the shape of a split tensor, but no data input is split");
      }
      return BatchValue::Free();
    }
    if (sums + weight_sums > 1) return c.Undecided("multiplies two sums over the batch");
    if (sv.kind == BatchKind::kBatchShape) {
      return c.Undecided("its sizes input '" + rule.sizes + "' is the shape of a split tensor");
    }
    return BatchValue::Sums();  // linear in the one input that is a sum
  }
  if (sums + weight_sums > 0) {
    return c.Undecided("combines a tensor split along the batch with a sum over the batch");
  }
  if (carries != static_cast<int>(batch_inputs.size())) {
    return c.Undecided("pairs a split input with a batch-free one sample by sample");
  }
  if (rule.effect == BatchRule::kSumsBatch) return BatchValue::Sums();
  // Sizes that name the batch too (4 entries; Conv2DBackpropInput also takes [height, width]).
  const PortInfo* size_info = sizes >= 0 ? &c.inputs[static_cast<size_t>(sizes)] : nullptr;
  if (size_info && sv.kind == BatchKind::kFree &&
      (!size_info->value || size_info->value->num_elements() == 4)) {
    return c.Undecided("its sizes input '" + rule.sizes +
                       "' is batch-free, a fixed batch size, but its data is split; take the "
                       "sizes from the Shape of a split tensor");
  }
  return BatchValue::Carries(0);
}

}  // namespace

std::string_view BatchKindName(BatchKind kind) {
  static constexpr EnumName<BatchKind> kNames[] = {{BatchKind::kFree, "free"},
                                                   {BatchKind::kCarries, "carries"},
                                                   {BatchKind::kSums, "sums"},
                                                   {BatchKind::kBatchShape, "batch shape"},
                                                   {BatchKind::kUndecided, "undecided"}};
  return NameIn(kNames, kind, "?");
}

std::string BatchValue::ToString() const {
  switch (kind) {
    case BatchKind::kFree:
      return "batch-free";
    case BatchKind::kCarries:
      return "split along axis " + std::to_string(axis);
    case BatchKind::kSums:
      return "a sum over the batch";
    case BatchKind::kBatchShape:
      return "a shape holding the local batch size at entry " + std::to_string(axis);
    case BatchKind::kUndecided:
      return "undecided: " + why;
  }
  return "?";
}

int BatchContext::Input(const std::string& name) const {
  const int port = schema.InputIndex(name);
  if (port < 0 || static_cast<size_t>(port) >= port_starts.size()) return -1;
  const int i = port_starts[static_cast<size_t>(port)];
  const int end = static_cast<size_t>(port) + 1 < port_starts.size()
                      ? port_starts[static_cast<size_t>(port) + 1]
                      : static_cast<int>(inputs.size());
  return i < end ? i : -1;
}

BatchValue BatchContext::Undecided(const std::string& why) const {
  return {BatchKind::kUndecided, 0, "node '" + node_id + "' (" + schema.name() + "): " + why};
}

BatchRule BatchRule::Same(std::string port) {
  return {.kind = Kind::kSame, .ports = {std::move(port)}};
}

BatchRule BatchRule::Elementwise(Linearity linearity) {
  return {.kind = Kind::kElementwise, .linearity = linearity};
}

BatchRule BatchRule::Batched(std::vector<std::string> batch_ports, std::string weight,
                             Effect effect, std::string sizes) {
  return {.kind = Kind::kBatched,
          .ports = std::move(batch_ports),
          .weight = std::move(weight),
          .sizes = std::move(sizes),
          .effect = effect};
}

BatchRule BatchRule::ShapeOf(std::string port) {
  return {.kind = Kind::kShapeOf, .ports = {std::move(port)}};
}

BatchRule BatchRule::Fn(BatchFn fn) { return {.kind = Kind::kFn, .fn = std::move(fn)}; }

BatchValue ApplyBatchRule(const BatchRule& rule, const BatchContext& c) {
  switch (rule.kind) {
    case BatchRule::Kind::kUndeclared:
      return Undeclared(c);
    case BatchRule::Kind::kFree:
      return BatchValue::Free();
    case BatchRule::Kind::kSame: {
      const int i = c.Input(rule.ports[0]);
      return i < 0 ? BatchValue::Free() : c.batch[static_cast<size_t>(i)];
    }
    case BatchRule::Kind::kElementwise:
      return Elementwise(rule.linearity, c);
    case BatchRule::Kind::kBatched:
      return Batched(rule, c);
    case BatchRule::Kind::kShapeOf: {
      const int i = c.Input(rule.ports[0]);
      if (i < 0) return BatchValue::Free();
      const BatchValue& v = c.batch[static_cast<size_t>(i)];
      if (v.kind == BatchKind::kCarries) return BatchValue::BatchShape(v.axis);
      if (v.kind == BatchKind::kUndecided) return v;
      return BatchValue::Free();  // a sum has the same shape on every process
    }
    case BatchRule::Kind::kFn:
      return rule.fn(c);
  }
  return Undeclared(c);
}

BatchValue BatchAnalysis::Output(const Graph& graph, const std::string& id, int index) const {
  const int i = graph.IndexOf(id);
  if (i < 0 || static_cast<size_t>(i) >= nodes.size() || index < 0 ||
      static_cast<size_t>(index) >= nodes[static_cast<size_t>(i)].size()) {
    return {BatchKind::kUndecided, 0,
            "there is no output '" + id + ":" + std::to_string(index) + "'"};
  }
  return nodes[static_cast<size_t>(i)][static_cast<size_t>(index)];
}

BatchAnalysis AnalyzeBatch(const Graph& graph, const GraphAnalysis& analysis,
                           const std::map<std::string, int>& split, const OpRegistry& registry) {
  const auto& nodes = graph.nodes();
  BatchAnalysis result;
  result.nodes.resize(nodes.size());
  for (int idx : analysis.topo_order) {
    const size_t i = static_cast<size_t>(idx);
    if (i >= analysis.nodes.size()) continue;
    const Node& node = nodes[i];
    const NodeInfo& info = analysis.nodes[i];
    const OpSchema* schema = registry.Find(node.op);
    std::vector<BatchValue>& out = result.nodes[i];
    if (!info.ok || !schema) {
      out.assign(info.outputs.size(), BatchValue{BatchKind::kUndecided, 0,
                                                 "node '" + node.id + "' (" + node.op +
                                                     "): its shapes could not be inferred"});
      continue;
    }
    if (auto it = split.find(node.id); it != split.end()) {
      out.assign(info.outputs.size(), BatchValue::Carries(it->second));
      continue;
    }
    // The inputs' batch values, flattened in schema port order as in NodeInfo::inputs.
    std::vector<BatchValue> in;
    for (const PortDef& p : schema->inputs()) {
      auto it = node.inputs.find(p.name);
      if (it == node.inputs.end()) continue;
      for (const Endpoint& e : it->second) {
        const int producer = graph.IndexOf(e.node);
        const auto& pv =
            producer < 0 ? std::vector<BatchValue>{} : result.nodes[static_cast<size_t>(producer)];
        in.push_back(e.index >= 0 && static_cast<size_t>(e.index) < pv.size()
                         ? pv[static_cast<size_t>(e.index)]
                         : BatchValue{BatchKind::kUndecided, 0, "unknown input " + e.ToString()});
      }
    }
    if (in.size() != info.inputs.size()) {
      out.assign(info.outputs.size(),
                 BatchValue{BatchKind::kUndecided, 0,
                            "node '" + node.id + "' (" + node.op + "): inputs not inferred"});
      continue;
    }
    const auto& defs = schema->outputs();
    for (size_t k = 0; k < info.outputs.size(); ++k) {
      if (defs.empty()) {
        out.push_back(Undeclared({node.id, *schema, info.attrs, info.inputs, info.port_starts, in,
                                  info.outputs, static_cast<int>(k)}));
        continue;
      }
      const BatchRule& rule = defs[std::min(k, defs.size() - 1)].batch;
      out.push_back(
          ApplyBatchRule(rule, {node.id, *schema, info.attrs, info.inputs, info.port_starts, in,
                                info.outputs, static_cast<int>(k)}));
    }
  }
  return result;
}

}  // namespace blockflow
