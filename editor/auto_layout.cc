#include "editor/auto_layout.h"

#include <QRectF>
#include <QUndoStack>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <unordered_map>

#include "editor/graph_scene.h"
#include "editor/inline_values.h"

#ifdef BLOCKFLOW_HAVE_GRAPHVIZ
#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>
#include <graphviz/gvplugin.h>

// The dot layout plugin, linked in (see editor/CMakeLists.txt).
extern "C" gvplugin_library_t gvplugin_dot_layout_LTX_library;
#endif

namespace blockflow::editor {

namespace {

// The nodes to lay out as indices 0..n-1, and the wires among them.
struct SubGraph {
  std::vector<std::string> ids;
  std::vector<QSizeF> sizes;
  std::vector<std::pair<int, int>> edges;  // producer → consumer, no duplicates, no self-loops
};

// One laid-out connected part: positions (top-left) relative to its own box.
struct Part {
  std::vector<int> members;
  std::vector<QPointF> pos;  // parallel to members
  QSizeF size;
};

SubGraph Collect(const Graph& graph, const std::vector<std::string>& ids,
                 const NodeSizeFn& size_of) {
  SubGraph sg;
  std::unordered_map<std::string, int> index;
  auto add = [&](const std::string& id) {
    if (index.count(id) || !graph.FindNode(id)) return;
    index[id] = static_cast<int>(sg.ids.size());
    sg.ids.push_back(id);
  };
  if (ids.empty()) {
    for (const Node& n : graph.nodes()) add(n.id);
  } else {
    for (const std::string& id : ids) add(id);
  }
  sg.sizes.reserve(sg.ids.size());
  for (const std::string& id : sg.ids) {
    const QSizeF s = size_of(id);
    sg.sizes.push_back(QSizeF(std::max(s.width(), 1.0), std::max(s.height(), 1.0)));
  }
  std::set<std::pair<int, int>> seen;
  for (size_t c = 0; c < sg.ids.size(); ++c) {
    const Node* node = graph.FindNode(sg.ids[c]);
    for (const auto& [port, eps] : node->inputs) {
      for (const Endpoint& ep : eps) {
        auto it = index.find(ep.node);
        if (it == index.end() || it->second == static_cast<int>(c)) continue;
        const std::pair<int, int> e(it->second, static_cast<int>(c));
        if (seen.insert(e).second) sg.edges.push_back(e);
      }
    }
  }
  return sg;
}

// Connected parts (wires taken as undirected), each listed in node order; parts ordered by
// their first node.
std::vector<std::vector<int>> ConnectedParts(const SubGraph& sg) {
  const int n = static_cast<int>(sg.ids.size());
  std::vector<int> parent(static_cast<size_t>(n));
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](int x) {
    while (parent[static_cast<size_t>(x)] != x) {
      parent[static_cast<size_t>(x)] = parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
      x = parent[static_cast<size_t>(x)];
    }
    return x;
  };
  for (const auto& [a, b] : sg.edges) {
    const int ra = find(a), rb = find(b);
    if (ra != rb) parent[static_cast<size_t>(std::max(ra, rb))] = std::min(ra, rb);
  }
  std::vector<std::vector<int>> parts;
  std::unordered_map<int, size_t> part_of_root;
  for (int i = 0; i < n; ++i) {
    const int r = find(i);
    auto [it, fresh] = part_of_root.emplace(r, parts.size());
    if (fresh) parts.emplace_back();
    parts[it->second].push_back(i);
  }
  return parts;
}

// Moves a part's positions so that its box starts at (0, 0) and records the box's size.
void Normalize(const SubGraph& sg, Part& part) {
  double left = 1e300, top = 1e300, right = -1e300, bottom = -1e300;
  for (size_t k = 0; k < part.members.size(); ++k) {
    const QSizeF& s = sg.sizes[static_cast<size_t>(part.members[k])];
    left = std::min(left, part.pos[k].x());
    top = std::min(top, part.pos[k].y());
    right = std::max(right, part.pos[k].x() + s.width());
    bottom = std::max(bottom, part.pos[k].y() + s.height());
  }
  for (QPointF& p : part.pos) p -= QPointF(left, top);
  part.size = QSizeF(right - left, bottom - top);
}

// The simple layering: layer = longest chain of producers inside the part; nodes of a layer
// ordered by the mean row of their neighbours (a few sweeps each way); layers side by side,
// each centred vertically.
Part LayerPart(const SubGraph& sg, const std::vector<int>& members, const LayoutOptions& o) {
  const size_t m = members.size();
  std::unordered_map<int, size_t> local;
  for (size_t k = 0; k < m; ++k) local[members[k]] = k;
  std::vector<std::vector<size_t>> preds(m), succs(m);
  for (const auto& [a, b] : sg.edges) {
    auto ia = local.find(a), ib = local.find(b);
    if (ia == local.end() || ib == local.end()) continue;
    preds[ib->second].push_back(ia->second);
    succs[ia->second].push_back(ib->second);
  }
  // Longest-path layers by Kahn's order; nodes on a cycle (not in a valid graph, but a file may
  // hold one) keep the layer they had when the order stalled.
  std::vector<int> layer(m, 0);
  std::vector<size_t> indegree(m);
  std::vector<size_t> queue;
  for (size_t k = 0; k < m; ++k) {
    indegree[k] = preds[k].size();
    if (indegree[k] == 0) queue.push_back(k);
  }
  for (size_t q = 0; q < queue.size(); ++q) {
    const size_t k = queue[q];
    for (size_t s : succs[k]) {
      layer[s] = std::max(layer[s], layer[k] + 1);
      if (--indegree[s] == 0) queue.push_back(s);
    }
  }
  const int num_layers = m == 0 ? 0 : *std::max_element(layer.begin(), layer.end()) + 1;
  std::vector<std::vector<size_t>> layers(static_cast<size_t>(num_layers));
  for (size_t k = 0; k < m; ++k) layers[static_cast<size_t>(layer[k])].push_back(k);
  std::vector<double> row(m, 0);
  auto number = [&](const std::vector<size_t>& l) {
    for (size_t r = 0; r < l.size(); ++r) row[l[r]] = static_cast<double>(r);
  };
  for (const auto& l : layers) number(l);
  auto sweep = [&](size_t li, const std::vector<std::vector<size_t>>& neighbours) {
    std::vector<size_t>& l = layers[li];
    std::vector<double> key(m);
    for (size_t k : l) {
      const auto& nb = neighbours[k];
      double sum = 0;
      for (size_t x : nb) sum += row[x];
      key[k] = nb.empty() ? row[k] : sum / static_cast<double>(nb.size());
    }
    std::stable_sort(l.begin(), l.end(), [&](size_t a, size_t b) { return key[a] < key[b]; });
    number(l);
  };
  for (int pass = 0; pass < 4; ++pass) {
    for (size_t li = 1; li < layers.size(); ++li) sweep(li, preds);
    for (size_t li = layers.size(); li-- > 1;) sweep(li - 1, succs);
  }
  Part part;
  part.members = members;
  part.pos.assign(m, QPointF());
  double x = 0;
  std::vector<double> heights(layers.size(), 0);
  for (size_t li = 0; li < layers.size(); ++li) {
    for (size_t k : layers[li])
      heights[li] += sg.sizes[static_cast<size_t>(members[k])].height() + o.node_gap;
  }
  const double tallest = heights.empty() ? 0 : *std::max_element(heights.begin(), heights.end());
  for (size_t li = 0; li < layers.size(); ++li) {
    double y = (tallest - heights[li]) / 2, width = 0;
    for (size_t k : layers[li]) {
      const QSizeF& s = sg.sizes[static_cast<size_t>(members[k])];
      part.pos[k] = QPointF(x, y);
      y += s.height() + o.node_gap;
      width = std::max(width, s.width());
    }
    x += width + o.layer_gap;
  }
  Normalize(sg, part);
  return part;
}

#ifdef BLOCKFLOW_HAVE_GRAPHVIZ

// A source with more consumers than this is laid out by its first wire only (see DotPart).
constexpr int kSharedFanout = 3;

// cgraph takes `char*` for names and values it only reads.
char* Mutable(const char* s) { return const_cast<char*>(s); }

GVC_t* GraphvizContext() {
  // Only the dot layout plugin, no demand loading: nothing else is read from the system.
  static lt_symlist_t builtins[] = {
      {"gvplugin_dot_layout_LTX_library", static_cast<void*>(&gvplugin_dot_layout_LTX_library)},
      {nullptr, nullptr}};
  static GVC_t* context = gvContextPlugins(builtins, 0);
  return context;
}

// dot, left to right; sizes in inches (one scene unit is one point). dot draws no wires here
// (splines=""): the editor draws its own.
bool DotPart(const SubGraph& sg, const std::vector<int>& members, const LayoutOptions& o,
             Part* part) {
  GVC_t* gvc = GraphvizContext();
  if (!gvc) return false;
  Agraph_t* g = agopen(Mutable("layout"), Agdirected, nullptr);
  auto inches = [](double points) { return std::to_string(points / 72.0); };
  const std::string nodesep = inches(o.node_gap), ranksep = inches(o.layer_gap);
  agattr(g, AGRAPH, Mutable("rankdir"), Mutable("LR"));
  agattr(g, AGRAPH, Mutable("splines"), Mutable(""));
  agattr(g, AGRAPH, Mutable("nodesep"), Mutable(nodesep.c_str()));
  agattr(g, AGRAPH, Mutable("ranksep"), Mutable(ranksep.c_str()));
  // Big parts: fewer network-simplex and crossing-reduction rounds (dot's defaults take seconds
  // on a 300-node training step; these, a tenth of that, for a layout about as compact).
  if (members.size() > 100) {
    agattr(g, AGRAPH, Mutable("nslimit"), Mutable("1"));
    agattr(g, AGRAPH, Mutable("nslimit1"), Mutable("1"));
  }
  if (members.size() > 400) agattr(g, AGRAPH, Mutable("mclimit"), Mutable("0.5"));
  agattr(g, AGNODE, Mutable("shape"), Mutable("box"));
  agattr(g, AGNODE, Mutable("fixedsize"), Mutable("true"));
  agattr(g, AGNODE, Mutable("label"), Mutable(""));
  Agsym_t* width = agattr(g, AGNODE, Mutable("width"), Mutable("1"));
  Agsym_t* height = agattr(g, AGNODE, Mutable("height"), Mutable("1"));
  std::unordered_map<int, Agnode_t*> nodes;
  std::vector<Agnode_t*> order;
  for (int i : members) {
    const std::string name = "n" + std::to_string(i);
    Agnode_t* n = agnode(g, Mutable(name.c_str()), 1);
    const QSizeF& s = sg.sizes[static_cast<size_t>(i)];
    agxset(n, width, Mutable(inches(s.width()).c_str()));
    agxset(n, height, Mutable(inches(s.height()).c_str()));
    nodes[i] = n;
    order.push_back(n);
  }
  // A source that feeds many nodes (a shared size or learning rate) is laid out by one wire
  // only, to its consumer nearest the start, and placed in the first layer (rank=min), so that
  // it stays left of all its consumers. Its other wires would stretch across every layer: they
  // make dot slow and the drawing tall.
  std::unordered_map<int, int> fanout, depth;
  std::unordered_map<int, bool> has_input;
  for (const auto& [a, b] : sg.edges) {
    if (nodes.count(a) && nodes.count(b)) {
      ++fanout[a];
      has_input[b] = true;
    }
  }
  // Longest-path depth (edges are in no particular order: relax until stable, bounded).
  for (size_t pass = 0; pass < members.size(); ++pass) {
    bool changed = false;
    for (const auto& [a, b] : sg.edges) {
      if (!nodes.count(a) || !nodes.count(b) || depth[b] >= depth[a] + 1) continue;
      depth[b] = depth[a] + 1;
      changed = true;
    }
    if (!changed) break;
  }
  std::unordered_map<int, int> nearest;  // shared source → its consumer of least depth
  for (const auto& [a, b] : sg.edges) {
    if (!nodes.count(a) || !nodes.count(b) || fanout[a] <= kSharedFanout || has_input[a]) continue;
    auto it = nearest.find(a);
    if (it == nearest.end() || depth[b] < depth[it->second]) nearest[a] = b;
  }
  Agraph_t* first_layer = nearest.empty() ? nullptr : agsubg(g, Mutable("shared"), 1);
  if (first_layer) agsafeset(first_layer, Mutable("rank"), Mutable("min"), Mutable(""));
  for (const auto& [a, b] : nearest) agsubnode(first_layer, nodes[a], 1);
  for (const auto& [a, b] : sg.edges) {
    auto ia = nodes.find(a), ib = nodes.find(b);
    if (ia == nodes.end() || ib == nodes.end()) continue;
    if (auto n = nearest.find(a); n != nearest.end() && n->second != b) continue;
    agedge(g, ia->second, ib->second, nullptr, 1);
  }
  const bool ok = gvLayout(gvc, g, "dot") == 0;
  if (ok) {
    const double top = GD_bb(g).UR.y;
    part->members = members;
    part->pos.clear();
    for (size_t k = 0; k < members.size(); ++k) {
      const QSizeF& s = sg.sizes[static_cast<size_t>(members[k])];
      const pointf c = ND_coord(order[k]);
      // Graphviz's y grows upwards; the scene's downwards.
      part->pos.emplace_back(c.x - s.width() / 2, (top - c.y) - s.height() / 2);
    }
    gvFreeLayout(gvc, g);
    Normalize(sg, *part);
  }
  agclose(g);
  return ok;
}

#endif  // BLOCKFLOW_HAVE_GRAPHVIZ

// Shelf packing: parts in rows, left to right, the largest first; a row closes when it would
// pass the aimed width (from the total area and the aimed aspect, at least the widest part).
std::vector<QPointF> Pack(const std::vector<Part>& parts, const LayoutOptions& o) {
  double area = 0, widest = 0;
  for (const Part& p : parts) {
    area += (p.size.width() + o.part_gap) * (p.size.height() + o.part_gap);
    widest = std::max(widest, p.size.width());
  }
  const double aim = std::max(widest, std::sqrt(area * o.aspect));
  std::vector<size_t> order(parts.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return parts[a].size.height() > parts[b].size.height();
  });
  std::vector<QPointF> at(parts.size());
  double x = 0, y = 0, row_h = 0;
  for (size_t i : order) {
    const QSizeF& s = parts[i].size;
    if (x > 0 && x + s.width() > aim) {
      x = 0;
      y += row_h + o.part_gap;
      row_h = 0;
    }
    at[i] = QPointF(x, y);
    x += s.width() + o.part_gap;
    row_h = std::max(row_h, s.height());
  }
  return at;
}

}  // namespace

