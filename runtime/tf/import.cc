#include "runtime/tf/import.h"

#include <algorithm>
#include <set>

#include "core/npy.h"
#include "runtime/tf/graphdef.h"
#include "runtime/tf/mapping.h"
#include "runtime/tf/plan.h"
#include "runtime/tf/shapes.h"

namespace blockflow::tfimport {
namespace {

Expected<pb::GraphDef> Parse(const std::string& bytes, const std::string& origin,
                             GraphDefFormat format) {
  if (format == GraphDefFormat::kAuto) format = DetectFormat(origin, bytes);
  ASSIGN_OR_RETURN(pb::GraphDef gd, ParseGraphDef(bytes, origin, format));
  if (gd.node_size() == 0) {
    // The parsers skip unknown fields, so any JSON object, an empty file and many byte
    // strings parse as an empty GraphDef: importing one is a mistake, not an empty graph.
    return InvalidArgument(origin +
                           ": the GraphDef has no nodes (is this a TensorFlow GraphDef? a "
                           "blockflow graph needs no import)");
  }
  return gd;
}

Expected<ImportResult> Import(const pb::GraphDef& gd, const ImportOptions& options,
                              const OpRegistry& registry, GraphFacts* facts) {
  ASSIGN_OR_RETURN(ImportPlan plan, PlanImport(gd, options, registry));
  // No positions: the editor lays a graph without them out as it opens (Graphviz dot), which
  // reads far better than any grid written here.
  return MapPlan(gd, plan, options, registry, facts);
}

std::string DimsText(const TensorFacts& f) {
  return f.dims ? IntsToString(*f.dims) : std::string("?");
}

// "x [2,8,8,3] w [3,3,3,4] y [2,8,8,4] s 1,1 SAME NHWC": the convolution's input, filter and
// output (whichever of them the node reads or computes), strides, padding and layout.
std::string Geometry(const pb::NodeDef& n, const ImportPlan& plan, GraphFacts& facts) {
  const auto& in = plan.inputs[static_cast<size_t>(plan.by_name.at(n.name()))];
  auto input = [&](size_t i) -> std::string {
    return i < in.size() ? DimsText(facts.Get({in[i].node, in[i].index})) : "?";
  };
  // A sizes input: its value when known, else "?".
  auto sizes = [&](size_t i) -> std::string {
    if (i >= in.size()) return "?";
    const TensorFacts& f = facts.Get({in[i].node, in[i].index});
    if (!f.value) return "?";
    std::vector<int64_t> v;
    for (int64_t j = 0; j < f.value->num_elements(); ++j)
      v.push_back(static_cast<int64_t>(f.value->GetAsDouble(j)));
    return IntsToString(v);
  };
  const std::string out = DimsText(facts.Get({n.name(), 0}));
  std::string x, w, y;
  const std::string& op = n.op();
  if (op == "Conv2D" || op == "DepthwiseConv2dNative") {
    x = input(0), w = input(1), y = out;
  } else if (op == "Conv2DBackpropInput" || op == "DepthwiseConv2dNativeBackpropInput") {
    x = out != "?" ? out : sizes(0), w = input(1), y = input(2);
  } else {
    x = input(0), w = out != "?" ? out : sizes(1), y = input(2);
  }
  std::string strides, padding = "?", format = "NHWC";
  auto a = n.attr().find("strides");
  if (a != n.attr().end()) {
    format = n.attr().count("data_format") ? n.attr().at("data_format").s() : "NHWC";
    const auto& s = a->second.list().i();
    if (s.size() == 4) {
      const int h = format == "NCHW" ? 2 : 1;
      strides = std::to_string(s[h]) + "," + std::to_string(s[h + 1]);
    }
  }
  if (n.attr().count("padding")) padding = n.attr().at("padding").s();
  return "x " + x + " w " + w + " y " + y + " s " + (strides.empty() ? "?" : strides) + " " +
         padding + " " + format;
}

}  // namespace

Expected<ImportResult> ImportGraphDef(const std::string& bytes, const std::string& origin,
                                      GraphDefFormat format, const ImportOptions& options,
                                      const OpRegistry& registry) {
  ASSIGN_OR_RETURN(pb::GraphDef gd, Parse(bytes, origin, format));
  return Import(gd, options, registry, nullptr);
}

Expected<std::pair<std::string, GraphDefFormat>> ReadGraphDefFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  const GraphDefFormat format = DetectFormat(path, bytes);
  return std::make_pair(std::move(bytes), format);
}

