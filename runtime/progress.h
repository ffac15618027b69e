// The progress line `blockflow run` shows on a terminal while a run takes more than a second:
// "running: 3/10 nodes done, 2.4 s", erased when the run ends.
//
//   ProgressObserver progress(isatty(STDERR_FILENO) == 1, std::cerr);
//   options.observer = &progress;
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "core/session.h"

namespace blockflow::cli {

/// Counts finished nodes and, when `show` is true, redraws the progress line every 200 ms
/// on a thread of its own.
class ProgressObserver : public ExecutionObserver {
 public:
  ProgressObserver(bool show, std::ostream& err);
  ~ProgressObserver() override;

  void OnRunBegin(const std::vector<std::string>& node_ids) override;
  void OnNodeEnd(const Node& node, double ms, const Status& status) override;
  void OnRunEnd(const Status& status) override;

 private:
  void Loop();
  void Stop();

  const bool show_;
  std::ostream& err_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
  bool stop_ = false;
  size_t total_ = 0, done_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace blockflow::cli
