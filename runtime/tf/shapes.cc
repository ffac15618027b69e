#include "runtime/tf/shapes.h"

#include <algorithm>
#include <set>

#include "blocks/basic/basic_ops.h"
#include "core/graph.h"
#include "runtime/tf/mapping.h"
#include "runtime/tf/values.h"

namespace blockflow::tfimport {
namespace {

using Dims = std::vector<int64_t>;

// Integer tensors up to this many elements keep their value (shape arguments and the like).
constexpr int64_t kMaxValueElements = 1024;

const pb::AttrValue* FindAttr(const pb::NodeDef& n, const std::string& key) {
  auto it = n.attr().find(key);
  return it == n.attr().end() ? nullptr : &it->second;
}

std::optional<Dims> AttrInts(const pb::NodeDef& n, const std::string& key) {
  const pb::AttrValue* a = FindAttr(n, key);
  if (!a || a->value_case() != pb::AttrValue::kList) return std::nullopt;
  return Dims(a->list().i().begin(), a->list().i().end());
}

std::string AttrString(const pb::NodeDef& n, const std::string& key, const std::string& dflt) {
  const pb::AttrValue* a = FindAttr(n, key);
  return a && a->value_case() == pb::AttrValue::kS ? a->s() : dflt;
}

bool AttrBool(const pb::NodeDef& n, const std::string& key) {
  const pb::AttrValue* a = FindAttr(n, key);
  return a && a->value_case() == pb::AttrValue::kB && a->b();
}

// The TensorFlow dtype of output k as the NodeDef's attrs state it: a per-output list first,
// then the attrs that name an output type, and T last (T is the *input* type of Shape, Cast...).
std::optional<int> RawDType(const pb::NodeDef& n, int k) {
  for (const char* key : {"_output_types", "component_types", "output_types", "Toutputs"}) {
    const pb::AttrValue* a = FindAttr(n, key);
    if (a && a->list().type_size() > k) return a->list().type(k);
  }
  for (const char* key : {"out_type", "output_type", "DstT", "dtype", "T"}) {
    const pb::AttrValue* a = FindAttr(n, key);
    if (a && a->value_case() == pb::AttrValue::kType) return a->type();
  }
  return std::nullopt;
}

// The same as a blockflow dtype, when it has one.
std::optional<DType> NodeDType(const pb::NodeDef& n, int k) {
  std::optional<int> t = RawDType(n, k);
  if (!t) return std::nullopt;
  Expected<DType> d = ToDType(*t, "");
  return d.ok() ? std::optional<DType>(*d) : std::nullopt;
}

std::optional<Dims> ShapeAttr(const pb::NodeDef& n, const std::string& key) {
  const pb::AttrValue* a = FindAttr(n, key);
  if (!a || a->value_case() != pb::AttrValue::kShape) return std::nullopt;
  return ShapeDims(a->shape());
}

// The value of an integer tensor as int64s, when known.
std::optional<Dims> IntValues(const TensorFacts& f) {
  if (!f.value || (f.value->dtype() != DType::kInt32 && f.value->dtype() != DType::kInt64))
    return std::nullopt;
  Dims v;
  for (int64_t i = 0; i < f.value->num_elements(); ++i)
    v.push_back(static_cast<int64_t>(f.value->GetAsDouble(i)));
  return v;
}

TensorFacts Known(std::optional<DType> dtype, Dims dims) {
  TensorFacts f;
  f.dtype = dtype;
  f.dims = std::move(dims);
  return f;
}

TensorFacts Unknown(std::optional<DType> dtype, std::string why) {
  TensorFacts f;
  f.dtype = dtype;
  f.unknown = std::move(why);
  return f;
}

// TensorFlow's broadcasting of two shapes (-1 where a size is not known yet).
std::optional<Dims> Broadcast(const Dims& a, const Dims& b) {
  const size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x == 1 || (x == -1 && y != 1)) {
      out[i] = y;
    } else if (y == 1 || y == -1 || x == y) {
      out[i] = x;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

// Height and width positions of a data_format.
std::pair<size_t, size_t> SpatialDims(const pb::NodeDef& n) {
  return AttrString(n, "data_format", "NHWC") == "NCHW" ? std::pair<size_t, size_t>{2, 3}
                                                        : std::pair<size_t, size_t>{1, 2};
}

size_t ChannelDim(const pb::NodeDef& n, size_t rank) {
  return AttrString(n, "data_format", "NHWC").rfind("NC", 0) == 0 ? 1 : rank - 1;
}

int64_t PoolSize(int64_t in, int64_t k, int64_t s, bool same) {
  if (in < 0 || s <= 0) return -1;
  if (same) return (in + s - 1) / s;
  return in < k ? 0 : (in - k) / s + 1;
}

int64_t Normalize(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

const std::set<std::string>& UnaryOps() {
  // clang-format off
  static const std::set<std::string> ops = {
      "Relu", "Relu6", "Elu", "Selu", "LeakyRelu", "Sigmoid", "Tanh", "Softplus", "Softsign",
      "Neg", "Abs", "Square", "Sqrt", "Rsqrt", "Exp", "Expm1", "Log", "Log1p", "Floor", "Ceil",
      "Round", "Rint", "Sign", "Reciprocal", "Inv", "Sin", "Cos", "Erf", "Softmax", "LogSoftmax",
      "StopGradient", "PreventGradient", "Snapshot", "CheckNumerics", "OnesLike", "LRN",
      "IsNan", "IsFinite", "LogicalNot", "Cast", "Identity", "ZerosLike", "EnsureShape"};
  // clang-format on
  return ops;
}

// Ops whose output has the shape of their first input (gradients of elementwise ops and
// pools, bias addition).
const std::set<std::string>& FirstInputShapeOps() {
  // clang-format off
  static const std::set<std::string> ops = {
      "ReluGrad", "Relu6Grad", "EluGrad", "SeluGrad", "LeakyReluGrad", "SigmoidGrad",
      "TanhGrad", "SoftplusGrad", "SoftsignGrad", "SqrtGrad", "RsqrtGrad", "ReciprocalGrad",
      "MaxPoolGrad", "MaxPoolGradV2", "LRNGrad", "BiasAdd", "BiasAddV1"};
  // clang-format on
  return ops;
}

const std::set<std::string>& BinaryOps() {
  // clang-format off
  static const std::set<std::string> ops = {
      "Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "DivNoNan", "FloorDiv", "FloorMod",
      "TruncateDiv", "Maximum", "Minimum", "Pow", "SquaredDifference", "Greater", "GreaterEqual",
      "Less", "LessEqual", "Equal", "NotEqual", "LogicalAnd", "LogicalOr"};
  // clang-format on
  return ops;
}

const std::set<std::string>& ReduceOps() {
  static const std::set<std::string> ops = {"Mean", "Max", "Min", "Prod", "Sum", "All", "Any"};
  return ops;
}

}  // namespace

bool PlaceholderShapeUnknown(const pb::NodeDef& node, int producer) {
  const pb::AttrValue* a = FindAttr(node, "shape");
  if (!a || a->value_case() != pb::AttrValue::kShape || a->shape().unknown_rank()) return true;
  // Before GraphDef version 22, TensorFlow wrote `shape {}` for "any shape".
  return producer < 22 && a->shape().dim_size() == 0;
}

GraphFacts::GraphFacts(const pb::GraphDef& gd, const ImportPlan& plan, const OpRegistry& registry)
    : gd_(gd), plan_(plan), registry_(registry), state_(static_cast<size_t>(gd.node_size())) {}

const TensorFacts& GraphFacts::Get(const TensorRef& tensor) {
  auto spec = plan_.feed_specs.find(tensor);
  const bool given = spec != plan_.feed_specs.end() && spec->second.dtype && spec->second.dims;
  if (!given) {
    const int index = plan_.by_name.at(tensor.first);
    if (state_[static_cast<size_t>(index)] == 0) Infer(index);
  }
  auto it = facts_.find(tensor);
  if (it != facts_.end()) return it->second;
  const pb::NodeDef& n = gd_.node(plan_.by_name.at(tensor.first));
  TensorFacts f = Unknown(
      NodeDType(n, tensor.second),
      Who(n) + (state_[static_cast<size_t>(plan_.by_name.at(tensor.first))] == 1
                    ? "is part of a cycle"
                    : "its output " + std::to_string(tensor.second) + " has no shape rule"));
  if (given) f = Known(spec->second.dtype, *spec->second.dims);
  return facts_.emplace(tensor, std::move(f)).first->second;
}

void GraphFacts::Infer(int root) {
  // Iterative depth-first walk: graphs can be deeper than the stack.
  std::vector<std::pair<int, size_t>> stack = {{root, 0}};
  state_[static_cast<size_t>(root)] = 1;
  while (!stack.empty()) {
    const int index = stack.back().first;
    const size_t next = stack.back().second;
    const auto& inputs = plan_.inputs[static_cast<size_t>(index)];
    if (next < inputs.size()) {
      ++stack.back().second;
      const TfInput& in = inputs[next];
      auto spec = plan_.feed_specs.find({in.node, in.index});
      if (spec != plan_.feed_specs.end() && spec->second.dtype && spec->second.dims) continue;
      const int producer = plan_.by_name.at(in.node);
      if (state_[static_cast<size_t>(producer)] == 0) {
        state_[static_cast<size_t>(producer)] = 1;
        stack.emplace_back(producer, 0);
      }
      continue;
    }
    stack.pop_back();
    std::vector<TensorFacts> outs = Rule(index);
    const pb::NodeDef& n = gd_.node(index);
    // _output_shapes fills in what the rule leaves open.
    const pb::AttrValue* shapes = FindAttr(n, "_output_shapes");
    const int listed = shapes ? shapes->list().shape_size() : 0;
    if (static_cast<int>(outs.size()) < listed) outs.resize(static_cast<size_t>(listed));
    for (size_t k = 0; k < outs.size(); ++k) {
      TensorFacts& f = outs[k];
      if (!f.dtype) f.dtype = NodeDType(n, static_cast<int>(k));
      if (static_cast<int>(k) < listed) {
        std::optional<Dims> d = ShapeDims(shapes->list().shape(static_cast<int>(k)));
        if (d && (!f.dims ||
                  (f.dims->size() == d->size() && std::count(f.dims->begin(), f.dims->end(), -1) >
                                                      std::count(d->begin(), d->end(), -1)))) {
          f.dims = d;
        }
      }
      if (!f.dims && f.unknown.empty()) f.unknown = Who(n) + "its shape cannot be inferred";
      if (!f.dtype) {
        // Say why: no attr names the dtype, or it has no blockflow equivalent (DT_STRING...).
        std::optional<int> raw = RawDType(n, static_cast<int>(k));
        f.unknown = raw ? ToDType(*raw, Who(n) + "output " + std::to_string(k)).status().message()
                        : Who(n) + "no attr gives the dtype of output " + std::to_string(k);
      }
      const TensorRef tensor{n.name(), static_cast<int>(k)};
      auto spec = plan_.feed_specs.find(tensor);
      if (spec != plan_.feed_specs.end()) {  // a --feed overrides what the graph says
        if (spec->second.dtype) f.dtype = spec->second.dtype;
        if (spec->second.dims) f.dims = spec->second.dims;
        f.value = nullptr;
      }
      facts_[tensor] = std::move(f);
    }
    state_[static_cast<size_t>(index)] = 2;
  }
}

std::vector<TensorFacts> GraphFacts::Rule(int index) {
  const pb::NodeDef& n = gd_.node(index);
  const std::string& op = n.op();
  const std::string who = Who(n);
  const std::optional<DType> dtype = NodeDType(n, 0);
  std::vector<const TensorFacts*> in;
  for (const TfInput& i : plan_.inputs[static_cast<size_t>(index)])
    in.push_back(&Get({i.node, i.index}));
  // The first input whose shape is unknown, whose reason passes on.
  auto unknown_input = [&](size_t first, size_t last) -> const TensorFacts* {
    for (size_t i = first; i < std::min(last, in.size()); ++i) {
      if (!in[i]->dims || !in[i]->dtype) return in[i];
    }
    return nullptr;
  };
  auto pass_on = [&](const TensorFacts* u) {
    return std::vector<TensorFacts>{Unknown(dtype, u->unknown)};
  };
  auto one = [&](Dims d) { return std::vector<TensorFacts>{Known(dtype, std::move(d))}; };
  auto fail = [&](const std::string& why) {
    return std::vector<TensorFacts>{Unknown(dtype, who + why)};
  };
  auto needs_value = [&](size_t i) -> std::optional<Dims> {
    if (i >= in.size()) return std::nullopt;
    return IntValues(*in[i]);
  };

  if (op == "Placeholder" || op == "PlaceholderV2") {
    if (PlaceholderShapeUnknown(n, plan_.producer)) {
      const pb::AttrValue* a = FindAttr(n, "shape");
      const bool old_scalar = a && a->value_case() == pb::AttrValue::kShape &&
                              !a->shape().unknown_rank() && a->shape().dim_size() == 0;
      return fail(old_scalar ? "its shape is unknown (`shape {}` in a GraphDef of producer " +
                                   std::to_string(plan_.producer) +
                                   ", before 22, means any shape, not a scalar)"
                             : "its shape is unknown (no shape attr, or one of unknown rank)");
    }
    return one(*ShapeAttr(n, "shape"));
  }
  if (op == "PlaceholderWithDefault") {
    if (!PlaceholderShapeUnknown(n, plan_.producer)) return one(*ShapeAttr(n, "shape"));
    if (const TensorFacts* u = unknown_input(0, 1)) return pass_on(u);
    return in.empty() ? fail("has no input") : one(*in[0]->dims);
  }
  if (op == "VariableV2" || op == "Variable" || op == "VarHandleOp") {
    std::optional<Dims> d = ShapeAttr(n, "shape");
    return d ? one(*d) : fail("has no shape attr of known rank");
  }
  if (op == "ReadVariableOp" && !in.empty()) {
    const int h = plan_.by_name.at(plan_.inputs[static_cast<size_t>(index)][0].node);
    std::optional<Dims> d = ShapeAttr(gd_.node(h), "shape");
    return d ? one(*d)
             : std::vector<TensorFacts>{
                   Unknown(dtype, Who(gd_.node(h)) + "has no shape attr of known rank")};
  }
  if (op == "Const") {
    const pb::AttrValue* v = FindAttr(n, "value");
    if (!v || v->value_case() != pb::AttrValue::kTensor) return fail("has no tensor 'value' attr");
    std::optional<Dims> d = ShapeDims(v->tensor().tensor_shape());
    if (!d) return fail("its value has a shape of unknown rank");
    TensorFacts f = Known(dtype, *d);
    const int t = v->tensor().dtype();
    const int64_t count = Shape(*d).num_elements();
    if ((t == pb::DT_INT32 || t == pb::DT_INT64) && count >= 0 && count <= kMaxValueElements) {
      Expected<Tensor> value = TensorFromProto(v->tensor(), who);
      if (value.ok()) f.value = std::make_shared<Tensor>(std::move(value).value());
    }
    return {f};
  }
  if (op == "QueueDequeueV2" || op == "QueueDequeue" || op == "QueueDequeueManyV2" ||
      op == "QueueDequeueMany" || op == "QueueDequeueUpToV2" || op == "QueueDequeueUpTo") {
    const pb::AttrValue* types = FindAttr(n, "component_types");
    const int count = types ? types->list().type_size() : 0;
    if (count == 0) return fail("has no component_types attr");
    if (plan_.inputs[static_cast<size_t>(index)].empty()) return fail("has no queue input");
    const pb::NodeDef& queue =
        gd_.node(plan_.by_name.at(plan_.inputs[static_cast<size_t>(index)][0].node));
    const pb::AttrValue* shapes = FindAttr(queue, "shapes");
    const bool many = op.find("Many") != std::string::npos;
    const bool up_to = op.find("UpTo") != std::string::npos;
    std::optional<int64_t> batch;
    if (many) {
      std::optional<Dims> nv = in.size() > 1 ? IntValues(*in[1]) : std::nullopt;
      batch = nv && nv->size() == 1 ? (*nv)[0] : -1;
    } else if (up_to) {
      batch = -1;
    }
    std::vector<TensorFacts> outs;
    for (int k = 0; k < count; ++k) {
      std::optional<DType> dt = NodeDType(n, k);
      if (!shapes || shapes->list().shape_size() <= k) {
        outs.push_back(
            Unknown(dt, Who(queue) + "its component shapes are not given (no shapes attr)"));
        continue;
      }
      std::optional<Dims> d = ShapeDims(shapes->list().shape(k));
      if (!d) {
        outs.push_back(
            Unknown(dt, Who(queue) + "component " + std::to_string(k) + " has unknown rank"));
        continue;
      }
      if (batch) d->insert(d->begin(), *batch);
      outs.push_back(Known(dt, *d));
    }
    return outs;
  }
  if (op == "IteratorGetNext") {
    const pb::AttrValue* shapes = FindAttr(n, "output_shapes");
    std::vector<TensorFacts> outs;
    const int count = shapes ? shapes->list().shape_size() : 0;
    for (int k = 0; k < count; ++k) {
      std::optional<Dims> d = ShapeDims(shapes->list().shape(k));
      outs.push_back(d ? Known(NodeDType(n, k), *d)
                       : Unknown(NodeDType(n, k),
                                 who + "output_shapes " + std::to_string(k) + " has unknown rank"));
    }
    return outs;
  }

  // The ops blockflow has: its own shape function, on a graph of this node and its inputs.
  if (const OpSchema* schema = registry_.Find(op); schema && op != "Reshape") {
    if (const TensorFacts* u = unknown_input(0, in.size())) return pass_on(u);
    Graph mini;
    std::vector<Endpoint> eps;
    for (size_t i = 0; i < in.size(); ++i) {
      Node p;
      p.id = "in" + std::to_string(i);
      if (in[i]->value) {
        p.op = "Const";
        p.attrs = {{"dtype", std::string(DTypeName(in[i]->value->dtype()))},
                   {"shape", DimsJson(in[i]->value->shape().dims())},
                   {"value", ops::TensorToJsonValues(*in[i]->value)}};
      } else {
        p.op = "Placeholder";
        p.attrs = {{"dtype", std::string(DTypeName(*in[i]->dtype))},
                   {"shape", DimsJson(*in[i]->dims)}};
      }
      eps.push_back({p.id, 0});
      (void)mini.AddNode(std::move(p));
    }
    Node node;
    node.id = "node";
    node.op = op;
    std::vector<std::string> notes;
    if (Status s = WireEndpoints(n, eps, *schema, &node); !s.ok())
      return fail(s.message().substr(who.size()));
    Expected<nlohmann::json> attrs = ConvertOpAttrs(n, *schema, &notes);
    if (!attrs.ok()) return {Unknown(dtype, attrs.status().message())};
    node.attrs = std::move(attrs).value();
    (void)mini.AddNode(std::move(node));
    GraphAnalysis a = AnalyzeGraph(mini, registry_);
    if (!a.ok()) return fail(a.issues[0].message);
    std::vector<TensorFacts> outs;
    for (const PortInfo& p : a.nodes.back().outputs) {
      TensorFacts f = Known(p.dtype, p.shape.dims());
      if (p.value && (p.dtype == DType::kInt32 || p.dtype == DType::kInt64) &&
          p.value->num_elements() <= kMaxValueElements) {
        f.value = p.value;
      }
      outs.push_back(std::move(f));
    }
    return outs;
  }

  // Shape-only rules of common ops blockflow does not run. Each reads its first input, so a
  // node without one (a malformed GraphDef) stops here (found by fuzzing: Pad read in[0]).
  if (in.empty()) return fail("has no inputs");
  if (UnaryOps().count(op) || FirstInputShapeOps().count(op)) {
    if (const TensorFacts* u = unknown_input(0, 1)) return pass_on(u);
    TensorFacts f = Known(dtype, *in[0]->dims);
    if ((op == "Identity" || op == "StopGradient" || op == "Snapshot" || op == "Cast") &&
        in[0]->value && dtype && (*dtype == DType::kInt32 || *dtype == DType::kInt64)) {
      f.value = in[0]->value;
      if (in[0]->value->dtype() != *dtype) {
        Tensor t(*dtype, in[0]->value->shape());
        for (int64_t i = 0; i < t.num_elements(); ++i)
          t.SetFromDouble(i, in[0]->value->GetAsDouble(i));
        f.value = std::make_shared<Tensor>(std::move(t));
      }
    }
    return {f};
  }
  if (BinaryOps().count(op)) {
    if (const TensorFacts* u = unknown_input(0, 2)) return pass_on(u);
    if (in.size() < 2) return fail("has fewer than 2 inputs");
    std::optional<Dims> d = Broadcast(*in[0]->dims, *in[1]->dims);
    if (!d) {
      return fail("cannot broadcast " + Shape(*in[0]->dims).ToString() + " with " +
                  Shape(*in[1]->dims).ToString());
    }
    return one(*d);
  }
  if (op == "AddN") {
    if (const TensorFacts* u = unknown_input(0, 1)) return pass_on(u);
    return one(*in[0]->dims);
  }
  if (op == "BiasAddGrad") {
    if (const TensorFacts* u = unknown_input(0, 1)) return pass_on(u);
    const Dims& d = *in[0]->dims;
    if (d.empty()) return fail("input has rank 0");
    return one({d[ChannelDim(n, d.size())]});
  }
  if (op == "FusedBatchNorm" || op == "FusedBatchNormV2" || op == "FusedBatchNormV3" ||
      op == "FusedBatchNormGrad" || op == "FusedBatchNormGradV2" || op == "FusedBatchNormGradV3") {
    const bool grad = op.find("Grad") != std::string::npos;
    const size_t x = grad ? 1 : 0;
    if (const TensorFacts* u = unknown_input(x, x + 1)) return pass_on(u);
    const Dims& d = *in[x]->dims;
    if (d.size() != 4) return fail("x must have rank 4");
    const int64_t c = d[ChannelDim(n, 4)];
    std::vector<TensorFacts> outs = {Known(dtype, d)};
    const size_t extra = grad ? 4 : (op == "FusedBatchNormV3" ? 5 : 4);
    for (size_t k = 0; k < extra; ++k)
      outs.push_back(Known(NodeDType(n, 1).value_or(DType::kFloat32), {c}));
    if (grad) outs.back().dims = Dims{0};
    return outs;
  }
  if (op == "MaxPool" || op == "AvgPool" || op == "MaxPoolV2" || op == "MaxPoolWithArgmax") {
    if (const TensorFacts* u = unknown_input(0, 1)) return pass_on(u);
    const Dims& d = *in[0]->dims;
    std::optional<Dims> ksize = AttrInts(n, "ksize"), strides = AttrInts(n, "strides");
    if (op == "MaxPoolV2") {
      ksize = needs_value(1);
      strides = needs_value(2);
    }
    if (d.size() != 4) return fail("input " + Shape(d).ToString() + " must have rank 4");
    if (!ksize || !strides || ksize->size() != 4 || strides->size() != 4)
      return fail("needs 4 ksize and 4 strides");
    const std::string padding = AttrString(n, "padding", "VALID");
    if (padding != "SAME" && padding != "VALID")
      return fail("padding '" + padding + "' has no shape rule");
    Dims out = d;
    for (size_t i : {SpatialDims(n).first, SpatialDims(n).second})
      out[i] = PoolSize(d[i], (*ksize)[i], (*strides)[i], padding == "SAME");
    if (op == "MaxPoolWithArgmax") {
      return {Known(dtype, out), Known(NodeDType(n, 1).value_or(DType::kInt64), out)};
    }
    return one(out);
  }
  if (op == "AvgPoolGrad") {
    std::optional<Dims> v = needs_value(0);
    if (!v) return fail("its orig_input_shape is not a constant");
    return one(*v);
  }
  if (op == "Reshape") {
    std::optional<Dims> shape = needs_value(1);
    if (!shape) {
      return in.size() < 2 ? fail("has fewer than 2 inputs")
                           : fail("its shape input is not a constant (" +
                                  plan_.inputs[static_cast<size_t>(index)][1].node + ")");
    }
    const auto free = std::count(shape->begin(), shape->end(), -1);
    if (free == 1 && in[0]->dims && Shape(*in[0]->dims).IsFullyDefined()) {
      int64_t known = 1;
      for (int64_t s : *shape) known *= s == -1 ? 1 : s;
      const int64_t total = Shape(*in[0]->dims).num_elements();
      if (known > 0 && total % known == 0)
        std::replace(shape->begin(), shape->end(), int64_t{-1}, total / known);
    }
    TensorFacts f = Known(dtype ? dtype : in[0]->dtype, *shape);
    return {f};
  }
  if (op == "Pad" || op == "PadV2" || op == "MirrorPad") {
    if (const TensorFacts* u = unknown_input(0, 1)) return pass_on(u);
    std::optional<Dims> p = needs_value(1);
    const Dims& d = *in[0]->dims;
    if (!p) return fail("its paddings are not a constant");
    if (p->size() != 2 * d.size()) return fail("paddings do not match the input's rank");
    Dims out = d;
    for (size_t i = 0; i < d.size(); ++i)
      out[i] = d[i] < 0 ? -1 : d[i] + (*p)[2 * i] + (*p)[2 * i + 1];
    return one(out);
  }
  if (op == "ConcatV2" || op == "Concat") {
    const bool v2 = op == "ConcatV2";
    if (in.size() < 2) return fail("has fewer than 2 inputs");
    const size_t first = v2 ? 0 : 1, last = v2 ? in.size() - 1 : in.size();
    std::optional<Dims> axis = needs_value(v2 ? in.size() - 1 : 0);
    if (!axis || axis->size() != 1) return fail("its axis is not a constant");
    if (const TensorFacts* u = unknown_input(first, last)) return pass_on(u);
    Dims out = *in[first]->dims;
    const int64_t ax = Normalize((*axis)[0], out.size());
    if (ax < 0 || ax >= static_cast<int64_t>(out.size())) return fail("axis out of range");
    out[static_cast<size_t>(ax)] = 0;
    for (size_t i = first; i < last; ++i) {
      const Dims& d = *in[i]->dims;
      if (d.size() != out.size()) return fail("inputs of different ranks");
      const int64_t s = d[static_cast<size_t>(ax)];
      int64_t& o = out[static_cast<size_t>(ax)];
      o = (o < 0 || s < 0) ? -1 : o + s;
      for (size_t j = 0; j < d.size(); ++j) {
        if (static_cast<int64_t>(j) != ax && out[j] == -1) out[j] = d[j];
      }
    }
    return one(out);
  }
  if (op == "MatMul") {
    if (const TensorFacts* u = unknown_input(0, 2)) return pass_on(u);
    if (in.size() < 2) return fail("has fewer than 2 inputs");
    const Dims &a = *in[0]->dims, &b = *in[1]->dims;
    if (a.size() != 2 || b.size() != 2) return fail("inputs must have rank 2");
    return one(
        {AttrBool(n, "transpose_a") ? a[1] : a[0], AttrBool(n, "transpose_b") ? b[0] : b[1]});
  }
  if (op == "Squeeze") {
    if (const TensorFacts* u = unknown_input(0, 1)) return pass_on(u);
    const Dims& d = *in[0]->dims;
    Dims axes = AttrInts(n, "squeeze_dims").value_or(AttrInts(n, "axis").value_or(Dims{}));
    std::set<int64_t> drop;
    for (int64_t a : axes) drop.insert(Normalize(a, d.size()));
    Dims out;
    for (size_t i = 0; i < d.size(); ++i) {
      if (axes.empty() && d[i] == -1) return fail("which sizes are 1 is not known yet");
      if (axes.empty() ? d[i] == 1 : drop.count(static_cast<int64_t>(i)) > 0) continue;
      out.push_back(d[i]);
    }
    return one(out);
  }
  if (op == "ExpandDims") {
    if (const TensorFacts* u = unknown_input(0, 1)) return pass_on(u);
    std::optional<Dims> dim = needs_value(1);
    if (!dim || dim->size() != 1) return fail("its dim is not a constant");
    Dims out = *in[0]->dims;
    int64_t at = (*dim)[0] < 0 ? (*dim)[0] + static_cast<int64_t>(out.size()) + 1 : (*dim)[0];
    if (at < 0 || at > static_cast<int64_t>(out.size())) return fail("dim out of range");
    out.insert(out.begin() + at, 1);
    return one(out);
  }
  if (op == "StridedSlice") {
    // The value of a slice of a 1-D integer tensor, as tf.shape(x)[0] and tf.shape(x)[1:3] make:
    // one axis, no ellipsis or new axis.
    std::optional<Dims> v = needs_value(0), b = needs_value(1), e = needs_value(2),
                        st = needs_value(3);
    auto mask = [&](const char* key) {
      const pb::AttrValue* a = FindAttr(n, key);
      return a ? a->i() : 0;
    };
    if (!v || !b || !e || !st || in[0]->value->shape().rank() != 1 || b->size() != 1 ||
        e->size() != 1 || st->size() != 1 || (*st)[0] != 1 || mask("ellipsis_mask") != 0 ||
        mask("new_axis_mask") != 0) {
      return fail("has a shape rule only for a unit-stride slice of a constant 1-D integer tensor");
    }
    const int64_t size = static_cast<int64_t>(v->size());
    auto clamp = [&](int64_t i) { return std::clamp(i < 0 ? i + size : i, int64_t{0}, size); };
    const int64_t begin = (mask("begin_mask") & 1) != 0 ? 0 : clamp((*b)[0]);
    const bool shrink = (mask("shrink_axis_mask") & 1) != 0;
    const int64_t end = shrink ? begin + 1 : (mask("end_mask") & 1) != 0 ? size : clamp((*e)[0]);
    if (begin >= size && shrink) return fail("slice index out of range");
    const int64_t count = std::max<int64_t>(0, end - begin);
    Tensor t(in[0]->value->dtype(), shrink ? Shape{} : Shape{count});
    for (int64_t i = 0; i < count; ++i)
      t.SetFromDouble(i, static_cast<double>((*v)[static_cast<size_t>(begin + i)]));
    TensorFacts f = Known(t.dtype(), t.shape().dims());
    f.value = std::make_shared<Tensor>(std::move(t));
    return {f};
  }
  if (op == "Pack") {
    if (const TensorFacts* u = unknown_input(0, in.size())) return pass_on(u);
    if (in.empty()) return fail("has no inputs");
    Dims out = *in[0]->dims;
    int64_t axis = Normalize(FindAttr(n, "axis") ? FindAttr(n, "axis")->i() : 0, out.size() + 1);
    if (axis < 0 || axis > static_cast<int64_t>(out.size())) return fail("axis out of range");
    out.insert(out.begin() + axis, static_cast<int64_t>(in.size()));
    TensorFacts f = Known(dtype, out);
    // A shape built from scalars (conv2d_transpose's output_shape): its value.
    if (out.size() == 1 && dtype && (*dtype == DType::kInt32 || *dtype == DType::kInt64)) {
      Tensor t(*dtype, Shape{static_cast<int64_t>(in.size())});
      bool all = true;
      for (size_t i = 0; i < in.size() && all; ++i) {
        all = in[i]->value && in[i]->value->num_elements() == 1;
        if (all) t.SetFromDouble(static_cast<int64_t>(i), in[i]->value->GetAsDouble(0));
      }
      if (all) f.value = std::make_shared<Tensor>(std::move(t));
    }
    return {f};
  }
  if (ReduceOps().count(op)) {
    if (const TensorFacts* u = unknown_input(0, 1)) return pass_on(u);
    std::optional<Dims> axes = needs_value(1);
    if (!axes) return fail("its reduction axes are not a constant");
    const Dims& d = *in[0]->dims;
    std::set<int64_t> drop;
    for (int64_t a : *axes) drop.insert(Normalize(a, d.size()));
    const bool keep = AttrBool(n, "keep_dims");
    Dims out;
    for (size_t i = 0; i < d.size(); ++i) {
      if (!drop.count(static_cast<int64_t>(i))) {
        out.push_back(d[i]);
      } else if (keep) {
        out.push_back(1);
      }
    }
    return one(out);
  }
  if (op == "SoftmaxCrossEntropyWithLogits" || op == "SparseSoftmaxCrossEntropyWithLogits") {
    if (const TensorFacts* u = unknown_input(0, 1)) return pass_on(u);
    const Dims& d = *in[0]->dims;
    if (d.size() != 2) return fail("logits must have rank 2");
    return {Known(dtype, {d[0]}), Known(dtype, d)};
  }
  return fail("blockflow has no block '" + op + "' and no shape rule for it");
}

}  // namespace blockflow::tfimport
