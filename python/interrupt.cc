#include "python/interrupt.h"

#include <signal.h>

#include <mutex>

namespace blockflow::python {
namespace {

std::atomic<bool> g_interrupted{false};
std::mutex g_mu;           // guards the three below; never taken in the handler
int g_active = 0;          // live SigintCancel objects
bool g_installed = false;  // our handler is installed
// The handler ours replaced. Written only while ours is not installed, read by ours.
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

}  // namespace

SigintCancel::SigintCancel() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_active++ > 0) return;
  struct sigaction current;
  if (::sigaction(SIGINT, nullptr, &current) != 0) return;
  const bool is_function = (current.sa_flags & SA_SIGINFO) ||
                           (current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN);
  if (!is_function) return;  // ignored, or the default (which ends the process anyway)
  g_previous = current;
  struct sigaction ours = {};
  ours.sa_sigaction = OnSigint;
  ours.sa_flags = SA_SIGINFO | SA_ONSTACK | (current.sa_flags & SA_RESTART);
  sigemptyset(&ours.sa_mask);
  g_installed = ::sigaction(SIGINT, &ours, nullptr) == 0;
}

SigintCancel::~SigintCancel() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (--g_active > 0) return;
  if (g_installed) ::sigaction(SIGINT, &g_previous, nullptr);
  g_installed = false;
  g_interrupted.store(false, std::memory_order_relaxed);
}

const std::atomic<bool>* SigintCancel::flag() const { return &g_interrupted; }

bool SigintCancel::interrupted() const { return g_interrupted.load(std::memory_order_relaxed); }

}  // namespace blockflow::python
