#include "runtime/tf/mapping.h"

#include <algorithm>

#include "blocks/basic/basic_ops.h"
#include "core/text.h"
#include "runtime/tf/shapes.h"
#include "runtime/tf/values.h"

namespace blockflow::tfimport {
namespace {

using nlohmann::json;

// Attrs that steer TensorFlow's kernel selection or bookkeeping but carry nothing a
// blockflow block needs (its dtypes come from the wires, list lengths from the wiring).
const std::set<std::string>& TfOnlyAttrs() {
  // clang-format off
  static const std::set<std::string> names = {
      "T", "N", "Tshape", "Tidx", "Tpaddings", "Tperm", "Tmultiples", "Tindices", "Taxis",
      "Tparams", "TI", "Tout", "Tlen", "use_cudnn_on_gpu", "container", "shared_name",
      "validate_shape", "use_locking", "index_type"};
  // clang-format on
  return names;
}

// How to give a tensor's dtype and shape on the command line.
std::string FeedHint(const std::string& tensor, std::optional<DType> dtype) {
  const std::string d = dtype ? std::string(DTypeName(*dtype)) : "float32";
  return "give them with --feed " + tensor + ":" + d +
         "[d0,d1,...] (-1 for a free size) or --feed " + tensor + "=FILE.npy";
}

// The Placeholder for a fed tensor: dtype and shape from the --feed, else from the facts (the
// GraphDef's attrs or inference). A tensor cut by cut_unsupported whose small integer value is
// known becomes a Const of that value.
Expected<Node> FedPlaceholder(const ImportPlan& plan, GraphFacts& facts, const TensorRef& tensor) {
  const auto& [name, k] = tensor;
  const std::string tname = TensorName(name, k);
  auto spec = plan.feed_specs.find(tensor);
  const std::string what = "--feed " + (spec != plan.feed_specs.end() ? spec->second.text : tname);
  const TensorFacts& f = facts.Get(tensor);
  if (!f.dtype) {
    return InvalidArgument(what + ": cannot tell the dtype of '" + tname + "': " + f.unknown +
                           "; " + FeedHint(tname, std::nullopt));
  }
  if (!f.dims) {
    return InvalidArgument(what + ": cannot tell the shape of '" + tname + "': " + f.unknown +
                           "; " + FeedHint(tname, f.dtype));
  }
  Node p;
  p.id = FedPlaceholderId(tensor);
  if (plan.auto_cuts.count(tensor) && f.value) {
    p.op = "Const";
    p.attrs = json{{"dtype", std::string(DTypeName(f.value->dtype()))},
                   {"shape", DimsJson(f.value->shape().dims())},
                   {"value", ops::TensorToJsonValues(*f.value)}};
    return p;
  }
  p.op = "Placeholder";
  p.attrs = json{{"dtype", std::string(DTypeName(*f.dtype))}, {"shape", DimsJson(*f.dims)}};
  if (spec != plan.feed_specs.end() && !spec->second.ui_feed.empty())
    p.ui = json{{"feed", spec->second.ui_feed}};
  return p;
}

// A Const's attrs: its value inline when small, else in a .npy file of `result`.
Expected<json> ConstAttrs(const pb::NodeDef& n, const ImportOptions& options,
                          ImportResult* result) {
  auto v = n.attr().find("value");
  if (v == n.attr().end() || v->second.value_case() != pb::AttrValue::kTensor) {
    return InvalidArgument(Who(n) + "has no tensor 'value' attr");
  }
  ASSIGN_OR_RETURN(
      Tensor t, TensorFromProto(v->second.tensor(), Who(n) + "attr 'value'", options.memory_limit));
  json attrs = json::object();
  attrs["dtype"] = std::string(DTypeName(t.dtype()));
  if (t.num_elements() <= options.inline_limit) {
    attrs["shape"] = DimsJson(t.shape().dims());
    attrs["value"] = ops::TensorToJsonValues(t);  // exact ints; "nan"/"inf" for floats
  } else {
    const std::string file = options.const_dir + "/" + n.name() + ".npy";
    attrs["file"] = file;
    result->const_files.emplace_back(file, std::move(t));
  }
  return attrs;
}

// A Placeholder's attrs: dtype, and a shape of known rank.
Expected<json> PlaceholderAttrs(const pb::NodeDef& n, GraphFacts& facts) {
  auto d = n.attr().find("dtype");
  if (d == n.attr().end() || d->second.value_case() != pb::AttrValue::kType) {
    return InvalidArgument(Who(n) + "has no 'dtype' attr");
  }
  ASSIGN_OR_RETURN(DType dtype, ToDType(d->second.type(), Who(n) + "attr 'dtype'"));
  const TensorFacts& f = facts.Get({n.name(), 0});
  if (!f.dims) {
    std::string why = f.unknown;
    if (why.rfind(Who(n), 0) == 0) why = why.substr(Who(n).size());
    return InvalidArgument(Who(n) + why + "; blockflow needs its rank (sizes may be -1): " +
                           FeedHint(n.name(), dtype));
  }
  return json{{"dtype", std::string(DTypeName(dtype))}, {"shape", DimsJson(*f.dims)}};
}

}  // namespace

// Any other op's attrs: the schema's, converted; TensorFlow-only ones dropped silently, others
// the block lacks dropped with a note. Every conversion error is reported, one per line.

Expected<json> ConvertOpAttrs(const pb::NodeDef& n, const OpSchema& schema,
                              std::vector<std::string>* notes) {
  json attrs = json::object();
  std::vector<std::string> errors;
  std::vector<std::string> keys;
  for (const auto& [key, value] : n.attr()) keys.push_back(key);
  std::sort(keys.begin(), keys.end());  // proto maps have no order; keep the output stable
  for (const std::string& key : keys) {
    if (key.empty() || key[0] == '_' || TfOnlyAttrs().count(key)) continue;
    if (!schema.FindAttr(key)) {
      notes->push_back(Who(n) + "attr '" + key + "' dropped: blockflow's " + n.op() +
                       " has no such attr");
      continue;
    }
    Expected<json> j = AttrToJson(n.attr().at(key), Who(n) + "attr '" + key + "'");
    if (!j.ok()) {
      errors.push_back(j.status().message());
      continue;
    }
    attrs[key] = std::move(j).value();
  }
  // TensorFlow writes some attrs empty whatever their condition (explicit_paddings: [] with
  // any padding); an empty attr whose schema condition does not hold means nothing.
  for (const AttrDef& def : schema.attrs()) {
    auto it = attrs.find(def.name);
    if (it != attrs.end() && it->empty() && !AttrIsVisible(schema, def, attrs)) attrs.erase(it);
  }
  if (!errors.empty()) return InvalidArgument(JoinLines(errors));
  return attrs;
}

Status WireEndpoints(const pb::NodeDef& n, const std::vector<Endpoint>& eps, const OpSchema& schema,
                     Node* node) {
  const auto& ports = schema.inputs();
  const size_t singles = static_cast<size_t>(
      std::count_if(ports.begin(), ports.end(), [](const PortDef& p) { return !p.is_list; }));
  const bool has_list = singles != ports.size();
  if (eps.size() < singles || (!has_list && eps.size() != singles)) {
    std::string names;
    for (const PortDef& p : ports)
      names += (names.empty() ? "" : ", ") + p.name + (p.is_list ? "..." : "");
    return InvalidArgument(Who(n) + "has " + std::to_string(eps.size()) +
                           " data inputs, blockflow's " + n.op() + " takes " +
                           (has_list ? "at least " : "") + std::to_string(singles) + " (" +
                           (names.empty() ? "none" : names) + ")");
  }
  size_t next = 0;
  for (const PortDef& p : ports) {
    const size_t take = p.is_list ? eps.size() - singles : 1;
    std::vector<Endpoint>& dst = node->inputs[p.name];
    for (size_t t = 0; t < take; ++t) dst.push_back(eps[next++]);
  }
  return Status::OK();
}

namespace {

// Wires a kept NodeDef's data inputs, a fed tensor's Placeholder in place of the tensor.
Status WireInputs(const pb::NodeDef& n, const std::vector<TfInput>& tf_inputs,
                  const ImportPlan& plan, const OpSchema& schema, Node* node) {
  std::vector<Endpoint> eps;
  for (const TfInput& in : tf_inputs) {
    const TensorRef tensor{in.node, in.index};
    eps.push_back(plan.feeds.count(tensor) ? Endpoint{FedPlaceholderId(tensor), 0}
                                           : Endpoint{in.node, in.index});
  }
  return WireEndpoints(n, eps, schema, node);
}

// Maps one plan entry into `result`, or adds its problems to `errors`.
class EntryMapper {
 public:
  EntryMapper(const pb::GraphDef& gd, const ImportPlan& plan, const ImportOptions& options,
              const OpRegistry& registry, const std::map<TensorRef, Node>& placeholders,
              GraphFacts& facts, ImportResult* result, std::vector<std::string>* errors)
      : gd_(gd),
        plan_(plan),
        options_(options),
        registry_(registry),
        placeholders_(placeholders),
        facts_(facts),
        result_(result),
        errors_(errors) {}