Expected<ImportResult> ImportGraphDefFile(const std::string& path, const ImportOptions& options,
                                          const OpRegistry& registry) {
  ASSIGN_OR_RETURN(auto file, ReadGraphDefFile(path));
  return ImportGraphDef(file.first, path, file.second, options, registry);
}

Expected<std::vector<GradientImport>> ImportGradients(const std::string& bytes,
                                                      const std::string& origin,
                                                      GraphDefFormat format,
                                                      const ImportOptions& options,
                                                      const OpRegistry& registry) {
  ASSIGN_OR_RETURN(pb::GraphDef gd, Parse(bytes, origin, format));
  ASSIGN_OR_RETURN(ImportPlan base, ReadGraph(gd, options));
  GraphFacts facts(gd, base, registry);
  std::vector<GradientImport> out;
  std::set<std::string> files;
  for (const pb::NodeDef& n : gd.node()) {
    if (!IsConvolutionOp(n.op())) continue;
    GradientImport g;
    g.node = n.name();
    g.op = n.op();
    g.geometry = Geometry(n, base, facts);
    std::string stem = n.name();
    std::replace(stem.begin(), stem.end(), '/', '.');
    std::string unique = stem;
    for (int i = 2; !files.insert(unique).second; ++i) unique = stem + "_" + std::to_string(i);
    g.file = unique + ".json";
    ImportOptions one = options;
    one.const_dir = unique + "_consts";
    one.fetches = {n.name()};
    one.cut_unsupported = true;
    one.ignore_unused_feeds = true;
    Expected<ImportResult> r = Import(gd, one, registry, &facts);
    if (r.ok()) {
      g.result = std::move(r).value();
      for (const Node& node : g.result.graph.nodes()) {
        if (node.op == "Placeholder") g.fed.push_back(node.id);
      }
    } else {
      g.status = r.status();
    }
    out.push_back(std::move(g));
  }
  if (out.empty()) {
    return InvalidArgument(origin +
                           ": the GraphDef holds no convolution node (Conv2D, "
                           "DepthwiseConv2dNative or their gradients) for --gradients");
  }
  return out;
}

Expected<std::vector<GradientImport>> ImportGradientsFile(const std::string& path,
                                                          const ImportOptions& options,
                                                          const OpRegistry& registry) {
  ASSIGN_OR_RETURN(auto file, ReadGraphDefFile(path));
  return ImportGradients(file.first, path, file.second, options, registry);
}

Expected<ImportResult> ImportGradientsTogether(const std::string& bytes, const std::string& origin,
                                               GraphDefFormat format,
                                               const std::vector<GradientImport>& gradients,
                                               const ImportOptions& options,
                                               const OpRegistry& registry) {
  ASSIGN_OR_RETURN(pb::GraphDef gd, Parse(bytes, origin, format));
  ImportOptions all = options;
  all.fetches.clear();
  for (const GradientImport& g : gradients) {
    if (g.status.ok()) all.fetches.push_back(g.node);
  }
  if (all.fetches.empty())
    return InvalidArgument(origin + ": no convolution node could be imported");
  all.cut_unsupported = true;
  all.ignore_unused_feeds = true;
  return Import(gd, all, registry, nullptr);
}

}  // namespace blockflow::tfimport
