// Ctrl-C during a run. Python's SIGINT handler only marks the signal; the KeyboardInterrupt is
// raised when the main thread next runs Python code, which a long Session::Run (GIL released)
// would delay until the run ends. So the module puts its own SIGINT handler in front of the
// one installed (Python's): it sets a flag that runs poll (RunOptions::cancel, between nodes and
// inside long kernels), then calls the handler it replaced, so Python still raises
// KeyboardInterrupt (or runs the program's own handler) once the run returns.
//
//   SigintCancel sigint(signal_getsignal(SIGINT).ptr());   // with the GIL held
//   options.cancel = sigint.flag();
//   { py::gil_scoped_release release; s = session.Run(feeds, fetches, &out, options); }
//   if (sigint.interrupted()) ...   // PyErr_CheckSignals() raises the KeyboardInterrupt
//
// A sigaction call costs about 2 us on a virtual machine, as much as a whole small run, so the
// handler is not installed and removed around every run: it stays in front once installed. A
// run checks that it still is (signal.signal replaces it) when Python's handler object is not
// the one of the last check, and at most every 50 ms otherwise. Only real signals count (a
// terminal's Ctrl-C, kill -INT, signal.raise_signal); _thread.interrupt_main() sends none, so its
// KeyboardInterrupt comes when the run returns. With SIGINT ignored or at its default action
// nothing is installed.
#pragma once

#include <atomic>

namespace blockflow::python {

/// Marks a run in progress: a SIGINT from then on sets flag(). Runs on several threads share
/// the flag; it is cleared when a run begins while no other is in progress.
class SigintCancel {
 public:
  /// `python_handler` identifies Python's current SIGINT handler object (signal.getsignal).
  explicit SigintCancel(const void* python_handler);
  ~SigintCancel();
  SigintCancel(const SigintCancel&) = delete;
  SigintCancel& operator=(const SigintCancel&) = delete;

  /// Becomes true when SIGINT arrives while a run is in progress.
  const std::atomic<bool>* flag() const;
  /// True when SIGINT arrived.
  bool interrupted() const;
};

}  // namespace blockflow::python
