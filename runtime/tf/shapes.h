// What the importer knows about each tensor of a GraphDef before it is imported: dtype, shape
// and (for small integer tensors) value. A --feed gives them first; then the node's rule: a
// Placeholder's or variable's shape attr, a Const's tensor, blockflow's own shape function for
// the ops it has, and shape-only rules for common ops it lacks (MaxPool, AvgPool, Relu and the
// other elementwise ops, BiasAdd, Reshape, Pad, ConcatV2, MatMul, Squeeze, ExpandDims, Pack,
// StridedSlice, the queues' component_types and shapes...); `_output_shapes` fills in what
// those leave open. When a shape stays unknown, `unknown` says why, naming the node where that
// starts.
//
//   GraphFacts facts(gd, plan, registry);
//   const TensorFacts& f = facts.Get({"pool1/MaxPool", 0});
//   if (f.dims) ... else std::cerr << f.unknown;
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/schema.h"
#include "core/tensor.h"
#include "runtime/tf/plan.h"

namespace blockflow::tfimport {

/// What is known about one tensor.
struct TensorFacts {
  std::optional<DType> dtype;
  std::optional<std::vector<int64_t>> dims;  // nullopt: unknown rank; -1: an unknown size
  std::shared_ptr<const Tensor> value;       // a small integer tensor's value, when known
  std::string unknown;  // why dtype or dims are unknown: "node 'x' (Placeholder): ..."
};

/// Facts about the tensors of a GraphDef, inferred on demand and kept.
class GraphFacts {
 public:
  /// `plan` gives names, data inputs, the producer version and the --feed specs.
  GraphFacts(const pb::GraphDef& gd, const ImportPlan& plan, const OpRegistry& registry);
  /// The facts of output `tensor.second` of node `tensor.first` (which must exist).
  const TensorFacts& Get(const TensorRef& tensor);

 private:
  void Infer(int index);
  std::vector<TensorFacts> Rule(int index);

  const pb::GraphDef& gd_;
  const ImportPlan& plan_;
  const OpRegistry& registry_;
  std::map<TensorRef, TensorFacts> facts_;
  std::vector<int> state_;  // per node: 0 not yet, 1 in progress, 2 done
};

/// Whether a Placeholder's `shape` attr means an unknown shape: absent, unknown rank, or, in a
/// GraphDef from before producer version 22, `shape {}` (later read as a scalar).
bool PlaceholderShapeUnknown(const pb::NodeDef& node, int producer);

}  // namespace blockflow::tfimport
