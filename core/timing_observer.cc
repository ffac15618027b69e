#include "core/timing_observer.h"

#include <algorithm>
#include <set>

#include "core/allocator.h"
#include "core/npy.h"

namespace blockflow {

void PoolPeakMeter::Start() {
  BufferPool& pool = BufferPool::Global();
  pool.ResetPeak();
  start_in_use_ = pool.stats().bytes_in_use;
}

size_t PoolPeakMeter::Peak() const {
  const size_t peak = BufferPool::Global().stats().peak_bytes_in_use;
  return peak > start_in_use_ ? peak - start_in_use_ : 0;
}

TimingObserver::TimingObserver(bool record_memory) : record_memory_(record_memory) {}

void TimingObserver::Attach(RunOptions* options) {
  options->observer = this;
  if (record_memory_) options->max_parallel_nodes = 1;
}

void TimingObserver::OnRunBegin(const std::vector<std::string>& node_ids) {
  std::lock_guard<std::mutex> lock(mu_);
  run_begin_ = Clock::now();
  run_ms_ = 0;
  threads_.clear();
  started_.clear();
  timings_.clear();
  timings_.reserve(node_ids.size());
}

int TimingObserver::ThreadNumberLocked() {
  const auto [it, fresh] =
      threads_.emplace(std::this_thread::get_id(), static_cast<int>(threads_.size()) + 1);
  return it->second;
}

void TimingObserver::OnNodeBegin(const Node& node) {
  std::lock_guard<std::mutex> lock(mu_);
  Started& s = started_[node.id];
  s.thread = ThreadNumberLocked();
  // Last, so that the bookkeeping above is not part of the node's time or memory.
  if (record_memory_) s.memory.Start();
  s.at = Clock::now();
}

void TimingObserver::OnNodeEnd(const Node& node, double ms, const Status& status) {
  std::lock_guard<std::mutex> lock(mu_);
  NodeTiming t;
  t.id = node.id;
  t.op = node.op;
  t.ms = ms;
  t.ok = status.ok();
  auto it = started_.find(node.id);
  if (it != started_.end()) {
    t.start_us = std::chrono::duration<double, std::micro>(it->second.at - run_begin_).count();
    t.thread = it->second.thread;
    if (record_memory_) t.peak_bytes = it->second.memory.Peak();
    started_.erase(it);
  } else {
    t.thread = ThreadNumberLocked();
  }
  timings_.push_back(std::move(t));
}

void TimingObserver::OnRunEnd(const Status& status) {
  std::lock_guard<std::mutex> lock(mu_);
  run_ms_ = std::chrono::duration<double, std::milli>(Clock::now() - run_begin_).count();
}

std::vector<NodeTiming> TimingObserver::timings() const {
  std::lock_guard<std::mutex> lock(mu_);
  return timings_;
}

double TimingObserver::run_ms() const {
  std::lock_guard<std::mutex> lock(mu_);
  return run_ms_;
}

nlohmann::json TimingObserver::ChromeTrace() const {
  using nlohmann::json;
  constexpr int kPid = 1;
  const std::vector<NodeTiming> timings = this->timings();
  json events = json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", kPid},
                    {"tid", 0},
                    {"args", {{"name", "blockflow"}}}});
  std::set<int> threads;
  for (const NodeTiming& t : timings) threads.insert(t.thread);
  for (int thread : threads) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", kPid},
                      {"tid", thread},
                      {"args", {{"name", "worker " + std::to_string(thread)}}}});
  }
  for (const NodeTiming& t : timings) {
    json args = {{"op", t.op}, {"status", t.ok ? "ok" : "failed"}};
    if (t.peak_bytes) args["peak_bytes"] = *t.peak_bytes;
    events.push_back({{"name", t.id},
                      {"cat", t.op},
                      {"ph", "X"},
                      {"ts", t.start_us},
                      {"dur", t.ms * 1000.0},
                      {"pid", kPid},
                      {"tid", t.thread},
                      {"args", std::move(args)}});
  }
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

Status TimingObserver::WriteChromeTrace(const std::string& path) const {
  return WriteFileAtomic(path, ChromeTrace().dump(1) + "\n");
}

FanOutObserver::FanOutObserver(std::vector<ExecutionObserver*> observers)
    : observers_(std::move(observers)) {
  observers_.erase(std::remove(observers_.begin(), observers_.end(), nullptr), observers_.end());
}

void FanOutObserver::OnRunBegin(const std::vector<std::string>& node_ids) {
  for (ExecutionObserver* o : observers_) o->OnRunBegin(node_ids);
}

void FanOutObserver::OnNodeBegin(const Node& node) {
  for (ExecutionObserver* o : observers_) o->OnNodeBegin(node);
}

void FanOutObserver::OnNodeEnd(const Node& node, double ms, const Status& status) {
  for (ExecutionObserver* o : observers_) o->OnNodeEnd(node, ms, status);
}

void FanOutObserver::OnRunEnd(const Status& status) {
  for (ExecutionObserver* o : observers_) o->OnRunEnd(status);
}

}  // namespace blockflow