  void operator()(const FedTensor& fed) {
    auto it = placeholders_.find(fed.tensor);
    if (it == placeholders_.end()) return;  // its dtype or shape error is already reported
    if (Status s = result_->graph.AddNode(it->second); !s.ok()) {
      errors_->push_back("--feed " + TensorName(fed.tensor.first, fed.tensor.second) +
                         ": Placeholder '" + it->second.id + "': " + s.message() +
                         (plan_.kept.count(it->second.id) ? " (the node itself is still needed: "
                                                            "feed its other outputs too)"
                                                          : ""));
    }
  }

  void operator()(const KeptNode& kept) {
    const pb::NodeDef& n = gd_.node(kept.index);
    const OpSchema& schema = *registry_.Find(n.op());
    Node node;
    node.id = n.name();
    node.op = n.op();
    if (!IsValidNodeId(node.id)) {
      errors_->push_back(Who(n) +
                         "the name is not a valid blockflow id (letters, digits and _ . - /)");
      return;
    }
    if (Status s =
            WireInputs(n, plan_.inputs[static_cast<size_t>(kept.index)], plan_, schema, &node);
        !s.ok()) {
      errors_->push_back(s.message());
      return;
    }
    // A block fed at run time takes a Placeholder's attrs; one whose value may come from a
    // file takes a Const's tensor.
    Expected<json> attrs = IsFedBlock(schema)   ? PlaceholderAttrs(n, facts_)
                           : HoldsValue(schema) ? ConstAttrs(n, options_, result_)
                                                : ConvertOpAttrs(n, schema, &result_->notes);
    if (!attrs.ok()) {
      errors_->push_back(attrs.status().message());
      return;
    }
    node.attrs = std::move(attrs).value();
    if (Status s = result_->graph.AddNode(std::move(node)); !s.ok())
      errors_->push_back(Who(n) + s.message());
  }

