// Argument parsing for the `blockflow` command line: flags in general, and what `run` and
// `bench` were asked to do. Every error is a usage error that names the flag.
//
//   ASSIGN_OR_RETURN(RunArgs r, ParseRunArgs({"g.json", "--feed", "dy=dy.npy", "--profile"}));
//   // r.graph == "g.json", r.feeds == {{"dy", "dy.npy"}}, r.profile
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace blockflow::cli {

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
/// `--memory-limit BYTES` (suffixes K, M, G); a usage error naming the flag otherwise.
Expected<uint64_t> ParseMemoryLimitFlag(const std::string& text);

/// What `run` and `bench` share: the graph, its feeds and how kernels run.
struct GraphArgs {
  bool help = false;  // -h or --help: print the help, nothing else is set
  std::string graph;
  std::vector<std::pair<std::string, std::string>> feeds;  // id → .npy path
  int threads = 0;
  bool reference = false;
  bool allow_outside_files = false;  // the graph may name files outside its folder
  uint64_t memory_limit = 0;         // --memory-limit in bytes; 0: the default (core/limits.h)
};

/// `--shard NAME[:AXIS]`: Placeholder NAME's batch is split along AXIS over the processes.
struct ShardFlag {
  std::string id;
  int axis = 0;
};
/// `--combine NAME=gather|sum|first`: how a fetched output is combined over the processes.
struct CombineFlag {
  std::string fetch;  // "id" or "id:K"
  std::string rule;   // "gather", "sum" or "first"
};

/// What `blockflow run` was asked to do.
struct RunArgs : GraphArgs {
  std::vector<std::string> fetches;  // "id" or "id:K"
  std::string out_dir;
  std::string trace;  // Chrome trace file ("": none)
  bool profile = false;
  std::vector<ShardFlag> shards;     // empty: one process, as always
  std::vector<CombineFlag> combine;  // only with shards
  bool deterministic = false;        // only with shards
};
/// `NAME[:AXIS]` → {NAME, AXIS (default 0)}; a usage error otherwise.
Expected<ShardFlag> ParseShardFlag(const std::string& text);
/// `NAME=gather|sum|first` → {NAME, rule}; a usage error otherwise.
Expected<CombineFlag> ParseCombineFlag(const std::string& text);
/// Parses `run`'s arguments (after "run"); usage errors name the flag and what is wrong.
Expected<RunArgs> ParseRunArgs(const std::vector<std::string>& args);

/// What `blockflow bench` was asked to do.
struct BenchArgs : GraphArgs {
  int warmup = 2;
  int repeat = 10;
  bool json = false;
};
/// Parses `bench`'s arguments (after "bench").
Expected<BenchArgs> ParseBenchArgs(const std::vector<std::string>& args);

}  // namespace blockflow::cli
