#include "runtime/tf/plan.h"

#include <functional>

#include "core/text.h"

namespace blockflow::tfimport {
namespace {

// Names, data inputs, feeds and roots (the fetched nodes, or every node), checked.
Status ReadNames(const pb::GraphDef& gd, const ImportOptions& options, ImportPlan* plan,
                 std::vector<std::string>* roots) {
  std::vector<std::string> errors;
  for (int i = 0; i < gd.node_size(); ++i) {
    const pb::NodeDef& n = gd.node(i);
    if (!plan->by_name.emplace(n.name(), i).second)
      errors.push_back("two nodes are named '" + n.name() + "'");
  }
  // Data inputs of every node (control inputs dropped: they only order execution).
  plan->inputs.resize(static_cast<size_t>(gd.node_size()));
  for (int i = 0; i < gd.node_size(); ++i) {
    const pb::NodeDef& n = gd.node(i);
    for (const std::string& text : n.input()) {
      std::optional<TfInput> in = ParseTfInput(text);
      if (!in) {
        errors.push_back(Who(n) + "malformed input '" + text + "'");
        continue;
      }
      if (in->control) continue;
      if (!plan->by_name.count(in->node)) {
        errors.push_back(Who(n) + "input '" + text + "' names no node in the graph");
        continue;
      }
      plan->inputs[static_cast<size_t>(i)].push_back(*in);
    }
  }
  // Feeds: tensors where the graph is cut.
  for (const std::string& f : options.feeds) {
    std::optional<TfInput> in = ParseTfInput(f);
    if (!in || in->control) {
      errors.push_back("--feed " + f + ": expected NAME or NAME:K");
      continue;
    }
    if (!plan->by_name.count(in->node)) {
      errors.push_back("--feed " + f + ": there is no node '" + in->node + "' in the GraphDef");
      continue;
    }
    plan->feeds.insert({in->node, in->index});
  }
  if (options.fetches.empty()) {
    for (const pb::NodeDef& n : gd.node()) roots->push_back(n.name());
  } else {
    for (const std::string& f : options.fetches) {
      std::optional<TfInput> in = ParseTfInput(f);
      if (!in || in->control || !plan->by_name.count(in->node)) {
        errors.push_back("--fetch " + f + ": there is no node '" + (in ? in->node : f) +
                         "' in the GraphDef");
        continue;
      }
      roots->push_back(in->node);
    }
  }
  return errors.empty() ? Status::OK() : InvalidArgument(JoinLines(errors));
}

// Walks back from the roots; a fed tensor ends the walk, and so does an op blockflow lacks
// (reported with the --feed that would cut it off). Fills plan->kept.
Status Prune(const pb::GraphDef& gd, const ImportOptions& options, const OpRegistry& registry,
             const std::vector<std::string>& roots, ImportPlan* plan) {
  const auto& feeds = plan->feeds;
  std::set<TensorRef> used_feeds;
  std::vector<std::string> unsupported;  // in discovery order
  std::vector<std::string> stack(roots.rbegin(), roots.rend());
  const std::set<std::string> root_set(roots.begin(), roots.end());
  while (!stack.empty()) {
    const std::string name = stack.back();
    stack.pop_back();
    if (plan->kept.count(name)) continue;
    if (feeds.count({name, 0}) && root_set.count(name) && !options.fetches.empty()) {
      used_feeds.insert({name, 0});  // fetching a fed tensor: the Placeholder itself
      continue;
    }
    plan->kept.insert(name);
    const int i = plan->by_name.at(name);
    if (!registry.Find(gd.node(i).op())) {
      unsupported.push_back(name);
      continue;
    }
    for (const TfInput& in : plan->inputs[static_cast<size_t>(i)]) {
      if (feeds.count({in.node, in.index})) {
        used_feeds.insert({in.node, in.index});
        continue;
      }
      stack.push_back(in.node);
    }
  }
  std::vector<std::string> errors;
  for (const auto& f : feeds) {
    if (!used_feeds.count(f)) {
      errors.push_back(
          "--feed " + TensorName(f.first, f.second) +
          ": no kept node reads this tensor (check the name, the :K and the --fetch list)");
    }
  }
  // Report the ops blockflow lacks, each with the cut that removes it.
  for (const std::string& name : unsupported) {
    const pb::NodeDef& n = gd.node(plan->by_name.at(name));
    std::set<int> consumed;
    for (const std::string& k : plan->kept) {
      const int ki = plan->by_name.at(k);
      if (!registry.Find(gd.node(ki).op())) continue;
      for (const TfInput& in : plan->inputs[static_cast<size_t>(ki)]) {
        if (in.node == name && !feeds.count({in.node, in.index})) consumed.insert(in.index);
      }
    }
    std::string msg = Who(n) + "blockflow has no block '" + n.op() + "'";
    if (!consumed.empty()) {
      msg += "; cut it off with";
      for (int k : consumed) msg += " --feed " + TensorName(name, k);
    }
    if (root_set.count(name) && !options.fetches.empty()) {
      msg += "; it is fetched, so it cannot be cut off";
    } else if (options.fetches.empty()) {
      msg += consumed.empty() ? "; choose the outputs you need with --fetch NAME"
                              : ", or choose outputs with --fetch NAME";
    }
    errors.push_back(msg);
  }
  return errors.empty() ? Status::OK() : InvalidArgument(JoinLines(errors));
}

// Kept nodes in GraphDef order, each after its producers (depth-first), a fed tensor's
// Placeholder before its first reader.
void Order(const pb::GraphDef& gd, ImportPlan* plan) {
  std::map<std::string, int> state;  // 1 visiting, 2 done
  std::set<std::string> emitted;     // Placeholder ids
  std::function<void(const std::string&)> visit = [&](const std::string& name) {
    int& st = state[name];
    if (st == 2) return;
    if (st == 1) {
      plan->order_errors.push_back(
          "node '" + name + "' is part of a cycle (TensorFlow control flow is not supported)");
      st = 2;
      return;
    }
    st = 1;
    const int index = plan->by_name.at(name);
    for (const TfInput& in : plan->inputs[static_cast<size_t>(index)]) {
      const TensorRef tensor{in.node, in.index};
      if (plan->feeds.count(tensor)) {
        if (emitted.insert(FedPlaceholderId(tensor)).second)
          plan->order.emplace_back(FedTensor{tensor});
        continue;
      }
      if (plan->kept.count(in.node)) visit(in.node);
    }
    st = 2;
    plan->order.emplace_back(KeptNode{index});
  };
  for (const pb::NodeDef& n : gd.node()) {
    if (plan->kept.count(n.name())) visit(n.name());
  }
  // A fetched fed tensor with no consumer in the graph.
  for (const TensorRef& tensor : plan->feeds) {
    if (emitted.insert(FedPlaceholderId(tensor)).second)
      plan->order.emplace_back(FedTensor{tensor});
  }
}

}  // namespace

std::string FedPlaceholderId(const TensorRef& tensor) {
  return tensor.second == 0 ? tensor.first : tensor.first + "_" + std::to_string(tensor.second);
}

Expected<ImportPlan> PlanImport(const pb::GraphDef& gd, const ImportOptions& options,
                                const OpRegistry& registry) {
  ImportPlan plan;
  std::vector<std::string> roots;
  RETURN_IF_ERROR(ReadNames(gd, options, &plan, &roots));
  RETURN_IF_ERROR(Prune(gd, options, registry, roots, &plan));
  Order(gd, &plan);
  return plan;
}

}  // namespace blockflow::tfimport
