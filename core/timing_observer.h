// Ready ExecutionObservers, the way Taskflow ships its own: TimingObserver records every
// node's wall time, worker thread and (optionally) memory, and writes a Chrome trace;
// FanOutObserver lets one run feed several observers. PoolPeakMeter measures the pool's
// peak over any stretch of code.
//
//   TimingObserver timing(/*record_memory=*/true);
//   RunOptions options;
//   timing.Attach(&options);   // sets options.observer; nodes one at a time for the memory
//   RETURN_IF_ERROR(Session(graph).Run(feeds, fetches, &outputs, options));
//   for (const NodeTiming& t : timing.timings()) std::cout << t.id << " " << t.ms << "\n";
//   RETURN_IF_ERROR(timing.WriteChromeTrace("run.trace.json"));   // chrome://tracing, Perfetto
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/session.h"

namespace blockflow {

/// Measures how far BufferPool::Global()'s bytes in use rise above where they stood at Start().
/// Meaningful only while nothing else allocates from the pool meanwhile.
class PoolPeakMeter {
 public:
  /// Restarts the pool's peak and remembers its bytes in use.
  void Start();
  /// The pool's peak bytes in use since Start(), less the bytes in use at Start().
  size_t Peak() const;

 private:
  size_t start_in_use_ = 0;
};

/// One node's execution as a TimingObserver saw it.
struct NodeTiming {
  std::string id;
  std::string op;
  double start_us = 0;  // OnNodeBegin, in microseconds since OnRunBegin
  double ms = 0;        // the node's wall time, as the session measured it
  int thread = 0;       // the worker thread that ran it: 1, 2, ... in order of first use
  bool ok = true;
  std::optional<size_t> peak_bytes;  // with memory recording: the node's PoolPeakMeter peak
};

/// Records every node's wall time and worker thread, and with `record_memory` its peak pool
/// bytes (the pool's peak while it ran, less the bytes in use when it began). The memory is the
/// node's own only when nodes run one at a time: Attach() arranges that.
class TimingObserver : public ExecutionObserver {
 public:
  /// An observer that records times, and with `record_memory` each node's peak pool bytes.
  explicit TimingObserver(bool record_memory = false);

  /// Makes `options` report to this observer; with memory recording, also runs nodes one at a
  /// time (max_parallel_nodes = 1).
  void Attach(RunOptions* options);
  /// True when nodes' peak bytes are recorded.
  bool records_memory() const { return record_memory_; }

  /// Starts a new record (a reused observer keeps only the last run).
  void OnRunBegin(const std::vector<std::string>& node_ids) override;
  /// Notes the node's start and thread; with memory recording, starts its PoolPeakMeter.
  void OnNodeBegin(const Node& node) override;
  /// Records the node's NodeTiming.
  void OnNodeEnd(const Node& node, double ms, const Status& status) override;
  /// Records the run's wall time.
  void OnRunEnd(const Status& status) override;

  /// The nodes of the last run, in the order they ended.
  std::vector<NodeTiming> timings() const;
  /// Wall time of the last run, OnRunBegin to OnRunEnd, in milliseconds.
  double run_ms() const;
  /// The last run as a Chrome trace: {"traceEvents": [...]} with one complete ("X") event per
  /// node (ts and dur in microseconds, args: op, status, peak_bytes) and "M" name events.
  nlohmann::json ChromeTrace() const;
  /// Writes ChromeTrace() to `path` atomically.
  Status WriteChromeTrace(const std::string& path) const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Started {
    Clock::time_point at;
    int thread = 0;
    PoolPeakMeter memory;
  };
  // The small number of the calling thread. Caller holds mu_.
  int ThreadNumberLocked();

  const bool record_memory_;
  mutable std::mutex mu_;
  Clock::time_point run_begin_ = Clock::now();
  double run_ms_ = 0;
  std::map<std::thread::id, int> threads_;
  std::map<std::string, Started> started_;  // node id → its OnNodeBegin
  std::vector<NodeTiming> timings_;
};

/// Forwards every callback to each observer in turn (null entries are skipped).
class FanOutObserver : public ExecutionObserver {
 public:
  explicit FanOutObserver(std::vector<ExecutionObserver*> observers);
  // ExecutionObserver: each call goes to every observer, in the order given.
  void OnRunBegin(const std::vector<std::string>& node_ids) override;
  void OnNodeBegin(const Node& node) override;
  void OnNodeEnd(const Node& node, double ms, const Status& status) override;
  void OnRunEnd(const Status& status) override;

 private:
  std::vector<ExecutionObserver*> observers_;
};

}  // namespace blockflow
