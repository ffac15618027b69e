#include "core/graph.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "core/limits.h"
#include "core/npy.h"

namespace blockflow {
namespace fs = std::filesystem;
using nlohmann::json;

const char* const kNodeIdRule =
    "use letters, digits and _ . - /, with '/' only between names (no empty, '.' or '..' parts)";

// ---- Endpoint ----

std::string Endpoint::ToString() const {
  return index == 0 ? node : node + ":" + std::to_string(index);
}

std::optional<Endpoint> Endpoint::Parse(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    if (!IsValidNodeId(text)) return std::nullopt;
    return Endpoint{text, 0};
  }
  const std::string node = text.substr(0, colon), index = text.substr(colon + 1);
  if (!IsValidNodeId(node) || index.empty() || index.size() > 6 ||
      !std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return Endpoint{node, std::stoi(index)};
}

bool IsValidNodeId(const std::string& id) {
  if (id.empty()) return false;
  const bool chars_ok = std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-' || c == '/';
  });
  if (!chars_ok) return false;
  // Ids become file paths under `run --out`: every '/'-separated part must be a plain name.
  size_t start = 0;
  while (true) {
    const size_t slash = id.find('/', start);
    const std::string part =
        id.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    if (slash == std::string::npos) return true;
    start = slash + 1;
  }
}

std::unordered_map<std::string, int> BuildNodeIndex(const Graph& graph) {
  std::unordered_map<std::string, int> index;
  index.reserve(graph.nodes().size());
  for (size_t i = 0; i < graph.nodes().size(); ++i)
    index.emplace(graph.nodes()[i].id, static_cast<int>(i));
  return index;
}

// ---- Graph ----

Node* Graph::FindNode(const std::string& id) {
  const int i = IndexOf(id);
  index_valid_ = false;  // the caller may rename the node
  return i < 0 ? nullptr : &nodes_[static_cast<size_t>(i)];
}

const Node* Graph::FindNode(const std::string& id) const {
  const int i = IndexOf(id);
  return i < 0 ? nullptr : &nodes_[static_cast<size_t>(i)];
}

int Graph::IndexOf(const std::string& id) const {
  if (index_valid_) {
    auto it = index_.find(id);
    return it == index_.end() ? -1 : it->second;
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].id == id) return static_cast<int>(i);
  }
  return -1;
}

Status Graph::AddNode(Node node) {
  if (!IsValidNodeId(node.id)) {
    return InvalidArgument("invalid node id '" + node.id + "': " + kNodeIdRule);
  }
  if (!index_valid_) {
    index_ = BuildNodeIndex(*this);
    index_valid_ = true;
  }
  if (index_.count(node.id)) return InvalidArgument("duplicate node id '" + node.id + "'");
  index_.emplace(node.id, static_cast<int>(nodes_.size()));
  nodes_.push_back(std::move(node));
  return Status::OK();
}

bool Graph::RemoveNode(const std::string& id) {
  const int i = IndexOf(id);
  if (i < 0) return false;
  nodes_.erase(nodes_.begin() + i);
  index_valid_ = false;
  for (Node& n : nodes_) {
    for (auto it = n.inputs.begin(); it != n.inputs.end();) {
      auto& eps = it->second;
      eps.erase(
          std::remove_if(eps.begin(), eps.end(), [&](const Endpoint& e) { return e.node == id; }),
          eps.end());
      it = eps.empty() ? n.inputs.erase(it) : std::next(it);
    }
  }
  return true;
}

std::string Graph::UniqueId(const std::string& base) const {
  if (IndexOf(base) < 0) return base;
  for (int k = 1;; ++k) {
    std::string id = base + "_" + std::to_string(k);
    if (IndexOf(id) < 0) return id;
  }
}

std::vector<std::string> Graph::Consumers(const std::string& id) const {
  std::vector<std::string> out;
  for (const Node& n : nodes_) {
    for (const auto& [port, eps] : n.inputs) {
      if (std::any_of(eps.begin(), eps.end(), [&](const Endpoint& e) { return e.node == id; })) {
        out.push_back(n.id);
        break;
      }
    }
  }
  return out;
}

bool WouldCreateCycle(const Graph& graph, const std::string& producer,
                      const std::string& consumer) {
  // A wire producer → consumer closes a cycle when consumer is already upstream of producer.
  std::vector<std::string> stack{producer};
  std::set<std::string> seen;
  while (!stack.empty()) {
    std::string id = stack.back();
    stack.pop_back();
    if (id == consumer) return true;
    if (!seen.insert(id).second) continue;
    const Node* n = graph.FindNode(id);
    if (!n) continue;
    for (const auto& [port, eps] : n->inputs) {
      for (const Endpoint& e : eps) stack.push_back(e.node);
    }
  }
  return false;
}

// ---- JSON v1 ----

