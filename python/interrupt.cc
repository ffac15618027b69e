#include "python/interrupt.h"

#include <signal.h>

#include <chrono>
#include <mutex>

namespace blockflow::python {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<bool> g_interrupted{false};
std::mutex g_mu;   // guards the three below; never taken in the handler
int g_active = 0;  // runs in progress
Clock::time_point g_last_check;
const void* g_last_python_handler = nullptr;
// The handler ours is in front of. Written only while ours is not installed, read by ours.
struct sigaction g_previous;

void OnSigint(int signo, siginfo_t* info, void* context) {
  g_interrupted.store(true, std::memory_order_relaxed);
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction) g_previous.sa_sigaction(signo, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN &&
             g_previous.sa_handler != nullptr) {
    g_previous.sa_handler(signo);
  }
}

// Puts OnSigint in front of the current SIGINT handler unless it already is, or SIGINT is
// ignored or at its default action. Caller holds g_mu.
void EnsureInstalledLocked() {
  struct sigaction current;
  if (::sigaction(SIGINT, nullptr, &current) != 0) return;
  if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == OnSigint) return;
  const bool is_function = (current.sa_flags & SA_SIGINFO) ||
                           (current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN);
  if (!is_function) return;
  g_previous = current;
  struct sigaction ours = {};
  ours.sa_sigaction = OnSigint;
  ours.sa_flags = SA_SIGINFO | SA_ONSTACK | (current.sa_flags & SA_RESTART);
  sigemptyset(&ours.sa_mask);
  ::sigaction(SIGINT, &ours, nullptr);
}

}  // namespace

SigintCancel::SigintCancel(const void* python_handler) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_active++ == 0) g_interrupted.store(false, std::memory_order_relaxed);
  const Clock::time_point now = Clock::now();
  if (python_handler != g_last_python_handler || g_last_check == Clock::time_point() ||
      now - g_last_check > std::chrono::milliseconds(50)) {
    g_last_check = now;
    g_last_python_handler = python_handler;
    EnsureInstalledLocked();
  }
}

SigintCancel::~SigintCancel() {
  std::lock_guard<std::mutex> lock(g_mu);
  --g_active;
}

const std::atomic<bool>* SigintCancel::flag() const { return &g_interrupted; }

bool SigintCancel::interrupted() const { return g_interrupted.load(std::memory_order_relaxed); }

}  // namespace blockflow::python