QString LayoutEngineName() {
#ifdef BLOCKFLOW_HAVE_GRAPHVIZ
  return QString("Graphviz dot %1").arg(gvcVersion(GraphvizContext()));
#else
  return "simple layering (no Graphviz)";
#endif
}

std::map<std::string, QPointF> ComputeLayout(const Graph& graph,
                                             const std::vector<std::string>& ids,
                                             const NodeSizeFn& size_of,
                                             const LayoutOptions& options) {
  const SubGraph sg = Collect(graph, ids, size_of);
  std::vector<Part> parts;
  for (const std::vector<int>& members : ConnectedParts(sg)) {
    Part part;
    bool done = false;
#ifdef BLOCKFLOW_HAVE_GRAPHVIZ
    if (options.use_graphviz && members.size() > 1) done = DotPart(sg, members, options, &part);
#endif
    if (!done) part = LayerPart(sg, members, options);
    parts.push_back(std::move(part));
  }
  const std::vector<QPointF> at = Pack(parts, options);
  std::map<std::string, QPointF> out;
  for (size_t i = 0; i < parts.size(); ++i) {
    for (size_t k = 0; k < parts[i].members.size(); ++k) {
      const QPointF p = at[i] + parts[i].pos[k];
      out[sg.ids[static_cast<size_t>(parts[i].members[k])]] =
          QPointF(std::round(p.x()), std::round(p.y()));
    }
  }
  return out;
}

