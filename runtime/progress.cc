#include "runtime/progress.h"

#include <cstdio>

namespace blockflow::cli {

ProgressObserver::ProgressObserver(bool show, std::ostream& err) : show_(show), err_(err) {}

ProgressObserver::~ProgressObserver() { Stop(); }

void ProgressObserver::OnRunBegin(const std::vector<std::string>& node_ids) {
  std::lock_guard<std::mutex> lock(mu_);
  total_ = node_ids.size();
  start_ = std::chrono::steady_clock::now();
  if (show_ && !thread_.joinable()) thread_ = std::thread([this] { Loop(); });
}

void ProgressObserver::OnNodeEnd(const Node& node, double ms, const Status& status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++done_;
}

void ProgressObserver::OnRunEnd(const Status& status) { Stop(); }

void ProgressObserver::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  bool shown = false;
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(200));
    if (stop_) break;
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (s < 1.0) continue;
    char buf[96];
    std::snprintf(buf, sizeof buf, "\rrunning: %zu/%zu nodes done, %.1f s ", done_, total_, s);
    err_ << buf << std::flush;
    shown = true;
  }
  if (shown) err_ << "\r\033[K" << std::flush;  // erase the progress line
}

void ProgressObserver::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace blockflow::cli