namespace {

// The offset of the first '[' or '{' nested deeper than kMaxGraphJsonDepth (outside strings),
// or npos. Malformed text is left to the parser.
size_t NestedTooDeep(const std::string& text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxGraphJsonDepth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::string::npos;
}

Status TooLargeGraph(const std::string& origin, uintmax_t bytes) {
  return InvalidArgument(origin + ": the graph file is " +
                         FormatBytes(static_cast<long double>(bytes)) + ", more than the " +
                         FormatBytes(kMaxGraphJsonBytes) +
                         " a graph file may hold; keep large tensors in .npy files that a Const "
                         "names with \"file\"");
}

std::string LineColumn(const std::string& text, size_t byte) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i + 1 < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

Status ParseNode(const json& j, size_t index, Node* node) {
  const std::string where = "nodes[" + std::to_string(index) + "]";
  if (!j.is_object()) return InvalidArgument(where + " must be an object");
  for (const auto& [key, value] : j.items()) {
    if (key != "id" && key != "op" && key != "inputs" && key != "attrs" && key != "ui") {
      return InvalidArgument(where + ": unknown key '" + key +
                             "' (a node has id, op, inputs, attrs, ui)");
    }
  }
  if (!j.contains("id") || !j["id"].is_string())
    return InvalidArgument(where + ": 'id' must be a string");
  node->id = j["id"].get<std::string>();
  const std::string who = "node '" + node->id + "'";
  if (!IsValidNodeId(node->id)) {
    return InvalidArgument(who + ": invalid id: " + kNodeIdRule);
  }
  if (!j.contains("op") || !j["op"].is_string() || j["op"].get<std::string>().empty()) {
    return InvalidArgument(who + ": 'op' must be a non-empty string");
  }
  node->op = j["op"].get<std::string>();
  const std::string whop = who + " (" + node->op + ")";
  if (j.contains("inputs")) {
    if (!j["inputs"].is_object())
      return InvalidArgument(whop + ": 'inputs' must be an object of port → \"node[:K]\"");
    for (const auto& [port, value] : j["inputs"].items()) {
      std::vector<json> items;
      if (value.is_string()) {
        items.push_back(value);
      } else if (value.is_array()) {
        items.assign(value.begin(), value.end());
      } else {
        return InvalidArgument(whop + ": input '" + port +
                               "' must be \"node\", \"node:K\" or a list of them");
      }
      std::vector<Endpoint> eps;
      for (const json& item : items) {
        std::optional<Endpoint> ep;
        if (item.is_string()) ep = Endpoint::Parse(item.get<std::string>());
        if (!ep) {
          return InvalidArgument(whop + ": input '" + port + "' has a malformed source " +
                                 item.dump() + " (expected \"node\" or \"node:K\")");
        }
        eps.push_back(*ep);
      }
      node->inputs[port] = std::move(eps);
    }
  }
  if (j.contains("attrs")) {
    if (!j["attrs"].is_object()) return InvalidArgument(whop + ": 'attrs' must be an object");
    node->attrs = j["attrs"];
  }
  if (j.contains("ui")) node->ui = j["ui"];
  return Status::OK();
}

// Compact JSON with a space after ':' and ',' (readable, one node per line).
void DumpCompact(const json& j, std::string* out) {
  if (j.is_object()) {
    *out += '{';
    bool first = true;
    for (const auto& [k, v] : j.items()) {
      if (!first) *out += ", ";
      first = false;
      *out += json(k).dump();
      *out += ": ";
      DumpCompact(v, out);
    }
    *out += '}';
  } else if (j.is_array()) {
    *out += '[';
    for (size_t i = 0; i < j.size(); ++i) {
      if (i) *out += ", ";
      DumpCompact(j[i], out);
    }
    *out += ']';
  } else {
    *out += j.dump(-1, ' ', false, json::error_handler_t::replace);
  }
}

}  // namespace

