// The `blockflow` command line as a library, so that tests can call it in-process; main.cc
// only forwards argv. The commands live in command_*.cc, argument parsing in args.h.
//
//   std::ostringstream out, err;
//   int rc = blockflow::cli::Main({"validate", "g.json"}, out, err);   // 0, 1 or 2
#pragma once

#include <atomic>
#include <ostream>
#include <string>
#include <vector>

#include "runtime/args.h"

namespace blockflow::cli {

/// Exit statuses, as the program's contract defines them.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;      // the graph or a feed is invalid, or a block failed
inline constexpr int kExitUsage = 2;        // the command line is wrong
inline constexpr int kExitCancelled = 130;  // SIGINT, as a shell reports it

/// Runs the whole command line (argv without the program name) and returns the
/// exit status. Normal output goes to `out`, errors and progress to `err`.
int Main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

/// The flag `run` and `bench` poll for cancellation; main() sets it from SIGINT.
std::atomic<bool>& CancelFlag();
/// Installs a SIGINT handler that sets CancelFlag() (a second Ctrl-C kills the process).
void InstallSigintHandler();

/// The version string printed by `--version`.
std::string VersionString();

}  // namespace blockflow::cli
