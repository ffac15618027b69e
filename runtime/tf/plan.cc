#include "runtime/tf/plan.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>

#include "core/npy.h"
#include "core/paths.h"
#include "core/text.h"

namespace blockflow::tfimport {
namespace {

// "d0,d1,..." (each -1 or more) into dims; false when malformed.
bool ParseDims(const std::string& text, std::vector<int64_t>* dims) {
  if (text.empty()) return true;  // "[]": a scalar
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string part = text.substr(pos, comma - pos);
    if (part.empty() || part.size() > 18) return false;
    const bool neg = part[0] == '-';
    if (!std::all_of(part.begin() + (neg ? 1 : 0), part.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }) ||
        part.size() == (neg ? 1u : 0u)) {
      return false;
    }
    const int64_t d = std::stoll(part);
    if (d < -1) return false;
    dims->push_back(d);
    pos = comma + 1;
  }
  return true;
}

// One --feed flag: NAME[:K], NAME[:K]=FILE.npy or NAME[:K]:DTYPE[d0,...]. The tensor name is
// returned in `name`; the rest fills `spec`.
Status ParseFeed(const std::string& text, const ImportOptions& options, std::string* name,
                 FeedSpec* spec) {
  namespace fs = std::filesystem;
  spec->text = text;
  const size_t eq = text.find('=');
  const size_t bracket = text.find('[');
  if (eq != std::string::npos) {
    *name = text.substr(0, eq);
    const std::string file = text.substr(eq + 1);
    if (file.empty()) return InvalidArgument("--feed " + text + ": expected NAME[:K]=FILE.npy");
    Expected<std::pair<DType, Shape>> info = ReadNpyInfo(file);
    if (!info.ok()) return InvalidArgument("--feed " + text + ": " + info.status().message());
    spec->dtype = info->first;
    spec->dims = info->second.dims();
    // The graph names the file from its own folder, and only inside it (core/paths.h).
    const fs::path dir = fs::absolute(options.graph_dir).lexically_normal();
    const fs::path rel = fs::absolute(file).lexically_normal().lexically_relative(dir);
    const std::string rel_text = rel.generic_string();
    if (rel.empty() || rel_text == ".." || rel_text.rfind("../", 0) == 0 ||
        !CheckInsideGraphFolder(options.graph_dir, rel_text).ok()) {
      return InvalidArgument("--feed " + text + ": '" + file +
                             "' is outside the output graph's folder '" + options.graph_dir +
                             "', and a graph names only files inside its folder; copy it there, "
                             "or give the shape with --feed " +
                             *name + ":" + std::string(DTypeName(info->first)) +
                             IntsToString(info->second.dims()) +
                             " and the file when you run the graph (blockflow run --feed)");
    }
    spec->ui_feed = rel_text;
    return Status::OK();
  }
  if (bracket != std::string::npos) {
    const size_t colon = text.rfind(':', bracket);
    std::vector<int64_t> dims;
    if (colon == std::string::npos || text.back() != ']' ||
        !ParseDims(text.substr(bracket + 1, text.size() - bracket - 2), &dims)) {
      return InvalidArgument(
          "--feed " + text +
          ": expected NAME[:K]:DTYPE[d0,d1,...] (such as x:float32[-1,28,28,1])");
    }
    const std::string dtype_name = text.substr(colon + 1, bracket - colon - 1);
    std::optional<DType> dtype = ParseDType(dtype_name);
    if (!dtype) {
      return InvalidArgument("--feed " + text + ": '" + dtype_name +
                             "' is not a dtype (float16, bfloat16, float32, float64, int32, "
                             "int64, bool)");
    }
    *name = text.substr(0, colon);
    spec->dtype = dtype;
    spec->dims = std::move(dims);
    return Status::OK();
  }
  *name = text;
  return Status::OK();
}

}  // namespace

bool IsConvolutionOp(const std::string& op) {
  static const std::set<std::string> kOps = {"Conv2D",
                                             "Conv2DBackpropInput",
                                             "Conv2DBackpropFilter",
                                             "DepthwiseConv2dNative",
                                             "DepthwiseConv2dNativeBackpropInput",
                                             "DepthwiseConv2dNativeBackpropFilter"};
  return kOps.count(op) > 0;
}

