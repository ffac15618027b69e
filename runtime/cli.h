// The `blockflow` command line: argument parsing and the subcommands, as a
// library so that tests can call them in-process. main.cc only forwards argv.
//
//   std::ostringstream out, err;
//   int rc = blockflow::cli::Main({"validate", "g.json"}, out, err);   // 0, 1 or 2
#pragma once

#include <atomic>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace blockflow::cli {

/// Exit statuses, as DESIGN.md defines them.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;      // the graph or a feed is invalid, or a block failed
inline constexpr int kExitUsage = 2;        // the command line is wrong
inline constexpr int kExitCancelled = 130;  // SIGINT, as a shell reports it

/// One flag a subcommand accepts.
struct FlagSpec {
  std::string name;  // "--feed"
  bool takes_value = false;
  bool repeatable = false;
};

/// A command line split into positional arguments and flags (in order).
struct ParsedArgs {
  std::vector<std::string> positional;
  std::vector<std::pair<std::string, std::string>> flags;  // name → value ("" for switches)
  bool help = false;

  /// True when the flag was given.
  bool Has(const std::string& name) const;
  /// The last value of a flag, or nullopt.
  std::optional<std::string> Last(const std::string& name) const;
  /// Every value of a repeatable flag, in order.
  std::vector<std::string> All(const std::string& name) const;
};

/// Splits `args` (after the subcommand) by `specs`. Accepts `--flag value` and
/// `--flag=value`; `-h`/`--help` set `help`; `--` ends the flags. Errors (unknown
/// flag, missing value, a non-repeatable flag given twice) are usage errors.
Expected<ParsedArgs> ParseFlags(const std::vector<std::string>& args,
                                const std::vector<FlagSpec>& specs);

/// `ID=FILE.npy` → {ID, FILE.npy}; a usage error otherwise.
Expected<std::pair<std::string, std::string>> ParseFeedFlag(const std::string& text);
/// A positive integer flag value (`--threads 4`); `min` is the least allowed value.
Expected<int> ParseIntFlag(const std::string& flag, const std::string& text, int min);

/// What `blockflow run` was asked to do.
struct RunArgs {
  std::string graph;
  std::vector<std::pair<std::string, std::string>> feeds;  // id → .npy path
  std::vector<std::string> fetches;                        // "id" or "id:K"
  std::string out_dir;
  int threads = 0;
  bool profile = false;
  bool reference = false;
};
/// Parses `run`'s arguments (after "run"); usage errors name the flag and what is wrong.
Expected<RunArgs> ParseRunArgs(const std::vector<std::string>& args, bool* help = nullptr);

/// What `blockflow bench` was asked to do.
struct BenchArgs {
  std::string graph;
  std::vector<std::pair<std::string, std::string>> feeds;
  int warmup = 2;
  int repeat = 10;
  int threads = 0;
  bool json = false;
  bool reference = false;
};
Expected<BenchArgs> ParseBenchArgs(const std::vector<std::string>& args, bool* help = nullptr);

/// Runs the whole command line (argv without the program name) and returns the
/// exit status. Normal output goes to `out`, errors and progress to `err`.
int Main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

/// The flag `run` polls for cancellation; main() sets it from SIGINT.
std::atomic<bool>& CancelFlag();
/// Installs a SIGINT handler that sets CancelFlag() (a second Ctrl-C kills the process).
void InstallSigintHandler();

/// The version string printed by `--version`.
std::string VersionString();

}  // namespace blockflow::cli
