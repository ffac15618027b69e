#include "core/feeds.h"

#include <algorithm>
#include <optional>
#include <set>

#include "core/limits.h"
#include "core/npy.h"
#include "core/paths.h"
#include "core/text.h"

namespace blockflow {
namespace {

// The nodes `fetches` need: them and everything upstream. Empty fetches: every node.
std::vector<bool> NeededNodes(const Graph& graph, const std::vector<std::string>& fetches) {
  const auto& nodes = graph.nodes();
  std::vector<bool> needed(nodes.size(), fetches.empty());
  std::vector<std::string> stack;
  for (const std::string& f : fetches) {
    if (std::optional<Endpoint> ep = Endpoint::Parse(f)) stack.push_back(ep->node);
  }
  while (!stack.empty()) {
    const int i = graph.IndexOf(stack.back());
    stack.pop_back();
    if (i < 0 || needed[static_cast<size_t>(i)]) continue;
    needed[static_cast<size_t>(i)] = true;
    for (const auto& [port, eps] : nodes[static_cast<size_t>(i)].inputs) {
      for (const Endpoint& e : eps) stack.push_back(e.node);
    }
  }
  return needed;
}

// Reads one Placeholder's feed and checks it against the Placeholder's inferred output.
// `limit` is the graph's memory limit; `total` adds up the bytes of the feeds read so far.
Expected<Tensor> ReadFeed(const Node& node, const NodeInfo& info, const std::string& file,
                          const FeedSlice* slice, uint64_t limit, long double* total) {
  const std::string who = "node '" + node.id + "' (" + node.op + "): ";
  if (info.outputs.empty()) return InvalidArgument(who + "has no inferred output to feed");
  const PortInfo& want = info.outputs[0];
  // The header alone says how much the value needs: refused before anything is read.
  Expected<std::pair<DType, Shape>> header = ReadNpyInfo(file, want.dtype);
  if (!header.ok()) return header.status().WithPrefix(who + "feed: ");
  std::vector<int64_t> dims = header->second.dims();
  if (slice && slice->axis >= 0 && static_cast<size_t>(slice->axis) < dims.size())
    dims[static_cast<size_t>(slice->axis)] = std::max<int64_t>(0, slice->count);
  const Shape read_shape(dims);
  if (Status fit = CheckTensorFits("feed '" + file + "'", header->first, read_shape, limit);
      !fit.ok()) {
    return fit.WithPrefix(who);
  }
  *total += TensorBytes(header->first, read_shape);
  if (*total > static_cast<long double>(EffectiveMemoryLimit(limit))) {
    return InvalidArgument(who + "feed '" + file + "' brings the feeds read so far to " +
                           FormatBytes(*total) + ", more than " + MemoryLimitText(limit));
  }
  // Either fails on another dtype, naming both.
  Expected<Tensor> t = slice
                           ? ReadNpySlice(file, slice->axis, slice->begin, slice->count, want.dtype)
                           : ReadNpy(file, want.dtype);
  if (!t.ok()) return t.status().WithPrefix(who + "feed: ");
  if (t->shape().rank() != want.shape.rank() || !want.shape.IsCompatibleWith(t->shape())) {
    return InvalidArgument(who + "fed shape " + t->shape().ToString() + " from '" + file +
                           "', but the Placeholder's shape is " + want.shape.ToString());
  }
  return t;
}

}  // namespace

Expected<std::map<std::string, Tensor>> LoadFeeds(const Graph& graph, const GraphAnalysis& analysis,
                                                  const std::vector<std::string>& fetches,
                                                  const FeedSources& sources) {
  const auto& nodes = graph.nodes();
  std::vector<std::string> errors;
  std::map<std::string, std::string> files;  // Placeholder id → file, as the caller names it
  for (const FeedFile& f : sources.files) {
    const Node* node = graph.FindNode(f.id);
    if (!node) {
      errors.push_back("cannot feed '" + f.id + "' from '" + f.file + "': there is no node '" +
                       f.id + "' in the graph");
      continue;
    }
    const std::string who = "node '" + f.id + "' (" + node->op + "): ";
    const OpSchema* schema = OpRegistry::Global().Find(node->op);
    if (!schema || !IsFedBlock(*schema)) {
      errors.push_back(who + "cannot be fed from '" + f.file + "': only a Placeholder can be fed");
    } else if (!files.emplace(f.id, f.file).second) {
      errors.push_back(who + "is fed twice");
    }
  }
  const std::vector<bool> needed = NeededNodes(graph, fetches);
  std::map<std::string, Tensor> feeds;
  long double feed_bytes = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& node = nodes[i];
    const OpSchema* schema = OpRegistry::Global().Find(node.op);
    if (!needed[i] || !schema || !IsFedBlock(*schema)) continue;
    std::string file;
    if (auto it = files.find(node.id); it != files.end()) {
      file = it->second;
    } else if (std::optional<std::string> ui = UiFeedFile(node); ui && sources.use_ui_feed) {
      file = ResolveGraphPath(graph, *ui);
    } else {
      errors.push_back(
          "node '" + node.id + "' (Placeholder): " +
          (sources.missing_message
               ? sources.missing_message(graph, node)
               : "needs a value: it is needed by the fetched outputs but was not fed"));
      continue;
    }
    if (i >= analysis.nodes.size()) {
      errors.push_back("node '" + node.id + "' (Placeholder): the analysis does not cover it");
      continue;
    }
    auto slice = sources.slices.find(node.id);
    Expected<Tensor> t = ReadFeed(node, analysis.nodes[i], file,
                                  slice == sources.slices.end() ? nullptr : &slice->second,
                                  graph.memory_limit, &feed_bytes);
    if (!t.ok()) {
      errors.push_back(t.status().message());
      continue;
    }
    feeds.emplace(node.id, std::move(t).value());
  }
  if (errors.empty()) return feeds;
  return InvalidArgument(JoinLines(errors));
}

}  // namespace blockflow