Expected<ImportPlan> ReadGraph(const pb::GraphDef& gd, const ImportOptions& options) {
  ImportPlan plan;
  plan.producer = gd.versions().producer();
  std::vector<std::string> errors;
  for (int i = 0; i < gd.node_size(); ++i) {
    const pb::NodeDef& n = gd.node(i);
    if (!plan.by_name.emplace(n.name(), i).second)
      errors.push_back("two nodes are named '" + n.name() + "'");
  }
  // Data inputs of every node (control inputs dropped: they only order execution).
  plan.inputs.resize(static_cast<size_t>(gd.node_size()));
  for (int i = 0; i < gd.node_size(); ++i) {
    const pb::NodeDef& n = gd.node(i);
    for (const std::string& text : n.input()) {
      std::optional<TfInput> in = ParseTfInput(text);
      if (!in) {
        errors.push_back(Who(n) + "malformed input '" + text + "'");
        continue;
      }
      if (in->control) continue;
      if (!plan.by_name.count(in->node)) {
        errors.push_back(Who(n) + "input '" + text + "' names no node in the graph");
        continue;
      }
      plan.inputs[static_cast<size_t>(i)].push_back(*in);
    }
  }
  // Feeds: tensors where the graph is cut.
  for (const std::string& f : options.feeds) {
    std::string name;
    FeedSpec spec;
    if (Status s = ParseFeed(f, options, &name, &spec); !s.ok()) {
      errors.push_back(s.message());
      continue;
    }
    std::optional<TfInput> in = ParseTfInput(name);
    if (!in || in->control) {
      errors.push_back("--feed " + f +
                       ": expected NAME[:K], NAME[:K]=FILE.npy or NAME[:K]:DTYPE[d0,d1,...]");
      continue;
    }
    if (!plan.by_name.count(in->node)) {
      errors.push_back("--feed " + f + ": there is no node '" + in->node + "' in the GraphDef");
      continue;
    }
    const TensorRef tensor{in->node, in->index};
    if (plan.feed_specs.count(tensor)) {
      errors.push_back("--feed " + f + ": tensor '" + TensorName(in->node, in->index) +
                       "' is fed twice");
      continue;
    }
    plan.feeds.insert(tensor);
    plan.feed_specs.emplace(tensor, std::move(spec));
  }
  if (!errors.empty()) return InvalidArgument(JoinLines(errors));
  return plan;
}