Expected<Graph> ParseGraphJson(const std::string& text, const std::string& origin,
                               const std::string& base_dir) {
  if (text.size() > kMaxGraphJsonBytes) {
    return TooLargeGraph(origin, text.size());
  }
  json j;
  // Deeply nested values would overflow the stack in the recursive copies and dumps later.
  // Checked by a scan of its own: nlohmann's parser with a callback takes time quadratic in the
  // length of a list (200,000 nodes: 20 s), where the plain parser is linear.
  if (const size_t at = NestedTooDeep(text); at != std::string::npos) {
    return InvalidArgument(origin + ":" + LineColumn(text, at + 1) +
                           ": malformed JSON: values nested deeper than " +
                           std::to_string(kMaxGraphJsonDepth) + " levels");
  }
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    // nlohmann's message starts with "[json.exception.parse_error.101] parse error at line L,
    // column C: ".
    const size_t colon = what.find(": ", what.find("column"));
    const std::string detail = colon == std::string::npos ? what : what.substr(colon + 2);
    return InvalidArgument(origin + ":" + LineColumn(text, e.byte) + ": malformed JSON: " + detail);
  } catch (const std::exception& e) {
    // Number overflow (1e999): no position is known.
    std::string what = e.what();
    const size_t bracket = what.rfind("] ");
    return InvalidArgument(origin + ": malformed JSON: " +
                           (bracket == std::string::npos ? what : what.substr(bracket + 2)));
  }
  auto bad = [&](const std::string& why) { return InvalidArgument(origin + ": " + why); };
  if (!j.is_object()) return bad("a graph file must hold a JSON object");
  for (const auto& [key, value] : j.items()) {
    if (key != "format" && key != "version" && key != "nodes") {
      return bad("unknown top-level key '" + key + "' (a graph has format, version, nodes)");
    }
  }
  if (!j.contains("format") || j["format"] != "blockflow.graph") {
    return bad("not a blockflow graph: \"format\" must be \"blockflow.graph\"");
  }
  if (!j.contains("version") || !j["version"].is_number_integer())
    return bad("\"version\" must be an integer");
  const int64_t version = j["version"].get<int64_t>();
  if (version != 1) {
    return bad("graph format version " + std::to_string(version) +
               " is not supported (this blockflow reads version 1" +
               (version > 1 ? "; the file was written by a newer blockflow)" : ")"));
  }
  if (!j.contains("nodes") || !j["nodes"].is_array()) return bad("\"nodes\" must be a list");
  if (j["nodes"].size() > kMaxGraphNodes) {
    return bad("the graph has " + std::to_string(j["nodes"].size()) + " nodes, more than the " +
               std::to_string(kMaxGraphNodes) + " a graph may have");
  }
  Graph graph;
  graph.source_path = origin;
  graph.base_dir = base_dir;
  size_t index = 0;
  for (const json& jn : j["nodes"]) {
    Node node;
    Status s = ParseNode(jn, index++, &node);
    if (!s.ok()) return bad(s.message());
    const std::string id = node.id, op = node.op;
    s = graph.AddNode(std::move(node));
    if (!s.ok()) return bad("node '" + id + "' (" + op + "): " + s.message());
  }
  return graph;
}

Expected<Graph> LoadGraphFile(const std::string& path) {
  // Refused before it is read: the size alone says so.
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (!ec && size > kMaxGraphJsonBytes) {
    return TooLargeGraph(path, size);
  }
  ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  const fs::path p(path);
  return ParseGraphJson(text, path,
                        p.has_parent_path() ? p.parent_path().string() : std::string("."));
}

std::string SerializeGraph(const Graph& graph, const OpRegistry& registry) {
  std::string out = "{\n  \"format\": \"blockflow.graph\",\n  \"version\": 1,\n  \"nodes\": [";
  bool first = true;
  for (const Node& n : graph.nodes()) {
    out += first ? "\n    " : ",\n    ";
    first = false;
    out += "{\"id\": " + json(n.id).dump() + ", \"op\": " + json(n.op).dump();
    if (!n.inputs.empty()) {
      // Ports in schema order, then any the schema does not know, by name.
      const OpSchema* schema = registry.Find(n.op);
      std::vector<std::string> order;
      if (schema) {
        for (const PortDef& p : schema->inputs()) {
          if (n.inputs.count(p.name)) order.push_back(p.name);
        }
      }
      for (const auto& [port, eps] : n.inputs) {
        if (std::find(order.begin(), order.end(), port) == order.end()) order.push_back(port);
      }
      out += ", \"inputs\": {";
      for (size_t i = 0; i < order.size(); ++i) {
        const auto& eps = n.inputs.at(order[i]);
        const int port_index = schema ? schema->InputIndex(order[i]) : -1;
        const bool as_list =
            eps.size() != 1 ||
            (port_index >= 0 && schema->inputs()[static_cast<size_t>(port_index)].is_list);
        if (i) out += ", ";
        out += json(order[i]).dump() + ": ";
        if (as_list) {
          out += "[";
          for (size_t k = 0; k < eps.size(); ++k)
            out += (k ? ", " : "") + json(eps[k].ToString()).dump();
          out += "]";
        } else {
          out += json(eps[0].ToString()).dump();
        }
      }
      out += "}";
    }
    if (!n.attrs.is_null() && !n.attrs.empty()) {
      out += ", \"attrs\": ";
      DumpCompact(n.attrs, &out);
    }
    if (!n.ui.is_null()) {
      out += ", \"ui\": ";
      DumpCompact(n.ui, &out);
    }
    out += "}";
  }
  out += first ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

Status SaveGraphFile(const Graph& graph, const std::string& path, const OpRegistry& registry) {
  return WriteFileAtomic(path, SerializeGraph(graph, registry));
}

std::string NodeIssue::ToString() const {
  if (node_id.empty()) return message;
  return "node '" + node_id + "' (" + op + "): " + message;
}

}  // namespace blockflow
