// Graph: the data of a blockflow graph (nodes, wiring, attrs, editor data), its
// JSON v1 form, and whole-graph validation with dtype and shape inference.
// A Graph is data only: Session runs it and never edits it.
//
//   ASSIGN_OR_RETURN(Graph g,
//   LoadGraphFile("samples/depthwise_conv2d_native_backprop_input.json")); GraphAnalysis a =
//   AnalyzeGraph(g, OpRegistry::Global()); for (const NodeIssue& e : a.issues) std::cerr <<
//   e.ToString() << "\n"; RETURN_IF_ERROR(SaveGraphFile(g, "copy.json"));   // atomic, byte-stable
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/schema.h"
#include "core/status.h"

namespace blockflow {

/// One output of a node: "node" (output 0) or "node:K".
struct Endpoint {
  std::string node;
  int index = 0;
  /// "node" for index 0, else "node:K".
  std::string ToString() const;
  /// Parses "node" or "node:K"; nullopt when malformed.
  static std::optional<Endpoint> Parse(const std::string& text);
  bool operator==(const Endpoint& o) const { return node == o.node && index == o.index; }
  bool operator<(const Endpoint& o) const {
    return node != o.node ? node < o.node : index < o.index;
  }
};

/// One block instance.
struct Node {
  std::string id;
  std::string op;
  /// Input port name → the endpoints wired to it (one for an ordinary port, any number for a list
  /// port).
  std::map<std::string, std::vector<Endpoint>> inputs;
  /// Attribute values as given (defaults are not written back).
  nlohmann::json attrs = nlohmann::json::object();
  /// Editor-only data (position, comments...); null when absent. The runtime ignores it.
  nlohmann::json ui;
};

/// A graph: nodes in a stable order, plus where it came from.
class Graph {
 public:
  /// The nodes, for editing in place (ids included).
  std::vector<Node>& nodes() {
    index_valid_ = false;  // the caller may rename or reorder
    return nodes_;
  }
  const std::vector<Node>& nodes() const { return nodes_; }
  /// Node by id, or null. The node may be edited in place, its id included.
  Node* FindNode(const std::string& id);
  const Node* FindNode(const std::string& id) const;
  /// Index of a node by id, or -1. Constant time unless the nodes were edited through the
  /// non-const accessors since the last AddNode.
  int IndexOf(const std::string& id) const;
  /// Appends a node in constant time; fails when the id is invalid or taken.
  Status AddNode(Node node);
  /// Removes a node and every wire from it; false when absent.
  bool RemoveNode(const std::string& id);
  /// An id not yet used: `base`, else `base_1`, `base_2`, ...
  std::string UniqueId(const std::string& base) const;
  /// Ids of nodes that read an output of `id`.
  std::vector<std::string> Consumers(const std::string& id) const;

  /// The file this graph was loaded from or saved to ("" when new); used in messages.
  std::string source_path;
  /// Folder that relative file names (Const `file`) resolve against.
  std::string base_dir;
  /// Lets the graph name files outside base_dir (CheckInsideGraphFolder). Off for graphs from
  /// files, which people share; never saved with the graph.
  bool allow_outside_files = false;
  /// The memory limit in bytes (0: DefaultMemoryLimit(), core/limits.h) that analysis holds
  /// every tensor to, and feeds and a run's peak estimate; never saved with the graph.
  uint64_t memory_limit = 0;

 private:
  std::vector<Node> nodes_;
  // id → index, kept by AddNode; rebuilt there after edits through the non-const accessors.
  std::unordered_map<std::string, int> index_;
  bool index_valid_ = true;
};

/// True when `id` is a valid node id: letters, digits and `_ . - /`, where '/' separates
/// non-empty parts other than "." and ".." (ids become paths under `blockflow run --out`).
bool IsValidNodeId(const std::string& id);
/// Node id → index in graph.nodes(), for lookups in loops over wires.
std::unordered_map<std::string, int> BuildNodeIndex(const Graph& graph);

/// Parses graph JSON v1 text. `origin` names the source in messages ("g.json:3:14: ...").
/// Text over kMaxGraphJsonBytes, nesting over kMaxGraphJsonDepth and more than kMaxGraphNodes
/// nodes are refused (core/limits.h). Structural checks only (format, version, ids, input syntax);
/// see AnalyzeGraph for the rest.
Expected<Graph> ParseGraphJson(const std::string& text, const std::string& origin,
                               const std::string& base_dir);
/// Reads and parses a graph file; base_dir becomes the file's folder.
Expected<Graph> LoadGraphFile(const std::string& path);
/// The canonical JSON v1 text: one node per line, stable key order, ports in schema order.
std::string SerializeGraph(const Graph& graph, const OpRegistry& registry = OpRegistry::Global());
/// Writes SerializeGraph() atomically.
Status SaveGraphFile(const Graph& graph, const std::string& path,
                     const OpRegistry& registry = OpRegistry::Global());

/// One problem found in a graph.
struct NodeIssue {
  std::string node_id;  // "" for graph-level problems
  std::string op;
  std::string message;  // what and why; names the port, value and rule
  /// "node 'ID' (OP): message", or just the message for graph-level problems.
  std::string ToString() const;
};

/// What inference found for one node.
struct NodeInfo {
  bool ok = false;                  // validated and inferred without error
  AttrMap attrs;                    // given attrs plus defaults
  std::vector<PortInfo> inputs;     // flattened inputs
  std::vector<int> port_starts;     // schema port → first flattened input
  std::vector<PortInfo> outputs;    // inferred outputs
  std::vector<std::string> errors;  // messages for this node (also in GraphAnalysis::issues)

  /// True when analysis computed every output ahead of the run (constants and what folds from
  /// them): the node runs no kernel. A fed value is not folded: it changes from run to run.
  bool IsFolded() const;
};

/// The result of validating a whole graph.
struct GraphAnalysis {
  std::vector<NodeInfo> nodes;    // parallel to graph.nodes()
  std::vector<NodeIssue> issues;  // every problem, in node order
  std::vector<int> topo_order;    // node indices, producers first (all nodes when acyclic)
  bool ok() const { return issues.empty(); }
};

/// Validates every node (unknown op/port/attr, attr types and values, dangling or duplicate
/// wires, cycles, dtypes) and infers every output's dtype and shape, reporting all errors.
/// `feeds` (Placeholder id → tensor) refine Placeholder shapes to what is fed.
GraphAnalysis AnalyzeGraph(const Graph& graph, const OpRegistry& registry = OpRegistry::Global(),
                           const std::map<std::string, Tensor>* feeds = nullptr);

/// True when adding a wire from `producer` into `consumer` would close a cycle.
bool WouldCreateCycle(const Graph& graph, const std::string& producer, const std::string& consumer);

}  // namespace blockflow