namespace {

// The roots: the fetched nodes, or every node.
Status ReadRoots(const pb::GraphDef& gd, const ImportOptions& options, const ImportPlan& plan,
                 std::vector<std::string>* roots) {
  std::vector<std::string> errors;
  if (options.fetches.empty()) {
    for (const pb::NodeDef& n : gd.node()) roots->push_back(n.name());
  } else {
    for (const std::string& f : options.fetches) {
      std::optional<TfInput> in = ParseTfInput(f);
      if (!in || in->control || !plan.by_name.count(in->node)) {
        errors.push_back("--fetch " + f + ": there is no node '" + (in ? in->node : f) +
                         "' in the GraphDef");
        continue;
      }
      roots->push_back(in->node);
    }
  }
  return errors.empty() ? Status::OK() : InvalidArgument(JoinLines(errors));
}

// "--flag a --flag b ...", at most `limit` of them (0: all), saying how many were left out.
std::string FlagList(const std::string& flag, const std::vector<std::string>& values,
                     size_t limit) {
  std::string out;
  const size_t shown = limit == 0 ? values.size() : std::min(limit, values.size());
  for (size_t i = 0; i < shown; ++i) out += (out.empty() ? "" : " ") + flag + " " + values[i];
  if (shown < values.size())
    out += " ... (" + std::to_string(values.size() - shown) + " more; --verbose lists them)";
  return out;
}

// The largest connected part of the graph made of ops blockflow has (data edges only): the
// nodes to fetch (read by no other node of the part) and the tensors of ops it lacks to feed.
struct ImportablePart {
  size_t size = 0;
  std::vector<std::string> fetches;
  std::vector<std::string> feeds;
};

ImportablePart LargestImportablePart(const pb::GraphDef& gd, const OpRegistry& registry,
                                     const ImportPlan& plan) {
  const size_t count = static_cast<size_t>(gd.node_size());
  std::vector<size_t> parent(count);
  for (size_t i = 0; i < count; ++i) parent[i] = i;
  std::function<size_t(size_t)> find = [&](size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  std::vector<bool> supported(count);
  for (size_t i = 0; i < count; ++i)
    supported[i] = registry.Find(gd.node(static_cast<int>(i)).op()) != nullptr;
  for (size_t i = 0; i < count; ++i) {
    if (!supported[i]) continue;
    for (const TfInput& in : plan.inputs[i]) {
      const size_t j = static_cast<size_t>(plan.by_name.at(in.node));
      if (supported[j]) parent[find(i)] = find(j);
    }
  }
  std::map<size_t, size_t> sizes;
  for (size_t i = 0; i < count; ++i) {
    if (supported[i]) ++sizes[find(i)];
  }
  ImportablePart part;
  size_t best = count;
  for (size_t i = 0; i < count; ++i) {  // the first of the largest, in GraphDef order
    if (supported[i] && sizes[find(i)] > part.size) {
      part.size = sizes[find(i)];
      best = find(i);
    }
  }
  if (best == count) return part;
  std::vector<bool> read(count);
  std::set<TensorRef> feeds;
  for (size_t i = 0; i < count; ++i) {
    if (!supported[i] || find(i) != best) continue;
    for (const TfInput& in : plan.inputs[i]) {
      const size_t j = static_cast<size_t>(plan.by_name.at(in.node));
      if (supported[j]) {
        read[j] = true;
      } else if (feeds.insert({in.node, in.index}).second) {
        part.feeds.push_back(TensorName(in.node, in.index));
      }
    }
  }
  for (size_t i = 0; i < count; ++i) {
    if (supported[i] && find(i) == best && !read[i])
      part.fetches.push_back(gd.node(static_cast<int>(i)).name());
  }
  return part;
}

// The head of a failed import's message: the ops blockflow lacks grouped with counts, and what
// would make an import work.
std::vector<std::string> Summary(const pb::GraphDef& gd, const ImportOptions& options,
                                 const OpRegistry& registry, const ImportPlan& plan,
                                 const std::vector<std::string>& unsupported,
                                 const std::vector<std::string>& cuts, bool fetched_unsupported) {
  std::map<std::string, int> by_op;
  for (const std::string& name : unsupported) ++by_op[gd.node(plan.by_name.at(name)).op()];
  std::vector<std::pair<std::string, int>> ops(by_op.begin(), by_op.end());
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string list;
  for (const auto& [op, n] : ops)
    list += (list.empty() ? "" : ", ") + op + " x" + std::to_string(n);
  std::vector<std::string> lines;
  lines.push_back(std::to_string(unsupported.size()) + " node" +
                  (unsupported.size() == 1 ? " uses " : "s use ") + std::to_string(ops.size()) +
                  " op" + (ops.size() == 1 ? "" : "s") + " blockflow lacks: " + list);
  const size_t limit = options.detail_lines == 0 ? 0 : 12;
  if (options.fetches.empty()) {
    ImportablePart part = LargestImportablePart(gd, registry, plan);
    if (part.size > 0) {
      lines.push_back("the largest part blockflow can import has " + std::to_string(part.size) +
                      " of the " + std::to_string(gd.node_size()) + " nodes; import it with " +
                      FlagList("--fetch", part.fetches, limit) +
                      (part.feeds.empty() ? "" : " " + FlagList("--feed", part.feeds, limit)));
    }
  } else if (!fetched_unsupported && !cuts.empty()) {
    lines.push_back("to import what the fetches need, cut off those ops with " +
                    FlagList("--feed", cuts, limit));
  }
  int convs = 0;
  for (const pb::NodeDef& n : gd.node()) convs += IsConvolutionOp(n.op());
  if (convs > 0) {
    lines.push_back("the GraphDef holds " + std::to_string(convs) + " convolution node" +
                    (convs == 1 ? "" : "s") +
                    ": import-tf GRAPHDEF --gradients -o DIR writes a runnable graph for each");
  }
  return lines;
}

// Walks back from the roots; a fed tensor ends the walk, and so does an op blockflow lacks
// (reported with the --feed that would cut it off). Fills plan->kept.
Status Prune(const pb::GraphDef& gd, const ImportOptions& options, const OpRegistry& registry,
             const std::vector<std::string>& roots, ImportPlan* plan) {
  const auto& feeds = plan->feeds;
  std::set<TensorRef> used_feeds;
  std::vector<std::string> unsupported;  // in discovery order
  std::vector<std::string> stack;
  for (auto it = roots.rbegin(); it != roots.rend(); ++it) {
    if (feeds.count({*it, 0})) {
      used_feeds.insert({*it, 0});  // a fed root: the Placeholder stands for it
    } else {
      stack.push_back(*it);
    }
  }
  const std::set<std::string> root_set(roots.begin(), roots.end());
  while (!stack.empty()) {
    const std::string name = stack.back();
    stack.pop_back();
    if (plan->kept.count(name)) continue;
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
      if (options.cut_unsupported && !registry.Find(gd.node(plan->by_name.at(in.node)).op())) {
        plan->feeds.insert({in.node, in.index});
        plan->auto_cuts.insert({in.node, in.index});
        used_feeds.insert({in.node, in.index});
        continue;
      }
      stack.push_back(in.node);
    }
  }
  std::vector<std::string> errors;
  if (options.ignore_unused_feeds) {
    for (auto it = plan->feeds.begin(); it != plan->feeds.end();) {
      it = used_feeds.count(*it) ? std::next(it) : plan->feeds.erase(it);
    }
  }
  for (const auto& f : feeds) {
    if (!used_feeds.count(f)) {
      errors.push_back(
          "--feed " + TensorName(f.first, f.second) +
          ": no kept node reads this tensor (check the name, the :K and the --fetch list)");
    }
  }
  // Report the ops blockflow lacks, each with the cut that removes it.
  std::vector<std::string> details, cuts;
  std::set<std::string> cut_set;
  bool fetched_unsupported = false;
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
      for (int k : consumed) {
        msg += " --feed " + TensorName(name, k);
        if (cut_set.insert(TensorName(name, k)).second) cuts.push_back(TensorName(name, k));
      }
    }
    if (root_set.count(name) && !options.fetches.empty()) {
      msg += "; it is fetched, so it cannot be cut off";
      fetched_unsupported = true;
    } else if (options.fetches.empty()) {
      msg += consumed.empty() ? "; choose the outputs you need with --fetch NAME"
                              : ", or choose outputs with --fetch NAME";
    }
    details.push_back(msg);
  }
  if (!unsupported.empty()) {
    std::vector<std::string> summary =
        Summary(gd, options, registry, *plan, unsupported, cuts, fetched_unsupported);
    errors.insert(errors.end(), summary.begin(), summary.end());
    const size_t shown =
        options.detail_lines == 0 ? details.size() : std::min(options.detail_lines, details.size());
    errors.insert(errors.end(), details.begin(), details.begin() + static_cast<long>(shown));
    if (shown < details.size()) {
      errors.push_back("... and " + std::to_string(details.size() - shown) +
                       " more nodes blockflow cannot import (--verbose lists them all)");
    }
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
          plan->order.emplace_back().emplace<FedTensor>(FedTensor{tensor});
        continue;
      }
      if (plan->kept.count(in.node)) visit(in.node);
    }
    st = 2;
    plan->order.emplace_back().emplace<KeptNode>(KeptNode{index});
  };
  for (const pb::NodeDef& n : gd.node()) {
    if (plan->kept.count(n.name())) visit(n.name());
  }
  // A fetched fed tensor with no consumer in the graph.
  for (const TensorRef& tensor : plan->feeds) {
    if (emitted.insert(FedPlaceholderId(tensor)).second)
      plan->order.emplace_back().emplace<FedTensor>(FedTensor{tensor});
  }
}

}  // namespace

std::string FedPlaceholderId(const TensorRef& tensor) {
  return tensor.second == 0 ? tensor.first : tensor.first + "_" + std::to_string(tensor.second);
}

Expected<ImportPlan> PlanImport(const pb::GraphDef& gd, const ImportOptions& options,
                                const OpRegistry& registry) {
  ASSIGN_OR_RETURN(ImportPlan plan, ReadGraph(gd, options));
  std::vector<std::string> roots;
  RETURN_IF_ERROR(ReadRoots(gd, options, plan, &roots));
  RETURN_IF_ERROR(Prune(gd, options, registry, roots, &plan));
  Order(gd, &plan);
  return plan;
}

}  // namespace blockflow::tfimport
