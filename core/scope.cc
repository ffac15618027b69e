#include "core/scope.h"

namespace blockflow {

Scope Scope::NewRootScope() {
  Scope s;
  s.state_ = std::make_shared<State>();
  return s;
}

Scope Scope::WithOpName(const std::string& name) const {
  Scope s = *this;
  s.op_name_ = name;
  return s;
}

Scope Scope::NewSubScope(const std::string& name) const {
  Scope s = *this;
  s.prefix_ = prefix_ + name + "/";
  s.op_name_.clear();
  return s;
}

Output Scope::AddNode(const std::string& op,
                      const std::vector<std::pair<std::string, std::vector<Output>>>& inputs,
                      const nlohmann::json& attrs) const {
  Graph& g = state_->graph;
  ++state_->revision;
  const std::string id = op_name_.empty() ? g.UniqueId(prefix_ + op) : prefix_ + op_name_;
  Node node;
  node.id = id;
  node.op = op;
  for (const auto& [port, outs] : inputs) {
    std::vector<Endpoint> eps;
    for (const Output& o : outs) eps.push_back(Endpoint{o.node(), o.index()});
    node.inputs[port] = std::move(eps);
  }
  node.attrs = attrs.is_null() ? nlohmann::json::object() : attrs;
  Status s = g.AddNode(std::move(node));
  if (!s.ok() && state_->status.ok()) state_->status = s;
  return Output(id, 0);
}

Status Scope::status() const { return state_->status; }

Status Scope::Validate() const {
  RETURN_IF_ERROR(state_->status);
  GraphAnalysis a = AnalyzeGraph(state_->graph);
  if (a.ok()) return Status::OK();
  std::string msg;
  for (const NodeIssue& issue : a.issues) {
    if (!msg.empty()) msg += '\n';
    msg += issue.ToString();
  }
  return InvalidArgument(msg);
}

Status ClientSession::Run(const std::vector<Output>& fetch_outputs,
                          std::vector<Tensor>* outputs) const {
  return Run(FeedType{}, fetch_outputs, outputs);
}

Status ClientSession::Run(const FeedType& inputs, const std::vector<Output>& fetch_outputs,
                          std::vector<Tensor>* outputs, const RunOptions& options) const {
  RETURN_IF_ERROR(scope_.status());
  std::map<std::string, Tensor> feeds;
  for (const auto& [out, tensor] : inputs) feeds[out.node()] = tensor;
  std::vector<std::string> fetches;
  for (const Output& o : fetch_outputs) fetches.push_back(o.name());
  return CurrentSession()->Run(feeds, fetches, outputs, options);
}

std::shared_ptr<const Session> ClientSession::CurrentSession() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!session_ || session_revision_ != scope_.revision()) {
    session_ = std::make_shared<const Session>(scope_.graph());
    session_revision_ = scope_.revision();
  }
  return session_;
}

}  // namespace blockflow
