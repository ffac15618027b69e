#include "runtime/cli.h"

#include <signal.h>

#include "blocks/register_blocks.h"
#include "runtime/commands.h"
#include "runtime/usage.h"

#ifndef BLOCKFLOW_VERSION
#define BLOCKFLOW_VERSION "0.0.0"
#endif

namespace blockflow::cli {
namespace {

// Constant-initialised at namespace scope, so that the SIGINT handler touches nothing
// but a lock-free atomic: no function-local static and its initialisation guard.
constinit std::atomic<bool> g_cancel{false};

void OnSigint(int) {
  // A lock-free atomic store is async-signal-safe.
  g_cancel.store(true);
}

}  // namespace

std::atomic<bool>& CancelFlag() { return g_cancel; }

void InstallSigintHandler() {
  static_assert(std::atomic<bool>::is_always_lock_free,
                "the SIGINT handler needs a lock-free flag");
  struct sigaction sa {};
  sa.sa_handler = OnSigint;
  sigemptyset(&sa.sa_mask);
  // SA_RESETHAND: a second Ctrl-C gets the default action and ends a stuck process.
  // SA_RESTART: a Ctrl-C must not fail a blocking read or the progress line's write with
  // EINTR (a failed write would leave std::cerr bad and swallow the "cancelled" message).
  sa.sa_flags = SA_RESETHAND | SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
}

std::string VersionString() { return std::string("blockflow ") + BLOCKFLOW_VERSION; }

int Main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  RegisterBuiltinBlocks();
  if (args.empty()) {
    err << "error: missing command\n" << MainUsage();
    return kExitUsage;
  }
  const std::string& command = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (command == "--help" || command == "-h" || command == "help") {
    if (command == "help" && !rest.empty() && HasHelp(rest[0])) {
      PrintHelp(out, rest[0]);
    } else {
      out << MainUsage();
    }
    return kExitOk;
  }
  if (command == "--version" || command == "-V") {
    out << VersionString() << "\n";
    return kExitOk;
  }
  try {
    if (command == "run") return CommandRun(rest, out, err);
    if (command == "validate") return CommandValidate(rest, out, err);
    if (command == "bench") return CommandBench(rest, out, err);
    if (command == "ops") return CommandOps(rest, out, err);
    if (command == "import-tf") return CommandImportTf(rest, out, err);
  } catch (const std::exception& e) {
    // Library code reports errors as Status; this is the last line of defence.
    err << "error: internal error: " << e.what() << "\n";
    return kExitFailure;
  }
  return UsageError(err, "",
                    command.rfind('-', 0) == 0 ? "unknown option '" + command + "'"
                                               : "unknown command '" + command + "'");
}

}  // namespace blockflow::cli
