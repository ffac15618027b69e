// Ctrl-C during a run. Python's SIGINT handler only marks the signal; the KeyboardInterrupt is
// raised when the main thread next runs Python code, which a long Session::Run (GIL released)
// would delay until the end. While a SigintCancel is alive, SIGINT also sets a flag that the run
// polls (RunOptions::cancel, between nodes and inside long kernels), and is then passed on to
// the handler it replaced, so Python still raises KeyboardInterrupt once the run returns.
//
//   SigintCancel sigint;
//   options.cancel = sigint.flag();
//   { py::gil_scoped_release release; s = session.Run(feeds, fetches, &out, options); }
//   if (sigint.interrupted()) ...   // PyErr_CheckSignals() raises the KeyboardInterrupt
//
// Only real signals count (a terminal's Ctrl-C, kill -INT, signal.raise_signal);
// _thread.interrupt_main() sends none, so its KeyboardInterrupt comes when the run returns. With
// SIGINT ignored or at its default action nothing is installed.
#pragma once

#include <atomic>

namespace blockflow::python {

/// Installs the SIGINT hook for its lifetime; runs on several threads share one installation.
class SigintCancel {
 public:
  SigintCancel();
  ~SigintCancel();
  SigintCancel(const SigintCancel&) = delete;
  SigintCancel& operator=(const SigintCancel&) = delete;

  /// Becomes true when SIGINT arrives while any SigintCancel is alive.
  const std::atomic<bool>* flag() const;
  /// True when SIGINT arrived.
  bool interrupted() const;
};

}  // namespace blockflow::python