 private:
  const pb::GraphDef& gd_;
  const ImportPlan& plan_;
  const ImportOptions& options_;
  const OpRegistry& registry_;
  const std::map<TensorRef, Node>& placeholders_;
  GraphFacts& facts_;
  ImportResult* result_;
  std::vector<std::string>* errors_;
};

}  // namespace

Expected<ImportResult> MapPlan(const pb::GraphDef& gd, const ImportPlan& plan,
                               const ImportOptions& options, const OpRegistry& registry,
                               GraphFacts* shared_facts) {
  std::optional<GraphFacts> own_facts;
  if (!shared_facts) own_facts.emplace(gd, plan, registry);
  GraphFacts& facts = shared_facts ? *shared_facts : *own_facts;
  std::vector<std::string> errors;
  std::map<TensorRef, Node> placeholders;
  for (const TensorRef& tensor : plan.feeds) {
    Expected<Node> p = FedPlaceholder(plan, facts, tensor);
    if (!p.ok()) {
      errors.push_back(p.status().message());
      continue;
    }
    placeholders.emplace(tensor, std::move(p).value());
  }
  errors.insert(errors.end(), plan.order_errors.begin(), plan.order_errors.end());
  ImportResult result;
  EntryMapper mapper(gd, plan, options, registry, placeholders, facts, &result, &errors);
  for (const PlanEntry& entry : plan.order) std::visit(mapper, entry);
  if (errors.empty()) return result;
  return InvalidArgument(JoinLines(errors));
}

}  // namespace blockflow::tfimport