int ArrangeNodes(GraphScene* scene, const std::vector<std::string>& ids, bool undoable) {
  GraphDocument* doc = scene->document();
  const Graph& graph = doc->graph();
  // What is drawn: inline constants are part of the node they feed.
  std::vector<std::string> chosen;
  QRectF old_box;
  auto take = [&](const std::string& id) {
    NodeItem* item = scene->FindNode(id);
    if (!item) return;
    chosen.push_back(id);
    old_box |= QRectF(item->pos(), item->body_size());
  };
  if (ids.empty()) {
    for (const Node& n : graph.nodes()) take(n.id);
  } else {
    for (const std::string& id : ids) take(id);
  }
  if (chosen.empty()) return 0;
  std::map<std::string, QPointF> pos = ComputeLayout(graph, chosen, [scene](const std::string& id) {
    NodeItem* item = scene->FindNode(id);
    return item ? item->body_size() : QSizeF(180, 80);
  });
  const QPointF origin(std::round(old_box.left()), std::round(old_box.top()));
  for (auto& [id, p] : pos) p += origin;
  const bool moves = std::any_of(pos.begin(), pos.end(), [&](const auto& entry) {
    const std::optional<QPointF> old = NodePosition(*graph.FindNode(entry.first));
    return !old || *old != entry.second;
  });
  if (!moves) return static_cast<int>(chosen.size());
  if (undoable) {
    doc->undo_stack()->beginMacro(chosen.size() == graph.nodes().size() || ids.empty()
                                      ? QString("Arrange")
                                      : QString("Arrange %1 nodes").arg(chosen.size()));
    doc->MoveNodes(pos);
    doc->undo_stack()->endMacro();
  } else {
    doc->MoveNodes(pos);
    doc->undo_stack()->clear();  // part of opening the graph: nothing to undo, nothing unsaved
  }
  return static_cast<int>(chosen.size());
}

}  // namespace blockflow::editor
