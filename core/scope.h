// Scope and ClientSession: build and run graphs from C++, mirroring TensorFlow's
// C++ client API. Op constructors live in blocks/ops.h.
//
//   Scope root = Scope::NewRootScope();
//   auto sizes = ops::Const(root.WithOpName("sizes"), Tensor::FromVector<int32_t>({1, 8, 8, 2}));
//   auto dy = ops::Placeholder(root.WithOpName("dy"), DType::kFloat32);
//   auto dx = ops::DepthwiseConv2dNativeBackpropInput(root, sizes, w, dy, {1, 2, 2, 1}, "SAME");
//   ClientSession session(root);
//   std::vector<Tensor> out;
//   RETURN_IF_ERROR(session.Run({{dy, dy_value}}, {dx}, &out));
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/graph.h"
#include "core/session.h"

namespace blockflow {

/// One output of a node in a Scope's graph.
class Output {
 public:
  Output() = default;
  Output(std::string node, int index) : node_(std::move(node)), index_(index) {}
  const std::string& node() const { return node_; }
  int index() const { return index_; }
  /// "node" or "node:K", as used in fetches and graph JSON.
  std::string name() const { return Endpoint{node_, index_}.ToString(); }
  bool operator<(const Output& o) const { return name() < o.name(); }

 private:
  std::string node_;
  int index_ = 0;
};

/// Builds a graph. Copies share the graph; WithOpName/NewSubScope name the next node.
class Scope {
 public:
  /// A scope over a new, empty graph.
  static Scope NewRootScope();
  /// A scope whose next node gets `name` (under this scope's prefix).
  Scope WithOpName(const std::string& name) const;
  /// A scope whose node names are prefixed with `name/`.
  Scope NewSubScope(const std::string& name) const;

  /// Adds a node of `op`; returns its output 0. Errors are recorded in status().
  Output AddNode(const std::string& op,
                 const std::vector<std::pair<std::string, std::vector<Output>>>& inputs,
                 const nlohmann::json& attrs) const;
  /// The first error met while building (OK if none).
  Status status() const;
  /// The graph built so far.
  const Graph& graph() const { return state_->graph; }
  /// The graph, for editing in place (a ClientSession then analyses it again).
  Graph& graph() {
    ++state_->revision;
    return state_->graph;
  }
  /// Increases with every change made through this scope or its children.
  uint64_t revision() const { return state_->revision; }
  /// Validates the graph built so far (every error, as AnalyzeGraph).
  Status Validate() const;

 private:
  struct State {
    Graph graph;
    Status status;
    uint64_t revision = 0;
  };
  std::shared_ptr<State> state_;
  std::string prefix_;
  std::string op_name_;
};

/// Runs a Scope's graph, as TensorFlow's ClientSession. It keeps one Session, and with it the
/// prepared plans, for as long as the scope's graph does not change, so a loop of Runs
/// analyses the graph once.
class ClientSession {
 public:
  using FeedType = std::map<Output, Tensor>;
  explicit ClientSession(const Scope& scope) : scope_(scope) {}
  /// Runs without feeds.
  Status Run(const std::vector<Output>& fetch_outputs, std::vector<Tensor>* outputs) const;
  /// Feeds Placeholders and fetches outputs.
  Status Run(const FeedType& inputs, const std::vector<Output>& fetch_outputs,
             std::vector<Tensor>* outputs, const RunOptions& options = {}) const;

 private:
  // The session for the scope's current graph, made again after the graph changed.
  std::shared_ptr<const Session> CurrentSession() const;

  Scope scope_;
  mutable std::mutex mu_;
  mutable std::shared_ptr<const Session> session_;
  mutable uint64_t session_revision_ = 0;
};

}  // namespace blockflow
