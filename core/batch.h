// Batch rules: how each output of a block depends on a batch that is split over processes
// (`blockflow run --shard`, each process running the whole graph on its slice), declared once per
// output port next to the shape function, and a pass that propagates them through a graph from
// the split Placeholders.
//
//   OpSchema("Conv2DBackpropFilter")...
//       .Output("output", kT).Batch(BatchRule::Batched({"input", "out_backprop"}, "",
//                                                      BatchRule::kSumsBatch, "filter_sizes"));
//   BatchAnalysis b = AnalyzeBatch(graph, analysis, {{"x", 0}});   // x split along axis 0
//   BatchValue v = b.Output(graph, "dw", 0);  // v.kind == BatchKind::kSums: add the processes' dw
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/shape.h"

namespace blockflow {

class AttrMap;
class Graph;
class OpRegistry;
class OpSchema;
struct GraphAnalysis;
struct PortInfo;

/// What a tensor is when a batch is split along one axis over processes.
enum class BatchKind {
  kFree,        // the same on every process (constants, shapes of unsplit tensors)
  kCarries,     // each process holds its own slice along `axis`, in rank order
  kSums,        // the whole value is the sum of the processes' values
  kBatchShape,  // an integer shape whose entry `axis` is the process's own batch size
  kUndecided,   // none of these can be told; `why` says where and why
};
/// "free", "carries", "sums", "batch shape", "undecided".
std::string_view BatchKindName(BatchKind kind);

/// The batch kind of one tensor.
struct BatchValue {
  BatchKind kind = BatchKind::kFree;
  int axis = 0;     // kCarries, kBatchShape
  std::string why;  // kUndecided: "node 'y' (Sub): <what and why>"

  static BatchValue Free() { return {}; }
  static BatchValue Carries(int axis) { return {BatchKind::kCarries, axis, ""}; }
  static BatchValue Sums() { return {BatchKind::kSums, 0, ""}; }
  static BatchValue BatchShape(int axis) { return {BatchKind::kBatchShape, axis, ""}; }
  /// "free", "split along axis 0", "a sum over the batch", ...
  std::string ToString() const;
  bool operator==(const BatchValue& o) const {
    return kind == o.kind &&
           (kind == BatchKind::kFree || kind == BatchKind::kSums || axis == o.axis);
  }
};

/// What a batch function sees for one output of one node.
struct BatchContext {
  const std::string& node_id;
  const OpSchema& schema;
  const AttrMap& attrs;
  const std::vector<PortInfo>& inputs;   // flattened, as in InferContext
  const std::vector<int>& port_starts;   // schema port → first flattened input
  const std::vector<BatchValue>& batch;  // parallel to `inputs`
  const std::vector<PortInfo>& outputs;  // the node's inferred outputs
  int output = 0;                        // the output being decided

  /// The flattened index of the (single) input on port `name`, or -1.
  int Input(const std::string& name) const;
  /// An undecided value whose `why` names this node: "node 'ID' (OP): <why>".
  BatchValue Undecided(const std::string& why) const;
};
using BatchFn = std::function<BatchValue(const BatchContext&)>;

/// How an element-wise op combines values that are sums over the batch.
enum class Linearity {
  kNone,      // non-linear: a sum over the batch cannot pass through it
  kLinear,    // x + y, x - y: sums of sums are sums; a batch-free term would be added P times
  kBilinear,  // x * y: a sum times a batch-free value is a sum; a sum times a sum is not
};

/// An output port's declaration of how it depends on the batch (OpSchema::Batch).
struct BatchRule {
  enum class Kind {
    kUndeclared,   // batch-free when every input is; undecided otherwise
    kFree,         // batch-free whatever the inputs (a size that does not depend on data)
    kSame,         // what input `ports[0]` is (Identity)
    kElementwise,  // broadcasting element-wise op with `linearity`
    kBatched,      // a batch op (convolutions): see Batched()
    kShapeOf,      // the shape of input `ports[0]` (Shape)
    kFn,           // `fn` decides
  };
  /// kBatched: whether the output keeps the batch (axis 0) or sums over it.
  enum Effect { kKeepsBatch, kSumsBatch };

  Kind kind = Kind::kUndeclared;
  Linearity linearity = Linearity::kNone;
  std::vector<std::string> ports{};  // kSame, kShapeOf: the input; kBatched: the batch inputs
  std::string weight{};              // kBatched: the input that is not batched ("" for none)
  std::string sizes{};               // kBatched: an integer input giving the output's shape
  Effect effect = kKeepsBatch;
  BatchFn fn{};

  static BatchRule Free() { return {.kind = Kind::kFree}; }
  static BatchRule Same(std::string port);
  static BatchRule Elementwise(Linearity linearity);
  /// An op linear in each of `batch_ports` and `weight`, whose batch inputs hold the batch on
  /// axis 0 and pair up sample by sample: split batch inputs and a batch-free weight give an
  /// output split on axis 0 (kKeepsBatch) or a sum over the batch (kSumsBatch); one input that
  /// is a sum over the batch, the others batch-free, gives a sum. `sizes` (optional) must be
  /// batch-free, or the shape of a split tensor when the output keeps the batch.
  static BatchRule Batched(std::vector<std::string> batch_ports, std::string weight, Effect effect,
                           std::string sizes = "");
  static BatchRule ShapeOf(std::string port);
  static BatchRule Fn(BatchFn fn);
};

/// Decides one output of one node by its schema's rule.
BatchValue ApplyBatchRule(const BatchRule& rule, const BatchContext& context);

/// The batch kind of every output of every node.
struct BatchAnalysis {
  std::vector<std::vector<BatchValue>> nodes;  // parallel to graph.nodes(), then outputs
  /// Output `index` of node `id`; undecided when the node or the output is unknown.
  BatchValue Output(const Graph& graph, const std::string& id, int index) const;
};

/// Propagates batch kinds through `graph` in topological order, from `split` (Placeholder id →
/// the axis its batch is split along), by each output's BatchRule. `analysis` is the graph's
/// (fed or not); nodes it could not infer are undecided.
BatchAnalysis AnalyzeBatch(const Graph& graph, const GraphAnalysis& analysis,
                           const std::map<std::string, int>& split, const OpRegistry& registry);

}  // namespace blockflow
